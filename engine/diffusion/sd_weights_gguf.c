/*
 * sd_weights_gguf.c — petrel's image GGUF (written by tools/sd_to_gguf.py).
 *
 * general.architecture = "sd". Tensors carry the canonical names of
 * sd_weights.h. Types: F32 (norms, biases; everything in --type f32),
 * F16 / BF16, and Q8_0 / Q4_0 for linear and convolution weights. A
 * tensor's GGUF dims are its torch shape reversed (ne[0] = the last torch
 * dim), except a convolution weight stored in SD_LAYOUT_CONV_OHWI_PAD:
 * there the tensor is 2-D, ne = [k_pad, c_out], and the metadata key
 * "sd.conv.NAME" (int32 array [c_out, c_in, kh, kw]) gives its torch
 * shape; k_pad is the multiple of 32 at or above c_in*kh*kw.
 *
 * Metadata (every key required unless marked optional):
 *   sd.family                     string  "sd1", "sd2", "demo"
 *   sd.clip.vocab_size  .hidden_size  .intermediate_size  .layers  .heads
 *   sd.clip.max_pos  .bos  .eos  .pad  .skip          uint32
 *   sd.clip.act                   string  "quick_gelu" | "gelu"
 *   sd.clip.ln_eps                float32
 *   sd.unet.in_channels  .out_channels  .layers_per_block  .cross_dim
 *   sd.unet.groups  .time_embed_dim                   uint32
 *   sd.unet.channels  .cross_attn (0/1)  .heads  .transformer_depth
 *                                 int32 arrays of n_levels
 *   sd.unet.norm_eps  .freq_shift float32
 *   sd.unet.linear_proj  .flip_sin_to_cos             bool
 *   sd.vae.in_channels  .out_channels  .latent_channels  .layers_per_block
 *   sd.vae.groups                 uint32
 *   sd.vae.channels               int32 array of n_levels
 *   sd.vae.scaling_factor         float32
 *   sd.vae.has_encoder            bool
 *   sd.taesd.present              bool (optional, default false); when
 *   true: sd.taesd.latent_channels .channels .blocks_per_stage .n_upsamples
 *   sd.schedule.num_train_timesteps  .steps_offset    uint32
 *   sd.schedule.beta_start  .beta_end                 float32
 *   sd.schedule.beta_schedule     string  "scaled_linear" | "linear"
 *   sd.schedule.prediction        string  "epsilon" | "v_prediction"
 *                                 (the UNet's prediction too)
 *   sd.tokenizer.vocab_json  .merges   string (optional): the CLIP
 *                                 tokenizer's vocab.json and merges.txt
 *   sd.unet.sample_size           uint32 (optional): the latent side it was
 *                                 trained at (the default image size / 8)
 *   sd.defaults.sampler           string (optional): a pt_image_sampler name
 *   sd.defaults.steps             uint32 (optional, 1..1000)
 *   sd.defaults.cfg               float32 (optional, 0..100): the settings
 *                                 that give this model good pictures
 */
#include "sd_weights_impl.h"

#include "quant.h"
#include "status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct rd {
    const pt_gguf *g;
    const char *path;
    pt_error *err;
} rd;

static pt_status missing(const rd *r, const char *key, const char *what) {
    return pt_fail(r->err, PT_ERR_FORMAT, "%s: metadata key '%s' is missing or not %s", r->path, key,
                   what);
}

static pt_status u32(const rd *r, const char *key, int *out) {
    uint32_t v;
    if (!pt_gguf_get_u32(r->g, key, &v) || v > 1u << 24)
        return missing(r, key, "an integer up to 2^24");
    *out = (int)v;
    return PT_OK;
}

static pt_status f32(const rd *r, const char *key, float *out) {
    return pt_gguf_get_f32(r->g, key, out) ? PT_OK : missing(r, key, "a float");
}

/* A float32 key as the double its writer meant: the shortest decimal
 * that rounds to the stored float (0.00085f -> 0.00085), since the
 * scheduler works on the config's doubles. */
static pt_status f32_as_double(const rd *r, const char *key, double *out) {
    float f;
    pt_status st = f32(r, key, &f);
    if (st) return st;
    char buf[32];
    for (int prec = 6; prec <= 9; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, (double)f);
        *out = strtod(buf, NULL);
        if ((float)*out == f) return PT_OK;
    }
    *out = f;
    return PT_OK;
}

static pt_status boolean(const rd *r, const char *key, bool *out) {
    return pt_gguf_get_bool(r->g, key, out) ? PT_OK : missing(r, key, "a bool");
}

/* One of names[] (n of them) -> its index. */
static pt_status choice(const rd *r, const char *key, const char *const *names, int n, int *out) {
    pt_gguf_str s;
    if (!pt_gguf_get_str(r->g, key, &s)) return missing(r, key, "a string");
    for (int i = 0; i < n; i++)
        if (pt_gguf_str_eq(s, names[i])) {
            *out = i;
            return PT_OK;
        }
    return pt_fail(r->err, PT_ERR_UNSUPPORTED, "%s: '%s' has an unknown value", r->path, key);
}

/* An integer array of 1..SD_MAX_LEVELS entries; *n its length (when n
 * is given on input as > 0, the length must equal it). */
static pt_status ints(const rd *r, const char *key, int *n, int lo, int *out) {
    const pt_gguf_value *a = pt_gguf_get_arr(r->g, key, PT_GGUF_INT32);
    if (!a) a = pt_gguf_get_arr(r->g, key, PT_GGUF_UINT32);
    if (!a || a->v.arr.n < 1 || a->v.arr.n > SD_MAX_LEVELS || (*n && a->v.arr.n != (uint64_t)*n))
        return missing(r, key, "an integer array of the level count");
    *n = (int)a->v.arr.n;
    for (int i = 0; i < *n; i++) {
        int64_t v = pt_gguf_arr_i64(a, (uint64_t)i);
        if (v < lo || v > 1 << 24) return missing(r, key, "an array of sizes in range");
        out[i] = (int)v;
    }
    return PT_OK;
}

#define TRY(x) do { pt_status st_ = (x); if (st_) return st_; } while (0)

static pt_status read_config(const rd *r, sd_model_config *c) {
    pt_gguf_str s;
    if (!pt_gguf_get_str(r->g, "sd.family", &s)) return missing(r, "sd.family", "a string");
    snprintf(c->family, sizeof c->family, "%.*s", (int)(s.len < 15 ? s.len : 15), s.ptr);

    sd_clip_config *t = &c->clip;
    TRY(u32(r, "sd.clip.vocab_size", &t->vocab));
    TRY(u32(r, "sd.clip.hidden_size", &t->hidden));
    TRY(u32(r, "sd.clip.intermediate_size", &t->intermediate));
    TRY(u32(r, "sd.clip.layers", &t->layers));
    TRY(u32(r, "sd.clip.heads", &t->heads));
    TRY(u32(r, "sd.clip.max_pos", &t->max_pos));
    TRY(u32(r, "sd.clip.bos", &t->bos));
    TRY(u32(r, "sd.clip.eos", &t->eos));
    TRY(u32(r, "sd.clip.pad", &t->pad));
    TRY(u32(r, "sd.clip.skip", &t->skip));
    static const char *const acts[] = {"quick_gelu", "gelu"};
    int k;
    TRY(choice(r, "sd.clip.act", acts, 2, &k));
    t->act = (sd_act)k;
    TRY(f32(r, "sd.clip.ln_eps", &t->ln_eps));

    sd_unet_config *u = &c->unet;
    TRY(u32(r, "sd.unet.in_channels", &u->in_channels));
    TRY(u32(r, "sd.unet.out_channels", &u->out_channels));
    TRY(u32(r, "sd.unet.layers_per_block", &u->layers_per_block));
    TRY(u32(r, "sd.unet.cross_dim", &u->cross_dim));
    TRY(u32(r, "sd.unet.groups", &u->groups));
    TRY(u32(r, "sd.unet.time_embed_dim", &u->time_embed_dim));
    int n = 0, ca[SD_MAX_LEVELS];
    TRY(ints(r, "sd.unet.channels", &n, 1, u->channels));
    u->n_levels = n;
    TRY(ints(r, "sd.unet.cross_attn", &n, 0, ca));
    for (int i = 0; i < n; i++) u->cross_attn[i] = ca[i] != 0;
    TRY(ints(r, "sd.unet.heads", &n, 1, u->heads));
    TRY(ints(r, "sd.unet.transformer_depth", &n, 1, u->transformer_depth));
    TRY(f32(r, "sd.unet.norm_eps", &u->norm_eps));
    TRY(f32(r, "sd.unet.freq_shift", &u->freq_shift));
    TRY(boolean(r, "sd.unet.linear_proj", &u->linear_proj));
    TRY(boolean(r, "sd.unet.flip_sin_to_cos", &u->flip_sin_to_cos));

    sd_vae_config *v = &c->vae;
    TRY(u32(r, "sd.vae.in_channels", &v->in_channels));
    TRY(u32(r, "sd.vae.out_channels", &v->out_channels));
    TRY(u32(r, "sd.vae.latent_channels", &v->latent_channels));
    TRY(u32(r, "sd.vae.layers_per_block", &v->layers_per_block));
    TRY(u32(r, "sd.vae.groups", &v->groups));
    n = 0;
    TRY(ints(r, "sd.vae.channels", &n, 1, v->channels));
    v->n_levels = n;
    TRY(f32(r, "sd.vae.scaling_factor", &v->scaling_factor));
    TRY(boolean(r, "sd.vae.has_encoder", &v->has_encoder));

    sd_taesd_config *e = &c->taesd;
    e->present = false;
    if (pt_gguf_find(r->g, "sd.taesd.present")) TRY(boolean(r, "sd.taesd.present", &e->present));
    if (e->present) {
        TRY(u32(r, "sd.taesd.latent_channels", &e->latent_channels));
        TRY(u32(r, "sd.taesd.channels", &e->channels));
        TRY(u32(r, "sd.taesd.blocks_per_stage", &e->blocks_per_stage));
        TRY(u32(r, "sd.taesd.n_upsamples", &e->n_upsamples));
    }

    sd_schedule_config *sc = &c->schedule;
    TRY(u32(r, "sd.schedule.num_train_timesteps", &sc->num_train_timesteps));
    TRY(u32(r, "sd.schedule.steps_offset", &sc->steps_offset));
    TRY(f32_as_double(r, "sd.schedule.beta_start", &sc->beta_start));
    TRY(f32_as_double(r, "sd.schedule.beta_end", &sc->beta_end));
    static const char *const betas[] = {"scaled_linear", "linear"};
    static const char *const preds[] = {"epsilon", "v_prediction"};
    TRY(choice(r, "sd.schedule.beta_schedule", betas, 2, &k));
    sc->beta_schedule = (sd_beta_schedule)k;
    TRY(choice(r, "sd.schedule.prediction", preds, 2, &k));
    sc->prediction = (sd_prediction)k;
    u->prediction = sc->prediction;

    u->sample_size = 0;
    if (pt_gguf_find(r->g, "sd.unet.sample_size")) TRY(u32(r, "sd.unet.sample_size", &u->sample_size));
    sd_default_settings *d = &c->defaults;
    *d = (sd_default_settings){0};
    if (pt_gguf_find(r->g, "sd.defaults.sampler")) {
        static const char *const samplers[] = {"euler", "euler_a", "dpmpp_2m", "ddim", "lcm"};
        _Static_assert(sizeof samplers / sizeof samplers[0] == PT_IMAGE_SAMPLER_COUNT, "samplers");
        TRY(choice(r, "sd.defaults.sampler", samplers, PT_IMAGE_SAMPLER_COUNT, &k));
        d->sampler = k + 1;
    }
    if (pt_gguf_find(r->g, "sd.defaults.steps")) {
        TRY(u32(r, "sd.defaults.steps", &d->steps));
        if (d->steps < 1 || d->steps > 1000) return missing(r, "sd.defaults.steps", "in 1..1000");
    }
    if (pt_gguf_find(r->g, "sd.defaults.cfg")) {
        TRY(f32(r, "sd.defaults.cfg", &d->cfg));
        if (!(d->cfg >= 0 && d->cfg <= 100)) return missing(r, "sd.defaults.cfg", "in 0..100");
        d->has_cfg = true;
    }
    return PT_OK;
}

/* A string key copied to a heap NUL-terminated buffer (absent: NULL). */
static pt_status copy_str(const rd *r, const char *key, char **out, size_t *len) {
    pt_gguf_str s;
    *out = NULL;
    if (!pt_gguf_get_str(r->g, key, &s)) return PT_OK;
    if (s.len > SIZE_MAX - 1) return missing(r, key, "a string that fits in memory");
    *out = malloc((size_t)s.len + 1);
    if (!*out) return pt_fail(r->err, PT_ERR_NOMEM, "%s: out of memory for '%s'", r->path, key);
    memcpy(*out, s.ptr, (size_t)s.len);
    (*out)[s.len] = 0;
    *len = (size_t)s.len;
    return PT_OK;
}

static pt_status add_tensor(sd_weights *w, const rd *r, const pt_gguf_tensor *gt) {
    char name[512];
    if (gt->name.len >= 400)
        return pt_fail(r->err, PT_ERR_FORMAT, "%s: a tensor name of %llu bytes", r->path,
                       (unsigned long long)gt->name.len);
    memcpy(name, gt->name.ptr, (size_t)gt->name.len);
    name[gt->name.len] = 0;
    uint32_t ty = gt->type;
    if (ty != PT_TYPE_F32 && ty != PT_TYPE_F16 && ty != PT_TYPE_BF16 && ty != PT_TYPE_Q8_0 &&
        ty != PT_TYPE_Q4_0)
        return pt_fail(r->err, PT_ERR_UNSUPPORTED, "%s: tensor '%s' has type %s (image weights are "
                       "F32, F16, BF16, Q8_0 or Q4_0)", r->path, name, pt_type_name(ty));
    sd_tensor s = {0};
    s.type = ty;
    s.data = gt->data;
    s.nbytes = gt->nbytes;
    s.n_dims = (int)gt->n_dims;
    for (int i = 0; i < 4; i++) s.shape[i] = 1;
    for (int i = 0; i < s.n_dims; i++) s.shape[i] = gt->ne[s.n_dims - 1 - i];
    char key[600];
    snprintf(key, sizeof key, "sd.conv.%s", name);
    const pt_gguf_kv *kv = pt_gguf_find(r->g, key);
    if (kv) {
        const pt_gguf_value *a = pt_gguf_get_arr(r->g, key, PT_GGUF_INT32);
        int64_t sh[4] = {0};
        for (int i = 0; a && a->v.arr.n == 4 && i < 4; i++) sh[i] = pt_gguf_arr_i64(a, (uint64_t)i);
        /* bound each dimension before multiplying them: the product must not overflow */
        bool ok = a && a->v.arr.n == 4 && sh[0] > 0 && sh[1] > 0 && sh[2] > 0 && sh[3] > 0 &&
                  sh[1] <= 1 << 16 && sh[2] <= 16 && sh[3] <= 16 && gt->n_dims == 2 &&
                  gt->ne[1] == sh[0] && gt->ne[0] % 32 == 0;
        int64_t k = ok ? sh[1] * sh[2] * sh[3] : 0;
        ok = ok && gt->ne[0] >= k && gt->ne[0] < k + 32;
        if (!ok)
            return pt_fail(r->err, PT_ERR_FORMAT, "%s: '%s' does not describe tensor '%s' as an "
                           "OHWI conv padded to 32 columns", r->path, key, name);
        s.layout = SD_LAYOUT_CONV_OHWI_PAD;
        s.k_pad = gt->ne[0];
        s.n_dims = 4;
        for (int i = 0; i < 4; i++) s.shape[i] = sh[i];
    }
    return sd_w_add(w, name, &s, r->err);
}

pt_status sd_load_gguf(sd_weights *w, const char *path, pt_error *err) {
    pt_status st = pt_gguf_open(path, &w->gguf, err);
    if (st) {
        /* the GGUF reader's messages do not name the file: add it */
        if (!err) return st;
        pt_error e = *err;
        return pt_fail(err, st, "%s: %s", path, e.msg);
    }
    rd r = {w->gguf, path, err};
    pt_gguf_str arch;
    if (!pt_gguf_get_str(w->gguf, "general.architecture", &arch) || !pt_gguf_str_eq(arch, "sd"))
        return pt_fail(err, PT_ERR_UNSUPPORTED, "%s: not an image model (general.architecture is "
                       "not \"sd\")", path);
    TRY(read_config(&r, &w->cfg));
    TRY(copy_str(&r, "sd.tokenizer.vocab_json", &w->vocab, &w->vocab_len));
    TRY(copy_str(&r, "sd.tokenizer.merges", &w->merges, &w->merges_len));
    for (uint64_t i = 0; i < w->gguf->n_tensors; i++) TRY(add_tensor(w, &r, &w->gguf->tensors[i]));
    return PT_OK;
}
