/*
 * run_options.h — options and set-up shared by the subcommands that run a
 * model (run, chat): model path, sampler and context settings, loading,
 * and turning a prompt into tokens.
 */
#ifndef PETREL_RUN_OPTIONS_H
#define PETREL_RUN_OPTIONS_H

#include <stdio.h>

#include "kv_args.h"
#include "device_opt.h"
#include "petrel.h"

/* LoRA adapters asked for with --lora PATH[:SCALE] (repeatable). */
typedef struct run_loras {
    int n;
    const char *path[PT_LORA_MAX];  /* argv strings, the ":SCALE" cut off into buf */
    float scale[PT_LORA_MAX];
    char buf[PT_LORA_MAX][4096];
} run_loras;

/* Parse one --lora value into l: PATH, or PATH:SCALE when what follows
 * the last ':' is a number. Returns 1, or -1 after printing an error. */
int run_loras_add(run_loras *l, const char *v);
/* Load l's adapters for model and make them active on ctx (out[0..l->n)
 * then holds them: free with run_loras_free after the context). Returns 0
 * or an exit status after printing "petrel: --lora PATH: why". */
int run_loras_open(const run_loras *l, pt_model *model, pt_context *ctx, pt_lora **out);
void run_loras_free(pt_lora **loras, int n);

typedef struct run_options {
    const char *model;            /* -m; NULL = default model */
    pt_sampler_params sampling;
    pt_context_params context;
    run_loras loras;              /* --lora */
    kv_args kv;                   /* --kv-type, --kv-ram, --kv-spill-dir (into context) */
    app_device device;            /* --device */
} run_options;

void run_options_init(run_options *o);
/* Try to parse argv[*i] (and its value) as a shared option. Returns 1 when
 * consumed (advancing *i past a value), 0 when not a shared option, -1 on a
 * bad value (error printed). */
int run_options_parse(run_options *o, int argc, char **argv, int *i);
void run_options_usage(FILE *f);

typedef struct run_session {
    pt_threadpool *pool;  /* the process's one pool: the load and the context share it */
    pt_model *model;
    pt_context *ctx;
    pt_sampler *sampler;
    pt_lora *loras[PT_LORA_MAX];  /* the active adapters (o->loras) */
    int n_loras;
    char model_path[4096];
} run_session;

/* Make the thread pool, load model, context and sampler; returns 0 or an
 * exit status (error printed). */
int run_session_open(run_session *s, const run_options *o);
void run_session_close(run_session *s);

/* Tokenize a prompt: raw text, or (chat) the model's chat template around a
 * user message and optional system message. *tokens is malloc'd. Returns 0
 * or an exit status (error printed). Warns once on stderr when the model's
 * template is unknown and ChatML is used instead. */
int run_session_prompt(run_session *s, const char *prompt, const char *system, bool chat,
                       pt_token **tokens, int *n_tokens);
/* Tokenize text (special tokens parsed, BOS/EOS as the model asks when
 * add_special). Returns 0 or an exit status. */
int run_session_tokenize(run_session *s, const char *text, bool add_special, pt_token **tokens,
                         int *n_tokens);

/* "prefill: N tokens in S s (X tok/s)" and the decode line. */
void run_print_stats(FILE *f, const pt_generate_stats *st);

#endif
