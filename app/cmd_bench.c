/*
 * cmd_bench.c — `petrel bench`: prefill and decode speed, measured the way
 * llama.cpp's llama-bench measures it and printed in its formats, so the two
 * tools can be run side by side and read by the same scripts.
 *
 * Semantics (llama-bench's, checked against tools/llama-bench/llama-bench.cpp
 * of the llama.cpp that bench/build_llamacpp.sh pins):
 *   - Tests: each -p N gives "ppN" (N prompt tokens, no generation), each
 *     -n N gives "tgN" (N single-token decodes from an empty context), each
 *     -pg P,N gives "ppP+tgN" (both, timed together); a value of 0 is no
 *     test. -d D first fills the context with D tokens, untimed ("@ dD").
 *   - The loops nest as llama-bench's: model, batch, ubatch, threads, depth,
 *     then the pp tests, the tg tests, the pp+tg tests.
 *   - Tokens are random ids in [0, n_vocab) from one seeded generator for
 *     the whole run, except that the first token of a prompt, and the first
 *     token of a generation, is BOS when the model adds one.
 *   - A prompt is fed in pt_decode calls of at most -b tokens (llama-bench's
 *     logical batch); the context is made with n_batch = -ub, the most
 *     tokens per forward pass (llama-bench's physical micro-batch). A
 *     generation is n_gen calls of one token each.
 *   - One context per test, n_ctx = n_prompt + n_gen + n_depth. One warm-up
 *     run per test (the whole prompt, then one generated token), then -r
 *     repetitions; the KV cache is cleared (pt_context_reset) before each.
 *   - Speed per repetition is (n_prompt + n_gen) / seconds; avg_ts and
 *     stddev_ts are the mean and sample standard deviation of those.
 *
 * Uses only the public API (petrel.h).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "kv_args.h"
#include "device_opt.h"
#include "run_options.h"
#include "sigbus.h"
#include "commands.h"

#define BENCH_SEED 1u /* token generator seed: every run draws the same ids */

/* ---- small growable lists ---------------------------------------------- */

typedef struct int_list {
    int *v;
    int n, cap;
} int_list;

static bool int_push(int_list *l, int x) {
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 8;
        int *v = realloc(l->v, (size_t)cap * sizeof *v);
        if (!v) return false;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = x;
    return true;
}

typedef struct str_list {
    char **v;
    int n, cap;
} str_list;

static bool str_push(str_list *l, const char *s, size_t len) {
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 4;
        char **v = realloc(l->v, (size_t)cap * sizeof *v);
        if (!v) return false;
        l->v = v;
        l->cap = cap;
    }
    char *c = malloc(len + 1);
    if (!c) return false;
    memcpy(c, s, len);
    c[len] = '\0';
    l->v[l->n++] = c;
    return true;
}

static void str_free(str_list *l) {
    for (int i = 0; i < l->n; i++) free(l->v[i]);
    free(l->v);
}

/* ---- options ------------------------------------------------------------ */

typedef enum out_format { OUT_NONE, OUT_MD, OUT_JSON, OUT_JSONL, OUT_CSV } out_format;

typedef struct bench_opts {
    str_list models;
    int_list n_prompt, n_gen, n_depth, n_batch, n_ubatch, n_threads;
    int_list pg; /* pairs: pg.v[2k] prompt, pg.v[2k+1] generation */
    int reps;
    out_format out, out_err;
    bool progress, no_warmup;
    run_loras loras; /* --lora: active in every test */
    pt_context_params kvp; /* its KV fields: --kv-type (-ctk/-ctv), --kv-ram, --kv-spill-dir */
    kv_args kv;
    app_device device; /* --device: every model runs there */
} bench_opts;

/* Defaults, as llama-bench's (threads: the machine's online CPUs). */
#define DEF_PROMPT 512
#define DEF_GEN 128
#define DEF_BATCH 2048
#define DEF_UBATCH 512
#define DEF_REPS 5

static void usage(FILE *f) {
    fputs("usage: petrel bench [options]     (llama-bench compatible)\n"
          "  -m, --model FILE          model(s) to test (default: the default model)\n"
          "  -p, --n-prompt N          prompt sizes: ppN tests (default: 512)\n"
          "  -n, --n-gen N             generation lengths: tgN tests (default: 128)\n"
          "  -pg PP,TG                 prompt then generation, timed together\n"
          "  -d, --n-depth N           tokens already in the context, untimed (default: 0)\n"
          "  -b, --batch-size N        tokens per pt_decode call in a prompt (default: 2048)\n"
          "  -ub, --ubatch-size N      most tokens per forward pass (default: 512)\n"
          "  -t, --threads N           threads (default: online CPUs)\n"
          "  -r, --repetitions N       repetitions of each test (default: 5)\n"
          "  -o, --output FMT          md, json, jsonl or csv on stdout (default: md)\n"
          "  -oe, --output-err FMT     the same on stderr (default: none)\n"
          "  --progress                progress lines on stderr\n"
          "  --no-warmup               skip the warm-up run of each test\n"
          "  --lora PATH[:SCALE]       a LoRA adapter active in every test (repeat to stack)\n"
          "  -ctk, -ctv T              KV cache type (as --kv-type; both must agree)\n"
          "  --device DEV              cpu (default), opencl or opencl:N: where the models run\n"
          "Values may be lists: 'a,b,c', 'first-last', 'first-last+step' or\n"
          "'first-last*mult', and options may be repeated.\n",
          f);
    kv_args_usage(f);
}

/* Append the values of one list argument ("first[-last[(+|*)step]]"
 * items separated by commas) to l. Values below lo are rejected. */
/* Bounds on what lists may ask for: "-n 1-16777216" would otherwise mean
 * 16M values and, crossed with the other lists, gigabytes of test entries. */
#define BENCH_MAX_VALUES 1024
#define BENCH_MAX_TESTS 65536

static bool parse_int_list(const char *s, int lo, int_list *l) {
    if (!*s) return false;
    while (*s) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        char item[64];
        if (len == 0 || len >= sizeof item) return false;
        memcpy(item, s, len);
        item[len] = '\0';
        /* split "first-last" then "last+step" / "last*step" */
        char *dash = strchr(item, '-'), *opp = NULL;
        char op = '+';
        int first, last, step = 1;
        if (dash) {
            *dash = '\0';
            opp = strpbrk(dash + 1, "+*");
            if (opp) {
                op = *opp;
                *opp = '\0';
                if (!arg_int(opp + 1, 1, 1 << 24, &step)) return false;
            }
            if (!arg_int(item, lo, 1 << 24, &first) || !arg_int(dash + 1, lo, 1 << 24, &last))
                return false;
        } else {
            if (!arg_int(item, lo, 1 << 24, &first)) return false;
            last = first;
        }
        if (last < first || (op == '*' && (step < 2 || first < 1))) return false;
        for (long x = first; x <= last; x = op == '+' ? x + step : x * step)
            if (l->n >= BENCH_MAX_VALUES || !int_push(l, (int)x)) return false;
        s += len;
        if (*s == ',') {
            s++;
            if (!*s) return false; /* trailing comma */
        }
    }
    return true;
}

static bool parse_format(const char *s, out_format *f) {
    static const struct { const char *name; out_format f; } T[] = {
        {"md", OUT_MD}, {"json", OUT_JSON}, {"jsonl", OUT_JSONL}, {"csv", OUT_CSV}, {"none", OUT_NONE},
    };
    for (size_t i = 0; i < sizeof T / sizeof T[0]; i++)
        if (!strcmp(s, T[i].name)) {
            *f = T[i].f;
            return true;
        }
    return false;
}

/* Parse argv into o. Returns 0 to go on, or an exit status (help: 0 with
 * *done set; usage errors: 2 with one "petrel: bench: ..." line printed). */
static int parse_args(int argc, char **argv, bench_opts *o, bool *done) {
    *done = false;
    o->reps = DEF_REPS;
    o->kvp = pt_context_default_params();
    kv_args_init(&o->kv);
    o->out = OUT_MD;
    o->out_err = OUT_NONE;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        int_list *list = NULL;
        int lo = 0;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            *done = true;
            return 0;
        } else if (!strcmp(a, "--progress")) {
            o->progress = true;
            continue;
        } else if (!strcmp(a, "--no-warmup")) {
            o->no_warmup = true;
            continue;
        } else if (!strcmp(a, "--lora")) {
            if (run_loras_add(&o->loras, arg_value(argc, argv, &i)) < 0) return 2;
            continue;
        } else if (!strcmp(a, "--device")) {
            if (app_device_parse(&o->device, arg_value(argc, argv, &i)) < 0) return 2;
            continue;
        }
        const int kr = kv_args_parse(&o->kv, &o->kvp, argc, argv, &i, true);
        if (kr < 0) return 2;
        if (kr > 0) continue;
        if (a[0] != '-' || !a[1]) {
            app_error("bench: unexpected argument '%s' (models go after -m)", a);
            return 2;
        }
        if (!strcmp(a, "-p") || !strcmp(a, "--n-prompt")) list = &o->n_prompt;
        else if (!strcmp(a, "-n") || !strcmp(a, "--n-gen")) list = &o->n_gen;
        else if (!strcmp(a, "-d") || !strcmp(a, "--n-depth")) list = &o->n_depth;
        else if (!strcmp(a, "-b") || !strcmp(a, "--batch-size")) list = &o->n_batch, lo = 1;
        else if (!strcmp(a, "-ub") || !strcmp(a, "--ubatch-size")) list = &o->n_ubatch, lo = 1;
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) list = &o->n_threads, lo = 1;
        else if (strcmp(a, "-m") && strcmp(a, "--model") && strcmp(a, "-pg") && strcmp(a, "-r") &&
                 strcmp(a, "--repetitions") && strcmp(a, "-o") && strcmp(a, "--output") &&
                 strcmp(a, "-oe") && strcmp(a, "--output-err")) {
            app_error("bench: unknown option '%s' (see petrel bench --help)", a);
            return 2;
        }
        if (!(v = arg_value(argc, argv, &i))) return 2;
        if (list) {
            if (!parse_int_list(v, lo, list)) {
                app_error("bench: bad value '%s' for %s (want at most %d integers >= %d, e.g. "
                          "64,512 or 64-512*2)", v, a, BENCH_MAX_VALUES, lo);
                return 2;
            }
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            for (const char *s = v; *s;) { /* comma list, as llama-bench */
                const char *c = strchr(s, ',');
                size_t len = c ? (size_t)(c - s) : strlen(s);
                if (len == 0 || len >= 4096) {
                    app_error("bench: bad model list '%s'", v);
                    return 2;
                }
                /* each a path, a catalog ID or a pulled file's name */
                char name[4096], buf[4096];
                memcpy(name, s, len);
                name[len] = 0;
                const char *path = app_model_path(name, buf, sizeof buf);
                if (!path) return 1;
                if (!str_push(&o->models, path, strlen(path))) {
                    app_error("bench: out of memory");
                    return 1;
                }
                s += len + (c != NULL);
            }
        } else if (!strcmp(a, "-pg")) {
            const char *c = strchr(v, ',');
            char pp[32];
            int p, g;
            size_t len = c ? (size_t)(c - v) : 0;
            if (!c || len >= sizeof pp) goto bad_pg;
            memcpy(pp, v, len);
            pp[len] = '\0';
            if (!arg_int(pp, 0, 1 << 24, &p) || !arg_int(c + 1, 0, 1 << 24, &g)) goto bad_pg;
            if (!int_push(&o->pg, p) || !int_push(&o->pg, g)) goto bad_pg;
            continue;
        bad_pg:
            app_error("bench: bad value '%s' for -pg (want PP,TG, e.g. 512,128)", v);
            return 2;
        } else if (!strcmp(a, "-r") || !strcmp(a, "--repetitions")) {
            if (!arg_int(v, 1, 1000000, &o->reps)) {
                app_error("bench: bad value '%s' for %s (want an integer >= 1)", v, a);
                return 2;
            }
        } else { /* -o / -oe */
            out_format *f = (!strcmp(a, "-o") || !strcmp(a, "--output")) ? &o->out : &o->out_err;
            if (!parse_format(v, f)) {
                app_error("bench: unknown output format '%s' (md, json, jsonl, csv or none)", v);
                return 2;
            }
        }
    }
    if (kv_args_check(&o->kv) < 0) return 2;
    /* Defaults for lists not given, as llama-bench: a given list replaces
     * the default. */
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if ((!o->n_prompt.n && !int_push(&o->n_prompt, DEF_PROMPT)) ||
        (!o->n_gen.n && !int_push(&o->n_gen, DEF_GEN)) ||
        (!o->n_depth.n && !int_push(&o->n_depth, 0)) ||
        (!o->n_batch.n && !int_push(&o->n_batch, DEF_BATCH)) ||
        (!o->n_ubatch.n && !int_push(&o->n_ubatch, DEF_UBATCH)) ||
        (!o->n_threads.n && !int_push(&o->n_threads, ncpu > 0 ? (int)ncpu : 1))) {
        app_error("bench: out of memory");
        return 1;
    }
    return 0;
}

/* ---- one test: its settings and timings --------------------------------- */

typedef struct bench_test {
    const char *model_path;
    int model_index;
    int n_prompt, n_gen, n_depth, n_batch, n_ubatch, n_threads;
    /* filled from the model */
    char model_type[160];
    const char *backend;  /* "CPU" or "OpenCL": where its layers ran */
    uint64_t model_size, model_n_params;
    const char *kv_type; /* "f32", "f16" or "unknown", see kv_type_name */
    char test_time[32];  /* RFC 3339, UTC, when the test started */
    uint64_t *samples_ns;
    int n_samples;
} bench_test;

static double sample_ts(const bench_test *t, int i) {
    return 1e9 * (double)(t->n_prompt + t->n_gen) / (double)t->samples_ns[i];
}

/* Mean and sample standard deviation (n-1; 0 for fewer than 2 samples)
 * of the nanoseconds and of the tokens/s of the repetitions. */
static void test_stats(const bench_test *t, double *avg_ns, double *sd_ns, double *avg_ts,
                       double *sd_ts) {
    const int n = t->n_samples;
    double sn = 0, st = 0, qn = 0, qt = 0;
    for (int i = 0; i < n; i++) {
        sn += (double)t->samples_ns[i];
        st += sample_ts(t, i);
    }
    *avg_ns = n ? sn / n : 0;
    *avg_ts = n ? st / n : 0;
    for (int i = 0; i < n; i++) {
        double dn = (double)t->samples_ns[i] - *avg_ns, dt = sample_ts(t, i) - *avg_ts;
        qn += dn * dn;
        qt += dt * dt;
    }
    *sd_ns = n > 1 ? sqrt(qn / (n - 1)) : 0;
    *sd_ts = n > 1 ? sqrt(qt / (n - 1)) : 0;
}

/* "pp512", "tg128", "pp512+tg128", with " @ dN" for a depth. */
static void test_name(const bench_test *t, char *buf, size_t cap) {
    int n;
    if (t->n_prompt > 0 && t->n_gen == 0) n = snprintf(buf, cap, "pp%d", t->n_prompt);
    else if (t->n_gen > 0 && t->n_prompt == 0) n = snprintf(buf, cap, "tg%d", t->n_gen);
    else n = snprintf(buf, cap, "pp%d+tg%d", t->n_prompt, t->n_gen);
    if (t->n_depth > 0 && n > 0 && (size_t)n < cap) snprintf(buf + n, cap - (size_t)n, " @ d%d", t->n_depth);
}

/* ---- the machine -------------------------------------------------------- */

/* The CPU's name from /proc/cpuinfo ("model name", or "Hardware" on some
 * ARM kernels), as llama.cpp's CPU device describes itself; "CPU" when
 * neither is there. */
static void cpu_info(char *buf, size_t cap) {
    snprintf(buf, cap, "CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) && strncmp(line, "Hardware", 8)) continue;
        char *c = strchr(line, ':');
        if (!c) continue;
        c++;
        while (*c == ' ' || *c == '\t') c++;
        c[strcspn(c, "\n")] = '\0';
        if (*c) {
            snprintf(buf, cap, "%s", c);
            break;
        }
    }
    fclose(f);
}

/* ---- output: llama-bench's fields, in its order ------------------------- */

typedef enum field_kind { F_STRING, F_BOOL, F_INT, F_FLOAT } field_kind;

#define N_FIELDS 42
static const struct field_def {
    const char *name;
    field_kind kind;
} FIELDS[N_FIELDS] = {
    {"build_commit", F_STRING}, {"build_number", F_INT},   {"cpu_info", F_STRING},
    {"gpu_info", F_STRING},     {"backends", F_STRING},    {"model_filename", F_STRING},
    {"model_type", F_STRING},   {"model_size", F_INT},     {"model_n_params", F_INT},
    {"n_batch", F_INT},         {"n_ubatch", F_INT},       {"n_threads", F_INT},
    {"cpu_mask", F_STRING},     {"cpu_strict", F_BOOL},    {"poll", F_INT},
    {"type_k", F_STRING},       {"type_v", F_STRING},      {"n_gpu_layers", F_INT},
    {"n_cpu_moe", F_INT},       {"split_mode", F_STRING},  {"main_gpu", F_INT},
    {"no_kv_offload", F_BOOL},  {"flash_attn", F_INT},     {"devices", F_STRING},
    {"tensor_split", F_STRING}, {"tensor_buft_overrides", F_STRING},
    {"load_mode", F_STRING},    {"lazy_mode", F_STRING},   {"embeddings", F_BOOL},
    {"no_op_offload", F_INT},   {"no_host", F_BOOL},       {"repack", F_BOOL},
    {"fit_target", F_INT},      {"fit_min_ctx", F_INT},    {"n_prompt", F_INT},
    {"n_gen", F_INT},           {"n_depth", F_INT},        {"test_time", F_STRING},
    {"avg_ns", F_INT},          {"stddev_ns", F_INT},      {"avg_ts", F_FLOAT},
    {"stddev_ts", F_FLOAT},
};

#ifndef PETREL_BUILD_COMMIT
#define PETREL_BUILD_COMMIT "petrel-" PETREL_VERSION
#endif

/* The value of every field as text (numbers as llama-bench writes them:
 * integers plain, floats "%f", booleans "0"/"1"). The settings petrel does
 * not have (GPU offload, CPU masks, polling, tensor overrides) carry the
 * value that means "not used". */
typedef char field_values[N_FIELDS][512];

static void test_values(const bench_test *t, const char *cpu, field_values out) {
    double avg_ns, sd_ns, avg_ts, sd_ts;
    test_stats(t, &avg_ns, &sd_ns, &avg_ts, &sd_ts);
    int k = 0;
#define STR(s) snprintf(out[k++], sizeof out[0], "%s", (s))
#define INT(x) snprintf(out[k++], sizeof out[0], "%lld", (long long)(x))
#define FLT(x) snprintf(out[k++], sizeof out[0], "%f", (double)(x))
    STR(PETREL_BUILD_COMMIT);
    INT(0);                      /* build_number */
    STR(cpu);
    STR("");                     /* gpu_info */
    STR(t->backend ? t->backend : "CPU"); /* backends */
    STR(t->model_path);
    STR(t->model_type);
    INT(t->model_size);
    INT(t->model_n_params);
    INT(t->n_batch);
    INT(t->n_ubatch);
    INT(t->n_threads);
    STR("0x0");                  /* cpu_mask */
    INT(0);                      /* cpu_strict */
    INT(0);                      /* poll */
    STR(t->kv_type);             /* type_k */
    STR(t->kv_type);             /* type_v */
    INT(0);                      /* n_gpu_layers */
    INT(0);                      /* n_cpu_moe */
    STR("none");                 /* split_mode */
    INT(0);                      /* main_gpu */
    INT(0);                      /* no_kv_offload */
    INT(0);                      /* flash_attn */
    STR("auto");                 /* devices */
    STR("0.00");                 /* tensor_split */
    STR("none");                 /* tensor_buft_overrides */
    STR("mmap");                 /* load_mode: petrel maps the GGUF */
    STR("off");                  /* lazy_mode */
    INT(0);                      /* embeddings */
    INT(0);                      /* no_op_offload */
    INT(0);                      /* no_host */
    INT(0);                      /* repack */
    INT(0);                      /* fit_target */
    INT(0);                      /* fit_min_ctx */
    INT(t->n_prompt);
    INT(t->n_gen);
    INT(t->n_depth);
    STR(t->test_time);
    INT((uint64_t)avg_ns);
    INT((uint64_t)sd_ns);
    FLT(avg_ts);
    FLT(sd_ts);
#undef STR
#undef INT
#undef FLT
}

static void json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"') fputs("\\\"", f);
        else if (c == '\\') fputs("\\\\", f);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

static void json_value(FILE *f, field_kind kind, const char *v) {
    if (kind == F_STRING) json_string(f, v);
    else if (kind == F_BOOL) fputs(strcmp(v, "0") ? "true" : "false", f);
    else fputs(v, f);
}

static void json_samples(FILE *f, const bench_test *t, bool ts) {
    for (int i = 0; i < t->n_samples; i++) {
        if (i) fputs(", ", f);
        if (ts) fprintf(f, "%g", sample_ts(t, i)); /* C++ ostream's default: 6 significant digits */
        else fprintf(f, "%llu", (unsigned long long)t->samples_ns[i]);
    }
}

/* Markdown columns: llama-bench's on a CPU backend (n_batch and n_ubatch
 * only when not the defaults). Width < 0: left aligned. */
typedef struct md_col {
    const char *name;
    int width;
} md_col;

typedef struct printer {
    out_format fmt;
    FILE *f;
    int n_printed;
    md_col cols[12];
    int n_cols;
} printer;

static void print_header(printer *p, const bench_opts *o) {
    FILE *f = p->f;
    switch (p->fmt) {
    case OUT_NONE:
    case OUT_JSONL:
        break;
    case OUT_JSON:
        fputs("[\n", f);
        break;
    case OUT_CSV:
        for (int i = 0; i < N_FIELDS; i++) fprintf(f, "%s%s", i ? "," : "", FIELDS[i].name);
        fputc('\n', f);
        break;
    case OUT_MD: {
        p->n_cols = 0;
        p->cols[p->n_cols++] = (md_col){"model", -30};
        p->cols[p->n_cols++] = (md_col){"size", 10};
        p->cols[p->n_cols++] = (md_col){"params", 10};
        p->cols[p->n_cols++] = (md_col){"backend", -10};
        p->cols[p->n_cols++] = (md_col){"threads", 7};
        if (o->n_batch.n > 1 || o->n_batch.v[0] != DEF_BATCH) p->cols[p->n_cols++] = (md_col){"n_batch", 7};
        if (o->n_ubatch.n > 1 || o->n_ubatch.v[0] != DEF_UBATCH)
            p->cols[p->n_cols++] = (md_col){"n_ubatch", 8};
        p->cols[p->n_cols++] = (md_col){"test", 15};
        p->cols[p->n_cols++] = (md_col){"t/s", 20};
        fputc('|', f);
        for (int i = 0; i < p->n_cols; i++) fprintf(f, " %*s |", p->cols[i].width, p->cols[i].name);
        fputs("\n|", f);
        for (int i = 0; i < p->n_cols; i++) {
            int w = abs(p->cols[i].width);
            fputc(' ', f);
            for (int j = 0; j < w - 1; j++) fputc('-', f);
            fputs(p->cols[i].width > 0 ? ": |" : "- |", f);
        }
        fputc('\n', f);
        break;
    }
    }
    fflush(f);
}

static void print_test(printer *p, const bench_test *t, const char *cpu) {
    field_values v; /* 21 KB */
    FILE *f = p->f;
    if (p->fmt == OUT_NONE) return;
    test_values(t, cpu, v);
    switch (p->fmt) {
    case OUT_NONE:
        break;
    case OUT_JSON:
        fputs(p->n_printed ? ",\n  {\n" : "  {\n", f);
        for (int i = 0; i < N_FIELDS; i++) {
            fprintf(f, "    \"%s\": ", FIELDS[i].name);
            json_value(f, FIELDS[i].kind, v[i]);
            fputs(",\n", f);
        }
        fputs("    \"samples_ns\": [ ", f);
        json_samples(f, t, false);
        fputs(" ],\n    \"samples_ts\": [ ", f);
        json_samples(f, t, true);
        fputs(" ]\n  }", f);
        break;
    case OUT_JSONL:
        fputc('{', f);
        for (int i = 0; i < N_FIELDS; i++) {
            fprintf(f, "\"%s\": ", FIELDS[i].name);
            json_value(f, FIELDS[i].kind, v[i]);
            fputs(", ", f);
        }
        fputs("\"samples_ns\": [ ", f);
        json_samples(f, t, false);
        fputs(" ],\"samples_ts\": [ ", f);
        json_samples(f, t, true);
        fputs(" ]}\n", f);
        break;
    case OUT_CSV:
        for (int i = 0; i < N_FIELDS; i++) {
            fputs(i ? ",\"" : "\"", f);
            for (const char *s = v[i]; *s; s++) {
                if (*s == '"') fputc('"', f);
                fputc(*s, f);
            }
            fputc('"', f);
        }
        fputc('\n', f);
        break;
    case OUT_MD: {
        fputc('|', f);
        for (int i = 0; i < p->n_cols; i++) {
            const char *name = p->cols[i].name;
            int w = p->cols[i].width;
            char buf[160];
            if (!strcmp(name, "model")) {
                snprintf(buf, sizeof buf, "%s", t->model_type);
            } else if (!strcmp(name, "size")) {
                double b = (double)t->model_size;
                if (t->model_size < 1024ull * 1024 * 1024) snprintf(buf, sizeof buf, "%.2f MiB", b / 1048576.0);
                else snprintf(buf, sizeof buf, "%.2f GiB", b / 1073741824.0);
            } else if (!strcmp(name, "params")) {
                double n = (double)t->model_n_params;
                if (t->model_n_params < 1000000000ull) snprintf(buf, sizeof buf, "%.2f M", n / 1e6);
                else snprintf(buf, sizeof buf, "%.2f B", n / 1e9);
            } else if (!strcmp(name, "backend")) {
                snprintf(buf, sizeof buf, "%s", t->backend ? t->backend : "CPU");
            } else if (!strcmp(name, "threads")) {
                snprintf(buf, sizeof buf, "%d", t->n_threads);
            } else if (!strcmp(name, "n_batch")) {
                snprintf(buf, sizeof buf, "%d", t->n_batch);
            } else if (!strcmp(name, "n_ubatch")) {
                snprintf(buf, sizeof buf, "%d", t->n_ubatch);
            } else if (!strcmp(name, "test")) {
                test_name(t, buf, sizeof buf);
            } else { /* t/s; "±" is two bytes, so the field is one wider */
                double a, b, c, d;
                test_stats(t, &a, &b, &c, &d);
                snprintf(buf, sizeof buf, "%.2f \xc2\xb1 %.2f", c, d);
                w += 1;
            }
            fprintf(f, " %*s |", w, buf);
        }
        fputc('\n', f);
        break;
    }
    }
    p->n_printed++;
    fflush(f);
}

static void print_footer(printer *p) {
    if (p->fmt == OUT_JSON) fputs(p->n_printed ? "\n]\n" : "]\n", p->f);
    else if (p->fmt == OUT_MD) fprintf(p->f, "\nbuild: %s (%d)\n", PETREL_BUILD_COMMIT, 0);
    fflush(p->f);
}

/* ---- running ------------------------------------------------------------ */

/* splitmix64: the token ids. One stream for the whole run, as llama-bench
 * uses one std::rand() stream. */
static uint64_t rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

typedef struct runner {
    pt_threadpool *pool; /* of pool_threads threads: the load and every context run on it */
    int pool_threads;
    pt_model *model;
    pt_lora *loras[PT_LORA_MAX]; /* the --lora adapters, loaded for model */
    int n_loras;
    pt_context *ctx;
    int n_vocab;
    pt_token bos; /* -1 when the model adds no BOS */
    uint64_t rng;
    pt_token *tokens; /* [max n_batch] */
    pt_error err;
    const pt_context_params *kvp; /* the KV fields of every test's context */
} runner;

/* The pool for a test of n threads: kept while the thread count stays the
 * same, so the load and the tests share one pool (as the app does). */
static bool use_pool(runner *r, int n_threads) {
    if (r->pool && r->pool_threads == n_threads) return true;
    pt_threadpool_free(r->pool);
    r->pool = NULL;
    if (pt_threadpool_new(n_threads, &r->pool, &r->err) != PT_OK) return false;
    r->pool_threads = n_threads;
    return true;
}

static pt_token random_token(runner *r) { return (pt_token)(rng_next(&r->rng) % (uint64_t)r->n_vocab); }

/* n_prompt tokens in pt_decode calls of at most n_batch. */
static bool run_prompt(runner *r, int n_prompt, int n_batch) {
    for (int done = 0; done < n_prompt;) {
        int n = n_prompt - done < n_batch ? n_prompt - done : n_batch;
        r->tokens[0] = done == 0 && r->bos >= 0 ? r->bos : random_token(r);
        for (int i = 1; i < n; i++) r->tokens[i] = random_token(r);
        if (pt_decode(r->ctx, r->tokens, n, NULL, &r->err) != PT_OK) return false;
        done += n;
    }
    return true;
}

/* n_gen single-token decodes, the first token BOS when the model adds one. */
static bool run_gen(runner *r, int n_gen) {
    pt_token tok = r->bos >= 0 ? r->bos : random_token(r);
    for (int i = 0; i < n_gen; i++) {
        if (pt_decode(r->ctx, &tok, 1, NULL, &r->err) != PT_OK) return false;
        tok = random_token(r);
    }
    return true;
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The KV cache's element type as llama-bench names it (petrel's q8 is
 * llama.cpp's q8_0 layout; q8f8 has no llama.cpp name). */
static const char *kv_type_name(int type) {
    if (type == PT_KV_Q8) return "q8_0";
    const char *n = pt_kv_type_name(type);
    return n ? n : "unknown";
}

/* "qwen2 1.5B Q4_0": architecture, size class and dominant type, as
 * llama.cpp describes a model. */
static void model_type(const pt_model_info *in, char *buf, size_t cap) {
    double n = (double)in->n_params;
    char size[32];
    if (n >= 1e9) snprintf(size, sizeof size, "%.1fB", n / 1e9);
    else snprintf(size, sizeof size, "%.0fM", n / 1e6);
    snprintf(buf, cap, "%s %s %s", in->arch, size, in->ftype);
}

/* The BOS id when tokenizing with add_special puts one in front, else -1
 * (the public API's way of asking "does the model add BOS?"). */
static pt_token model_bos(const pt_model *m) {
    pt_token ids[4];
    int n = pt_tokenize(m, "", 0, true, false, ids, 4);
    pt_token bos = pt_token_bos(m);
    return n >= 1 && bos >= 0 && ids[0] == bos ? bos : -1;
}

static int run_test(runner *r, bench_test *t, int reps, bool warmup, bool progress, int idx,
                    int count, const float *lora_scales) {
    pt_context_params cp = pt_context_default_params();
    cp.n_ctx = t->n_prompt + t->n_gen + t->n_depth;
    cp.n_threads = t->n_threads;
    cp.threadpool = r->pool; /* use_pool made it for t->n_threads */
    cp.n_batch = t->n_ubatch;
    cp.kv_type = r->kvp->kv_type;
    cp.kv_ram_mb = r->kvp->kv_ram_mb;
    cp.kv_qk = r->kvp->kv_qk;
    cp.kv_spill_dir = r->kvp->kv_spill_dir;
    if (pt_context_new(r->model, &cp, &r->ctx, &r->err) != PT_OK) return app_fail(&r->err);
    if (r->n_loras && pt_context_set_loras(r->ctx, r->loras, lora_scales, r->n_loras, &r->err) != PT_OK) {
        pt_context_free(r->ctx);
        r->ctx = NULL;
        return app_fail(&r->err);
    }
    pt_model_info in;
    pt_model_get_info(r->model, &in);
    t->kv_type = kv_type_name(r->kvp->kv_type);
    time_t now = time(NULL);
    strftime(t->test_time, sizeof t->test_time, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    int rc = 0;

    if (warmup) {
        if (progress) fprintf(stderr, "petrel bench: benchmark %d/%d: warmup\n", idx, count);
        if ((t->n_prompt > 0 && !run_prompt(r, t->n_prompt, t->n_batch)) ||
            (t->n_gen > 0 && !run_gen(r, 1))) {
            rc = app_fail(&r->err);
            goto done;
        }
    }
    for (int i = 0; i < reps; i++) {
        pt_context_reset(r->ctx);
        if (t->n_depth > 0 && !run_prompt(r, t->n_depth, t->n_batch)) {
            rc = app_fail(&r->err);
            goto done;
        }
        if (progress) fprintf(stderr, "petrel bench: benchmark %d/%d: run %d/%d\n", idx, count, i + 1, reps);
        uint64_t t0 = now_ns();
        if ((t->n_prompt > 0 && !run_prompt(r, t->n_prompt, t->n_batch)) ||
            (t->n_gen > 0 && !run_gen(r, t->n_gen))) {
            rc = app_fail(&r->err);
            goto done;
        }
        uint64_t dt = now_ns() - t0;
        t->samples_ns[t->n_samples++] = dt ? dt : 1;
    }
    if (cp.kv_ram_mb > 0) { /* the spill's counters, for bench/kv_run.sh */
        pt_kv_stats ks;
        pt_context_kv_stats(r->ctx, &ks);
        fprintf(stderr, "petrel bench: kv %s: ram %llu disk %llu budget %llu read_ahead %llu hits %llu stalls %llu\n",
                t->kv_type, (unsigned long long)ks.ram_bytes, (unsigned long long)ks.disk_bytes,
                (unsigned long long)ks.budget_bytes, (unsigned long long)ks.pages_read_ahead,
                (unsigned long long)ks.read_hits, (unsigned long long)ks.read_stalls);
    }
done:
    pt_context_free(r->ctx);
    r->ctx = NULL;
    return rc;
}

static void opts_free(bench_opts *o) {
    str_free(&o->models);
    free(o->n_prompt.v);
    free(o->n_gen.v);
    free(o->n_depth.v);
    free(o->n_batch.v);
    free(o->n_ubatch.v);
    free(o->n_threads.v);
    free(o->pg.v);
}

/* Every test in llama-bench's order (see the top of the file). */
static bool list_tests(const bench_opts *o, bench_test **out, int *n_out) {
    int cap = 0, n = 0;
    bench_test *v = NULL;
    for (int m = 0; m < o->models.n; m++)
        for (int b = 0; b < o->n_batch.n; b++)
            for (int ub = 0; ub < o->n_ubatch.n; ub++)
                for (int th = 0; th < o->n_threads.n; th++)
                    for (int d = 0; d < o->n_depth.n; d++)
                        for (int kind = 0; kind < 3; kind++) {
                            int count = kind == 0 ? o->n_prompt.n : kind == 1 ? o->n_gen.n : o->pg.n / 2;
                            for (int i = 0; i < count; i++) {
                                int pp = kind == 0 ? o->n_prompt.v[i] : kind == 1 ? 0 : o->pg.v[2 * i];
                                int tg = kind == 0 ? 0 : kind == 1 ? o->n_gen.v[i] : o->pg.v[2 * i + 1];
                                if (pp == 0 && tg == 0) continue;
                                if (n == BENCH_MAX_TESTS) {
                                    free(v);
                                    return false;
                                }
                                if (n == cap) {
                                    cap = cap ? 2 * cap : 16;
                                    bench_test *nv = realloc(v, (size_t)cap * sizeof *nv);
                                    if (!nv) {
                                        free(v);
                                        return false;
                                    }
                                    v = nv;
                                }
                                v[n++] = (bench_test){
                                    .model_path = o->models.v[m], .model_index = m,
                                    .n_prompt = pp, .n_gen = tg, .n_depth = o->n_depth.v[d],
                                    .n_batch = o->n_batch.v[b], .n_ubatch = o->n_ubatch.v[ub],
                                    .n_threads = o->n_threads.v[th],
                                };
                            }
                        }
    *out = v;
    *n_out = n;
    return true;
}

int cmd_bench(int argc, char **argv) {
    bench_opts o = {0};
    bool done;
    int rc = parse_args(argc, argv, &o, &done);
    if (rc || done) {
        opts_free(&o);
        return rc;
    }
    if (!o.models.n) {
        char buf[4096];
        const char *path = app_model_path(NULL, buf, sizeof buf);
        if (!path || !str_push(&o.models, path, strlen(path))) {
            opts_free(&o);
            return 1;
        }
    }
    bench_test *tests = NULL;
    int n_tests = 0, max_batch = 1;
    if (!list_tests(&o, &tests, &n_tests)) {
        app_error("bench: the lists ask for more than %d tests, or out of memory", BENCH_MAX_TESTS);
        opts_free(&o);
        return 1;
    }
    for (int i = 0; i < o.n_batch.n; i++)
        if (o.n_batch.v[i] > max_batch) max_batch = o.n_batch.v[i];

    char cpu[256];
    cpu_info(cpu, sizeof cpu);
    printer out = {.fmt = o.out, .f = stdout}, err_out = {.fmt = o.out_err, .f = stderr};
    print_header(&out, &o);
    print_header(&err_out, &o);

    runner r = {.rng = BENCH_SEED, .kvp = &o.kvp};
    uint64_t *samples = calloc((size_t)o.reps * (size_t)(n_tests ? n_tests : 1), sizeof *samples);
    r.tokens = malloc((size_t)max_batch * sizeof *r.tokens);
    if (!samples || !r.tokens) {
        app_error("bench: out of memory");
        rc = 1;
        goto out;
    }
    int loaded = -1;
    for (int i = 0; i < n_tests && !rc; i++) {
        bench_test *t = &tests[i];
        if (!use_pool(&r, t->n_threads)) {
            rc = app_fail(&r.err);
            break;
        }
        if (t->model_index != loaded) {
            run_loras_free(r.loras, r.n_loras);
            r.n_loras = 0;
            pt_model_free(r.model);
            r.model = NULL;
            loaded = -1;
            if (o.progress) fprintf(stderr, "petrel bench: loading %s\n", t->model_path);
            app_catch_sigbus(t->model_path);
            pt_model_params mp = app_model_params(r.pool);
            app_device_params(&o.device, &mp);
            if (pt_model_load(t->model_path, &mp, &r.model, &r.err) != PT_OK) {
                rc = app_fail(&r.err);
                break;
            }
            app_device_report(&o.device, r.model);
            for (; r.n_loras < o.loras.n; r.n_loras++)
                if (pt_lora_load(r.model, o.loras.path[r.n_loras], &r.loras[r.n_loras], &r.err) != PT_OK) {
                    char safe[4096];
                    app_error("--lora %s: %s", app_escaped(o.loras.path[r.n_loras], safe, sizeof safe), r.err.msg);
                    rc = 1;
                    break;
                }
            if (rc) break;
            loaded = t->model_index;
            r.bos = model_bos(r.model);
        }
        pt_model_info in;
        pt_model_get_info(r.model, &in);
        r.n_vocab = in.n_vocab;
        model_type(&in, t->model_type, sizeof t->model_type);
        t->backend = in.n_device_layers > 0 ? "OpenCL" : "CPU";
        t->model_size = in.weight_bytes;
        t->model_n_params = (uint64_t)in.n_params;
        t->samples_ns = samples + (size_t)i * (size_t)o.reps;
        rc = run_test(&r, t, o.reps, !o.no_warmup, o.progress, i + 1, n_tests, o.loras.scale);
        if (!rc) {
            print_test(&out, t, cpu);
            print_test(&err_out, t, cpu);
        }
    }
    if (!rc) {
        print_footer(&out);
        print_footer(&err_out);
    }
out:
    run_loras_free(r.loras, r.n_loras);
    pt_model_free(r.model);
    pt_threadpool_free(r.pool);
    free(r.tokens);
    free(samples);
    free(tests);
    opts_free(&o);
    return rc;
}
