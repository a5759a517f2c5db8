/*
 * cmd_export_lora.c — `petrel export-lora -m MODEL --lora A[:S]... -o OUT`:
 * llama-export-lora's job (pt_lora_export does it): the adapters merged
 * into a private copy of the model. Progress goes to stderr (one line
 * redrawn on a terminal), the result to stdout. Ctrl-C stops it and
 * leaves nothing at OUT (exit 130).
 */
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "file_job.h"
#include "run_options.h"
#include "sigbus.h"

static void usage(FILE *f) {
    fputs("usage: petrel export-lora -m MODEL.gguf --lora ADAPTER[:SCALE] [--lora ...] -o OUT.gguf\n"
          "Merge LoRA adapters (GGUF adapters or PEFT folders) into a copy of MODEL, as llama.cpp's\n"
          "llama-export-lora does: the adapted matrices become W + scale * B A in F16 (F32 when W is\n"
          "F32), everything else is copied. OUT runs without the adapters in petrel and llama.cpp.\n"
          "  -m, --model PATH          the base model the adapters were made for\n"
          "      --lora PATH[:SCALE]   an adapter at SCALE (default 1); repeat to stack up to 8\n"
          "  -o, --output PATH         the merged model to write\n", f);
}

static void on_progress(void *user, const pt_convert_progress *p) {
    app_file_job_progress(user, p->tensor, p->n_tensors, p->done, p->total, p->name, p->to_type);
}

int cmd_export_lora(int argc, char **argv) {
    const char *model = NULL, *out = NULL, *v;
    run_loras loras = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            if (!(model = arg_value(argc, argv, &i))) return 2;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!(out = arg_value(argc, argv, &i))) return 2;
        } else if (!strcmp(a, "--lora")) {
            if (!(v = arg_value(argc, argv, &i)) || run_loras_add(&loras, v) < 0) return 2;
        } else {
            app_error("export-lora: unknown argument '%s'", a);
            return 2;
        }
    }
    if (!model || !out || loras.n == 0) {
        usage(stderr);
        return 2;
    }
    app_file_job job;
    app_file_job_begin(&job);
    pt_convert_params cp = pt_convert_default_params();
    cp.progress = on_progress;
    cp.progress_user = &job;
    cp.cancel = job.cancel;
    pt_convert_result r;
    pt_error err = {0};
    app_catch_sigbus(model); /* the model is mapped: truncated under us -> one line */
    const pt_status st = pt_lora_export(model, (const char *const *)loras.path, loras.scale, loras.n, out, &cp, &r, &err);
    app_file_job_end(&job);
    char out_safe[1024];
    if (st == PT_ERR_CANCELLED) {
        app_error("export-lora: interrupted; nothing written to %s", app_escaped(out, out_safe, sizeof out_safe));
        return 130;
    }
    if (st != PT_OK) return app_fail(&err);
    printf("%s: %s, %d tensors, %.2f MiB, %d adapter%s merged\n", app_escaped(out, out_safe, sizeof out_safe), r.arch,
           r.n_tensors, app_mib(r.out_file_bytes), loras.n, loras.n > 1 ? "s" : "");
    return 0; /* main checks the writes to stdout */
}
