/*
 * quantize_policy.c — llama-quantize's per-tensor type choices for the
 * targets petrel writes (see quantize_policy.h). Ported from llama.cpp's
 * src/llama-quant.cpp (the llama-cpp-python 0.3.36 sdist); the rules that
 * only concern Q2_K / Q3_K / IQ / ternary / MXFP4 targets, an importance
 * matrix, manual --tensor-type patterns or --pure are left out, since
 * petrel's targets and options never reach them (none names
 * LLAMA_FTYPE_MOSTLY_Q6_K: a Q6_K target takes only the output and
 * fallback rules). MoE models with n_expert > 1 would need the layer of
 * ffn_down parsed from its name; petrel counts (dense models).
 */
#include "quantize_policy.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "quant.h"

/* ---- names --------------------------------------------------------------- */

static bool str_is(pt_gguf_str s, const char *c) {
    return pt_gguf_str_eq(s, c);
}

static bool str_has(pt_gguf_str s, const char *needle) {
    const size_t n = strlen(needle);
    if (n > s.len) return false;
    for (uint64_t i = 0; i + n <= s.len; i++)
        if (!memcmp(s.ptr + i, needle, n)) return true;
    return false;
}

static bool str_ends(pt_gguf_str s, const char *suffix) {
    const size_t n = strlen(suffix);
    return s.len >= n && !memcmp(s.ptr + s.len - n, suffix, n);
}

typedef enum category {
    CAT_OTHER, CAT_OUTPUT, CAT_TOKEN_EMBD, CAT_ATTN_V, CAT_ATTN_K, CAT_ATTN_OUTPUT, CAT_FFN_DOWN,
} category;

/* tensor_get_category, reduced to the categories whose rules apply to
 * petrel's targets. attn_qkv and attn_kv_b count as attn_v: llama.cpp's
 * attn_v branch (category_is_attn_v) comes before its attn_qkv one, which
 * is never reached. Checked in llama.cpp's order (attn_q, ffn_up, ffn_gate
 * only matter for IQ types, but must not fall through to ffn_down). */
static category category_of(pt_gguf_str name) {
    if (str_is(name, "output.weight")) return CAT_OUTPUT;
    if (str_is(name, "token_embd.weight") || str_is(name, "per_layer_token_embd.weight")) return CAT_TOKEN_EMBD;
    if (str_has(name, "attn_qkv.weight") || str_has(name, "attn_kv_b.weight") || str_has(name, "attn_v.weight"))
        return CAT_ATTN_V;
    if (str_has(name, "attn_k.weight")) return CAT_ATTN_K;
    if (str_has(name, "attn_q.weight")) return CAT_OTHER;
    if (str_has(name, "attn_output.weight")) return CAT_ATTN_OUTPUT;
    if (str_has(name, "ffn_up") || str_has(name, "ffn_gate")) return CAT_OTHER;
    if (str_has(name, "ffn_down")) return CAT_FFN_DOWN;
    return CAT_OTHER;
}

/* LLAMA_FTYPE_MOSTLY_* of the K mixes */
#define FT_Q4_K_S 14
#define FT_Q4_K_M 15
#define FT_Q5_K_S 16
#define FT_Q5_K_M 17

static bool use_more_bits(int i_layer, int n_layers) {
    return i_layer < n_layers / 8 || i_layer >= 7 * n_layers / 8 || (i_layer - n_layers / 8) % 3 == 2;
}

/* Substrings that keep a tensor as it is (tensor_allows_quantization):
 * tiny or special matrices of various architectures. */
static const char *const KEEP[] = {
    "_norm.weight", "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup", "laurel",
    "per_layer_model_proj", "ssm_conv1d", "shortconv.conv.weight", "indexer.k_proj.weight",
    "indexer.q_proj.weight", "time_mix_first.weight", "time_mix_w0.weight", "time_mix_w1.weight",
    "time_mix_w2.weight", "time_mix_v0.weight", "time_mix_v1.weight", "time_mix_v2.weight",
    "time_mix_a0.weight", "time_mix_a1.weight", "time_mix_a2.weight", "time_mix_g1.weight",
    "time_mix_g2.weight", "time_mix_decay_w1.weight", "time_mix_decay_w2.weight",
    "time_mix_lerp_fused.weight", "attn_rel_b.weight", ".position_embd", "sam.pos_embd", "sam.neck.",
    "sam.net_", ".rel_pos", ".patch_embd", ".patch_merger", "a.rvq.codebook", "mm.a.code_embd",
};

int pt_qpolicy_n_dims(const pt_gguf_tensor *t) {
    for (int d = 3; d > 0; d--)
        if (t->ne[d] > 1) return d + 1;
    return 1;
}

static bool allows_quantization(const pt_qpolicy *p, const pt_gguf_tensor *t) {
    if (pt_qpolicy_n_dims(t) < 2) return false;
    if (!str_ends(t->name, "weight")) return false;
    if (p->leave_output && str_is(t->name, "output.weight")) return false;
    if (str_is(t->name, "position_embd.weight") || str_is(t->name, "token_types.weight")) return false;
    for (size_t i = 0; i < sizeof KEEP / sizeof KEEP[0]; i++)
        if (str_has(t->name, KEEP[i])) return false;
    return true;
}

static bool is_block_type(uint32_t type) {
    const pt_type_traits *tr = pt_type_get(type);
    return tr && tr->block_elems > 1;
}

static int64_t block_of(uint32_t type) {
    const pt_type_traits *tr = pt_type_get(type);
    return tr ? tr->block_elems : 1;
}

/* tensor_type_fallback: a row length the chosen block does not divide. */
static uint32_t fallback(const pt_gguf_tensor *t, uint32_t type, bool *fell_back) {
    const int64_t ncols = t->ne[0];
    if (ncols % block_of(type) == 0) return type;
    *fell_back = true;
    uint32_t r = type;
    switch (type) {
    case PT_TYPE_Q4_K: r = PT_TYPE_Q5_0; break;
    case PT_TYPE_Q5_K: r = PT_TYPE_Q5_1; break;
    case PT_TYPE_Q6_K: r = PT_TYPE_Q8_0; break;
    default: break; /* a 32-block type: to F16 below */
    }
    if (ncols % block_of(r) != 0) r = PT_TYPE_F16;
    return r;
}

uint32_t pt_qpolicy_type(pt_qpolicy *p, const pt_gguf_tensor *t, bool *fell_back) {
    *fell_back = false;
    if (!allows_quantization(p, t)) return t->type;
    const category cat = category_of(t->name);
    if (p->token_embd_type != PT_QTYPE_NONE && cat == CAT_TOKEN_EMBD) return p->token_embd_type;
    if (p->output_type != PT_QTYPE_NONE && cat == CAT_OUTPUT) return p->output_type;
    uint32_t type = p->target;
    if (!is_block_type(type)) return type; /* F32 / F16 / BF16: every allowed tensor */

    /* llama_tensor_get_type_impl */
    if (cat == CAT_OUTPUT || (p->tied && cat == CAT_TOKEN_EMBD)) {
        if (p->output_type != PT_QTYPE_NONE)
            type = p->output_type;
        else if (p->falcon || t->ne[0] % block_of(type) != 0)
            type = PT_TYPE_Q8_0;
        else if (type != PT_TYPE_Q8_0)
            type = PT_TYPE_Q6_K;
    } else if (cat == CAT_ATTN_V) {
        if ((p->ftype == FT_Q4_K_M || p->ftype == FT_Q5_K_M) && use_more_bits(p->i_attn_v, p->n_attn_v))
            type = PT_TYPE_Q6_K;
        else if (p->ftype == FT_Q4_K_S && p->i_attn_v < 4)
            type = PT_TYPE_Q5_K;
        if (p->llama_70b && type == PT_TYPE_Q4_K) type = PT_TYPE_Q5_K;
        if (p->eight_experts) type = PT_TYPE_Q8_0;
        p->i_attn_v++;
    } else if (cat == CAT_ATTN_K) {
        if (p->eight_experts) type = PT_TYPE_Q8_0;
    } else if (cat == CAT_FFN_DOWN) {
        /* the layer is the counter (dense models; llama.cpp parses the
         * name only when n_expert > 1, which petrel does not run) */
        const int i_layer = p->i_ffn_down, n_layer = p->n_layer;
        if (p->ftype == FT_Q4_K_M) {
            if (p->falcon)
                type = i_layer < n_layer / 16 ? PT_TYPE_Q6_K : use_more_bits(i_layer, n_layer) ? PT_TYPE_Q5_K : PT_TYPE_Q4_K;
            else if (use_more_bits(i_layer, n_layer))
                type = PT_TYPE_Q6_K;
        } else if (p->ftype == FT_Q5_K_M && use_more_bits(i_layer, n_layer)) {
            type = PT_TYPE_Q6_K;
        } else if (p->ftype == FT_Q4_K_S && !p->falcon && i_layer < n_layer / 8) {
            type = PT_TYPE_Q5_K;
        }
        p->i_ffn_down++;
    } else if (cat == CAT_ATTN_OUTPUT) {
        if (!p->falcon && p->eight_experts && (p->ftype == FT_Q4_K_S || p->ftype == FT_Q4_K_M)) type = PT_TYPE_Q5_K;
    }
    return fallback(t, type, fell_back);
}

void pt_qpolicy_from_model(pt_qpolicy *p, const pt_gguf *g) {
    p->tied = pt_gguf_find_tensor(g, "output.weight") == NULL;
    pt_gguf_str arch = {0};
    p->falcon = pt_gguf_get_str(g, "general.architecture", &arch) && str_is(arch, "falcon");
    p->eight_experts = p->llama_70b = false;
    p->n_layer = 0;
    if (arch.len && arch.len < 64) {
        char key[96];
        uint32_t n = 0, heads = 0, kv_heads = 0;
        snprintf(key, sizeof key, "%.*s.expert_count", (int)arch.len, arch.ptr);
        p->eight_experts = pt_gguf_get_u32(g, key, &n) && n == 8;
        snprintf(key, sizeof key, "%.*s.block_count", (int)arch.len, arch.ptr);
        if (pt_gguf_get_u32(g, key, &n) && n < (1u << 20)) p->n_layer = (int)n;
        /* llama.cpp's llama hparams: 80 layers is 70B when grouped (65B if not) */
        snprintf(key, sizeof key, "%.*s.attention.head_count", (int)arch.len, arch.ptr);
        const bool h = pt_gguf_get_u32(g, key, &heads);
        snprintf(key, sizeof key, "%.*s.attention.head_count_kv", (int)arch.len, arch.ptr);
        if (!pt_gguf_get_u32(g, key, &kv_heads)) kv_heads = heads;
        p->llama_70b = str_is(arch, "llama") && p->n_layer == 80 && h && heads != kv_heads;
    }
    p->n_attn_v = 0;
    for (uint64_t i = 0; i < g->n_tensors; i++) p->n_attn_v += category_of(g->tensors[i].name) == CAT_ATTN_V;
    p->i_attn_v = p->i_ffn_down = 0;
}

/* ---- names and file types ------------------------------------------------ */

static const struct {
    const char *name;
    uint32_t type, ftype; /* enum pt_type; LLAMA_FTYPE_* (include/llama.h) */
} TARGETS[] = {
    {"F32", PT_TYPE_F32, 0},       {"F16", PT_TYPE_F16, 1},       {"Q4_0", PT_TYPE_Q4_0, 2},
    {"Q4_1", PT_TYPE_Q4_1, 3},     {"Q8_0", PT_TYPE_Q8_0, 7},     {"Q5_0", PT_TYPE_Q5_0, 8},
    {"Q5_1", PT_TYPE_Q5_1, 9},     {"Q4_K_S", PT_TYPE_Q4_K, 14},  {"Q4_K_M", PT_TYPE_Q4_K, 15},
    {"Q4_K", PT_TYPE_Q4_K, 15},    {"Q5_K_S", PT_TYPE_Q5_K, 16},  {"Q5_K_M", PT_TYPE_Q5_K, 17},
    {"Q5_K", PT_TYPE_Q5_K, 17},    {"Q6_K", PT_TYPE_Q6_K, 18},    {"BF16", PT_TYPE_BF16, 32},
};

bool pt_qtype_parse(const char *name, uint32_t *type, uint32_t *ftype) {
    for (size_t i = 0; name && i < sizeof TARGETS / sizeof TARGETS[0]; i++)
        if (!strcasecmp(name, TARGETS[i].name)) {
            *type = TARGETS[i].type;
            if (ftype) *ftype = TARGETS[i].ftype;
            return true;
        }
    return false;
}

/* ---- order ----------------------------------------------------------------- */

/* The layer as llama.cpp's weight_name_comparer reads it: sscanf
 * "blk.%d." (a number after "blk.", whatever follows it), else -1. */
static int layer_of(const pt_gguf_str *s) {
    char buf[64];
    const size_t n = s->len < sizeof buf - 1 ? (size_t)s->len : sizeof buf - 1;
    memcpy(buf, s->ptr, n);
    buf[n] = 0;
    int layer = -1;
    if (sscanf(buf, "blk.%d.", &layer) != 1) layer = -1;
    return layer;
}

int pt_qpolicy_order(const pt_gguf_str *a, const pt_gguf_str *b) {
    const int la = layer_of(a), lb = layer_of(b);
    if (la != lb) return la < lb ? -1 : 1;
    const size_t n = a->len < b->len ? (size_t)a->len : (size_t)b->len;
    const int c = memcmp(a->ptr, b->ptr, n);
    if (c) return c;
    return a->len < b->len ? -1 : a->len > b->len;
}
