/*
 * lora_convert.c — `petrel convert` of a PEFT LoRA adapter folder into the
 * GGUF adapter form of llama.cpp's convert_lora_to_gguf.py (layout in
 * lora.h), checked against a GGUF of the base model.
 *
 * What convert_lora_to_gguf.py writes, and so this:
 *   metadata, in this order: general.architecture (the base's),
 *     general.type = "adapter", adapter.type = "lora",
 *     adapter.lora.alpha (f32, the config's lora_alpha),
 *     general.quantization_version = 2 (u32);
 *     the script also writes what gguf-py guesses from the adapter's model
 *     card and folder name (general.name, general.base_model.*,
 *     general.tags): heuristics nobody reads to run the adapter, not
 *     written here.
 *   tensors, in the safetensors file's (sorted) order of the PEFT modules,
 *     for each module NAME.lora_a then NAME.lora_b, NAME the base's GGUF
 *     tensor name: lora_a ne = [cols, rank], lora_b ne = [rank, rows];
 *     F32 by default (the script's default --outtype), else F16, BF16 or
 *     Q8_0 (a factor whose rows are not whole Q8_0 blocks falls back to
 *     F16, as the script's quantize does);
 *   B's rows of q_proj / k_proj of a llama base permuted as the base's
 *     rows (pt_lora_raw_gguf_rows, the reader's own permutation).
 * rsLoRA (use_rslora): the script writes lora_alpha as is, so llama.cpp
 * (scale = alpha / rank) would apply the wrong scale; petrel writes
 * alpha * sqrt(r), which gives alpha / sqrt(r), the adapter's scale (only
 * when every pair has the same rank: one alpha cannot say more).
 *
 * The base model: adapter_config.json does not say the architecture or the
 * head counts the permutation needs (base_model_name_or_path is a hub id
 * or a path, often null), so the converter needs the base's GGUF
 * (params->base): its general.architecture and head counts, and every
 * adapted matrix must be there with the adapter's shape.
 */
#include "convert_internal.h"
#include "lora.h"

#include "quant.h"
#include "gguf_write.h"
#include "status.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

/* The base's facts the adapter needs: architecture, head counts (for the
 * Q/K permutation), and that every pair's matrix exists with its shape. */
pt_status pt_lora_check_base(pt_lora *l, const char *path, const char *flag, char *arch, size_t arch_cap,
                             pt_error *err) {
    pt_gguf *g = NULL;
    pt_status st = pt_gguf_open(path, &g, err);
    if (st != PT_OK) return st;
    pt_gguf_str s;
    uint32_t n_head = 0, n_head_kv = 0;
    char key[96];
    if (pt_gguf_get_str(g, "general.type", &s) && pt_gguf_str_eq(s, "adapter"))
        st = pt_fail(err, PT_ERR_ARG, "%s %s is an adapter, not the base model", flag, path);
    else if (!pt_gguf_get_str(g, "general.architecture", &s) || s.len == 0 || s.len >= arch_cap)
        st = pt_fail(err, PT_ERR_FORMAT, "%s %s has no general.architecture", flag, path);
    if (st == PT_OK) {
        memcpy(arch, s.ptr, (size_t)s.len);
        arch[s.len] = 0;
        snprintf(key, sizeof key, "%s.attention.head_count", arch);
        pt_gguf_get_u32(g, key, &n_head);
        snprintf(key, sizeof key, "%s.attention.head_count_kv", arch);
        if (!pt_gguf_get_u32(g, key, &n_head_kv)) n_head_kv = n_head;
    }
    const bool llama = strcmp(arch, "llama") == 0;
    if (st == PT_OK && l->arch[0] && strcmp(l->arch, arch) != 0)
        st = pt_fail(err, PT_ERR_ARG, "the adapter is for a '%s' model, %s is '%s'", l->arch, path, arch);
    for (int i = 0; st == PT_OK && i < l->n_pairs; i++) {
        pt_lora_raw *r = &l->raw[i];
        const pt_gguf_tensor *t = pt_gguf_find_tensor(g, r->target);
        if (!t)
            st = pt_fail(err, PT_ERR_ARG, "the adapter is for another base model: it adapts '%s', which %s lacks",
                         r->target, path);
        else if (t->n_dims != 2 || t->ne[0] != r->cols || t->ne[1] != r->rows)
            st = pt_fail(err, PT_ERR_ARG,
                         "the adapter is for another base model: '%s' is %lld x %lld in %s but %lld x %lld in the adapter",
                         r->target, (long long)t->ne[1], (long long)t->ne[0], path, (long long)r->rows,
                         (long long)r->cols);
        else if (r->hf_qk && llama && n_head == 0)
            st = pt_fail(err, PT_ERR_FORMAT, "%s %s has no %s.attention.head_count", flag, path, arch);
        else
            st = pt_lora_raw_gguf_rows(r, llama, (int)n_head, (int)n_head_kv, err);
    }
    pt_gguf_close(g);
    return st;
}

/* --outtype of an adapter: the script's choices. */
static bool adapter_type(const char *t, uint32_t *type) {
    if (!t || !*t || !strcasecmp(t, "f32")) *type = PT_TYPE_F32;
    else if (!strcasecmp(t, "f16")) *type = PT_TYPE_F16;
    else if (!strcasecmp(t, "bf16")) *type = PT_TYPE_BF16;
    else if (!strcasecmp(t, "q8_0")) *type = PT_TYPE_Q8_0;
    else return false;
    return true;
}

/* The stored type of a factor of rows of n values: Q8_0 needs whole blocks. */
static uint32_t factor_type(uint32_t type, int64_t n) { return type == PT_TYPE_Q8_0 && n % 32 ? PT_TYPE_F16 : type; }

static void report(const pt_convert_params *p, int i, int n, const pt_gguf_out_tensor *t, uint64_t done,
                   uint64_t total) {
    if (!p->progress) return;
    char name[80] = "";
    if (i < n) snprintf(name, sizeof name, "%.*s", (int)t[i].name.len, t[i].name.ptr);
    const pt_convert_progress pr = {"convert", i, n, name, i < n ? pt_type_name(t[i].type) : "", done, total};
    p->progress(p->progress_user, &pr);
}

static pt_status write_adapter(const pt_lora *l, const char *arch, float alpha, uint32_t type, const char *out,
                               const pt_convert_params *p, pt_convert_result *res, pt_error *err) {
    cv_kv kv = {0};
    cv_kv_cstr(&kv, "general.architecture", arch);
    cv_kv_cstr(&kv, "general.type", "adapter");
    cv_kv_cstr(&kv, "adapter.type", "lora");
    cv_kv_f32(&kv, "adapter.lora.alpha", alpha);
    cv_kv_u32(&kv, "general.quantization_version", 2);
    const int n = 2 * l->n_pairs;
    pt_gguf_out_tensor *t = calloc((size_t)n, sizeof *t);
    char(*names)[80] = calloc((size_t)n, sizeof *names);
    int64_t max_cols = 1;
    uint64_t total = 0;
    for (int i = 0; t && names && i < l->n_pairs; i++) {
        const pt_lora_raw *r = &l->raw[i];
        /* lora_a: rank rows of cols values; lora_b: rows rows of rank values */
        snprintf(names[2 * i], sizeof names[0], "%s.lora_a", r->target);
        snprintf(names[2 * i + 1], sizeof names[0], "%s.lora_b", r->target);
        t[2 * i] = (pt_gguf_out_tensor){{names[2 * i], strlen(names[2 * i])}, 2, {r->cols, r->rank, 1, 1},
                                        factor_type(type, r->cols)};
        t[2 * i + 1] = (pt_gguf_out_tensor){{names[2 * i + 1], strlen(names[2 * i + 1])}, 2, {r->rank, r->rows, 1, 1},
                                            factor_type(type, r->rank)};
        if (r->cols > max_cols) max_cols = r->cols;
        if (r->rank > max_cols) max_cols = r->rank;
        total += (uint64_t)r->rank * (uint64_t)(r->rows + r->cols) * sizeof(float);
    }
    uint8_t *row = malloc((size_t)max_cols * sizeof(float));
    pt_gguf_writer *gw = NULL;
    pt_status st = PT_OK;
    if (kv.oom || !t || !names || !row) st = pt_fail(err, PT_ERR_NOMEM, "out of memory");
    if (!st) st = pt_gguf_writer_open(out, &gw, err);
    if (!st) st = pt_gguf_writer_header(gw, kv.kv, kv.n, t, (uint64_t)n, err);
    uint64_t done = 0;
    for (int i = 0; !st && i < n; i++) {
        report(p, i, n, t, done, total);
        const pt_lora_raw *r = &l->raw[i / 2];
        const float *x = i % 2 ? r->b : r->a;
        const int64_t cols = t[i].ne[0], rows = t[i].ne[1];
        for (int64_t y = 0; !st && y < rows; y++) {
            if (p->cancel && atomic_load(p->cancel)) st = pt_fail(err, PT_ERR_CANCELLED, "convert: cancelled");
            else st = pt_gguf_writer_data(gw, row, pt_quantize_row(t[i].type, x + (size_t)y * (size_t)cols, row, cols),
                                          err);
        }
        if (!st) st = pt_gguf_writer_end_tensor(gw, err);
        done += (uint64_t)rows * (uint64_t)cols * sizeof(float);
    }
    if (gw) {
        res->out_file_bytes = pt_gguf_writer_bytes(gw);
        if (!st) st = pt_gguf_writer_commit(gw, err);
        else pt_gguf_writer_abort(gw);
    }
    if (!st) report(p, n, n, t, total, total);
    res->n_tensors = n;
    free(row);
    free(names);
    free(t);
    cv_kv_free(&kv);
    return st;
}

pt_status pt_lora_convert(const char *in, const char *out, const pt_convert_params *p, pt_convert_result *res,
                          pt_error *err) {
    uint32_t type;
    if (!adapter_type(p->outtype, &type))
        return pt_fail(err, PT_ERR_ARG, "a LoRA adapter converts to f32 (default), f16, bf16 or q8_0, not '%s'",
                       p->outtype);
    if (!p->base || !*p->base)
        return pt_fail(err, PT_ERR_ARG,
                       "%s is a LoRA adapter: name its base model's GGUF with --base MODEL.gguf "
                       "(for the architecture and shapes)",
                       in);
    struct stat sb, so;
    if (stat(p->base, &sb) == 0 && stat(out, &so) == 0 && sb.st_dev == so.st_dev && sb.st_ino == so.st_ino)
        return pt_fail(err, PT_ERR_ARG, "convert: %s is the base model; the adapter would replace it", out);
    pt_lora *l = NULL;
    pt_status st = pt_lora_read(in, &l, err);
    if (st != PT_OK) return st;
    float alpha = l->alpha;
    if (l->rslora) { /* llama.cpp's scale is alpha / rank: carry alpha / sqrt(r) as alpha' / r */
        for (int i = 1; st == PT_OK && i < l->n_pairs; i++)
            if (l->raw[i].rank != l->raw[0].rank)
                st = pt_fail(err, PT_ERR_UNSUPPORTED,
                             "%s: an rsLoRA adapter with several ranks (rank_pattern) has no GGUF form", in);
        alpha = l->alpha * sqrtf((float)l->raw[0].rank);
    }
    char arch[32] = "";
    if (st == PT_OK) st = pt_lora_check_base(l, p->base, "--base", arch, sizeof arch, err);
    if (st == PT_OK) {
        res->adapter = true;
        snprintf(res->arch, sizeof res->arch, "%s", arch);
        snprintf(res->outtype, sizeof res->outtype, "%s", pt_type_name(type));
        for (char *c = res->outtype; *c; c++) *c = (char)(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
        for (int i = 0; i < l->n_pairs; i++)
            res->n_params += (int64_t)l->raw[i].rank * (l->raw[i].rows + l->raw[i].cols);
        char path[4096];
        snprintf(path, sizeof path, "%s/adapter_model.safetensors", in);
        if (stat(path, &sb) == 0) res->in_bytes = (uint64_t)sb.st_size;
        st = write_adapter(l, arch, alpha, type, out, p, res, err);
    }
    pt_lora_free(l);
    return st;
}
