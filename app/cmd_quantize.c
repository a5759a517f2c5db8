/*
 * cmd_quantize.c — `petrel quantize IN OUT TYPE`: llama-quantize's job
 * (pt_quantize_file does it). Progress goes to stderr (one line redrawn
 * on a terminal), the sizes before and after to stdout. Ctrl-C stops it
 * and leaves nothing at OUT (exit 130).
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "args.h"
#include "commands.h"
#include "file_job.h"
#include "sigbus.h"

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

static void on_progress(void *user, const pt_quantize_progress *p) {
    char what[64];
    snprintf(what, sizeof what, "%s -> %s", p->from_type, p->to_type);
    app_file_job_progress(user, p->tensor, p->n_tensors, p->done, p->total, p->name, what);
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
    app_file_job job;
    app_file_job_begin(&job);
    qp.progress = on_progress;
    qp.progress_user = &job;
    qp.cancel = job.cancel;

    pt_quantize_result r;
    pt_error err = {0};
    app_catch_sigbus(pos[0]); /* the input is mapped: truncated under us -> one line */
    const pt_status st = pt_quantize_file(pos[0], pos[1], &qp, &r, &err);
    app_file_job_end(&job);
    if (st == PT_ERR_CANCELLED) {
        app_error("quantize: interrupted; nothing written to %s", pos[1]);
        return 130;
    }
    if (st != PT_OK) return app_fail(&err);

    char in_safe[1024], out_safe[1024];
    printf("%s -> %s (%s, file type %u)\n", app_escaped(pos[0], in_safe, sizeof in_safe),
           app_escaped(pos[1], out_safe, sizeof out_safe), pos[2], r.file_type);
    printf("%-10s %10.2f MiB -> %10.2f MiB\n", "weights", app_mib(r.in_weight_bytes), app_mib(r.out_weight_bytes));
    printf("%-10s %10.2f MiB -> %10.2f MiB\n", "file", app_mib(r.in_file_bytes), app_mib(r.out_file_bytes));
    printf("%-10s %d of %d converted\n", "tensors", r.n_converted, r.n_tensors);
    return 0; /* main checks the writes to stdout */
}
