/*
 * convert_sd.c — pt_convert_file for Stable Diffusion checkpoints (a
 * diffusers folder or a single-file LDM .safetensors): petrel's image GGUF
 * (general.architecture "sd", the layout sd_weights_gguf.c reads), a C port
 * of tools/sd_to_gguf.py without its --taesd / --tokenizer / --family /
 * --default-* / --f16 options.
 *
 * The checkpoint is read by the image engine's own loader (sd_weights_open:
 * the diffusers and LDM readers, the LDM name mapping and config
 * inference, the SD 2.x in_proj split, 1x1 VAE attention convs as [c, c]),
 * so the names and config are the ones the engine uses; this file only
 * writes them out, in sd_to_gguf.py's order:
 *   keys: general.architecture, sd.family, sd.clip.*, sd.unet.*, sd.vae.*,
 *   sd.schedule.*, sd.tokenizer.* (when the model has a tokenizer), then
 *   for each quantized conv weight (tensor order) "sd.conv.NAME" = INT32
 *   [c_out, c_in, kh, kw];
 *   tensors: sorted by canonical name; types by outtype:
 *     f32   all F32
 *     f16   1-D F32, the rest F16 (torch layout)
 *     q8_0 / q4_0   1-D F32; names holding "embedding" F16; 4-D conv
 *           weights as [c_out, k_pad] rows in (ky, kx, c_in) order, zero
 *           padded to k_pad = a multiple of 32, quantized; 2-D with a
 *           multiple of 32 columns quantized; other 2-D F16.
 * tests/test_convert_sd.sh checks the output is tensor- and key-identical
 * to the Python tool's (references under tests/data/sd-tiny/).
 */
#include "convert_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gguf_write.h"
#include "quant.h"
#include "sd_weights_impl.h"
#include "status.h"

typedef struct sd_item {
    const sd_entry *e;
    uint32_t type;
    bool conv;        /* stored as padded OHWI rows */
    int64_t rows, cols, k_pad;
} sd_item;

static void put_ints(cv_kv *kv, const char *key, const int *v, int n) {
    int32_t a[SD_MAX_LEVELS * 2];
    for (int i = 0; i < n; i++) a[i] = v[i];
    cv_kv_arr(kv, key, PT_GGUF_INT32, a, (uint64_t)n);
}

static void metadata(cv_kv *kv, const sd_weights *w) {
    const sd_model_config *c = &w->cfg;
    cv_kv_cstr(kv, "general.architecture", "sd");
    cv_kv_cstr(kv, "sd.family", c->family[0] ? c->family : "sd1");
    const sd_clip_config *t = &c->clip;
    cv_kv_u32(kv, "sd.clip.vocab_size", (uint32_t)t->vocab);
    cv_kv_u32(kv, "sd.clip.hidden_size", (uint32_t)t->hidden);
    cv_kv_u32(kv, "sd.clip.intermediate_size", (uint32_t)t->intermediate);
    cv_kv_u32(kv, "sd.clip.layers", (uint32_t)t->layers);
    cv_kv_u32(kv, "sd.clip.heads", (uint32_t)t->heads);
    cv_kv_u32(kv, "sd.clip.max_pos", (uint32_t)t->max_pos);
    cv_kv_u32(kv, "sd.clip.bos", (uint32_t)t->bos);
    cv_kv_u32(kv, "sd.clip.eos", (uint32_t)t->eos);
    cv_kv_u32(kv, "sd.clip.pad", (uint32_t)t->pad);
    cv_kv_u32(kv, "sd.clip.skip", (uint32_t)t->skip);
    cv_kv_cstr(kv, "sd.clip.act", t->act == SD_ACT_GELU ? "gelu" : "quick_gelu");
    cv_kv_f32(kv, "sd.clip.ln_eps", t->ln_eps);
    const sd_unet_config *u = &c->unet;
    cv_kv_u32(kv, "sd.unet.in_channels", (uint32_t)u->in_channels);
    cv_kv_u32(kv, "sd.unet.out_channels", (uint32_t)u->out_channels);
    cv_kv_u32(kv, "sd.unet.layers_per_block", (uint32_t)u->layers_per_block);
    cv_kv_u32(kv, "sd.unet.cross_dim", (uint32_t)u->cross_dim);
    cv_kv_u32(kv, "sd.unet.groups", (uint32_t)u->groups);
    cv_kv_u32(kv, "sd.unet.time_embed_dim", (uint32_t)u->time_embed_dim);
    int ca[SD_MAX_LEVELS];
    for (int i = 0; i < u->n_levels; i++) ca[i] = u->cross_attn[i];
    put_ints(kv, "sd.unet.channels", u->channels, u->n_levels);
    put_ints(kv, "sd.unet.cross_attn", ca, u->n_levels);
    put_ints(kv, "sd.unet.heads", u->heads, u->n_levels);
    put_ints(kv, "sd.unet.transformer_depth", u->transformer_depth, u->n_levels);
    cv_kv_f32(kv, "sd.unet.norm_eps", u->norm_eps);
    cv_kv_f32(kv, "sd.unet.freq_shift", u->freq_shift);
    cv_kv_bool(kv, "sd.unet.linear_proj", u->linear_proj);
    cv_kv_bool(kv, "sd.unet.flip_sin_to_cos", u->flip_sin_to_cos);
    if (u->sample_size) cv_kv_u32(kv, "sd.unet.sample_size", (uint32_t)u->sample_size);
    const sd_vae_config *v = &c->vae;
    cv_kv_u32(kv, "sd.vae.in_channels", (uint32_t)v->in_channels);
    cv_kv_u32(kv, "sd.vae.out_channels", (uint32_t)v->out_channels);
    cv_kv_u32(kv, "sd.vae.latent_channels", (uint32_t)v->latent_channels);
    cv_kv_u32(kv, "sd.vae.layers_per_block", (uint32_t)v->layers_per_block);
    cv_kv_u32(kv, "sd.vae.groups", (uint32_t)v->groups);
    put_ints(kv, "sd.vae.channels", v->channels, v->n_levels);
    cv_kv_f32(kv, "sd.vae.scaling_factor", v->scaling_factor);
    cv_kv_bool(kv, "sd.vae.has_encoder", sd_w_find(w, "vae.encoder.conv_in.weight") != NULL);
    const sd_schedule_config *s = &c->schedule;
    cv_kv_u32(kv, "sd.schedule.num_train_timesteps", (uint32_t)s->num_train_timesteps);
    cv_kv_u32(kv, "sd.schedule.steps_offset", (uint32_t)s->steps_offset);
    cv_kv_f32(kv, "sd.schedule.beta_start", (float)s->beta_start);
    cv_kv_f32(kv, "sd.schedule.beta_end", (float)s->beta_end);
    cv_kv_cstr(kv, "sd.schedule.beta_schedule", s->beta_schedule == SD_BETA_LINEAR ? "linear" : "scaled_linear");
    cv_kv_cstr(kv, "sd.schedule.prediction", s->prediction == SD_PRED_V ? "v_prediction" : "epsilon");
    if (w->vocab && w->merges) {
        cv_kv_str(kv, "sd.tokenizer.vocab_json", w->vocab, w->vocab_len);
        cv_kv_str(kv, "sd.tokenizer.merges", w->merges, w->merges_len);
    }
}

/* The type and stored shape of one tensor (sd_to_gguf.py's qtype_for). */
static void plan_one(sd_item *it, const sd_entry *e, uint32_t kind) {
    const sd_tensor *t = &e->t;
    it->e = e;
    it->cols = t->shape[t->n_dims - 1];
    it->rows = 1;
    for (int d = 0; d + 1 < t->n_dims; d++) it->rows *= t->shape[d];
    if (kind == PT_TYPE_F32 || t->n_dims == 1) {
        it->type = PT_TYPE_F32;
    } else if (kind == PT_TYPE_F16 || strstr(e->name, "embedding")) {
        it->type = PT_TYPE_F16;
    } else if (t->n_dims == 4) {
        it->type = kind;
        it->conv = true;
        it->rows = t->shape[0];
        it->k_pad = (t->shape[1] * t->shape[2] * t->shape[3] + 31) / 32 * 32;
        it->cols = it->k_pad;
    } else if (t->n_dims == 2 && t->shape[1] % 32 == 0) {
        it->type = kind;
    } else {
        it->type = PT_TYPE_F16;
    }
}

/* Row r of the stored tensor, as floats, into x (cols values). */
static void stored_row(const sd_item *it, int64_t r, float *x, float *tmp) {
    const sd_tensor *t = &it->e->t;
    if (!it->conv) {
        const size_t rb = pt_type_row_bytes(t->type, it->cols);
        pt_dequant_row(t->type, (const uint8_t *)t->data + (size_t)r * rb, x, it->cols);
        return;
    }
    /* [c_out][c_in][kh][kw] -> row r in (ky, kx, c_in) order, padded */
    const int64_t ci = t->shape[1], kh = t->shape[2], kw = t->shape[3], k = ci * kh * kw;
    const size_t rb = pt_type_row_bytes(t->type, k);
    pt_dequant_row(t->type, (const uint8_t *)t->data + (size_t)r * rb, tmp, k);
    int64_t o = 0;
    for (int64_t y = 0; y < kh; y++)
        for (int64_t xx = 0; xx < kw; xx++)
            for (int64_t c = 0; c < ci; c++) x[o++] = tmp[(c * kh + y) * kw + xx];
    for (; o < it->k_pad; o++) x[o] = 0;
}

static pt_status write_sd(const sd_weights *w, sd_item *items, size_t n, cv_kv *kv, const char *out,
                          const pt_convert_params *p, pt_convert_result *res, pt_error *err) {
    pt_gguf_out_tensor *ti = calloc(n + 1, sizeof *ti);
    if (!ti) return pt_fail(err, PT_ERR_NOMEM, "out of memory");
    int64_t max_cols = 1;
    uint64_t total = 0, done = 0;
    for (size_t i = 0; i < n; i++) {
        const sd_item *it = &items[i];
        const sd_tensor *t = &it->e->t;
        ti[i].name = (pt_gguf_str){it->e->name, strlen(it->e->name)};
        ti[i].type = it->type;
        if (it->conv) {
            ti[i].n_dims = 2;
            ti[i].ne[0] = it->k_pad, ti[i].ne[1] = it->rows, ti[i].ne[2] = ti[i].ne[3] = 1;
        } else {
            ti[i].n_dims = (uint32_t)t->n_dims;
            for (int d = 0; d < 4; d++) ti[i].ne[d] = d < t->n_dims ? t->shape[t->n_dims - 1 - d] : 1;
        }
        const int64_t need = it->conv ? t->shape[1] * t->shape[2] * t->shape[3] : it->cols;
        if (need > max_cols) max_cols = need;
        if (it->cols > max_cols) max_cols = it->cols;
        total += t->nbytes;
    }
    float *x = malloc((size_t)max_cols * sizeof *x), *tmp = malloc((size_t)max_cols * sizeof *tmp);
    uint8_t *row = malloc((size_t)max_cols * 4 + 64);
    pt_gguf_writer *gw = NULL;
    pt_status st = x && tmp && row ? pt_gguf_writer_open(out, &gw, err) : pt_fail(err, PT_ERR_NOMEM, "out of memory");
    if (!st) st = pt_gguf_writer_header(gw, kv->kv, kv->n, ti, n, err);
    for (size_t i = 0; !st && i < n; i++) {
        const sd_item *it = &items[i];
        if (p->progress) {
            const pt_convert_progress pr = {"convert", (int)i, (int)n, it->e->name, pt_type_name(it->type), done, total};
            p->progress(p->progress_user, &pr);
        }
        for (int64_t r = 0; !st && r < it->rows; r++) {
            if (p->cancel && atomic_load(p->cancel)) st = pt_fail(err, PT_ERR_CANCELLED, "convert: cancelled");
            if (st) break;
            stored_row(it, r, x, tmp);
            const size_t nb = pt_quantize_row(it->type, x, row, it->cols);
            st = pt_gguf_writer_data(gw, row, nb, err);
        }
        if (!st) st = pt_gguf_writer_end_tensor(gw, err);
        done += it->e->t.nbytes;
        sd_weights_release_tensor(&it->e->t);
    }
    if (gw) {
        res->out_file_bytes = pt_gguf_writer_bytes(gw);
        if (!st) st = pt_gguf_writer_commit(gw, err);
        else pt_gguf_writer_abort(gw);
    }
    (void)w;
    free(x);
    free(tmp);
    free(row);
    free(ti);
    return st;
}

pt_status pt_convert_sd(const char *in, const char *out, const pt_convert_params *p, pt_convert_result *res,
                        pt_error *err) {
    const char *ot = p->outtype && *p->outtype ? p->outtype : "f16";
    uint32_t kind;
    if (!strcasecmp(ot, "f32")) kind = PT_TYPE_F32;
    else if (!strcasecmp(ot, "f16")) kind = PT_TYPE_F16;
    else if (!strcasecmp(ot, "q8_0")) kind = PT_TYPE_Q8_0;
    else if (!strcasecmp(ot, "q4_0")) kind = PT_TYPE_Q4_0;
    else return pt_fail(err, PT_ERR_ARG, "image models convert to f32, f16, q8_0 or q4_0, not '%s'", ot);
    sd_weights *w = NULL;
    pt_status st = sd_weights_open(in, NULL, NULL, &w, err);
    if (st) return st;
    if (w->gguf) {
        sd_weights_close(w);
        return pt_fail(err, PT_ERR_ARG, "%s is a GGUF already (petrel quantize converts its types)", in);
    }
    cv_kv kv = {0};
    metadata(&kv, w);
    sd_item *items = calloc(w->n + 1, sizeof *items);
    if (!items) st = pt_fail(err, PT_ERR_NOMEM, "out of memory");
    for (size_t i = 0; !st && i < w->n; i++) {
        const sd_tensor *t = &w->e[i].t;
        if (t->layout != SD_LAYOUT_TORCH || (t->type != PT_TYPE_F32 && t->type != PT_TYPE_F16 &&
                                             t->type != PT_TYPE_BF16) || t->n_dims < 1) {
            st = pt_fail(err, PT_ERR_UNSUPPORTED, "%s: tensor %s is not a float tensor", in, w->e[i].name);
            break;
        }
        plan_one(&items[i], &w->e[i], kind);
        if (items[i].conv) {
            char key[300];
            snprintf(key, sizeof key, "sd.conv.%s", w->e[i].name);
            const int32_t shape[4] = {(int32_t)t->shape[0], (int32_t)t->shape[1], (int32_t)t->shape[2],
                                      (int32_t)t->shape[3]};
            cv_kv_arr(&kv, key, PT_GGUF_INT32, shape, 4);
        }
        res->n_params += items[i].rows * (items[i].conv ? t->shape[1] * t->shape[2] * t->shape[3] : items[i].cols);
        res->in_bytes += t->nbytes;
    }
    if (!st && kv.oom) st = pt_fail(err, PT_ERR_NOMEM, "out of memory");
    if (!st) {
        snprintf(res->arch, sizeof res->arch, "sd");
        res->n_tensors = (int)w->n;
        st = write_sd(w, items, w->n, &kv, out, p, res, err);
    }
    free(items);
    cv_kv_free(&kv);
    sd_weights_close(w);
    return st;
}
