/*
 * convert_hparams.c — the general.* and {arch}.* metadata of a converted
 * Hugging Face model, from config.json, in the order and with the types
 * llama.cpp's convert_hf_to_gguf.py gives them (conversion/base.py
 * TextModel.set_gguf_parameters, then the family's additions: llama's
 * vocab_size and rope.dimension_count, gemma3's defaults and
 * sliding_window), and the name / size label gguf-py's metadata.py derives.
 */
#include "convert_internal.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "status.h"

#define GGML_QNT_VERSION 2

static void key(char *buf, size_t cap, const char *arch, const char *suffix) {
    snprintf(buf, cap, "%s.%s", arch, suffix);
}

/* A config integer that must be present and positive. */
static pt_status need_int(const cv_hf *c, const char *name, int64_t *out, pt_error *err) {
    if (!cv_json_int(c->config, name, out) || *out <= 0 || *out > (int64_t)1 << 40)
        return pt_fail(err, PT_ERR_FORMAT, "%s/config.json: %s missing or not a positive integer", c->dir, name);
    return PT_OK;
}

/* model_weight_count_rounded_notation(n, min_digits=2) of gguf-py */
void cv_size_label(int64_t n, char *out, size_t cap) {
    double x;
    const char *suf;
    if (n > 1e12) x = (double)n * 1e-12, suf = "T";
    else if (n > 1e9) x = (double)n * 1e-9, suf = "B";
    else if (n > 1e6) x = (double)n * 1e-6, suf = "M";
    else x = (double)n * 1e-3, suf = "K";
    char whole[32];
    snprintf(whole, sizeof whole, "%.0f", nearbyint(x)); /* Python's round: half to even */
    const char *w = whole;
    while (*w == '0') w++;
    int fix = 2 - (int)strlen(w);
    if (fix < 0) fix = 0;
    snprintf(out, cap, "%.*f%s", fix, x, suf);
}

/* The converter's rope parameters (base.py, TextModel.__init__):
 * config's rope_parameters, else rope_scaling, else nothing; when they are
 * not split by layer type, the global and local thetas of config's top
 * level are mirrored into them. Here: the parameters of the global
 * layers (full), the theta of each kind, the rope type. */
typedef struct rope {
    const cJSON *full;        /* "full_attention", or the whole object, or NULL */
    bool has_theta, has_theta_swa;
    double theta, theta_swa;
    const char *type;         /* rope_type (or the old "type"), NULL: none */
} rope;

static bool find_num(const cJSON *o, const char *const *names, double *out) {
    for (; *names; names++)
        if (cv_json_num(o, *names, out)) return true;
    return false;
}

static rope rope_of(const cJSON *cfg) {
    static const char *const GLOBAL[] = {"global_rope_theta", "rope_global_theta", "rope_theta_global", "rope_theta",
                                         "rotary_emb_base", NULL};
    static const char *const LOCAL[] = {"local_rope_theta", "rope_local_theta", "rope_theta_local", "swa_rope_theta",
                                        "rope_local_base_freq", NULL};
    rope r = {0};
    const cJSON *rp = cv_json_obj(cfg, "rope_parameters");
    if (!rp) rp = cv_json_obj(cfg, "rope_scaling");
    const cJSON *full = cv_json_obj(rp, "full_attention"), *swa = cv_json_obj(rp, "sliding_attention");
    r.full = full ? full : rp;
    if (full || swa) {
        r.has_theta = cv_json_num(r.full, "rope_theta", &r.theta);
        r.has_theta_swa = cv_json_num(swa, "rope_theta", &r.theta_swa);
        r.type = cv_json_str(r.full, "rope_type");
    } else {
        r.has_theta_swa = find_num(cfg, LOCAL, &r.theta_swa);
        r.has_theta = cv_json_num(rp, "rope_theta", &r.theta) || find_num(cfg, GLOBAL, &r.theta);
        r.type = cv_json_str(rp, "rope_type");
        if (!r.type) r.type = cv_json_str(rp, "type");
    }
    return r;
}

/* Llama 3.1's rope factors (llama.py, LlamaModel.generate_extra_tensors),
 * in float32 as torch computes them there: freq_i = 1 / base^(2i/dim),
 * wavelength 2 pi / freq; factor 1 below the high-frequency wavelength,
 * `factor` above the low-frequency one, a smooth blend between. */
static pt_status llama3_factors(cv_hf *c, const rope *r, int64_t dim, pt_error *err) {
    double factor = 8.0, low = 1.0, high = 4.0, old_ctx = 8192, base = 10000.0;
    cv_json_num(r->full, "factor", &factor);
    cv_json_num(r->full, "low_freq_factor", &low);
    cv_json_num(r->full, "high_freq_factor", &high);
    cv_json_num(r->full, "original_max_position_embeddings", &old_ctx);
    cv_json_num(r->full, "rope_theta", &base);
    if (dim < 2 || dim > 4096 || dim % 2 || !(high > low) || !(factor > 0) || !(old_ctx > 0) || !(base > 0))
        return pt_fail(err, PT_ERR_FORMAT, "%s/config.json: bad llama3 rope parameters", c->dir);
    c->n_rope_freqs = dim / 2;
    c->rope_freqs = calloc((size_t)c->n_rope_freqs, sizeof *c->rope_freqs);
    if (!c->rope_freqs) return pt_fail(err, PT_ERR_NOMEM, "out of memory");
    const float low_wl = (float)(old_ctx / low), high_wl = (float)(old_ctx / high);
    for (int64_t i = 0; i < c->n_rope_freqs; i++) {
        const float freq = 1.0f / powf((float)base, (float)(2 * i) / (float)dim);
        const float wl = (float)(2 * M_PI) / freq;
        float f;
        if (wl < high_wl) {
            f = 1.0f;
        } else if (wl > low_wl) {
            f = (float)factor;
        } else {
            const float smooth = ((float)old_ctx / wl - (float)low) / (float)(high - low);
            f = 1.0f / ((1.0f - smooth) / (float)factor + smooth);
        }
        c->rope_freqs[i] = f;
    }
    return PT_OK;
}

pt_status cv_hf_hparams(cv_hf *c, uint32_t ftype, pt_error *err) {
    cv_kv *kv = &c->kv;
    const char *a = c->arch;
    char k[96];
    int64_t n_layer, n_ctx = 0, n_embd, n_ff, head_dim = 0, v;
    double d;
    pt_status st;
    if ((st = need_int(c, "num_hidden_layers", &n_layer, err)) || (st = need_int(c, "hidden_size", &n_embd, err)) ||
        (st = need_int(c, "intermediate_size", &n_ff, err)) ||
        (st = need_int(c, "num_attention_heads", &c->n_head, err)))
        return st;
    c->n_head_kv = c->n_head;
    if (cv_json_int(c->config, "num_key_value_heads", &v)) {
        if (v <= 0 || c->n_head % v)
            return pt_fail(err, PT_ERR_FORMAT, "%s/config.json: num_key_value_heads %lld does not divide %lld heads",
                           c->dir, (long long)v, (long long)c->n_head);
        c->n_head_kv = v;
    }
    cv_json_int(c->config, "max_position_embeddings", &n_ctx);
    const bool has_head_dim = cv_json_int(c->config, "head_dim", &head_dim) && head_dim > 0;
    c->n_embd = n_embd;
    c->n_ff = n_ff;
    c->head_dim = has_head_dim ? head_dim : c->fam == CV_GEMMA3 ? 256 : n_embd / c->n_head;
    if (cv_json_int(c->config, "vocab_size", &c->n_vocab) && (c->n_vocab <= 0 || c->n_vocab > CV_MAX_VOCAB))
        return pt_fail(err, PT_ERR_FORMAT, "%s/config.json: vocab_size %lld is not in 1..%d", c->dir,
                       (long long)c->n_vocab, CV_MAX_VOCAB);

    key(k, sizeof k, a, "block_count"), cv_kv_u32(kv, k, (uint32_t)n_layer);
    if (c->fam == CV_GEMMA3 && !n_ctx) n_ctx = 131072;
    if (n_ctx > 0) key(k, sizeof k, a, "context_length"), cv_kv_u32(kv, k, (uint32_t)n_ctx);
    key(k, sizeof k, a, "embedding_length"), cv_kv_u32(kv, k, (uint32_t)n_embd);
    key(k, sizeof k, a, "feed_forward_length"), cv_kv_u32(kv, k, (uint32_t)n_ff);
    key(k, sizeof k, a, "attention.head_count"), cv_kv_u32(kv, k, (uint32_t)c->n_head);
    key(k, sizeof k, a, "attention.head_count_kv"), cv_kv_u32(kv, k, (uint32_t)c->n_head_kv);
    const rope r = rope_of(c->config);
    if (r.type) {
        double factor;
        const bool has_factor = cv_json_num(r.full, "factor", &factor);
        if (!strcmp(r.type, "linear") && has_factor) {
            key(k, sizeof k, a, "rope.scaling.type"), cv_kv_cstr(kv, k, "linear");
            key(k, sizeof k, a, "rope.scaling.factor"), cv_kv_f32(kv, k, (float)factor);
        } else if (!strcmp(r.type, "llama3") && c->fam == CV_LLAMA) {
            /* rope_freqs.weight, below */
        } else if (strcmp(r.type, "default") != 0) {
            return pt_fail(err, PT_ERR_UNSUPPORTED, "%s/config.json: rope type '%.40s' is not converted yet", c->dir,
                           r.type);
        }
    }
    if (r.has_theta) key(k, sizeof k, a, "rope.freq_base"), cv_kv_f32(kv, k, (float)r.theta);
    if (r.has_theta_swa) key(k, sizeof k, a, "rope.freq_base_swa"), cv_kv_f32(kv, k, (float)r.theta_swa);
    if (cv_json_num(c->config, "rms_norm_eps", &d))
        key(k, sizeof k, a, "attention.layer_norm_rms_epsilon"), cv_kv_f32(kv, k, (float)d);
    if (has_head_dim) {
        key(k, sizeof k, a, "attention.key_length"), cv_kv_u32(kv, k, (uint32_t)head_dim);
        key(k, sizeof k, a, "attention.value_length"), cv_kv_u32(kv, k, (uint32_t)head_dim);
    }
    cv_kv_u32(kv, "general.file_type", ftype);
    if (c->fam == CV_LLAMA) {
        int64_t n_vocab = 0;
        cv_json_int(c->config, "vocab_size", &n_vocab);
        key(k, sizeof k, a, "vocab_size"), cv_kv_u32(kv, k, (uint32_t)n_vocab);
        const int64_t rot = has_head_dim ? head_dim : n_embd / c->n_head;
        key(k, sizeof k, a, "rope.dimension_count"), cv_kv_u32(kv, k, (uint32_t)rot);
        if (r.type && !strcasecmp(r.type, "llama3") && (st = llama3_factors(c, &r, rot, err))) return st;
    }
    if (c->fam == CV_GEMMA3) {
        /* Gemma3Model.set_gguf_parameters re-sets these (same values, or
         * its defaults where config.json lacks them) */
        if (!has_head_dim) head_dim = 256;
        key(k, sizeof k, a, "attention.key_length"), cv_kv_u32(kv, k, (uint32_t)head_dim);
        key(k, sizeof k, a, "attention.value_length"), cv_kv_u32(kv, k, (uint32_t)head_dim);
        if (!cv_kv_get(kv, "gemma3.rope.freq_base")) cv_kv_f32(kv, "gemma3.rope.freq_base", 1000000.0f);
        if (!cv_kv_get(kv, "gemma3.attention.layer_norm_rms_epsilon"))
            cv_kv_f32(kv, "gemma3.attention.layer_norm_rms_epsilon", 1e-6f);
        if (cv_json_num(c->config, "final_logit_softcapping", &d) && d != 0)
            cv_kv_f32(kv, "gemma3.final_logit_softcapping", (float)d);
        int64_t pattern = 0, window;
        if (!(cv_json_int(c->config, "sliding_window_pattern", &pattern) && pattern == 1)) {
            if (!cv_json_int(c->config, "sliding_window", &window) || window <= 0)
                return pt_fail(err, PT_ERR_FORMAT, "%s/config.json: sliding_window missing", c->dir);
            cv_kv_u32(kv, "gemma3.attention.sliding_window", (uint32_t)window);
        }
        double cap;
        if (cv_json_num(c->config, "attn_logit_softcapping", &cap))
            return pt_fail(err, PT_ERR_UNSUPPORTED, "%s/config.json: attn_logit_softcapping is not Gemma 3's", c->dir);
    }
    cv_kv_u32(kv, "general.quantization_version", GGML_QNT_VERSION);
    return PT_OK;
}
