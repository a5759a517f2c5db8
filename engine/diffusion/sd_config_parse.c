/*
 * sd_config_parse.c — diffusers' and transformers' config.json files into
 * sd_config.h's structs, the SD 1.x defaults, and the range checks every
 * source passes through (so a hostile config cannot size a buffer).
 *
 * Keys read (all optional; a missing key keeps the default):
 *   text_encoder/config.json  vocab_size hidden_size intermediate_size
 *       num_hidden_layers num_attention_heads max_position_embeddings
 *       hidden_act layer_norm_eps bos_token_id eos_token_id pad_token_id
 *   unet/config.json  in_channels out_channels block_out_channels
 *       down_block_types layers_per_block attention_head_dim
 *       num_attention_heads transformer_layers_per_block
 *       cross_attention_dim norm_num_groups norm_eps use_linear_projection
 *       flip_sin_to_cos freq_shift time_embedding_dim
 *   vae/config.json  in_channels out_channels latent_channels
 *       block_out_channels layers_per_block norm_num_groups scaling_factor
 *   taesd config.json  latent_channels decoder_block_out_channels
 *       num_decoder_blocks
 *   scheduler/scheduler_config.json  num_train_timesteps beta_start
 *       beta_end beta_schedule prediction_type steps_offset
 * A key of the wrong JSON type is a PT_ERR_FORMAT naming file and key.
 */
#include "sd_weights_impl.h"

#include "status.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sd_config_defaults(sd_model_config *c) {
    memset(c, 0, sizeof *c);
    snprintf(c->family, sizeof c->family, "sd1");
    c->clip = (sd_clip_config){.vocab = 49408, .hidden = 768, .intermediate = 3072, .layers = 12,
                               .heads = 12, .max_pos = 77, .act = SD_ACT_QUICK_GELU,
                               .ln_eps = 1e-5f, .bos = 49406, .eos = 49407, .pad = 49407,
                               .skip = 1};
    sd_unet_config *u = &c->unet;
    u->in_channels = u->out_channels = 4;
    u->n_levels = 4;
    const int ch[4] = {320, 640, 1280, 1280};
    for (int i = 0; i < 4; i++) {
        u->channels[i] = ch[i];
        u->cross_attn[i] = i < 3;
        u->heads[i] = 8;
        u->transformer_depth[i] = 1;
    }
    u->layers_per_block = 2;
    u->cross_dim = 768;
    u->groups = 32;
    u->norm_eps = 1e-5f;
    u->flip_sin_to_cos = true;
    u->time_embed_dim = 1280;
    sd_vae_config *v = &c->vae;
    v->in_channels = v->out_channels = 3;
    v->latent_channels = 4;
    v->n_levels = 4;
    const int vch[4] = {128, 256, 512, 512};
    for (int i = 0; i < 4; i++) v->channels[i] = vch[i];
    v->layers_per_block = 2;
    v->groups = 32;
    v->scaling_factor = 0.18215f;
    c->taesd = (sd_taesd_config){.latent_channels = 4, .channels = 64, .blocks_per_stage = 3,
                                 .n_upsamples = 3, .present = false};
    c->schedule = (sd_schedule_config){.num_train_timesteps = 1000, .beta_start = 0.00085f,
                                       .beta_end = 0.012f, .beta_schedule = SD_BETA_SCALED_LINEAR,
                                       .prediction = SD_PRED_EPSILON, .steps_offset = 1};
}

/* ---- typed reads of one key ---- */

static pt_status bad_key(pt_error *err, const char *file, const char *key, const char *want) {
    return pt_fail(err, PT_ERR_FORMAT, "%s: \"%s\" is not %s", file, key, want);
}

/* An integer key in [lo, hi]; absent or null: *out unchanged. */
static pt_status get_int(const cJSON *j, const char *file, const char *key, int lo, int hi,
                         int *out, pt_error *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    if (!v || cJSON_IsNull(v)) return PT_OK;
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < lo ||
        v->valuedouble > hi) {
        char want[64];
        snprintf(want, sizeof want, "an integer in [%d, %d]", lo, hi);
        return bad_key(err, file, key, want);
    }
    *out = (int)v->valuedouble;
    return PT_OK;
}

/* A number key kept in double (the scheduler's betas: diffusers takes
 * their square root in double); absent or null: *out unchanged. */
static pt_status get_double(const cJSON *j, const char *file, const char *key, double *out,
                            pt_error *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    if (!v || cJSON_IsNull(v)) return PT_OK;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) return bad_key(err, file, key, "a number");
    *out = v->valuedouble;
    return PT_OK;
}

static pt_status get_float(const cJSON *j, const char *file, const char *key, float *out,
                           pt_error *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    if (!v || cJSON_IsNull(v)) return PT_OK;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) return bad_key(err, file, key, "a number");
    *out = (float)v->valuedouble;
    return PT_OK;
}

static pt_status get_bool(const cJSON *j, const char *file, const char *key, bool *out,
                          pt_error *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    if (!v || cJSON_IsNull(v)) return PT_OK;
    if (!cJSON_IsBool(v)) return bad_key(err, file, key, "true or false");
    *out = cJSON_IsTrue(v);
    return PT_OK;
}

static const char *get_str(const cJSON *j, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* An int key that is either one integer (copied to all n) or a list of
 * exactly n integers. */
static pt_status get_int_or_list(const cJSON *j, const char *file, const char *key, int n,
                                 int lo, int hi, int *out, pt_error *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    if (!v || cJSON_IsNull(v)) return PT_OK;
    if (cJSON_IsNumber(v)) {
        int x = 0;
        pt_status st = get_int(j, file, key, lo, hi, &x, err);
        if (st) return st;
        for (int i = 0; i < n; i++) out[i] = x;
        return PT_OK;
    }
    char want[96];
    snprintf(want, sizeof want, "an integer or a list of %d integers in [%d, %d]", n, lo, hi);
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != n) return bad_key(err, file, key, want);
    for (int i = 0; i < n; i++) {
        const cJSON *e = cJSON_GetArrayItem(v, i);
        if (!cJSON_IsNumber(e) || e->valuedouble != floor(e->valuedouble) || e->valuedouble < lo ||
            e->valuedouble > hi)
            return bad_key(err, file, key, want);
        out[i] = (int)e->valuedouble;
    }
    return PT_OK;
}

/* block_out_channels: a list of 1..SD_MAX_LEVELS positive integers. */
static pt_status get_channels(const cJSON *j, const char *file, const char *key, int *n_levels,
                              int *ch, pt_error *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    if (!v || cJSON_IsNull(v)) return PT_OK;
    int n = cJSON_IsArray(v) ? cJSON_GetArraySize(v) : 0;
    if (n < 1 || n > SD_MAX_LEVELS)
        return bad_key(err, file, key, "a list of 1 to 4 channel counts");
    int tmp[SD_MAX_LEVELS];
    *n_levels = n;
    for (int i = 0; i < n; i++) tmp[i] = ch[i];
    pt_status st = get_int_or_list(j, file, key, n, 1, 1 << 16, tmp, err);
    if (st) return st;
    for (int i = 0; i < n; i++) ch[i] = tmp[i];
    return PT_OK;
}

#define TRY(x) do { pt_status st_ = (x); if (st_) return st_; } while (0)

pt_status sd_parse_clip_config(const cJSON *j, const char *file, sd_clip_config *c, pt_error *err) {
    TRY(get_int(j, file, "vocab_size", 1, 1 << 24, &c->vocab, err));
    TRY(get_int(j, file, "hidden_size", 1, 1 << 16, &c->hidden, err));
    TRY(get_int(j, file, "intermediate_size", 1, 1 << 18, &c->intermediate, err));
    TRY(get_int(j, file, "num_hidden_layers", 1, 256, &c->layers, err));
    TRY(get_int(j, file, "num_attention_heads", 1, 1024, &c->heads, err));
    TRY(get_int(j, file, "max_position_embeddings", 1, 1 << 16, &c->max_pos, err));
    TRY(get_float(j, file, "layer_norm_eps", &c->ln_eps, err));
    TRY(get_int(j, file, "bos_token_id", 0, 1 << 24, &c->bos, err));
    TRY(get_int(j, file, "eos_token_id", 0, 1 << 24, &c->eos, err));
    TRY(get_int(j, file, "pad_token_id", 0, 1 << 24, &c->pad, err));
    const char *act = get_str(j, "hidden_act");
    if (act) {
        if (strcmp(act, "quick_gelu") == 0) c->act = SD_ACT_QUICK_GELU;
        else if (strcmp(act, "gelu") == 0) c->act = SD_ACT_GELU;
        else
            return pt_fail(err, PT_ERR_UNSUPPORTED, "%s: hidden_act '%.40s' (petrel has quick_gelu "
                           "and gelu)", file, act);
    }
    return PT_OK;
}

pt_status sd_parse_unet_config(const cJSON *j, const char *file, sd_unet_config *c, pt_error *err) {
    TRY(get_int(j, file, "in_channels", 1, 1 << 12, &c->in_channels, err));
    TRY(get_int(j, file, "out_channels", 1, 1 << 12, &c->out_channels, err));
    TRY(get_channels(j, file, "block_out_channels", &c->n_levels, c->channels, err));
    int n = c->n_levels;
    const cJSON *types = cJSON_GetObjectItemCaseSensitive(j, "down_block_types");
    if (types) {
        if (!cJSON_IsArray(types) || cJSON_GetArraySize(types) != n)
            return bad_key(err, file, "down_block_types", "a list as long as block_out_channels");
        for (int i = 0; i < n; i++) {
            const cJSON *t = cJSON_GetArrayItem(types, i);
            if (!cJSON_IsString(t)) return bad_key(err, file, "down_block_types", "a list of names");
            if (strcmp(t->valuestring, "CrossAttnDownBlock2D") == 0) c->cross_attn[i] = true;
            else if (strcmp(t->valuestring, "DownBlock2D") == 0) c->cross_attn[i] = false;
            else
                return pt_fail(err, PT_ERR_UNSUPPORTED, "%s: down block type '%.40s' (petrel has "
                               "CrossAttnDownBlock2D and DownBlock2D)", file, t->valuestring);
        }
    }
    TRY(get_int(j, file, "layers_per_block", 1, 16, &c->layers_per_block, err));
    /* diffusers names the head count "attention_head_dim" in SD configs
     * (num_attention_heads, when set, wins): both are heads per level. */
    const cJSON *nh = cJSON_GetObjectItemCaseSensitive(j, "num_attention_heads");
    const char *hk = nh && !cJSON_IsNull(nh) ? "num_attention_heads" : "attention_head_dim";
    TRY(get_int_or_list(j, file, hk, n, 1, 1024, c->heads, err));
    TRY(get_int_or_list(j, file, "transformer_layers_per_block", n, 1, 64, c->transformer_depth,
                        err));
    TRY(get_int(j, file, "cross_attention_dim", 1, 1 << 16, &c->cross_dim, err));
    TRY(get_int(j, file, "norm_num_groups", 1, 1 << 12, &c->groups, err));
    TRY(get_float(j, file, "norm_eps", &c->norm_eps, err));
    TRY(get_bool(j, file, "use_linear_projection", &c->linear_proj, err));
    TRY(get_bool(j, file, "flip_sin_to_cos", &c->flip_sin_to_cos, err));
    TRY(get_float(j, file, "freq_shift", &c->freq_shift, err));
    TRY(get_int(j, file, "sample_size", 1, 1 << 12, &c->sample_size, err));
    c->time_embed_dim = 4 * c->channels[0];
    TRY(get_int(j, file, "time_embedding_dim", 1, 1 << 16, &c->time_embed_dim, err));
    return PT_OK;
}

pt_status sd_parse_vae_config(const cJSON *j, const char *file, sd_vae_config *c, pt_error *err) {
    TRY(get_int(j, file, "in_channels", 1, 1 << 12, &c->in_channels, err));
    TRY(get_int(j, file, "out_channels", 1, 1 << 12, &c->out_channels, err));
    TRY(get_int(j, file, "latent_channels", 1, 1 << 12, &c->latent_channels, err));
    TRY(get_channels(j, file, "block_out_channels", &c->n_levels, c->channels, err));
    TRY(get_int(j, file, "layers_per_block", 1, 16, &c->layers_per_block, err));
    TRY(get_int(j, file, "norm_num_groups", 1, 1 << 12, &c->groups, err));
    TRY(get_float(j, file, "scaling_factor", &c->scaling_factor, err));
    return PT_OK;
}

pt_status sd_parse_taesd_config(const cJSON *j, const char *file, sd_taesd_config *c,
                                pt_error *err) {
    TRY(get_int(j, file, "latent_channels", 1, 1 << 12, &c->latent_channels, err));
    const cJSON *ch = cJSON_GetObjectItemCaseSensitive(j, "decoder_block_out_channels");
    if (ch) {
        int n = 0, v[SD_MAX_LEVELS] = {0};
        TRY(get_channels(j, file, "decoder_block_out_channels", &n, v, err));
        for (int i = 1; i < n; i++)
            if (v[i] != v[0])
                return pt_fail(err, PT_ERR_UNSUPPORTED, "%s: TAESD stages of different widths",
                               file);
        c->channels = v[0];
        c->n_upsamples = n - 1;
    }
    const cJSON *nb = cJSON_GetObjectItemCaseSensitive(j, "num_decoder_blocks");
    if (nb) {
        int n = cJSON_IsArray(nb) ? cJSON_GetArraySize(nb) : 0, v[SD_MAX_LEVELS] = {0};
        if (n < 1 || n > SD_MAX_LEVELS)
            return bad_key(err, file, "num_decoder_blocks", "a list of 1 to 4 counts");
        TRY(get_int_or_list(j, file, "num_decoder_blocks", n, 1, 64, v, err));
        c->blocks_per_stage = v[0];
    }
    return PT_OK;
}

pt_status sd_parse_schedule_config(const cJSON *j, const char *file, sd_schedule_config *c,
                                   pt_error *err) {
    TRY(get_int(j, file, "num_train_timesteps", 1, 100000, &c->num_train_timesteps, err));
    TRY(get_double(j, file, "beta_start", &c->beta_start, err));
    TRY(get_double(j, file, "beta_end", &c->beta_end, err));
    TRY(get_int(j, file, "steps_offset", 0, 100000, &c->steps_offset, err));
    const char *bs = get_str(j, "beta_schedule");
    if (bs) {
        if (strcmp(bs, "scaled_linear") == 0) c->beta_schedule = SD_BETA_SCALED_LINEAR;
        else if (strcmp(bs, "linear") == 0) c->beta_schedule = SD_BETA_LINEAR;
        else
            return pt_fail(err, PT_ERR_UNSUPPORTED, "%s: beta_schedule '%.40s' (petrel has "
                           "scaled_linear and linear)", file, bs);
    }
    const char *pr = get_str(j, "prediction_type");
    if (pr) {
        if (strcmp(pr, "epsilon") == 0) c->prediction = SD_PRED_EPSILON;
        else if (strcmp(pr, "v_prediction") == 0) c->prediction = SD_PRED_V;
        else
            return pt_fail(err, PT_ERR_UNSUPPORTED, "%s: prediction_type '%.40s' (petrel has "
                           "epsilon and v_prediction)", file, pr);
    }
    return PT_OK;
}

pt_status sd_load_json(const char *path, cJSON **out, pt_error *err) {
    char *text = NULL;
    size_t len = 0;
    *out = NULL;
    pt_status st = sd_read_text(path, &text, &len, err);
    if (st) return st;
    cJSON *j = cJSON_ParseWithLength(text, len);
    free(text);
    if (!j || !cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return pt_fail(err, PT_ERR_FORMAT, "%s: not a JSON object", path);
    }
    *out = j;
    return PT_OK;
}

void sd_clip_ids_from_vocab(const char *vocab_json, const char *pad_token, sd_clip_config *c) {
    cJSON *v = vocab_json ? cJSON_Parse(vocab_json) : NULL;
    if (!cJSON_IsObject(v)) {
        cJSON_Delete(v);
        return;
    }
    int old_eos = c->eos;
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(v, "<|startoftext|>");
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(v, "<|endoftext|>");
    if (cJSON_IsNumber(b) && b->valuedouble >= 0 && b->valuedouble < 1 << 24)
        c->bos = (int)b->valuedouble;
    if (cJSON_IsNumber(e) && e->valuedouble >= 0 && e->valuedouble < 1 << 24)
        c->eos = (int)e->valuedouble;
    if (pad_token) {
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(v, pad_token);
        if (cJSON_IsNumber(p) && p->valuedouble >= 0 && p->valuedouble < 1 << 24)
            c->pad = (int)p->valuedouble;
    } else if (c->pad == old_eos) {
        c->pad = c->eos;
    }
    cJSON_Delete(v);
}

pt_status sd_config_validate(const sd_model_config *c, const char *src, pt_error *err) {
    const sd_clip_config *t = &c->clip;
    if (t->hidden < 1 || t->heads < 1 || t->hidden % t->heads || t->layers < 1 || t->vocab < 1 ||
        t->max_pos < 1 || t->intermediate < 1 || t->skip < 1 || t->skip > t->layers)
        return pt_fail(err, PT_ERR_FORMAT, "%s: text encoder config is inconsistent (hidden %d, "
                       "heads %d, layers %d, skip %d)", src, t->hidden, t->heads, t->layers,
                       t->skip);
    if (t->bos >= t->vocab || t->eos >= t->vocab || t->pad >= t->vocab || t->bos < 0 ||
        t->eos < 0 || t->pad < 0)
        return pt_fail(err, PT_ERR_FORMAT, "%s: token ids bos %d eos %d pad %d outside the "
                       "vocabulary of %d", src, t->bos, t->eos, t->pad, t->vocab);
    const sd_unet_config *u = &c->unet;
    if (u->n_levels < 1 || u->n_levels > SD_MAX_LEVELS || u->groups < 1 || u->cross_dim < 1 ||
        u->layers_per_block < 1 || u->in_channels < 1 || u->out_channels < 1 ||
        u->time_embed_dim < 1)
        return pt_fail(err, PT_ERR_FORMAT, "%s: UNet config is inconsistent (%d levels, %d groups)",
                       src, u->n_levels, u->groups);
    for (int i = 0; i < u->n_levels; i++)
        if (u->channels[i] < 1 || u->channels[i] % u->groups || u->heads[i] < 1 ||
            u->channels[i] % u->heads[i] || u->transformer_depth[i] < 1)
            return pt_fail(err, PT_ERR_FORMAT, "%s: UNet level %d has %d channels, %d groups, %d "
                           "heads (channels must divide by both)", src, i, u->channels[i],
                           u->groups, u->heads[i]);
    const sd_vae_config *v = &c->vae;
    if (v->n_levels < 1 || v->n_levels > SD_MAX_LEVELS || v->groups < 1 ||
        v->latent_channels < 1 || v->layers_per_block < 1 || v->in_channels < 1 ||
        v->out_channels < 1 || !(v->scaling_factor > 0))
        return pt_fail(err, PT_ERR_FORMAT, "%s: VAE config is inconsistent (%d levels, %d groups)",
                       src, v->n_levels, v->groups);
    for (int i = 0; i < v->n_levels; i++)
        if (v->channels[i] < 1 || v->channels[i] % v->groups)
            return pt_fail(err, PT_ERR_FORMAT, "%s: VAE level %d has %d channels, not a multiple "
                           "of %d groups", src, i, v->channels[i], v->groups);
    const sd_schedule_config *s = &c->schedule;
    if (s->num_train_timesteps < 1 || !(s->beta_start > 0) || !(s->beta_end >= s->beta_start) ||
        !(s->beta_end < 1))
        return pt_fail(err, PT_ERR_FORMAT, "%s: noise schedule is inconsistent", src);
    if (c->taesd.present && (c->taesd.channels < 1 || c->taesd.latent_channels < 1 ||
                             c->taesd.blocks_per_stage < 1 || c->taesd.n_upsamples < 0 ||
                             c->taesd.n_upsamples > 8))
        return pt_fail(err, PT_ERR_FORMAT, "%s: TAESD config is inconsistent", src);
    return PT_OK;
}
