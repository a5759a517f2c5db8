/*
 * cmd_convert.c — `petrel convert IN OUT [--outtype T]`: a Hugging Face
 * model folder to GGUF, as llama.cpp's convert_hf_to_gguf.py would, or an
 * SD checkpoint to petrel's image GGUF, or a PEFT LoRA adapter to
 * llama.cpp's GGUF adapter form (pt_convert_file does all three).
 * Progress goes to stderr (one line redrawn on a terminal), the sizes to
 * stdout. Ctrl-C stops it and leaves nothing
 * at OUT (exit 130).
 */
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "file_job.h"
#include "sigbus.h"

static void usage(FILE *f) {
    fputs("usage: petrel convert [options] IN OUT.gguf\n"
          "Convert a Hugging Face model folder (config.json, *.safetensors, tokenizer.json or\n"
          "tokenizer.model, tokenizer_config.json) of the llama, qwen2, qwen3 or gemma3 family\n"
          "into a GGUF that petrel and llama.cpp load, with llama.cpp's tensor names and metadata;\n"
          "or a Stable Diffusion checkpoint (a diffusers folder or a single-file .safetensors)\n"
          "into petrel's image GGUF (as tools/sd_to_gguf.py does); or a PEFT LoRA adapter folder\n"
          "(adapter_config.json, adapter_model.safetensors) into llama.cpp's GGUF adapter form\n"
          "(as convert_lora_to_gguf.py writes it), which needs --base.\n"
          "  --outtype T     f32, f16 (default), bf16, q8_0 (as convert_hf_to_gguf.py writes them),\n"
          "                  or any other `petrel quantize` type (q4_k_m, q6_k, ...: converted\n"
          "                  to float first, then quantized with llama-quantize's choices);\n"
          "                  image models: f32, f16, q8_0, q4_0\n"
          "                  LoRA adapters: f32 (default), f16, bf16, q8_0\n"
          "  --base MODEL    a LoRA adapter's base model as GGUF (its architecture, head counts\n"
          "                  and matrix shapes; required for adapters)\n"
          "  -t, --threads N threads for the quantize step (default: all cores)\n", f);
}

static void on_progress(void *user, const pt_convert_progress *p) {
    app_file_job_progress(user, p->tensor, p->n_tensors, p->done, p->total, p->name, p->to_type);
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
        } else if (!strcmp(a, "--base")) {
            if (!(v = arg_value(argc, argv, &i))) return 2;
            cp.base = v;
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
    app_file_job job;
    app_file_job_begin(&job);
    cp.progress = on_progress;
    cp.progress_user = &job;
    cp.cancel = job.cancel;

    pt_convert_result r;
    pt_error err = {0};
    app_catch_sigbus(pos[0]); /* the inputs are mapped: truncated under us -> one line */
    const pt_status st = pt_convert_file(pos[0], pos[1], &cp, &r, &err);
    app_file_job_end(&job);
    if (st == PT_ERR_CANCELLED) {
        app_error("convert: interrupted; nothing written to %s", pos[1]);
        return 130;
    }
    if (st != PT_OK) return app_fail(&err);

    char in_safe[1024], out_safe[1024];
    printf("%s -> %s (%s, %s)\n", app_escaped(pos[0], in_safe, sizeof in_safe),
           app_escaped(pos[1], out_safe, sizeof out_safe), r.arch,
           r.outtype[0] ? r.outtype : cp.outtype ? cp.outtype : "f16");
    printf("%-10s %d tensors, %lld parameters\n", r.adapter ? "adapter" : "model", r.n_tensors,
           (long long)r.n_params);
    printf("%-10s %10.2f MiB -> %10.2f MiB\n", "size", app_mib(r.in_bytes), app_mib(r.out_file_bytes));
    return 0; /* main checks the writes to stdout */
}
