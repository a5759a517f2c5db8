/*
 * cmd_convert.c — `petrel convert IN OUT [--outtype T]`: a Hugging Face
 * model folder to GGUF, as llama.cpp's convert_hf_to_gguf.py would, or an
 * SD checkpoint to petrel's image GGUF (pt_convert_file does both). Progress goes to stderr (one line redrawn
 * on a terminal), the sizes to stdout. Ctrl-C stops it and leaves nothing
 * at OUT (exit 130).
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "commands.h"
#include "sigbus.h"

/* Set by SIGINT; the only state a signal handler can share with the app. */
static atomic_bool g_interrupted;

static void on_sigint(int sig) {
    (void)sig;
    atomic_store(&g_interrupted, true);
}

static void usage(FILE *f) {
    fputs("usage: petrel convert [options] IN OUT.gguf\n"
          "Convert a Hugging Face model folder (config.json, *.safetensors, tokenizer.json or\n"
          "tokenizer.model, tokenizer_config.json) of the llama, qwen2, qwen3 or gemma3 family\n"
          "into a GGUF that petrel and llama.cpp load, with llama.cpp's tensor names and metadata;\n"
          "or a Stable Diffusion checkpoint (a diffusers folder or a single-file .safetensors)\n"
          "into petrel's image GGUF (as tools/sd_to_gguf.py does).\n"
          "  --outtype T     f32, f16 (default), bf16, q8_0 (as convert_hf_to_gguf.py writes them),\n"
          "                  or any other `petrel quantize` type (q4_k_m, q6_k, ...: converted\n"
          "                  to float first, then quantized with llama-quantize's choices);\n"
          "                  image models: f32, f16, q8_0, q4_0\n"
          "  -t, --threads N threads for the quantize step (default: all cores)\n", f);
}

typedef struct progress_state {
    bool tty;
    int last_tensor;
    int last_pct;
} progress_state;

static void on_progress(void *user, const pt_convert_progress *p) {
    progress_state *s = user;
    if (!s->tty || p->tensor >= p->n_tensors) return;
    const int pct = p->total ? (int)(100.0 * (double)p->done / (double)p->total) : 100;
    if (p->tensor == s->last_tensor && pct == s->last_pct) return;
    s->last_tensor = p->tensor;
    s->last_pct = pct;
    char safe[128];
    fprintf(stderr, "\r\033[K[%4d/%4d] %3d%%  %-40.40s %s", p->tensor + 1, p->n_tensors, pct,
            app_escaped(p->name, safe, sizeof safe), p->to_type);
    fflush(stderr);
}

static double mib(uint64_t n) {
    return (double)n / (1024.0 * 1024.0);
}

int cmd_convert(int argc, char **argv) {
    pt_convert_params cp = pt_convert_default_params();
    const char *pos[2] = {0};
    int n_pos = 0, n_threads = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--outtype")) {
            if (!(v = arg_value(argc, argv, &i))) return 2;
            cp.outtype = v;
        } else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
            if (!(v = arg_value(argc, argv, &i))) return 2;
            if (!arg_int(v, 1, 1024, &n_threads)) {
                app_error("convert: bad thread count '%s'", v);
                return 2;
            }
        } else if (a[0] == '-' && a[1]) {
            app_error("convert: unknown option '%s'", a);
            return 2;
        } else if (n_pos < 2) {
            pos[n_pos++] = a;
        } else {
            app_error("convert: too many arguments ('%s')", a);
            return 2;
        }
    }
    if (n_pos != 2) {
        usage(stderr);
        return 2;
    }
    cp.n_threads = n_threads;
    progress_state ps = {isatty(STDERR_FILENO), -1, -1};
    cp.progress = on_progress;
    cp.progress_user = &ps;
    cp.cancel = &g_interrupted;
    struct sigaction sa = {.sa_handler = on_sigint}, old_sa;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_sa);

    pt_convert_result r;
    pt_error err = {0};
    app_catch_sigbus(pos[0]); /* the inputs are mapped: truncated under us -> one line */
    const pt_status st = pt_convert_file(pos[0], pos[1], &cp, &r, &err);
    sigaction(SIGINT, &old_sa, NULL);
    if (ps.tty && ps.last_tensor >= 0) fputs("\r\033[K", stderr);
    if (st == PT_ERR_CANCELLED) {
        app_error("convert: interrupted; nothing written to %s", pos[1]);
        return 130;
    }
    if (st != PT_OK) return app_fail(&err);

    char in_safe[1024], out_safe[1024];
    printf("%s -> %s (%s, %s)\n", app_escaped(pos[0], in_safe, sizeof in_safe),
           app_escaped(pos[1], out_safe, sizeof out_safe), r.arch, cp.outtype ? cp.outtype : "f16");
    printf("%-10s %d tensors, %lld parameters\n", "model", r.n_tensors, (long long)r.n_params);
    printf("%-10s %10.2f MiB -> %10.2f MiB\n", "size", mib(r.in_bytes), mib(r.out_file_bytes));
    return 0; /* main checks the writes to stdout */
}
