/* kv_args.c — KV cache options (kv_args.h). */
#include "kv_args.h"

#include "args.h"

#include <stdlib.h>
#include <string.h>

void kv_args_init(kv_args *k) {
    memset(k, 0, sizeof *k);
    k->ctk = k->ctv = -1;
}

/* $XDG_CACHE_HOME/petrel (an absolute XDG_CACHE_HOME), else
 * $HOME/.cache/petrel; false when neither is usable (the engine then
 * uses the system's temporary directory). */
static bool cache_dir(char *buf, size_t cap) {
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n;
    if (xdg && xdg[0] == '/') n = snprintf(buf, cap, "%s/petrel", xdg);
    else if (home && home[0] == '/') n = snprintf(buf, cap, "%s/.cache/petrel", home);
    else return false;
    return n > 0 && (size_t)n < cap;
}

static int type_value(const char *a, const char *v, int *out) {
    if (!v) return -1;
    const int t = pt_kv_type_from_name(v);
    if (t < 0) {
        char safe[128];
        app_error("%s wants f32, f16, q8 or q8f8, not '%s'", a, app_escaped(v, safe, sizeof safe));
        return -1;
    }
    *out = t;
    return 1;
}

int kv_args_parse(kv_args *k, pt_context_params *cp, int argc, char **argv, int *i, bool llama_names) {
    const char *a = argv[*i];
    int t;
    if (!strcmp(a, "--kv-type")) {
        if (type_value(a, arg_value(argc, argv, i), &t) < 0) return -1;
        cp->kv_type = (pt_kv_type)t;
        k->ctk = k->ctv = -1;
        return 1;
    }
    if (llama_names && (!strcmp(a, "-ctk") || !strcmp(a, "--cache-type-k") || !strcmp(a, "-ctv") ||
                        !strcmp(a, "--cache-type-v"))) {
        if (type_value(a, arg_value(argc, argv, i), &t) < 0) return -1;
        if (!strcmp(a, "-ctk") || !strcmp(a, "--cache-type-k")) k->ctk = t;
        else k->ctv = t;
        cp->kv_type = (pt_kv_type)t;
        return 1;
    }
    if (!strcmp(a, "--kv-qk")) {
        static const char *const names[] = {"auto", "float", "int8"};
        const char *v = arg_value(argc, argv, i);
        if (!v) return -1;
        for (int m = PT_KV_QK_AUTO; m <= PT_KV_QK_INT8; m++)
            if (!strcmp(v, names[m])) {
                cp->kv_qk = (pt_kv_qk)m;
                return 1;
            }
        char safe[128];
        app_error("%s wants auto, float or int8, not '%s'", a, app_escaped(v, safe, sizeof safe));
        return -1;
    }
    if (!strcmp(a, "--kv-ram")) {
        const char *v = arg_value(argc, argv, i);
        if (!v) return -1;
        if (!arg_int(v, 0, 1 << 24, &cp->kv_ram_mb)) {
            app_error("%s wants a whole number of MiB in [0, %d], not '%s'", a, 1 << 24, v);
            return -1;
        }
        if (!cp->kv_spill_dir && cache_dir(k->dir, sizeof k->dir)) cp->kv_spill_dir = k->dir;
        return 1;
    }
    if (!strcmp(a, "--kv-spill-dir")) {
        const char *v = arg_value(argc, argv, i);
        if (!v) return -1;
        if (!*v) {
            app_error("%s wants a directory", a);
            return -1;
        }
        cp->kv_spill_dir = v;
        return 1;
    }
    return 0;
}

int kv_args_check(const kv_args *k) {
    if (k->ctk >= 0 && k->ctv >= 0 && k->ctk != k->ctv) {
        app_error("-ctk %s and -ctv %s differ: petrel's KV types cover keys and values together "
                  "(q8f8 is int8 keys with fp8 values)",
                  pt_kv_type_name(k->ctk), pt_kv_type_name(k->ctv));
        return -1;
    }
    return 0;
}

void kv_args_usage(FILE *f) {
    fputs("      --kv-type T          KV cache type: f32 (default), f16, q8 (int8, a scale per 32),\n"
          "                           q8f8 (int8 keys, fp8 e5m2 values)\n"
          "      --kv-qk M            scores of q8 / q8f8 keys: int8 (queries quantized, integer\n"
          "                           dot products), float (keys decoded) or auto (default)\n"
          "      --kv-ram MB          KV RAM budget; past it the coldest pages go to a private\n"
          "                           spill file and are read back ahead of use (0: none)\n"
          "      --kv-spill-dir DIR   where the spill file goes (default $XDG_CACHE_HOME/petrel)\n",
          f);
}

void kv_args_print_stats(FILE *f, const pt_context *ctx) {
    pt_kv_stats ks;
    pt_context_kv_stats(ctx, &ks);
    if (!ks.budget_bytes) return;
    fprintf(f, "kv: %u B/token, RAM %.1f MiB, disk %.1f MiB, budget %.1f MiB, read ahead %llu pages, "
               "hits %llu, stalls %llu\n",
            ks.bytes_per_token, ks.ram_bytes / 1048576.0, ks.disk_bytes / 1048576.0, ks.budget_bytes / 1048576.0,
            (unsigned long long)ks.pages_read_ahead, (unsigned long long)ks.read_hits,
            (unsigned long long)ks.read_stalls);
}
