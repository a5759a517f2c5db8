/*
 * cmd_run.c — `petrel run`: one prompt in, streamed text out.
 * Text goes to stdout as it is generated; prefill and decode speed go to
 * stderr at the end. Ctrl-C stops generation cleanly (exit 130).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "commands.h"
#include "run_options.h"

/* Set by SIGINT; the only state a signal handler can share with the app. */
static atomic_bool g_interrupted;

static void on_sigint(int sig) {
    (void)sig;
    atomic_store(&g_interrupted, true);
}

static bool print_text(const char *text, size_t len, void *user) {
    (void)user;
    fwrite(text, 1, len, stdout);
    fflush(stdout);
    return !ferror(stdout);
}

/* --session FILE: restore FILE when it exists and keep the longest prefix
 * it shares with the prompt (at least the prompt's last token is decoded
 * again, for its logits, unless the file ends exactly there with them).
 * *n_cached: prompt tokens not to prefill. The cached tokens still go to
 * the sampler's penalty window, as a prefill would send them. Returns 0 or
 * an exit status (error printed). */
static int session_restore(run_session *s, const char *path, const pt_token *tokens, int n_tokens,
                           int *n_cached) {
    *n_cached = 0;
    if (access(path, F_OK) != 0) return 0; /* a new session */
    pt_error err = {0};
    if (pt_context_load_session(s->ctx, path, &err) != PT_OK) return app_fail(&err);
    int n_held = 0, common = 0;
    const pt_token *held = pt_context_tokens(s->ctx, &n_held);
    while (common < n_held && common < n_tokens && held[common] == tokens[common]) common++;
    const bool all = common == n_tokens && n_held == n_tokens && pt_context_logits(s->ctx);
    if (!all && common >= n_tokens) common = n_tokens > 0 ? n_tokens - 1 : 0;
    if (pt_context_truncate(s->ctx, common, &err) != PT_OK) return app_fail(&err);
    for (int i = 0; i < common; i++) pt_sampler_accept(s->sampler, tokens[i]);
    *n_cached = common;
    fprintf(stderr, "session: %d of %d prompt tokens reused from %s\n", common, n_tokens, path);
    return 0;
}

static void usage(FILE *f) {
    fputs("usage: petrel run [-m MODEL] -p PROMPT [options]\n"
          "Generate text from PROMPT and stream it to stdout; speed goes to stderr.\n"
          "  -m, --model PATH         GGUF model (default: the SmolLM2 model in the data dir)\n"
          "  -p, --prompt TEXT        the prompt\n"
          "  -n, --n-predict N        tokens to generate (default 256; -1 = until end)\n"
          "      --chat               wrap the prompt with the model's chat template\n"
          "      --system TEXT        system prompt (implies --chat)\n"
          "  -s, --seed N             sampler seed (default 42)\n"
          "  -c, --ctx-size N         context window (default min(model, 4096))\n"
          "  -t, --threads N          threads (default: all cores)\n"
          "  -b, --batch-size N       prefill batch (default 256)\n"
          "      --special            print special tokens\n"
          "      --session FILE       reuse the prompt prefix saved in FILE (its KV cache) and\n"
          "                           save the context there at the end (like llama.cpp's\n"
          "                           --prompt-cache); a missing FILE is created\n", f);
    run_options_usage(f);
}

int cmd_run(int argc, char **argv) {
    run_options o;
    run_options_init(&o);
    const char *prompt = NULL, *system = NULL, *session = NULL;
    int n_predict = 256;
    bool chat = false, special = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r = run_options_parse(&o, argc, argv, &i);
        if (r < 0) return 2;
        if (r > 0) continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "-p") || !strcmp(a, "--prompt")) {
            if (!(prompt = arg_value(argc, argv, &i))) return 2;
        } else if (!strcmp(a, "-n") || !strcmp(a, "--n-predict")) {
            const char *v = arg_value(argc, argv, &i);
            if (!v || !arg_int(v, -1, 1 << 24, &n_predict)) {
                if (v) app_error("%s wants a whole number in [-1, %d], not '%s'", a, 1 << 24, v);
                return 2;
            }
        } else if (!strcmp(a, "--chat")) {
            chat = true;
        } else if (!strcmp(a, "--system")) {
            if (!(system = arg_value(argc, argv, &i))) return 2;
            chat = true;
        } else if (!strcmp(a, "--special")) {
            special = true;
        } else if (!strcmp(a, "--session")) {
            if (!(session = arg_value(argc, argv, &i))) return 2;
        } else {
            app_error("run: unknown option '%s' (see petrel run --help)", a);
            return 2;
        }
    }
    if (!prompt) {
        app_error("run: no prompt given (-p TEXT)");
        return 2;
    }

    run_session s;
    int rc = run_session_open(&s, &o);
    if (rc) return rc;
    pt_token *tokens = NULL;
    int n_tokens = 0;
    rc = run_session_prompt(&s, prompt, system, chat, &tokens, &n_tokens);
    if (rc) {
        run_session_close(&s);
        return rc;
    }

    struct sigaction sa = {.sa_handler = on_sigint};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    pt_generate_params gp = {
        .n_predict = n_predict < 0 ? 0 : n_predict,
        .on_text = print_text,
        .cancel = &g_interrupted,
        .render_special = special,
    };
    pt_generate_stats stats;
    pt_error err = {0};
    int n_cached = 0;
    if (session && (rc = session_restore(&s, session, tokens, n_tokens, &n_cached)) != 0) {
        free(tokens);
        run_session_close(&s);
        return rc;
    }
    pt_status st = pt_generate(s.ctx, s.sampler, tokens + n_cached, n_tokens - n_cached, &gp, NULL, &stats, &err);
    fputc('\n', stdout);
    fflush(stdout);
    signal(SIGINT, SIG_DFL);
    free(tokens);
    if (st == PT_ERR_CANCELLED) { /* ^C while the prompt was read */
        run_session_close(&s);
        return 130;
    }
    if (st != PT_OK) {
        run_session_close(&s);
        return app_fail(&err);
    }
    run_print_stats(stderr, &stats);
    if (stats.stop == PT_STOP_CONTEXT)
        app_error("note: the context window (%d tokens) filled: generation stopped there (-c sets its size)",
                  pt_context_n_ctx(s.ctx));
    if (session && pt_context_save_session(s.ctx, session, &err) != PT_OK) {
        run_session_close(&s);
        return app_fail(&err);
    }
    kv_args_print_stats(stderr, s.ctx);
    run_session_close(&s);
    /* a write error on stdout is reported by main, at exit */
    return stats.stop == PT_STOP_CANCELLED ? 130 : 0;
}
