/*
 * cmd_info.c — `petrel info MODEL`: architecture, sizes, quantization,
 * metadata and (with --tensors) every tensor.
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "args.h"
#include "picture_out.h"
#include "sigbus.h"
#include "commands.h"

static void usage(FILE *f) {
    fputs("usage: petrel info [--tensors] [--full] MODEL\n"
          "       petrel info ADAPTER     (a LoRA adapter: PEFT folder or GGUF adapter file)\n"
          "       petrel info --terminal [--graphics MODE]\n"
          "       petrel info --devices\n"
          "  --devices   list the OpenCL platforms and devices (--device opencl:N runs on N)\n"
          "  --tensors   list every tensor with its type, shape and size\n"
          "  --full      show long metadata arrays in full\n"
          "  --terminal  ask the controlling terminal what pictures it can show (sixel,\n"
          "              kitty, iTerm2, cell size, colours) and print what petrel would use\n"
          "  --graphics MODE  with --terminal: the protocol to report as chosen (auto, kitty,\n"
          "              iterm2, sixel, symbols, none; default PETREL_GRAPHICS, else auto)\n", f);
}

static void print_bytes(const char *label, uint64_t n) {
    printf("%-16s %.2f MiB (%llu bytes)\n", label, (double)n / (1024.0 * 1024.0),
           (unsigned long long)n);
}

/* Whether path names a LoRA adapter: a folder holding adapter_config.json
 * (PEFT), a PEFT file, or a GGUF whose general.type is "adapter". Any
 * other folder is left to the model path (and its error). */
static bool is_adapter(const char *path) {
    struct stat sb;
    if (stat(path, &sb) != 0) return false;
    if (S_ISDIR(sb.st_mode)) {
        char cfg[4096];
        return snprintf(cfg, sizeof cfg, "%s/adapter_config.json", path) < (int)sizeof cfg && stat(cfg, &sb) == 0;
    }
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (!strcmp(base, "adapter_config.json") || !strcmp(base, "adapter_model.safetensors")) return true;
    pt_file_probe probe;
    pt_error err;
    return pt_file_probe_gguf(path, &probe, &err) == PT_OK && probe.adapter;
}

/* info ADAPTER: what the file says and what petrel read from it. */
static int adapter_info(const char *path) {
    pt_lora *l = NULL;
    pt_error err = {0};
    if (pt_lora_load(NULL, path, &l, &err) != PT_OK) return app_fail(&err);
    pt_lora_info in;
    pt_lora_get_info(l, &in);
    char safe[4096];
    printf("%-16s %s\n", "file", app_escaped(path, safe, sizeof safe));
    printf("%-16s LoRA adapter (%s)\n", "kind", in.format);
    if (in.arch[0]) printf("%-16s %s\n", "architecture", app_escaped(in.arch, safe, sizeof safe));
    printf("%-16s %s\n", "base model", in.base[0] ? app_escaped(in.base, safe, sizeof safe) : "(not named)");
    printf("%-16s %d\n", "rank", in.rank);
    printf("%-16s %g\n", "alpha", (double)in.alpha);
    printf("%-16s %s\n", "rslora", in.rslora ? "yes" : "no");
    printf("%-16s %g (%s)\n", "scale", (double)in.scale,
           in.rslora ? "alpha / sqrt(rank)" : in.alpha != 0 ? "alpha / rank" : "no alpha: 1");
    printf("%-16s %s\n", "targets", app_escaped(in.targets, safe, sizeof safe));
    printf("%-16s %d in %d layers\n", "matrices", in.n_matrices, in.n_layers);
    print_bytes("size (float32)", in.bytes);
    pt_lora_free(l);
    return 0;
}

/* info --terminal: the probe's findings, "key: value" lines. */
static int terminal_info(const char *graphics) {
    pt_gfx_proto want;
    char why[512];
    if (!pt_gfx_requested(graphics, &want, why, sizeof why)) {
        app_error("info: %s", why);
        return 2;
    }
    pt_term_caps caps;
    picture_probe(want, true, &caps);
    char text[2048];
    pt_gfx_describe(&caps, text, sizeof text);
    fputs(text, stdout);
    return 0;
}

/* info --devices: every OpenCL device, numbered as --device opencl:N
 * takes them; no platform is one line saying so (and status 0: nothing
 * is wrong with petrel, the models run on the CPU). */
static int devices_info(void) {
    enum { CAP = 16 };
    static pt_device_info devs[CAP];
    int n = 0;
    pt_error err = {0};
    if (pt_devices_list(devs, CAP, &n, &err) != PT_OK) {
        printf("no OpenCL devices: %s\n", err.msg);
        return 0;
    }
    if (n == 0) printf("no OpenCL devices: the platforms list none\n");
    for (int i = 0; i < n && i < CAP; i++) {
        const pt_device_info *d = &devs[i];
        printf("opencl:%d  %s\n", i, d->name);
        printf("  platform        %s\n", d->platform);
        printf("  version         %s (driver %s)\n", d->version, d->driver);
        printf("  compute units   %d\n", d->compute_units);
        printf("  global memory   %.0f MiB (largest buffer %.0f MiB)%s\n", (double)d->global_mem / 1048576.0,
               (double)d->max_alloc / 1048576.0, d->unified_memory ? ", shared with the host" : "");
        printf("  local memory    %.0f KiB\n", (double)d->local_mem / 1024.0);
        printf("  int8 dot        %s\n", d->int_dot ? "yes" : "no");
        printf("  subgroups       %s\n", d->subgroups ? "yes" : "no");
        printf("  extensions      %s\n", d->extensions);
    }
    return 0;
}

int cmd_info(int argc, char **argv) {
    const char *path = NULL, *graphics = NULL;
    bool tensors = false, full = false, terminal = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--tensors")) {
            tensors = true;
        } else if (!strcmp(a, "--full")) {
            full = true;
        } else if (!strcmp(a, "--terminal")) {
            terminal = true;
        } else if (!strcmp(a, "--devices")) {
            return devices_info();
        } else if (!strcmp(a, "--graphics")) {
            if (!(graphics = arg_value(argc, argv, &i))) return 2;
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            if (!(path = arg_value(argc, argv, &i))) return 2;
        } else if (a[0] == '-' && a[1]) {
            app_error("info: unknown option '%s'", a);
            return 2;
        } else {
            path = a;
        }
    }
    if (terminal) return terminal_info(graphics);
    if (graphics) {
        app_error("info: --graphics goes with --terminal");
        return 2;
    }
    if (path && is_adapter(path)) {
        if (tensors || full) {
            app_error("info: --tensors and --full are for models, not adapters");
            return 2;
        }
        return adapter_info(path);
    }
    char buf[4096];
    if (!(path = app_model_path(path, buf, sizeof buf))) return 1;
    pt_model *m = NULL;
    pt_error err = {0};
    app_catch_sigbus(path);
    const pt_model_params mp = app_model_params(NULL); /* one load: its private pool */
    if (pt_model_load(path, &mp, &m, &err) != PT_OK) return app_fail(&err);

    pt_model_info in;
    pt_model_get_info(m, &in);
    /* every string below may come from the file: escaped (ESC, OSC, ...) */
    char safe[4096];
    printf("%-16s %s\n", "file", app_escaped(path, safe, sizeof safe));
    printf("%-16s %s\n", "name", in.name[0] ? app_escaped(in.name, safe, sizeof safe) : "(none)");
    printf("%-16s %s\n", "architecture", app_escaped(in.arch, safe, sizeof safe));
    printf("%-16s %.1fM\n", "parameters", (double)in.n_params / 1e6);
    printf("%-16s %s\n", "quantization", app_escaped(in.ftype, safe, sizeof safe));
    print_bytes("file size", in.file_bytes);
    print_bytes("weights", in.weight_bytes);
    printf("%-16s %d\n", "layers", in.n_layer);
    printf("%-16s %d\n", "embedding", in.n_embd);
    printf("%-16s %d\n", "feed-forward", in.n_ff);
    printf("%-16s %d (kv %d, head dim %d)\n", "heads", in.n_head, in.n_head_kv, in.head_dim);
    printf("%-16s %d\n", "vocabulary", in.n_vocab);
    printf("%-16s %d\n", "context (train)", in.n_ctx_train);
    printf("%-16s %g\n", "rope base", (double)in.rope_base);
    if (in.n_swa > 0)
        printf("%-16s %d positions on %d of %d layers (rope base %g)\n", "sliding window", in.n_swa,
               in.n_swa_layers, in.n_layer, (double)in.rope_base_swa);
    printf("%-16s %s\n", "tokenizer", app_escaped(in.tokenizer, safe, sizeof safe));
    printf("%-16s %s\n", "chat template", app_escaped(in.chat_template_kind, safe, sizeof safe));
    printf("%-16s %s, %d matrices repacked (%.1f MiB) in %.3f s\n", "kernels", in.kernels, in.n_repacked,
           (double)in.repacked_bytes / (1 << 20), in.repack_seconds);

    puts("\nmetadata:");
    char key[256], value[1024], safe_value[4096];
    for (int i = 0; pt_model_meta(m, i, key, sizeof key, value, sizeof value, full ? 1 << 20 : 8); i++)
        printf("  %-40s %s\n", app_escaped(key, safe, sizeof safe),
               app_escaped(value, safe_value, sizeof safe_value));

    if (tensors) {
        puts("\ntensors:");
        pt_tensor_info t;
        for (int i = 0; pt_model_tensor(m, i, &t); i++) {
            char shape[96] = "";
            size_t o = 0;
            for (int d = 0; d < t.n_dims && o < sizeof shape; d++)
                o += (size_t)snprintf(shape + o, sizeof shape - o, d ? " x %lld" : "%lld",
                                      (long long)t.ne[d]);
            printf("  %-32s %-5s %-22s %10llu bytes\n", app_escaped(t.name, safe, sizeof safe), t.type, shape,
                   (unsigned long long)t.nbytes);
        }
    }
    pt_model_free(m);
    return 0; /* main checks the writes to stdout */
}
