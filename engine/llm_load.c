/*
 * llm_load.c — building a pt_llm from a parsed GGUF: hyperparameters from
 * the {arch}.* keys, then every tensor by its llama.cpp name, checked for
 * presence, a type the kernels support and its exact shape. Weights stay
 * views into the mapping.
 *
 * Families:
 *   llama  rope "normal" (pairs 2i, 2i+1): llama.cpp's converter permutes
 *          the rows of Q and K so that this rope equals HF's rotate_half.
 *          Optional Q/K/V biases, optional rope_freqs.weight (Llama 3.1
 *          frequency divisors).
 *   qwen2  NeoX rope (pairs i, i + n_rot/2), Q/K/V biases required.
 *   qwen3  NeoX rope, per-head RMSNorm of Q and K (attn_q_norm,
 *          attn_k_norm) before rope, head_dim from attention.key_length.
 *   gemma3 as llama.cpp's llama_model_gemma3: NeoX rope, per-head Q/K
 *          RMSNorm, embeddings times sqrt(n_embd), GeGLU (GELU tanh)
 *          feed-forward, RMSNorm of each sublayer's output
 *          (post_attention_norm, post_ffw_norm) before the residual add,
 *          scores scaled by 1/sqrt(key_length) (1/sqrt(n_embd/n_head) for
 *          the 62-layer 27B, as llama.cpp), optional
 *          final_logit_softcapping. With attention.sliding_window > 0 the
 *          layers are local (that window, rope.freq_base_swa, default
 *          10000, no rope scaling) or global (rope.freq_base and scaling)
 *          by attention.sliding_window_pattern: an array of one flag per
 *          layer (true: local), or a period n (layer il is global when
 *          il % n == n - 1; default 6). The converter has already added
 *          Gemma's "+1" to every norm weight, so all norms are plain.
 * All: RMSNorm, gated feed-forward, GQA, output.weight optional
 * (absent: tied to token_embd.weight).
 *
 * Repacking (after every tensor was found): each matrix the forward pass
 * multiplies by, whose type has an int8 fast path on the chosen CPU
 * variant, is copied into the kernels' interleaved layout (qmatmul.h),
 * and its source pages in the mapping are dropped. The token embedding
 * is only read a row at a time, so it is repacked only when it doubles as
 * the output matrix (tied): then the one packed copy serves both, rows
 * being looked up with pt_qweights_dequant_row. Matrices are repacked in
 * parallel, one task each, on the caller's pool when it gives one. A
 * metadata-only load stops before repacking: the weights are never read.
 */
#include "llm_internal.h"
#include "llm_graph.h"

#include "quant.h"
#include "status.h"
#include "threadpool.h"

#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define MAX_DIM (1 << 24)    /* bound for every width and the vocabulary */
#define MAX_LAYERS 4096
#define MAX_CTX (1 << 30)

/* ---- hyperparameters ---------------------------------------------------- */

typedef struct key_reader {
    const pt_gguf *g;
    const char *arch;
    pt_error *err;
} key_reader;

static const char *arch_key(const key_reader *r, const char *suffix, char *buf, size_t cap) {
    snprintf(buf, cap, "%s.%s", r->arch, suffix);
    return buf;
}

/* An integer key {arch}.suffix in [lo, hi]. Absent: *out = dflt, or an
 * error when dflt < 0 (required). */
static pt_status get_int(const key_reader *r, const char *suffix, int64_t lo, int64_t hi, int dflt,
                         int *out) {
    char key[128];
    arch_key(r, suffix, key, sizeof key);
    const pt_gguf_kv *kv = pt_gguf_find(r->g, key);
    if (!kv) {
        if (dflt < 0) return pt_fail(r->err, PT_ERR_FORMAT, "missing key '%s'", key);
        *out = dflt;
        return PT_OK;
    }
    int64_t v;
    if (!pt_gguf_get_i64(r->g, key, &v))
        return pt_fail(r->err, PT_ERR_FORMAT, "key '%s' has type %s, expected an integer", key,
                       pt_gguf_type_name(kv->value.type));
    if (v < lo || v > hi)
        return pt_fail(r->err, PT_ERR_FORMAT, "key '%s' is %lld, expected %lld..%lld", key,
                       (long long)v, (long long)lo, (long long)hi);
    *out = (int)v;
    return PT_OK;
}

/* A float key {arch}.suffix, finite and > 0. Absent: *out = dflt (no
 * error) and *found = false. */
static pt_status get_pos_float(const key_reader *r, const char *suffix, float dflt, float *out,
                               bool *found) {
    char key[128];
    arch_key(r, suffix, key, sizeof key);
    const pt_gguf_kv *kv = pt_gguf_find(r->g, key);
    if (found) *found = kv != NULL;
    if (!kv) {
        *out = dflt;
        return PT_OK;
    }
    float v;
    if (!pt_gguf_get_f32(r->g, key, &v))
        return pt_fail(r->err, PT_ERR_FORMAT, "key '%s' has type %s, expected a float", key,
                       pt_gguf_type_name(kv->value.type));
    if (!isfinite(v) || v <= 0.0f)
        return pt_fail(r->err, PT_ERR_FORMAT, "key '%s' is %g, expected a positive number", key, v);
    *out = v;
    return PT_OK;
}

/* Copy a GGUF string into a NUL-terminated buffer (cut to fit). */
static void str_copy(pt_gguf_str s, char *buf, size_t cap) {
    size_t n = s.len < cap - 1 ? (size_t)s.len : cap - 1;
    memcpy(buf, s.ptr, n);
    buf[n] = 0;
}

static pt_status read_rope_scaling(const key_reader *r, pt_llm_hparams *hp) {
    char key[128];
    pt_gguf_str type;
    if (pt_gguf_get_str(r->g, arch_key(r, "rope.scaling.type", key, sizeof key), &type) &&
        !pt_gguf_str_eq(type, "linear") && !pt_gguf_str_eq(type, "none")) {
        char name[64];
        str_copy(type, name, sizeof name);
        return pt_fail(r->err, PT_ERR_UNSUPPORTED, "rope scaling type '%s' (%s) is not supported", name,
                       key);
    }
    /* As llama.cpp: the factor from rope.scaling.factor, else the older
     * rope.scale_linear; positions are multiplied by 1 / factor. */
    float factor;
    bool found;
    pt_status st = get_pos_float(r, "rope.scaling.factor", 1.0f, &factor, &found);
    if (st == PT_OK && !found) st = get_pos_float(r, "rope.scale_linear", 1.0f, &factor, NULL);
    if (st) return st;
    hp->rope_freq_scale = 1.0f / factor;
    return PT_OK;
}

/* gemma3's own keys and constants (the file comment). */
static pt_status read_gemma3(const key_reader *r, pt_llm_hparams *hp) {
    hp->ffn_act = PT_FFN_GELU_TANH;
    hp->post_norms = true;
    hp->embd_scale = sqrtf((float)hp->n_embd);
    if (hp->n_layer == 62) /* 27B: query_pre_attn_scalar = n_embd / n_head */
        hp->attn_scale = 1.0f / sqrtf((float)(hp->n_embd / hp->n_head));
    else
        hp->attn_scale = 1.0f / sqrtf((float)hp->head_dim);
    pt_status st;
    if ((st = get_int(r, "attention.sliding_window", 0, MAX_CTX, 0, &hp->n_swa)) ||
        (st = get_pos_float(r, "rope.freq_base_swa", 10000.0f, &hp->rope_base_swa, NULL)))
        return st;
    /* soft-capping: absent or 0 is none (as llama.cpp), else positive */
    char key[128];
    float cap;
    if (pt_gguf_get_f32(r->g, arch_key(r, "final_logit_softcapping", key, sizeof key), &cap) && cap == 0.0f)
        return PT_OK;
    return get_pos_float(r, "final_logit_softcapping", 0.0f, &hp->logit_softcap, NULL);
}

/* Which layers are sliding-window ones (read_gemma3's rule), into
 * layers[il].swa. */
static pt_status read_swa_pattern(const pt_gguf *g, const pt_llm_hparams *hp, pt_llm_layer *layers,
                                  pt_error *err) {
    if (hp->n_swa <= 0) return PT_OK;
    char key[128];
    snprintf(key, sizeof key, "%s.attention.sliding_window_pattern", hp->arch_name);
    const pt_gguf_kv *kv = pt_gguf_find(g, key);
    int period = 6;
    if (kv && kv->value.type == PT_GGUF_ARRAY) {
        const pt_gguf_value *a = &kv->value;
        const pt_gguf_type et = a->v.arr.elem_type;
        if (a->v.arr.n != (uint64_t)hp->n_layer || et == PT_GGUF_STRING || et == PT_GGUF_ARRAY)
            return pt_fail(err, PT_ERR_FORMAT, "key '%s' is not an array of %d flags", key,
                           hp->n_layer);
        for (int il = 0; il < hp->n_layer; il++) layers[il].swa = pt_gguf_arr_i64(a, (uint64_t)il) != 0;
        return PT_OK;
    }
    if (kv) {
        const key_reader r = {g, hp->arch_name, err};
        pt_status st = get_int(&r, "attention.sliding_window_pattern", 0, MAX_LAYERS, 6, &period);
        if (st) return st;
    }
    /* llama.cpp's set_swa_pattern: period 0 makes every layer local */
    for (int il = 0; il < hp->n_layer; il++)
        layers[il].swa = period == 0 || il % period < period - 1;
    return PT_OK;
}

static pt_status read_hparams(const pt_gguf *g, pt_llm_hparams *hp, pt_error *err) {
    memset(hp, 0, sizeof *hp);
    pt_gguf_str arch;
    if (!pt_gguf_get_str(g, "general.architecture", &arch))
        return pt_fail(err, PT_ERR_FORMAT, "missing key 'general.architecture'");
    if (pt_gguf_str_eq(arch, "llama")) {
        hp->arch = PT_ARCH_LLAMA, hp->arch_name = "llama", hp->rope_neox = false;
    } else if (pt_gguf_str_eq(arch, "qwen2")) {
        hp->arch = PT_ARCH_QWEN2, hp->arch_name = "qwen2", hp->rope_neox = true;
    } else if (pt_gguf_str_eq(arch, "qwen3")) {
        hp->arch = PT_ARCH_QWEN3, hp->arch_name = "qwen3", hp->rope_neox = true;
    } else if (pt_gguf_str_eq(arch, "gemma3")) {
        hp->arch = PT_ARCH_GEMMA3, hp->arch_name = "gemma3", hp->rope_neox = true;
    } else {
        char name[64];
        str_copy(arch, name, sizeof name);
        return pt_fail(err, PT_ERR_UNSUPPORTED, "unknown architecture '%s'", name);
    }

    key_reader r = {g, hp->arch_name, err};
    pt_status st;
    if ((st = get_int(&r, "context_length", 1, MAX_CTX, -1, &hp->n_ctx_train)) ||
        (st = get_int(&r, "embedding_length", 1, MAX_DIM, -1, &hp->n_embd)) ||
        (st = get_int(&r, "block_count", 1, MAX_LAYERS, -1, &hp->n_layer)) ||
        (st = get_int(&r, "feed_forward_length", 1, MAX_DIM, -1, &hp->n_ff)) ||
        (st = get_int(&r, "attention.head_count", 1, MAX_DIM, -1, &hp->n_head)) ||
        (st = get_int(&r, "attention.head_count_kv", 1, MAX_DIM, hp->n_head, &hp->n_head_kv)))
        return st;
    if (hp->n_head % hp->n_head_kv != 0)
        return pt_fail(err, PT_ERR_FORMAT,
                       "%s.attention.head_count (%d) is not a multiple of head_count_kv (%d)",
                       hp->arch_name, hp->n_head, hp->n_head_kv);

    char key[128];
    if (!pt_gguf_find(g, arch_key(&r, "attention.key_length", key, sizeof key)) &&
        hp->n_embd % hp->n_head != 0)
        return pt_fail(err, PT_ERR_FORMAT,
                       "%s.embedding_length (%d) is not a multiple of head_count (%d) and "
                       "attention.key_length is absent", hp->arch_name, hp->n_embd, hp->n_head);
    int value_length;
    if ((st = get_int(&r, "attention.key_length", 2, MAX_DIM, hp->n_embd / hp->n_head, &hp->head_dim)) ||
        (st = get_int(&r, "attention.value_length", 1, MAX_DIM, hp->head_dim, &value_length)))
        return st;
    if (value_length != hp->head_dim)
        return pt_fail(err, PT_ERR_UNSUPPORTED,
                       "%s.attention.value_length (%d) differs from key_length (%d)", hp->arch_name,
                       value_length, hp->head_dim);
    if (hp->head_dim % 2 != 0)
        return pt_fail(err, PT_ERR_FORMAT, "%s head size %d is odd (rope rotates pairs)",
                       hp->arch_name, hp->head_dim);
    if ((int64_t)hp->n_head * hp->head_dim > MAX_DIM)
        return pt_fail(err, PT_ERR_FORMAT, "%s: %d heads of %d values exceed %d", hp->arch_name,
                       hp->n_head, hp->head_dim, MAX_DIM);
    if ((st = get_int(&r, "rope.dimension_count", 2, hp->head_dim, hp->head_dim, &hp->n_rot)))
        return st;
    if (hp->n_rot % 2 != 0)
        return pt_fail(err, PT_ERR_FORMAT, "%s.rope.dimension_count (%d) is odd", hp->arch_name,
                       hp->n_rot);

    if ((st = get_pos_float(&r, "rope.freq_base", 10000.0f, &hp->rope_base, NULL))) return st;
    bool found;
    if ((st = get_pos_float(&r, "attention.layer_norm_rms_epsilon", 0.0f, &hp->norm_eps, &found)))
        return st;
    if (!found)
        return pt_fail(err, PT_ERR_FORMAT, "missing key '%s.attention.layer_norm_rms_epsilon'",
                       hp->arch_name);
    if ((st = read_rope_scaling(&r, hp))) return st;
    hp->ffn_act = PT_FFN_SILU;
    hp->embd_scale = 1.0f;
    hp->attn_scale = (float)(1.0 / sqrt((double)hp->head_dim));
    if (hp->arch == PT_ARCH_GEMMA3 && (st = read_gemma3(&r, hp))) return st;

    /* The vocabulary size: the arch key, else the tokenizer's list, else
     * the embedding matrix (whose shape is then checked against it). */
    const pt_gguf_value *tokens = pt_gguf_get_arr(g, "tokenizer.ggml.tokens", PT_GGUF_STRING);
    const pt_gguf_tensor *embd = pt_gguf_find_tensor(g, "token_embd.weight");
    int dflt = tokens && tokens->v.arr.n <= MAX_DIM ? (int)tokens->v.arr.n
             : embd && embd->n_dims == 2 && embd->ne[1] <= MAX_DIM ? (int)embd->ne[1] : -1;
    if (dflt == 0) dflt = -1;
    return get_int(&r, "vocab_size", 1, MAX_DIM, dflt, &hp->n_vocab);
}

/* ---- tensors ------------------------------------------------------------ */

typedef struct tensor_finder {
    const pt_gguf *g;
    pt_error *err;
} tensor_finder;

static void fmt_shape(char *buf, size_t cap, int n_dims, const int64_t *ne) {
    size_t o = (size_t)snprintf(buf, cap, "[");
    for (int d = 0; d < n_dims && o < cap; d++)
        o += (size_t)snprintf(buf + o, cap - o, d ? ", %lld" : "%lld", (long long)ne[d]);
    if (o < cap) snprintf(buf + o, cap - o, "]");
}

/* Find `name` with shape ne[0..n_dims) and a supported type. Absent and
 * optional: *out = NULL and PT_OK. */
static pt_status find(const tensor_finder *f, const char *name, int n_dims, const int64_t *ne,
                      bool optional, const pt_gguf_tensor **out) {
    const pt_gguf_tensor *t = pt_gguf_find_tensor(f->g, name);
    *out = t;
    if (!t) return optional ? PT_OK : pt_fail(f->err, PT_ERR_FORMAT, "missing tensor '%s'", name);
    const pt_type_traits *tr = pt_type_get(t->type);
    if (!tr) return pt_fail(f->err, PT_ERR_UNSUPPORTED, "tensor '%s' has unknown type id %u", name, t->type);
    if (!tr->supported)
        return pt_fail(f->err, PT_ERR_UNSUPPORTED, "tensor '%s' has unsupported type %s", name, tr->name);
    bool same = (int)t->n_dims == n_dims;
    for (int d = 0; d < n_dims && same; d++) same = t->ne[d] == ne[d];
    if (!same) {
        char have[96], want[96];
        fmt_shape(have, sizeof have, (int)t->n_dims, t->ne);
        fmt_shape(want, sizeof want, n_dims, ne);
        return pt_fail(f->err, PT_ERR_FORMAT, "tensor '%s' has shape %s, expected %s", name, have, want);
    }
    if (pt_type_row_bytes(t->type, ne[0]) == 0)
        return pt_fail(f->err, PT_ERR_FORMAT, "tensor '%s' row length %lld is not a multiple of the %s block size %d",
                       name, (long long)ne[0], tr->name, tr->block_elems);
    return PT_OK;
}

/* Alignment find_matrix requires of a weight's data (the GGUF spec's
 * minimum general.alignment; covers every type's element or block). */
enum { MATRIX_DATA_ALIGN = 8 };

/* A [rows x cols] matrix (GGUF ne = [cols, rows]) of any supported type. */
static pt_status find_matrix(const tensor_finder *f, const char *name, int64_t rows, int64_t cols,
                             bool optional, pt_weight *w) {
    const int64_t ne[2] = {cols, rows};
    const pt_gguf_tensor *t;
    pt_status st = find(f, name, 2, ne, optional, &t);
    if (st || !t) return st;
    /* The kernels read F32/F16 values and quant block structs in place:
     * a mapped file gives data aligned to general.alignment (a multiple
     * of 8), but a buffer given to pt_gguf_open_memory may be anywhere. */
    if ((uintptr_t)t->data % MATRIX_DATA_ALIGN != 0)
        return pt_fail(f->err, PT_ERR_FORMAT, "tensor '%s' data is not %d-byte aligned", name,
                       MATRIX_DATA_ALIGN);
    *w = (pt_weight){.type = t->type, .data = t->data, .rows = rows, .cols = cols};
    return PT_OK;
}

/* A float32 vector of n elements (norm weights, biases). */
static pt_status find_vector(const tensor_finder *f, const char *name, int64_t n, bool optional,
                             const float **v) {
    const pt_gguf_tensor *t;
    pt_status st = find(f, name, 1, &n, optional, &t);
    *v = NULL;
    if (st || !t) return st;
    if (t->type != PT_TYPE_F32)
        return pt_fail(f->err, PT_ERR_UNSUPPORTED, "tensor '%s' has type %s, expected F32", name,
                       pt_type_name(t->type));
    if ((uintptr_t)t->data % _Alignof(float) != 0)
        return pt_fail(f->err, PT_ERR_FORMAT, "tensor '%s' data is not 4-byte aligned", name);
    *v = t->data;
    return PT_OK;
}

static pt_status load_layer(const tensor_finder *f, const pt_llm_hparams *hp, int il, pt_llm_layer *L) {
    const int64_t E = hp->n_embd, F = hp->n_ff, D = hp->head_dim;
    const int64_t QD = (int64_t)hp->n_head * D, KD = (int64_t)hp->n_head_kv * D;
    const bool qwen2 = hp->arch == PT_ARCH_QWEN2, qwen3 = hp->arch == PT_ARCH_QWEN3;
    const bool gemma3 = hp->arch == PT_ARCH_GEMMA3;
    char n[16][64];
    static const char *const suffix[16] = {
        "attn_norm.weight", "attn_q.weight", "attn_k.weight", "attn_v.weight",
        "attn_output.weight", "attn_q.bias", "attn_k.bias", "attn_v.bias",
        "attn_q_norm.weight", "attn_k_norm.weight", "ffn_norm.weight", "ffn_gate.weight",
        "ffn_up.weight", "ffn_down.weight", "post_attention_norm.weight", "post_ffw_norm.weight",
    };
    for (int i = 0; i < 16; i++) snprintf(n[i], sizeof n[i], "blk.%d.%s", il, suffix[i]);
    pt_status st;
    if ((st = find_vector(f, n[0], E, false, &L->attn_norm)) ||
        (st = find_matrix(f, n[1], QD, E, false, &L->wq)) ||
        (st = find_matrix(f, n[2], KD, E, false, &L->wk)) ||
        (st = find_matrix(f, n[3], KD, E, false, &L->wv)) ||
        (st = find_matrix(f, n[4], E, QD, false, &L->wo)))
        return st;
    /* Biases: required for qwen2, optional for llama, absent in qwen3 and gemma3. */
    if (hp->arch != PT_ARCH_QWEN3 && !gemma3 &&
        ((st = find_vector(f, n[5], QD, !qwen2, &L->bq)) ||
         (st = find_vector(f, n[6], KD, !qwen2, &L->bk)) ||
         (st = find_vector(f, n[7], KD, !qwen2, &L->bv))))
        return st;
    if ((qwen3 || gemma3) && ((st = find_vector(f, n[8], D, false, &L->q_norm)) ||
                              (st = find_vector(f, n[9], D, false, &L->k_norm))))
        return st;
    if (hp->post_norms && ((st = find_vector(f, n[14], E, false, &L->attn_post_norm)) ||
                           (st = find_vector(f, n[15], E, false, &L->ffn_post_norm))))
        return st;
    if ((st = find_vector(f, n[10], E, false, &L->ffn_norm)) ||
        (st = find_matrix(f, n[11], F, E, false, &L->w_gate)) ||
        (st = find_matrix(f, n[12], F, E, false, &L->w_up)) ||
        (st = find_matrix(f, n[13], E, F, false, &L->w_down)))
        return st;
    return PT_OK;
}

/* ---- repacking ---------------------------------------------------------- */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Give back the whole pages of [p, p + n) inside g's mapping. The mapping
 * is private and read-only, so its pages were never written: dropping them
 * loses nothing, and a later read faults them in again from the file. */
static uint64_t drop_pages(const pt_gguf *g, const void *p, size_t n) {
    if (!g->owns_map || n == 0) return 0;
    const long page = sysconf(_SC_PAGESIZE);
    if (page <= 0) return 0;
    const uintptr_t a = ((uintptr_t)p + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
    const uintptr_t b = ((uintptr_t)p + n) & ~((uintptr_t)page - 1);
    if (b <= a || madvise((void *)a, b - a, MADV_DONTNEED) != 0) return 0;
    return b - a;
}

/* The matrices to repack, each a task of a pool run: the output (the
 * token embedding when tied) and the 7 matrices of every layer. */
typedef struct pack_item {
    pt_weight *w;
    const char *name; /* GGUF name, "blk.N." prefix left out for layers */
    int il;           /* layer, or -1 */
    bool failed;      /* out of memory */
    uint64_t dropped; /* mapped bytes given back */
} pack_item;

typedef struct pack_job {
    const pt_cpu *cpu;
    const pt_gguf *g;
    pack_item *items;
    /* progress: source bytes of the matrices packed so far, of total;
     * only thread 0 (the loading thread) calls fn */
    _Atomic uint64_t done;
    uint64_t total;
    pt_load_progress_fn fn;
    void *user;
} pack_job;

/* Repack one matrix when its type has a fast path (else it stays on the
 * reference path), then drop its source pages. Tasks touch only their own
 * item and weight. */
static void pack_task(void *ctx, int task, int n_tasks, int thread) {
    (void)n_tasks;
    pack_job *j = ctx;
    pack_item *it = &j->items[task];
    pt_weight *w = it->w;
    if (!pt_weight_can_pack(w, j->cpu)) return;
    if (!pt_weight_pack(w, j->cpu)) {
        it->failed = true;
        return;
    }
    const uint64_t bytes = pt_weight_source_bytes(w);
    it->dropped = drop_pages(j->g, w->data, (size_t)bytes);
    const uint64_t done = atomic_fetch_add(&j->done, bytes) + bytes;
    if (thread == 0 && j->fn) j->fn(j->user, done, j->total);
}

/* Repacking runs on the caller's pool, or else on a short-lived private
 * pool of one thread per online CPU (at most 8: it is memory-bound
 * copying). Peak memory: the packed copies plus, per thread, the source
 * pages of the matrix in hand. */
#define PACK_MAX_THREADS 8

static pt_status pack_all(pt_llm *m, const pt_gguf *g, const pt_llm_load_opts *o, pt_error *err) {
    const double t0 = now_s();
    m->pack.variant = pt_cpu_variant_name(m->cpu.variant);
    static const char *const names[7] = {"attn_q.weight", "attn_k.weight", "attn_v.weight",
                                         "attn_output.weight", "ffn_gate.weight", "ffn_up.weight",
                                         "ffn_down.weight"};
    const int n = 1 + 7 * m->hp.n_layer;
    pack_item *items = calloc((size_t)n, sizeof *items);
    if (!items) return pt_fail(err, PT_ERR_NOMEM, "out of memory for %d repacking tasks", n);
    items[0] = (pack_item){&m->output, m->hp.tied_output ? "token_embd.weight" : "output.weight", -1, false, 0};
    for (int il = 0; il < m->hp.n_layer; il++) {
        pt_llm_layer *L = &m->layers[il];
        pt_weight *ws[7] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
        for (int k = 0; k < 7; k++) items[1 + 7 * il + k] = (pack_item){ws[k], names[k], il, false, 0};
    }

    pt_load_progress_fn fn = o->progress;
    void *user = o->progress_user;
    pack_job job = {&m->cpu, g, items, 0, 0, fn, user};
    for (int i = 0; i < n; i++)
        if (pt_weight_can_pack(items[i].w, &m->cpu)) job.total += pt_weight_source_bytes(items[i].w);
    if (fn) fn(user, 0, job.total);
    if (m->cpu.variant == PT_CPU_REF) {
        /* nothing to repack */
    } else if (o->pool) {
        pt_threadpool_acquire(o->pool);
        pt_pool_run(o->pool->pool, pack_task, &job, n);
        pt_threadpool_release(o->pool);
    } else {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        const int n_threads = cpus < 1 ? 1 : cpus > PACK_MAX_THREADS ? PACK_MAX_THREADS : (int)cpus;
        pt_pool *pool = NULL;
        if (n_threads == 1 || pt_pool_new(n_threads, &pool, NULL) != PT_OK) {
            for (int i = 0; i < n; i++) pack_task(&job, i, n, 0); /* no pool: one by one */
        } else {
            pt_pool_set_spin_us(pool, 0); /* tasks are long: no need to spin */
            pt_pool_run(pool, pack_task, &job, n);
            pt_pool_free(pool);
        }
    }
    if (m->hp.tied_output) m->tok_embd.packed = m->output.packed; /* shared, owned by output */
    if (fn) fn(user, job.total, job.total);

    pt_status st = PT_OK;
    for (int i = 0; i < n; i++) {
        const pack_item *it = &items[i];
        const pt_weight *w = it->w;
        if (it->failed && st == PT_OK) {
            char full[64];
            if (it->il >= 0) snprintf(full, sizeof full, "blk.%d.%s", it->il, it->name);
            else snprintf(full, sizeof full, "%s", it->name);
            st = pt_fail(err, PT_ERR_NOMEM, "out of memory repacking tensor '%s' (%zu bytes)", full,
                         pt_type_row_bytes(w->type, w->cols) * (size_t)w->rows);
        }
        if (w->packed) {
            m->pack.n_packed++;
            m->pack.packed_bytes += pt_qweights_bytes(w->packed);
            m->pack.dropped_bytes += it->dropped;
        } else if (!it->failed) {
            m->pack.n_ref++;
        }
    }
    free(items);
    m->pack.pack_seconds = now_s() - t0;
    return st;
}

/* The F32 vectors of the model (norm weights, biases, rope_freqs) are a
 * few KiB each, but they sit between the big matrices in the file. Read
 * from the mapping at every step, each would fault in the page-cache folio
 * around it, and on kernels with large folios that maps up to megabytes of
 * already repacked (and dropped) weights back into the RSS: 65 MiB for
 * SmolLM2. So they are copied into one heap block and their pages dropped
 * too; dropping read-only private pages is always safe (a read faults
 * them in again). */
static pt_status own_vectors(pt_llm *m, const pt_gguf *g, pt_error *err) {
    const int64_t E = m->hp.n_embd, D = m->hp.head_dim;
    const int64_t QD = (int64_t)m->hp.n_head * D, KD = (int64_t)m->hp.n_head_kv * D;
    const int n = 2 + 9 * m->hp.n_layer; /* the vector fields of pt_llm */
    const float ***slot = malloc((size_t)n * sizeof *slot);
    int64_t *len = malloc((size_t)n * sizeof *len);
    if (!slot || !len) {
        free(slot);
        free(len);
        return pt_fail(err, PT_ERR_NOMEM, "out of memory for the model's vectors");
    }
    int k = 0;
    slot[k] = &m->output_norm, len[k++] = E;
    slot[k] = &m->rope_freqs, len[k++] = m->hp.n_rot / 2;
    for (int il = 0; il < m->hp.n_layer; il++) {
        pt_llm_layer *L = &m->layers[il];
        slot[k] = &L->attn_norm, len[k++] = E;
        slot[k] = &L->ffn_norm, len[k++] = E;
        slot[k] = &L->bq, len[k++] = QD;
        slot[k] = &L->bk, len[k++] = KD;
        slot[k] = &L->bv, len[k++] = KD;
        slot[k] = &L->q_norm, len[k++] = D;
        slot[k] = &L->k_norm, len[k++] = D;
        slot[k] = &L->attn_post_norm, len[k++] = E;
        slot[k] = &L->ffn_post_norm, len[k++] = E;
    }
    size_t total = 0;
    for (int i = 0; i < n; i++)
        if (*slot[i]) total += (size_t)len[i];
    m->vectors = malloc((total ? total : 1) * sizeof(float));
    if (!m->vectors) {
        free(slot);
        free(len);
        return pt_fail(err, PT_ERR_NOMEM, "out of memory for the model's vectors");
    }
    float *p = m->vectors;
    const long page = sysconf(_SC_PAGESIZE);
    for (int i = 0; i < n; i++) {
        const float *src = *slot[i];
        if (!src) continue;
        memcpy(p, src, (size_t)len[i] * sizeof(float));
        *slot[i] = p;
        p += len[i];
        if (g->owns_map && page > 0) { /* the whole pages it touched */
            const uintptr_t a = (uintptr_t)src & ~((uintptr_t)page - 1);
            const uintptr_t b = ((uintptr_t)(src + len[i]) + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
            madvise((void *)a, b - a, MADV_DONTNEED); /* a failure only costs memory */
        }
    }
    free(slot);
    free(len);
    return PT_OK;
}

pt_status pt_llm_load(const pt_gguf *g, pt_llm **out, pt_error *err) {
    return pt_llm_load_with(g, NULL, out, err);
}

pt_status pt_llm_load_cpu(const pt_gguf *g, const pt_cpu *cpu, pt_llm **out, pt_error *err) {
    const pt_llm_load_opts o = {.cpu = cpu};
    return pt_llm_load_with(g, &o, out, err);
}

pt_status pt_llm_cpu_from_name(const char *name, pt_cpu *out, pt_error *err) {
    if (name && strcmp(name, "auto") == 0) name = NULL;
    if (pt_cpu_detect_with(out, name) != 0)
        return pt_fail(err, PT_ERR_UNSUPPORTED,
                       "CPU kernel variant '%s' is unknown or this CPU cannot run it",
                       name ? name : "auto");
    return PT_OK;
}

pt_status pt_llm_load_with(const pt_gguf *g, const pt_llm_load_opts *opts, pt_llm **out,
                           pt_error *err) {
    *out = NULL;
    const pt_llm_load_opts o = opts ? *opts : (pt_llm_load_opts){0};
    pt_cpu detected;
    const pt_cpu *cpu = o.cpu;
    if (!cpu) {
        pt_cpu_detect_with(&detected, NULL); /* the best: cannot fail */
        cpu = &detected;
    }
    pt_llm *m = calloc(1, sizeof *m);
    if (!m) return pt_fail(err, PT_ERR_NOMEM, "out of memory for the model");
    m->cpu = *cpu;
    pt_status st = read_hparams(g, &m->hp, err);
    if (st) goto fail;
    const pt_llm_hparams *hp = &m->hp;
    const tensor_finder f = {g, err};

    if ((st = find_matrix(&f, "token_embd.weight", hp->n_vocab, hp->n_embd, false, &m->tok_embd)) ||
        (st = find_vector(&f, "output_norm.weight", hp->n_embd, false, &m->output_norm)))
        goto fail;
    m->output.data = NULL;
    if ((st = find_matrix(&f, "output.weight", hp->n_vocab, hp->n_embd, true, &m->output))) goto fail;
    m->hp.tied_output = m->output.data == NULL;
    if (m->hp.tied_output) m->output = m->tok_embd;
    if (hp->arch == PT_ARCH_LLAMA &&
        (st = find_vector(&f, "rope_freqs.weight", hp->n_rot / 2, true, &m->rope_freqs)))
        goto fail;

    m->layers = calloc((size_t)hp->n_layer, sizeof *m->layers);
    if (!m->layers) {
        st = pt_fail(err, PT_ERR_NOMEM, "out of memory for %d layers", hp->n_layer);
        goto fail;
    }
    for (int il = 0; il < hp->n_layer; il++)
        if ((st = load_layer(&f, hp, il, &m->layers[il]))) goto fail;
    if ((st = read_swa_pattern(g, hp, m->layers, err))) goto fail;
    if (o.metadata_only) {
        /* the weights stay unread: nothing packed, nothing on any path */
        m->pack.variant = pt_cpu_variant_name(m->cpu.variant);
    } else if ((st = pack_all(m, g, &o, err)) || (st = own_vectors(m, g, err))) {
        goto fail;
    }
    *out = m;
    return PT_OK;
fail:
    pt_llm_free(m);
    return st;
}

void pt_llm_free(pt_llm *m) {
    if (!m) return;
    pt_qweights_free(m->output.packed); /* tok_embd.packed is this or NULL */
    for (int il = 0; m->layers && il < m->hp.n_layer; il++) {
        pt_llm_layer *L = &m->layers[il];
        pt_qweights_free(L->wq.packed);
        pt_qweights_free(L->wk.packed);
        pt_qweights_free(L->wv.packed);
        pt_qweights_free(L->wo.packed);
        pt_qweights_free(L->w_gate.packed);
        pt_qweights_free(L->w_up.packed);
        pt_qweights_free(L->w_down.packed);
    }
    pt_llm_graph_free(m->graph); /* before the vectors its CPU layers view */
    free(m->layers);
    free(m->vectors);
    free(m);
}

const pt_llm_hparams *pt_llm_get_hparams(const pt_llm *m) { return &m->hp; }

int pt_llm_swa_layers(const pt_llm *m) {
    int n = 0;
    for (int il = 0; m->hp.n_swa > 0 && il < m->hp.n_layer; il++) n += m->layers[il].swa;
    return n;
}

void pt_llm_get_pack_info(const pt_llm *m, pt_llm_pack_info *out) { *out = m->pack; }
