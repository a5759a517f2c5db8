/*
 * kv_args.h — the KV cache options shared by run, chat, perplexity and
 * bench: --kv-type f32|f16|q8|q8f8, --kv-ram MB (a RAM budget; past it
 * pages spill to disk), --kv-spill-dir DIR (default $XDG_CACHE_HOME/petrel,
 * else $HOME/.cache/petrel). bench also takes llama-bench's -ctk / -ctv
 * (which must then name the same type: one type serves keys and values).
 */
#ifndef PETREL_KV_ARGS_H
#define PETREL_KV_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "petrel.h"

/* Storage the parsed options point into (kv_spill_dir). */
typedef struct kv_args {
    char dir[4096];
    int ctk, ctv;  /* -ctk / -ctv as given (-1: not given) */
} kv_args;

void kv_args_init(kv_args *k);
/* Try to parse argv[*i] (and its value) into cp. Returns 1 when consumed,
 * 0 when not a KV option, -1 on a bad value (error printed). llama_names:
 * also -ctk / -ctv / --cache-type-k / --cache-type-v. */
int kv_args_parse(kv_args *k, pt_context_params *cp, int argc, char **argv, int *i, bool llama_names);
/* After parsing: -ctk and -ctv must agree. 0, or -1 (error printed). */
int kv_args_check(const kv_args *k);
void kv_args_usage(FILE *f);
/* With a KV budget: one line "kv TYPE: N B/token, RAM .. disk .. budget ..,
 * read ahead N, hits N, stalls N" (pt_context_kv_stats) on f. */
void kv_args_print_stats(FILE *f, const pt_context *ctx);

#endif
