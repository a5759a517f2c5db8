/*
 * quantize_policy.c — llama-quantize's per-tensor type choices for the
 * legacy targets (see quantize_policy.h). Ported from llama.cpp's
 * src/llama-quant.cpp (the llama-cpp-python 0.3.36 sdist); the rules that
 * only concern K / IQ / ternary targets or an importance matrix are left
 * out, since petrel's targets never reach them (none of them names
 * LLAMA_FTYPE_MOSTLY_Q6_K: a Q6_K target takes only the output and
 * fallback rules).
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
    CAT_OTHER, CAT_OUTPUT, CAT_TOKEN_EMBD, CAT_ATTN_V, CAT_ATTN_K,
} category;

/* tensor_get_category, reduced to the categories whose rules apply to
 * petrel's targets (attn_qkv and attn_kv_b count as attn_v there). */
static category category_of(pt_gguf_str name) {
    if (str_is(name, "output.weight")) return CAT_OUTPUT;
    if (str_is(name, "token_embd.weight") || str_is(name, "per_layer_token_embd.weight")) return CAT_TOKEN_EMBD;
    if (str_has(name, "attn_qkv.weight") || str_has(name, "attn_kv_b.weight") || str_has(name, "attn_v.weight"))
        return CAT_ATTN_V;
    if (str_has(name, "attn_k.weight")) return CAT_ATTN_K;
    return CAT_OTHER;
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

uint32_t pt_qpolicy_type(const pt_qpolicy *p, const pt_gguf_tensor *t, bool *fell_back) {
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
    } else if ((cat == CAT_ATTN_V || cat == CAT_ATTN_K) && p->eight_experts) {
        type = PT_TYPE_Q8_0;
    }
    return fallback(t, type, fell_back);
}

void pt_qpolicy_from_model(pt_qpolicy *p, const pt_gguf *g) {
    p->tied = pt_gguf_find_tensor(g, "output.weight") == NULL;
    pt_gguf_str arch = {0};
    p->falcon = pt_gguf_get_str(g, "general.architecture", &arch) && str_is(arch, "falcon");
    p->eight_experts = false;
    if (arch.len && arch.len < 64) {
        char key[96];
        snprintf(key, sizeof key, "%.*s.expert_count", (int)arch.len, arch.ptr);
        uint32_t n = 0;
        p->eight_experts = pt_gguf_get_u32(g, key, &n) && n == 8;
    }
}

/* ---- names and file types ------------------------------------------------ */

static const struct {
    const char *name;
    uint32_t type, ftype; /* enum pt_type; LLAMA_FTYPE_* (include/llama.h) */
} TARGETS[] = {
    {"F32", PT_TYPE_F32, 0},   {"F16", PT_TYPE_F16, 1},   {"Q4_0", PT_TYPE_Q4_0, 2},
    {"Q4_1", PT_TYPE_Q4_1, 3}, {"Q8_0", PT_TYPE_Q8_0, 7}, {"Q5_0", PT_TYPE_Q5_0, 8},
    {"Q5_1", PT_TYPE_Q5_1, 9}, {"Q6_K", PT_TYPE_Q6_K, 18}, {"BF16", PT_TYPE_BF16, 32},
};

bool pt_qtype_parse(const char *name, uint32_t *type) {
    for (size_t i = 0; name && i < sizeof TARGETS / sizeof TARGETS[0]; i++)
        if (!strcasecmp(name, TARGETS[i].name)) {
            *type = TARGETS[i].type;
            return true;
        }
    return false;
}

uint32_t pt_qtype_ftype(uint32_t type) {
    for (size_t i = 0; i < sizeof TARGETS / sizeof TARGETS[0]; i++)
        if (TARGETS[i].type == type) return TARGETS[i].ftype;
    return 0;
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
