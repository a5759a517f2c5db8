/*
 * convert_hf.c — the conversion of a Hugging Face model folder: config.json,
 * model.safetensors or shards with model.safetensors.index.json, and the
 * tokenizer files, to the GGUF llama.cpp's convert_hf_to_gguf.py writes
 * (llama-cpp-python 0.3.36's copy; conversion/base.py, llama.py, qwen.py,
 * gemma.py) for the llama, qwen2, qwen3 and gemma3 families.
 *
 * What is the same as llama.cpp's converter (checked by tests/test_convert.sh
 * against its output, tests/data/hf-tiny/<family>/ref-*.json):
 *   - tensor order: the shards in file-name order, each shard's tensors in
 *     name order (as the converter reads them), HF names mapped to GGUF's
 *     (token_embd, blk.N.attn_q, ...; gemma3's four norms per block);
 *   - tensor types: 1-D tensors and *_norm.weight F32, the rest the type
 *     asked for (f32 / f16 / bf16 rounded to nearest even; q8_0 with
 *     ggml's reference quantizer, F16 for rows that are not whole blocks);
 *   - transforms: llama's Q / K rows permuted per head (the rotary pairs
 *     interleaved: row h*D + 2i + j <- row h*D + j*D/2 + i, D the head
 *     dimension), gemma3's norm weights + 1 (in float32), gemma3's token
 *     embedding cut to the tokenizer's vocabulary;
 *   - metadata: general.architecture / type / name / size_label, the
 *     {arch}.* hyperparameters in the converter's order and types,
 *     general.file_type and general.quantization_version
 *     (convert_hparams.c), then tokenizer.* (convert_tokenizer.c).
 * Differences: general.name is the folder name in title case (the
 *     converter also parses "Org/Name-1.5B-Instruct"-style names into
 *     basename / size_label / finetune, and reads README model cards);
 *     the other quantized output types (q4_k_m, q6_k, ...), which
 *     llama.cpp's converter does not write, are made by converting to the
 *     sources' float type first and then running pt_quantize_file
 *     (llama-quantize's choices).
 * On the tiny fixtures the f32, f16, bf16 and q8_0 files are byte for byte
 * the converter's.
 *
 * Streaming: each output row is made from one source row (the permutation
 * picks which), widened to float, transformed and converted, so memory
 * stays at a row per tensor whatever the model's size.
 */
#include "petrel.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "convert_internal.h"
#include "gguf_write.h"
#include "quant.h"
#include "quantize_policy.h"
#include "safetensors.h"
#include "status.h"

static const struct {
    const char *hf, *arch;
    cv_family fam;
} ARCHS[] = {
    {"LlamaForCausalLM", "llama", CV_LLAMA},
    {"Qwen2ForCausalLM", "qwen2", CV_QWEN2},
    {"Qwen3ForCausalLM", "qwen3", CV_QWEN3},
    {"Gemma3ForCausalLM", "gemma3", CV_GEMMA3},
};

/* One output tensor. */
typedef struct cv_item {
    const st_tensor *src;
    char name[96];
    uint32_t type;       /* enum pt_type out */
    int n_dims;
    int64_t ne[4];       /* ggml order: ne[0] = the source's last dimension */
    int64_t rows, cols;  /* rows written (gemma3's embedding may be cut) */
    int perm_heads;      /* llama Q / K: heads to permute over, 0: none */
    const float *made;   /* a tensor the converter makes (rope_freqs): its values, src NULL */
    float add;           /* gemma3 norms: 1 */
} item;


static bool ends_with(const char *s, const char *suffix) {
    const size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

/* ---- shards ---------------------------------------------------------------- */

static int str_cmp(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The safetensors files, in the order the converter reads them: the ones
 * the index names (sorted), else model.safetensors. */
static pt_status open_shards(cv_hf *c, pt_error *err) {
    cJSON *index = NULL;
    pt_status st = cv_json_load(c->dir, "model.safetensors.index.json", false, &index, err);
    if (st) return st;
    char **names = NULL;
    int n = 0;
    if (index) {
        const cJSON *map = cv_json_obj(index, "weight_map");
        if (!map) {
            cJSON_Delete(index);
            return pt_fail(err, PT_ERR_FORMAT, "%s/model.safetensors.index.json: no weight_map object", c->dir);
        }
        names = calloc((size_t)cJSON_GetArraySize(map) + 1, sizeof *names);
        const cJSON *e;
        cJSON_ArrayForEach(e, map) {
            if (!names) break;
            if (!cJSON_IsString(e) || strchr(e->valuestring, '/') || !strcmp(e->valuestring, "..")) {
                free(names);
                cJSON_Delete(index);
                return pt_fail(err, PT_ERR_FORMAT, "%s/model.safetensors.index.json: bad shard name", c->dir);
            }
            bool seen = false;
            for (int i = 0; i < n && !seen; i++) seen = !strcmp(names[i], e->valuestring);
            if (!seen) names[n++] = e->valuestring;
        }
        if (names) qsort(names, (size_t)n, sizeof *names, str_cmp);
    } else {
        static char single[] = "model.safetensors";
        names = calloc(1, sizeof *names);
        if (names) names[n++] = single;
    }
    if (!names || !(c->shards = calloc((size_t)n + 1, sizeof *c->shards))) {
        free(names);
        cJSON_Delete(index);
        return pt_fail(err, PT_ERR_NOMEM, "out of memory");
    }
    if (n == 0) st = pt_fail(err, PT_ERR_FORMAT, "%s/model.safetensors.index.json: names no shard", c->dir);
    for (int i = 0; !st && i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", c->dir, names[i]);
        struct stat sb;
        if (stat(path, &sb) != 0)
            st = pt_fail(err, PT_ERR_IO, "%s: missing (%s)", path, index ? "named by the index" : "no index either");
        else if (!(st = st_open(path, &c->shards[i], err)))
            c->n_shards++;
    }
    free(names);
    cJSON_Delete(index);
    return st;
}

/* ---- names -------------------------------------------------------------------- */

/* HF name -> GGUF name; false for tensors the model does not have. */
static bool map_name(const cv_hf *c, const char *hf, char *out, size_t cap) {
    static const struct { const char *hf, *gguf; } TOP[] = {
        {"model.embed_tokens.weight", "token_embd.weight"},
        {"model.norm.weight", "output_norm.weight"},
        {"lm_head.weight", "output.weight"},
    };
    for (size_t i = 0; i < sizeof TOP / sizeof TOP[0]; i++)
        if (!strcmp(hf, TOP[i].hf)) return snprintf(out, cap, "%s", TOP[i].gguf) < (int)cap;
    static const struct { const char *hf, *gguf; } BLK[] = {
        {"input_layernorm", "attn_norm"},
        {"self_attn.q_proj", "attn_q"},
        {"self_attn.k_proj", "attn_k"},
        {"self_attn.v_proj", "attn_v"},
        {"self_attn.o_proj", "attn_output"},
        {"self_attn.q_norm", "attn_q_norm"},
        {"self_attn.k_norm", "attn_k_norm"},
        {"mlp.gate_proj", "ffn_gate"},
        {"mlp.up_proj", "ffn_up"},
        {"mlp.down_proj", "ffn_down"},
        /* gemma3 has four norms per block; the others two */
        {"post_attention_layernorm", NULL},
        {"pre_feedforward_layernorm", "ffn_norm"},
        {"post_feedforward_layernorm", "post_ffw_norm"},
    };
    unsigned layer;
    int pos = 0;
    if (sscanf(hf, "model.layers.%u.%n", &layer, &pos) != 1 || pos == 0) return false;
    const char *rest = hf + pos;
    for (size_t i = 0; i < sizeof BLK / sizeof BLK[0]; i++) {
        const size_t n = strlen(BLK[i].hf);
        if (strncmp(rest, BLK[i].hf, n) != 0) continue;
        const char *suffix = rest + n;
        if (strcmp(suffix, ".weight") != 0 && strcmp(suffix, ".bias") != 0) continue;
        const char *g = BLK[i].gguf;
        if (!g) g = c->fam == CV_GEMMA3 ? "post_attention_norm" : "ffn_norm";
        if (c->fam != CV_GEMMA3 && (!strcmp(BLK[i].hf, "pre_feedforward_layernorm") ||
                                     !strcmp(BLK[i].hf, "post_feedforward_layernorm")))
            return false;
        return snprintf(out, cap, "blk.%u.%s%s", layer, g, suffix) < (int)cap;
    }
    return false;
}

/* ---- tensors -------------------------------------------------------------------- */

static bool expected_shape(const cv_hf *c, const char *gguf, int64_t *rows, int64_t *cols);

static pt_status plan(cv_hf *c, uint32_t float_type, pt_error *err) {
    int total = 0;
    for (int s = 0; s < c->n_shards; s++) total += (int)c->shards[s]->n_tensors;
    c->items = calloc((size_t)total + 2, sizeof *c->items);
    if (!c->items) return pt_fail(err, PT_ERR_NOMEM, "out of memory");
    if (c->rope_freqs) { /* generate_extra_tensors' come first */
        item *it = &c->items[c->n_items++];
        snprintf(it->name, sizeof it->name, "rope_freqs.weight");
        it->made = c->rope_freqs;
        it->type = PT_TYPE_F32;
        it->n_dims = 1;
        it->rows = 1;
        it->cols = c->n_rope_freqs;
        it->ne[0] = it->cols, it->ne[1] = it->ne[2] = it->ne[3] = 1;
        c->n_params += it->cols;
    }
    for (int s = 0; s < c->n_shards; s++)
        for (uint64_t k = 0; k < c->shards[s]->n_tensors; k++) {
            const st_tensor *t = &c->shards[s]->tensors[k];
            if (ends_with(t->name, ".rotary_emb.inv_freq") || ends_with(t->name, ".attention.masked_bias") ||
                ends_with(t->name, ".attention.bias"))
                continue;
            item *it = &c->items[c->n_items];
            if (!map_name(c, t->name, it->name, sizeof it->name))
                return pt_fail(err, PT_ERR_UNSUPPORTED, "%s: tensor '%.80s' has no place in a %s model",
                               c->shards[s]->name, t->name, c->arch);
            if (st_dtype_pt_type(t->dtype) == UINT32_MAX)
                return pt_fail(err, PT_ERR_UNSUPPORTED, "%s: tensor '%.80s' is %s (F32, F16 or BF16 wanted)",
                               c->shards[s]->name, t->name, st_dtype_name(t->dtype));
            if (t->n_dims < 1 || t->n_dims > 2)
                return pt_fail(err, PT_ERR_FORMAT, "%s: tensor '%.80s' has %d dimensions (1 or 2 wanted)",
                               c->shards[s]->name, t->name, t->n_dims);
            for (int d = 0; d < t->n_dims; d++)
                if (t->shape[d] <= 0)
                    return pt_fail(err, PT_ERR_FORMAT, "%s: tensor '%.80s' is empty", c->shards[s]->name, t->name);
            int64_t er, ec;
            if (expected_shape(c, it->name, &er, &ec) &&
                (t->n_dims != (ec ? 2 : 1) || t->shape[0] != er || (ec && t->shape[1] != ec))) {
                char want[64], got[64];
                snprintf(want, sizeof want, ec ? "[%lld, %lld]" : "[%lld]", (long long)er, (long long)ec);
                snprintf(got, sizeof got, t->n_dims == 2 ? "[%lld, %lld]" : "[%lld]", (long long)t->shape[0],
                         (long long)t->shape[1]);
                return pt_fail(err, PT_ERR_FORMAT, "%s: tensor '%.80s' has shape %s, config.json implies %s",
                               c->shards[s]->name, t->name, got, want);
            }
            it->src = t;
            it->n_dims = t->n_dims;
            it->cols = t->shape[t->n_dims - 1];
            it->rows = t->n_dims == 2 ? t->shape[0] : 1;
            if (c->fam == CV_GEMMA3 && !strcmp(it->name, "token_embd.weight") && c->n_vocab_tok > 0 &&
                c->n_vocab_tok < it->rows)
                it->rows = c->n_vocab_tok; /* out-of-vocabulary rows dropped */
            it->ne[0] = it->cols;
            it->ne[1] = it->n_dims == 2 ? it->rows : 1;
            it->ne[2] = it->ne[3] = 1;
            const bool is_norm = ends_with(it->name, "_norm.weight");
            it->type = it->n_dims <= 1 || is_norm ? PT_TYPE_F32 : float_type;
            /* q8_0 rows must be whole blocks; the converter falls back to F16 */
            if (it->type == PT_TYPE_Q8_0 && it->cols % 32) it->type = PT_TYPE_F16;
            if (c->fam == CV_GEMMA3 && ends_with(t->name, "norm.weight")) it->add = 1.0f;
            if (c->fam == CV_LLAMA) {
                if (ends_with(t->name, "q_proj.weight") || ends_with(t->name, "q_proj.bias"))
                    it->perm_heads = (int)c->n_head;
                if (ends_with(t->name, "k_proj.weight") || ends_with(t->name, "k_proj.bias"))
                    it->perm_heads = (int)c->n_head_kv;
            }
            if (it->perm_heads) {
                const int64_t n = it->n_dims == 2 ? it->rows : it->cols;
                if (n % (2 * it->perm_heads))
                    return pt_fail(err, PT_ERR_FORMAT, "%s: tensor '%.80s': %lld rows do not split into %d heads",
                                   c->shards[s]->name, t->name, (long long)n, it->perm_heads);
            }
            for (int j = 0; j < c->n_items; j++)
                if (!strcmp(c->items[j].name, it->name))
                    return pt_fail(err, PT_ERR_FORMAT, "%s: tensor '%.80s' appears twice", c->dir, it->name);
            c->n_params += it->rows * it->cols;
            c->n_items++;
        }
    return PT_OK;
}

/* The HF shape [rows, cols] (cols 0: 1-D of rows) config.json implies for
 * a GGUF name, false for names without a rule. */
static bool expected_shape(const cv_hf *c, const char *gguf, int64_t *rows, int64_t *cols) {
    const char *dot = strncmp(gguf, "blk.", 4) == 0 ? strchr(gguf + 4, '.') : NULL;
    const char *n = dot ? dot + 1 : gguf;
    const int64_t e = c->n_embd, q = c->n_head * c->head_dim, kv = c->n_head_kv * c->head_dim;
    static const char *const vec_e[] = {"output_norm.weight", "attn_norm.weight", "ffn_norm.weight",
                                        "post_attention_norm.weight", "post_ffw_norm.weight"};
    for (size_t i = 0; i < sizeof vec_e / sizeof vec_e[0]; i++)
        if (!strcmp(n, vec_e[i])) return *rows = e, *cols = 0, true;
    if (!strcmp(n, "attn_q_norm.weight") || !strcmp(n, "attn_k_norm.weight")) return *rows = c->head_dim, *cols = 0, true;
    if (!strcmp(n, "token_embd.weight") || !strcmp(n, "output.weight")) return *rows = c->n_vocab, *cols = e, c->n_vocab > 0;
    if (!strcmp(n, "attn_q.weight")) return *rows = q, *cols = e, true;
    if (!strcmp(n, "attn_k.weight") || !strcmp(n, "attn_v.weight")) return *rows = kv, *cols = e, true;
    if (!strcmp(n, "attn_q.bias")) return *rows = q, *cols = 0, true;
    if (!strcmp(n, "attn_k.bias") || !strcmp(n, "attn_v.bias")) return *rows = kv, *cols = 0, true;
    if (!strcmp(n, "attn_output.weight")) return *rows = e, *cols = q, true;
    if (!strcmp(n, "ffn_gate.weight") || !strcmp(n, "ffn_up.weight")) return *rows = c->n_ff, *cols = e, true;
    if (!strcmp(n, "ffn_down.weight")) return *rows = e, *cols = c->n_ff, true;
    return false;
}

/* Source row of output row r (the llama permutation, else r). */
static int64_t src_row(const item *it, int64_t r) {
    if (!it->perm_heads || it->n_dims != 2) return r;
    const int64_t d = it->rows / it->perm_heads, half = d / 2;
    const int64_t h = r / d, k = r % d, i = k / 2, j = k % 2;
    return h * d + j * half + i;
}

/* ---- general.sampling.* ------------------------------------------------------- */

/* generation_config.json's sampling defaults, as gguf-py's metadata.py
 * takes them (Metadata.load; a missing or unreadable file gives none). */
static void sampling(cv_hf *c) {
    cJSON *g = NULL;
    pt_error ignored;
    if (cv_json_load(c->dir, "generation_config.json", false, &g, &ignored) != PT_OK || !g) return;
    static const struct { const char *json, *alt, *key; bool is_int; } S[] = {
        {"top_k", NULL, "general.sampling.top_k", true},
        {"top_p", NULL, "general.sampling.top_p", false},
        {"min_p", NULL, "general.sampling.min_p", false},
        {"xtc_probability", NULL, "general.sampling.xtc_probability", false},
        {"xtc_threshold", NULL, "general.sampling.xtc_threshold", false},
        {"temperature", NULL, "general.sampling.temp", false},
        {"penalty_last_n", NULL, "general.sampling.penalty_last_n", true},
        {"penalty_repeat", "repetition_penalty", "general.sampling.penalty_repeat", false},
        {"mirostat", NULL, "general.sampling.mirostat", true},
        {"mirostat_tau", NULL, "general.sampling.mirostat_tau", false},
        {"mirostat_eta", NULL, "general.sampling.mirostat_eta", false},
    };
    const char *seq = cv_json_str(g, "sequence");
    if (seq) cv_kv_cstr(&c->kv, "general.sampling.sequence", seq);
    for (size_t i = 0; i < sizeof S / sizeof S[0]; i++) {
        double v;
        if (!cv_json_num(g, S[i].json, &v) && !(S[i].alt && cv_json_num(g, S[i].alt, &v))) continue;
        if (S[i].is_int) {
            if (v >= -2147483648.0 && v <= 2147483647.0) cv_kv_i32(&c->kv, S[i].key, (int32_t)v);
        } else {
            cv_kv_f32(&c->kv, S[i].key, (float)v);
        }
    }
    cJSON_Delete(g);
}

/* ---- general.name and co. ----------------------------------------------------- */

/* gguf-py's Metadata.apply_metadata_heuristic without a model card:
 * config's "_name_or_path" when it names a model ("org/name", at most one
 * '/'), then the folder's name, each filling the keys still unset; the
 * size label from the parameter count when neither gives one. */
static void naming(cv_hf *c, char *label, size_t cap) {
    cv_name from[2];
    const char *nop = cv_json_str(c->config, "_name_or_path");
    int n = 0;
    if (nop && *nop) {
        int slashes = 0;
        for (const char *p = nop; *p; p++) slashes += *p == '/';
        if (slashes <= 1) cv_name_parts(nop, c->n_params, &from[n++]);
    }
    char base[512];
    size_t len = strlen(c->dir);
    while (len > 1 && c->dir[len - 1] == '/') len--;
    size_t start = len;
    while (start > 0 && c->dir[start - 1] != '/') start--;
    snprintf(base, sizeof base, "%.*s", (int)(len - start), c->dir + start);
    cv_name_parts(base, c->n_params, &from[n++]);
#define PICK(field, key)                                                         \
    do {                                                                         \
        const char *v = NULL;                                                    \
        for (int i = 0; i < n && !v; i++)                                        \
            if (from[i].has_##field) v = from[i].field;                          \
        if (v) cv_kv_cstr(&c->kv, key, v);                                       \
        else if (strcmp(key, "general.size_label") != 0) cv_kv_del(&c->kv, key); \
    } while (0)
    PICK(name, "general.name");
    PICK(version, "general.version");
    PICK(organization, "general.organization");
    PICK(finetune, "general.finetune");
    PICK(basename, "general.basename");
    PICK(size_label, "general.size_label");
#undef PICK
    const pt_gguf_value *sl = cv_kv_get(&c->kv, "general.size_label");
    if (sl && sl->v.s.len == 0) {
        cv_size_label(c->n_params, label, cap);
        cv_kv_cstr(&c->kv, "general.size_label", label);
    }
}

/* ---- writing ---------------------------------------------------------------- */

typedef struct write_ctx {
    const pt_convert_params *p;
    uint64_t done, total;
} write_ctx;

static void report(write_ctx *w, const cv_hf *c, int i, const char *stage) {
    if (!w->p->progress) return;
    const pt_convert_progress pr = {
        .stage = stage,
        .tensor = i,
        .n_tensors = c->n_items,
        .name = i < c->n_items ? c->items[i].name : "",
        .to_type = i < c->n_items ? pt_type_name(c->items[i].type) : "",
        .done = w->done,
        .total = w->total,
    };
    w->p->progress(w->p->progress_user, &pr);
}

static pt_status write_tensor(cv_hf *c, write_ctx *w, pt_gguf_writer *gw, int i, float *x, uint8_t *row,
                              pt_error *err) {
    const item *it = &c->items[i];
    if (it->made) {
        pt_status st = pt_gguf_writer_data(gw, it->made, (size_t)it->cols * sizeof(float), err);
        return st ? st : pt_gguf_writer_end_tensor(gw, err);
    }
    const st_tensor *t = it->src;
    const uint32_t from = st_dtype_pt_type(t->dtype);
    const size_t in_row = pt_type_row_bytes(from, it->cols);
    const bool perm_1d = it->perm_heads && it->n_dims == 1;
    for (int64_t r = 0; r < it->rows; r++) {
        if (w->p->cancel && atomic_load(w->p->cancel)) return pt_fail(err, PT_ERR_CANCELLED, "convert: cancelled");
        const uint8_t *src = (const uint8_t *)t->data + (size_t)src_row(it, r) * in_row;
        pt_dequant_row(from, src, x, it->cols);
        if (perm_1d) { /* a permuted bias: its one row is the head dimension */
            float *tmp = x + it->cols;
            const item one = {.rows = it->cols, .perm_heads = it->perm_heads, .n_dims = 2};
            for (int64_t k = 0; k < it->cols; k++) tmp[k] = x[src_row(&one, k)];
            memcpy(x, tmp, (size_t)it->cols * sizeof *x);
        }
        if (it->add != 0)
            for (int64_t k = 0; k < it->cols; k++) x[k] += it->add;
        const size_t n = pt_quantize_row(it->type, x, row, it->cols);
        pt_status st = pt_gguf_writer_data(gw, row, n, err);
        if (st) return st;
        w->done += in_row;
    }
    return pt_gguf_writer_end_tensor(gw, err);
}

static pt_status write_file(cv_hf *c, const char *out, const pt_convert_params *p, uint64_t *bytes, pt_error *err) {
    pt_gguf_out_tensor *ti = calloc((size_t)c->n_items + 1, sizeof *ti);
    if (!ti) return pt_fail(err, PT_ERR_NOMEM, "out of memory");
    int64_t max_cols = 1;
    write_ctx w = {.p = p};
    for (int i = 0; i < c->n_items; i++) {
        const item *it = &c->items[i];
        ti[i] = (pt_gguf_out_tensor){{it->name, strlen(it->name)}, (uint32_t)it->n_dims,
                                     {it->ne[0], it->ne[1], it->ne[2], it->ne[3]}, it->type};
        if (it->cols > max_cols) max_cols = it->cols;
        if (it->src) w.total += (uint64_t)it->rows * pt_type_row_bytes(st_dtype_pt_type(it->src->dtype), it->cols);
    }
    float *x = malloc((size_t)max_cols * 2 * sizeof *x);
    uint8_t *row = malloc((size_t)max_cols * 4);
    pt_gguf_writer *gw = NULL;
    pt_status st = x && row ? pt_gguf_writer_open(out, &gw, err) : pt_fail(err, PT_ERR_NOMEM, "out of memory");
    if (!st) st = pt_gguf_writer_header(gw, c->kv.kv, c->kv.n, ti, (uint64_t)c->n_items, err);
    for (int i = 0; !st && i < c->n_items; i++) {
        report(&w, c, i, "convert");
        st = write_tensor(c, &w, gw, i, x, row, err);
    }
    if (gw) {
        *bytes = pt_gguf_writer_bytes(gw);
        if (!st) st = pt_gguf_writer_commit(gw, err);
        else pt_gguf_writer_abort(gw);
    }
    if (!st) report(&w, c, c->n_items, "convert");
    free(x);
    free(row);
    free(ti);
    return st;
}

/* ---- the entry point ------------------------------------------------------------ */

static void hf_free(cv_hf *c) {
    for (int s = 0; s < c->n_shards; s++) st_close(c->shards[s]);
    free(c->shards);
    free(c->items);
    free(c->rope_freqs);
    cJSON_Delete(c->config);
    cv_kv_free(&c->kv);
}

pt_status cv_convert_hf(const char *dir, const char *out, const pt_convert_params *p, uint32_t type,
                            uint32_t ftype, pt_convert_result *res, pt_error *err) {
    cv_hf c = {.dir = dir};
    pt_status st = cv_json_load(dir, "config.json", true, &c.config, err);
    const cJSON *archs = st ? NULL : cv_json_arr(c.config, "architectures");
    const cJSON *a0 = archs ? cJSON_GetArrayItem(archs, 0) : NULL;
    if (!st && !cJSON_IsString(a0))
        st = pt_fail(err, PT_ERR_FORMAT, "%s/config.json: no architectures list", dir);
    if (!st) {
        for (size_t i = 0; i < sizeof ARCHS / sizeof ARCHS[0] && !c.arch; i++)
            if (!strcmp(a0->valuestring, ARCHS[i].hf)) c.arch = ARCHS[i].arch, c.fam = ARCHS[i].fam;
        if (!c.arch)
            st = pt_fail(err, PT_ERR_UNSUPPORTED,
                         "%s/config.json: architecture '%.60s' is not converted (llama, qwen2, qwen3, gemma3 are)",
                         dir, a0->valuestring);
    }
    char label[32];
    if (!st) {
        cv_kv_cstr(&c.kv, "general.architecture", c.arch);
        cv_kv_cstr(&c.kv, "general.type", "model");
        sampling(&c);
        /* placeholders in gguf-py's order, set (or dropped) once the
         * tensors are counted: the size decides what a name part means */
        static const char *const NAMING[] = {"general.name", "general.version", "general.organization",
                                             "general.finetune", "general.basename", "general.size_label"};
        for (size_t i = 0; i < sizeof NAMING / sizeof NAMING[0]; i++) cv_kv_cstr(&c.kv, NAMING[i], "");
        st = cv_hf_hparams(&c, ftype, err);
    }
    int64_t n_vocab = 0, n_tokens = 0;
    if (!st) {
        cv_json_int(c.config, "vocab_size", &n_vocab);
        /* LlamaModel.set_vocab: tokenizer_config's add_prefix_space first */
        cJSON *tcfg = NULL;
        bool prefix_space;
        if (c.fam == CV_LLAMA && !cv_json_load(dir, "tokenizer_config.json", false, &tcfg, err) &&
            cv_json_bool(tcfg, "add_prefix_space", &prefix_space))
            cv_kv_bool(&c.kv, "tokenizer.ggml.add_space_prefix", prefix_space);
        cJSON_Delete(tcfg);
        /* llama and gemma3 read tokenizer.model first, as the converter does */
        st = cv_tokenizer(&c.kv, dir, c.config, n_vocab, c.fam == CV_LLAMA || c.fam == CV_GEMMA3, &n_tokens, err);
        /* and SmolLM's vocabulary (49152) is marked as adding no BOS */
        if (!st && c.fam == CV_LLAMA && n_vocab == 49152) cv_kv_bool(&c.kv, "tokenizer.ggml.add_bos_token", false);
        if (c.fam == CV_GEMMA3 && cv_kv_get(&c.kv, "tokenizer.ggml.scores"))
            cv_kv_bool(&c.kv, "tokenizer.ggml.add_space_prefix", false);
        c.n_vocab_tok = n_tokens;
    }
    if (!st) st = open_shards(&c, err);
    if (!st) st = plan(&c, type, err);
    if (!st && !c.n_items) st = pt_fail(err, PT_ERR_FORMAT, "%s: no tensors", dir);
    if (!st) {
        naming(&c, label, sizeof label);
        if (c.kv.oom) st = pt_fail(err, PT_ERR_NOMEM, "out of memory");
    }
    if (!st) {
        res->n_tensors = c.n_items;
        res->n_params = c.n_params;
        snprintf(res->arch, sizeof res->arch, "%s", c.arch);
        for (int s = 0; s < c.n_shards; s++) res->in_bytes += c.shards[s]->size;
        st = write_file(&c, out, p, &res->out_file_bytes, err);
    }
    hf_free(&c);
    return st;
}

/* The widest float type of the sources' matrices (the intermediate file of
 * a quantized conversion loses nothing). */
pt_status cv_hf_source_type(const char *dir, uint32_t *type, pt_error *err) {
    cv_hf c = {.dir = dir};
    pt_status st = open_shards(&c, err);
    bool f32 = false, f16 = false, bf16 = false;
    for (int s = 0; !st && s < c.n_shards; s++)
        for (uint64_t k = 0; k < c.shards[s]->n_tensors; k++) {
            const st_dtype d = c.shards[s]->tensors[k].dtype;
            f32 |= d == ST_F32, f16 |= d == ST_F16, bf16 |= d == ST_BF16;
        }
    *type = f32 || (f16 && bf16) ? PT_TYPE_F32 : f16 ? PT_TYPE_F16 : bf16 ? PT_TYPE_BF16 : PT_TYPE_F32;
    hf_free(&c);
    return st;
}
