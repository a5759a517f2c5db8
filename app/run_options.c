/* run_options.c — shared options and model set-up for run and chat. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "sigbus.h"
#include "run_options.h"
#include "paths.h"

void run_options_init(run_options *o) {
    memset(o, 0, sizeof *o);
    o->sampling = pt_sampler_default_params();
    o->context = pt_context_default_params();
    kv_args_init(&o->kv);
    app_device_init(&o->device);
}

void run_options_usage(FILE *f) {
    fputs("sampling:\n"
          "      --temp T             temperature (0 = greedy)\n"
          "      --top-k N            keep the N most likely tokens (0 = off)\n"
          "      --top-p P            nucleus sampling (1 = off)\n"
          "      --min-p P            drop tokens below P x the top probability (0 = off)\n"
          "      --repeat-penalty F   penalise recent tokens (1 = off)\n"
          "      --presence-penalty F --frequency-penalty F\n"
          "      --repeat-last-n N    window of recent tokens the penalties see\n"
          "device:\n", f);
    fputs(app_device_usage, f);
    fputs("adapters:\n"
          "      --lora PATH[:SCALE]  a LoRA adapter (PEFT folder or GGUF adapter) at SCALE\n"
          "                           (default 1); repeat to stack up to 8\n"
          "KV cache:\n", f);
    kv_args_usage(f);
}

int run_loras_add(run_loras *l, const char *v) {
    if (!v) return -1;
    if (l->n >= PT_LORA_MAX) {
        app_error("--lora: at most %d adapters", PT_LORA_MAX);
        return -1;
    }
    if (!*v || strlen(v) >= sizeof l->buf[0]) {
        app_error("--lora wants PATH or PATH:SCALE");
        return -1;
    }
    char *buf = l->buf[l->n];
    snprintf(buf, sizeof l->buf[0], "%s", v);
    float scale = 1.0f;
    char *colon = strrchr(buf, ':');
    if (colon && colon != buf && arg_float(colon + 1, -100, 100, &scale)) *colon = 0;
    else if (colon && colon[1] && strchr("+-.0123456789", colon[1]) && access(buf, F_OK) != 0) {
        app_error("--lora %s: the scale must be a number in [-100, 100]", v);
        return -1;
    }
    /* A bare NAME that is no path here is a bundled adapter,
     * assets/lora/NAME (pt_app_asset's places). */
    char found[sizeof l->buf[0]], why[512];
    if (!strchr(buf, '/') && access(buf, F_OK) != 0) {
        char rel[sizeof l->buf[0] + 48];
        snprintf(rel, sizeof rel, "lora/%s/adapter_config.json", buf);
        if (!pt_app_asset(rel, found, sizeof found, why, sizeof why)) {
            char safe[1024];
            app_error("--lora %s: no such file, nor a bundled adapter (looked in %s)",
                      app_escaped(buf, safe, sizeof safe), why);
            return -1;
        }
        *strrchr(found, '/') = 0; /* the adapter's folder */
        snprintf(buf, sizeof l->buf[0], "%s", found);
    }
    l->path[l->n] = buf;
    l->scale[l->n++] = scale;
    return 1;
}

int run_loras_open(const run_loras *l, pt_model *model, pt_context *ctx, pt_lora **out) {
    pt_error err = {0};
    char safe[4096];
    for (int i = 0; i < l->n; i++) {
        if (pt_lora_load(model, l->path[i], &out[i], &err) != PT_OK) {
            run_loras_free(out, i);
            app_error("--lora %s: %s", app_escaped(l->path[i], safe, sizeof safe), err.msg);
            return 1;
        }
    }
    if (pt_context_set_loras(ctx, out, l->scale, l->n, &err) != PT_OK) {
        run_loras_free(out, l->n);
        app_error("--lora: %s", err.msg);
        return 1;
    }
    return 0;
}

void run_loras_free(pt_lora **loras, int n) {
    for (int i = 0; i < n; i++) {
        pt_lora_free(loras[i]);
        loras[i] = NULL;
    }
}

/* Parse a float option value; -1 after printing an error when invalid. */
static int float_opt(const char *name, const char *v, double lo, double hi, float *out) {
    if (!v) return -1;
    if (!arg_float(v, lo, hi, out)) {
        app_error("%s wants a number in [%g, %g], not '%s'", name, lo, hi, v);
        return -1;
    }
    return 1;
}

static int int_opt(const char *name, const char *v, long lo, long hi, int *out) {
    if (!v) return -1;
    if (!arg_int(v, lo, hi, out)) {
        app_error("%s wants a whole number in [%ld, %ld], not '%s'", name, lo, hi, v);
        return -1;
    }
    return 1;
}

int run_options_parse(run_options *o, int argc, char **argv, int *i) {
    const char *a = argv[*i];
    pt_sampler_params *sp = &o->sampling;
    pt_context_params *cp = &o->context;
    if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
        o->model = arg_value(argc, argv, i);
        return o->model ? 1 : -1;
    }
    if (!strcmp(a, "--lora")) return run_loras_add(&o->loras, arg_value(argc, argv, i));
    if (!strcmp(a, "--device")) return app_device_parse(&o->device, arg_value(argc, argv, i));
    if (!strcmp(a, "--temp")) return float_opt(a, arg_value(argc, argv, i), 0, 100, &sp->temperature);
    if (!strcmp(a, "--top-k")) return int_opt(a, arg_value(argc, argv, i), 0, 1 << 30, &sp->top_k);
    if (!strcmp(a, "--top-p")) return float_opt(a, arg_value(argc, argv, i), 0, 1, &sp->top_p);
    if (!strcmp(a, "--min-p")) return float_opt(a, arg_value(argc, argv, i), 0, 1, &sp->min_p);
    if (!strcmp(a, "--repeat-penalty"))
        return float_opt(a, arg_value(argc, argv, i), 0.01, 100, &sp->repeat_penalty);
    if (!strcmp(a, "--presence-penalty"))
        return float_opt(a, arg_value(argc, argv, i), -100, 100, &sp->presence_penalty);
    if (!strcmp(a, "--frequency-penalty"))
        return float_opt(a, arg_value(argc, argv, i), -100, 100, &sp->frequency_penalty);
    if (!strcmp(a, "--repeat-last-n"))
        return int_opt(a, arg_value(argc, argv, i), 0, 1 << 20, &sp->penalty_last_n);
    if (!strcmp(a, "-s") || !strcmp(a, "--seed")) {
        const char *v = arg_value(argc, argv, i);
        if (!v) return -1;
        if (!arg_u64(v, &sp->seed)) {
            app_error("%s wants a non-negative whole number, not '%s'", a, v);
            return -1;
        }
        return 1;
    }
    if (!strcmp(a, "-c") || !strcmp(a, "--ctx-size"))
        return int_opt(a, arg_value(argc, argv, i), 0, 1 << 22, &cp->n_ctx);
    if (!strcmp(a, "-t") || !strcmp(a, "--threads"))
        return int_opt(a, arg_value(argc, argv, i), 0, 1024, &cp->n_threads);
    if (!strcmp(a, "-b") || !strcmp(a, "--batch-size"))
        return int_opt(a, arg_value(argc, argv, i), 1, 1 << 16, &cp->n_batch);
    return kv_args_parse(&o->kv, cp, argc, argv, i, false);
}

int run_session_open(run_session *s, const run_options *o) {
    memset(s, 0, sizeof *s);
    const char *path = app_model_path(o->model, s->model_path, sizeof s->model_path);
    if (!path) return 1;
    if (path != s->model_path) snprintf(s->model_path, sizeof s->model_path, "%s", path);
    pt_error err = {0};
    app_catch_sigbus(s->model_path);
    if (pt_threadpool_new(o->context.n_threads, &s->pool, &err) != PT_OK) return app_fail(&err);
    pt_model_params mp = app_model_params(s->pool);
    app_device_params(&o->device, &mp);
    pt_context_params cp = o->context;
    cp.threadpool = s->pool;
    if (pt_model_load(s->model_path, &mp, &s->model, &err) != PT_OK) {
        run_session_close(s);
        return app_fail(&err);
    }
    app_device_report(&o->device, s->model);
    if (pt_context_new(s->model, &cp, &s->ctx, &err) != PT_OK) {
        run_session_close(s);
        return app_fail(&err);
    }
    if (o->loras.n && run_loras_open(&o->loras, s->model, s->ctx, s->loras) != 0) {
        run_session_close(s);
        return 1;
    }
    s->n_loras = o->loras.n;
    pt_model_info info;
    pt_model_get_info(s->model, &info);
    s->sampler = pt_sampler_new(&o->sampling, info.n_vocab);
    if (!s->sampler) {
        run_session_close(s);
        app_error("out of memory creating the sampler");
        return 1;
    }
    return 0;
}

void run_session_close(run_session *s) {
    pt_sampler_free(s->sampler);
    pt_context_free(s->ctx);
    run_loras_free(s->loras, s->n_loras); /* after the context that used them */
    pt_model_free(s->model);
    pt_threadpool_free(s->pool); /* after everything that runs on it */
    memset(s, 0, sizeof *s);
}

int run_session_tokenize(run_session *s, const char *text, bool add_special, pt_token **tokens,
                         int *n_tokens) {
    size_t len = strlen(text);
    int cap = (int)(len < (1u << 24) ? len : (1u << 24)) + 8;
    for (;;) {
        pt_token *buf = malloc((size_t)cap * sizeof *buf);
        if (!buf) {
            app_error("out of memory tokenizing the prompt");
            return 1;
        }
        int n = pt_tokenize(s->model, text, len, add_special, true, buf, cap);
        if (n < 0) {
            free(buf);
            app_error("could not tokenize the prompt");
            return 1;
        }
        if (n <= cap) {
            *tokens = buf;
            *n_tokens = n;
            return 0;
        }
        free(buf);
        cap = n;
    }
}

int run_session_prompt(run_session *s, const char *prompt, const char *system, bool chat,
                       pt_token **tokens, int *n_tokens) {
    if (!chat) return run_session_tokenize(s, prompt, true, tokens, n_tokens);
    pt_chat_message msgs[2];
    int n = 0;
    if (system) msgs[n++] = (pt_chat_message){"system", system};
    msgs[n++] = (pt_chat_message){"user", prompt};
    pt_model_info info;
    pt_model_get_info(s->model, &info);
    if (!strcmp(info.chat_template_kind, "unknown"))
        fputs("petrel: warning: the model's chat template is not recognised; using ChatML "
              "(see docs/chat-templates.md)\n", stderr);
    /* Special tokens typed in the prompt stay text: no forged turns. */
    pt_error err = {0};
    if (pt_chat_tokenize(s->model, msgs, n, true, true, tokens, n_tokens, &err) != PT_OK)
        return app_fail(&err);
    return 0;
}

void run_print_stats(FILE *f, const pt_generate_stats *st) {
    fprintf(f, "prefill: %d tokens in %.3f s (%.2f tok/s)\n", st->n_prompt, st->prefill_seconds,
            st->prefill_tps);
    fprintf(f, "decode: %d tokens in %.3f s (%.2f tok/s)\n", st->n_generated, st->decode_seconds,
            st->decode_tps);
}
