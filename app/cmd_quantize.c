/*
 * cmd_quantize.c — `petrel quantize IN OUT TYPE`: llama-quantize's job
 * (pt_quantize_file does it). Progress goes to stderr (one line redrawn
 * on a terminal), the sizes before and after to stdout. Ctrl-C stops it
 * and leaves nothing at OUT (exit 130).
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
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

static const char *const TYPES[] = {"F32",  "F16",    "BF16",   "Q8_0", "Q6_K",   "Q5_K_M", "Q5_K",
                                    "Q5_K_S", "Q5_1", "Q5_0", "Q4_K_M", "Q4_K", "Q4_K_S", "Q4_1", "Q4_0"};

static void usage(FILE *f) {
    fputs("usage: petrel quantize [options] IN.gguf OUT.gguf TYPE\n"
          "Write IN's tensors as TYPE, with llama-quantize's per-tensor choices (norms and\n"
          "1-D tensors stay as they are; output.weight gets Q6_K with the 4/5-bit types, Q8_0\n"
          "when its rows are not whole 256-blocks; the K mixes give some attn_v / ffn_down\n"
          "more bits). TYPE: F16 BF16 Q8_0 Q6_K Q5_K_M (= Q5_K) Q5_K_S Q5_1 Q5_0 Q4_K_M (= Q4_K)\n"
          "Q4_K_S Q4_1 Q4_0 (or F32).\n"
          "  -t, --threads N              threads (default: all cores)\n"
          "  --leave-output-tensor        keep output.weight as it is\n"
          "  --output-tensor-type TYPE    type of output.weight (and of a tied token_embd)\n"
          "  --token-embedding-type TYPE  type of token_embd.weight\n"
          "  --allow-requantize           accept quantized tensors (dequantized first)\n", f);
}

static bool known_type(const char *s) {
    for (size_t i = 0; i < sizeof TYPES / sizeof TYPES[0]; i++)
        if (!strcasecmp(s, TYPES[i])) return true;
    return false;
}

typedef struct progress_state {
    bool tty;
    int last_tensor;
    int last_pct;
} progress_state;

static void on_progress(void *user, const pt_quantize_progress *p) {
    progress_state *s = user;
    if (!s->tty) return;
    const int pct = p->total ? (int)(100.0 * (double)p->done / (double)p->total) : 100;
    if (p->tensor == s->last_tensor && pct == s->last_pct) return;
    s->last_tensor = p->tensor;
    s->last_pct = pct;
    char safe[128];
    fprintf(stderr, "\r\033[K[%4d/%4d] %3d%%  %-40.40s %s -> %s", p->tensor + 1, p->n_tensors, pct,
            app_escaped(p->name, safe, sizeof safe), p->from_type, p->to_type);
    fflush(stderr);
}

static double mib(uint64_t n) {
    return (double)n / (1024.0 * 1024.0);
}

int cmd_quantize(int argc, char **argv) {
    pt_quantize_params qp = pt_quantize_default_params();
    const char *pos[3] = {0};
    int n_pos = 0, n_threads = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
            if (!(v = arg_value(argc, argv, &i))) return 2;
            if (!arg_int(v, 1, 1024, &n_threads)) {
                app_error("quantize: bad thread count '%s'", v);
                return 2;
            }
        } else if (!strcmp(a, "--leave-output-tensor")) {
            qp.leave_output = true;
        } else if (!strcmp(a, "--allow-requantize")) {
            qp.allow_requantize = true;
        } else if (!strcmp(a, "--output-tensor-type") || !strcmp(a, "--token-embedding-type")) {
            if (!(v = arg_value(argc, argv, &i))) return 2;
            if (!known_type(v)) {
                app_error("quantize: unknown type '%s' for %s", v, a);
                return 2;
            }
            if (a[2] == 'o') qp.output_type = v;
            else qp.token_embd_type = v;
        } else if (a[0] == '-' && a[1]) {
            app_error("quantize: unknown option '%s'", a);
            return 2;
        } else if (n_pos < 3) {
            pos[n_pos++] = a;
        } else {
            app_error("quantize: too many arguments ('%s')", a);
            return 2;
        }
    }
    if (n_pos != 3) {
        usage(stderr);
        return 2;
    }
    if (!known_type(pos[2])) {
        app_error("quantize: unknown type '%s' (F16, BF16, Q8_0, Q6_K, Q5_K_M, Q5_K_S, Q5_1, Q5_0, Q4_K_M, "
                  "Q4_K_S, Q4_1, Q4_0, F32)", pos[2]);
        return 2;
    }
    qp.type = pos[2];
    qp.n_threads = n_threads;
    progress_state ps = {isatty(STDERR_FILENO), -1, -1};
    qp.progress = on_progress;
    qp.progress_user = &ps;
    qp.cancel = &g_interrupted;
    struct sigaction sa = {.sa_handler = on_sigint}, old_sa;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_sa);

    pt_quantize_result r;
    pt_error err = {0};
    app_catch_sigbus(pos[0]); /* the input is mapped: truncated under us -> one line */
    const pt_status st = pt_quantize_file(pos[0], pos[1], &qp, &r, &err);
    sigaction(SIGINT, &old_sa, NULL);
    if (ps.tty && ps.last_tensor >= 0) fputs("\r\033[K", stderr);
    if (st == PT_ERR_CANCELLED) {
        app_error("quantize: interrupted; nothing written to %s", pos[1]);
        return 130;
    }
    if (st != PT_OK) return app_fail(&err);

    char in_safe[1024], out_safe[1024];
    printf("%s -> %s (%s, file type %u)\n", app_escaped(pos[0], in_safe, sizeof in_safe),
           app_escaped(pos[1], out_safe, sizeof out_safe), pos[2], r.file_type);
    printf("%-10s %10.2f MiB -> %10.2f MiB\n", "weights", mib(r.in_weight_bytes), mib(r.out_weight_bytes));
    printf("%-10s %10.2f MiB -> %10.2f MiB\n", "file", mib(r.in_file_bytes), mib(r.out_file_bytes));
    printf("%-10s %d of %d converted\n", "tensors", r.n_converted, r.n_tensors);
    return 0; /* main checks the writes to stdout */
}
