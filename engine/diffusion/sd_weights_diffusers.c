/*
 * sd_weights_diffusers.c — a diffusers StableDiffusionPipeline folder:
 *
 *   DIR/unet/config.json          + diffusion_pytorch_model.safetensors
 *   DIR/vae/config.json           + diffusion_pytorch_model.safetensors
 *   DIR/text_encoder/config.json  + model.safetensors
 *   DIR/tokenizer/vocab.json, merges.txt, special_tokens_map.json
 *   DIR/scheduler/scheduler_config.json
 *
 * Weights may also be split into shards listed by NAME.safetensors.index.json
 * ({"weight_map": {"tensor": "shard file", ...}}), or stored as the
 * ".fp16" variant. Tensor names get their component prefix ("unet." ...);
 * buffers that are not weights (position_ids) are skipped; the VAE's
 * attention under its old names (query/key/value/proj_attn) is exposed
 * under today's (to_q/to_k/to_v/to_out.0), its 1x1-conv form [c,c,1,1] as
 * [c,c] (same bytes). TAESD folders (AutoencoderTiny) load here too.
 */
#include "sd_weights_impl.h"

#include "status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* VAE attention names of diffusers < 0.14 -> today's. */
static const char *const VAE_OLD[][2] = {
    {"query.", "to_q."}, {"key.", "to_k."}, {"value.", "to_v."}, {"proj_attn.", "to_out.0."},
};

static bool ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && strcmp(s + n - m, tail) == 0;
}

/* Add one file tensor as prefix + its name, normalized as described above. */
static pt_status add_component_tensor(sd_weights *w, const char *prefix, const st_file *f,
                                      const st_tensor *t, pt_error *err) {
    if (ends_with(t->name, "position_ids")) return PT_OK;
    char name[512];
    int n = snprintf(name, sizeof name, "%s%s", prefix, t->name);
    if (n < 0 || (size_t)n >= sizeof name)
        return pt_fail(err, PT_ERR_FORMAT, "%s: tensor name too long: '%.60s...'", f->name, t->name);
    bool vae_attn = strcmp(prefix, "vae.") == 0 && strstr(name, ".attentions.") != NULL;
    if (vae_attn) {
        char *a = strstr(name, ".attentions.") + strlen(".attentions.");
        char *dot = strchr(a, '.'); /* after the attention's index */
        if (dot) {
            for (size_t i = 0; i < sizeof VAE_OLD / sizeof VAE_OLD[0]; i++) {
                size_t ol = strlen(VAE_OLD[i][0]);
                if (strncmp(dot + 1, VAE_OLD[i][0], ol) != 0) continue;
                char rest[512];
                snprintf(rest, sizeof rest, "%s", dot + 1 + ol);
                n = snprintf(dot + 1, sizeof name - (size_t)(dot + 1 - name), "%s%s",
                             VAE_OLD[i][1], rest);
                break;
            }
        }
    }
    if (st_dtype_pt_type(t->dtype) == UINT32_MAX || t->n_dims == 0)
        return sd_w_add_st(w, name, f, t, err); /* the clear error */
    sd_tensor s;
    sd_tensor_from_st(t, &s);
    if (vae_attn && s.n_dims == 4 && s.shape[2] == 1 && s.shape[3] == 1 &&
        (strstr(name, ".to_q.") || strstr(name, ".to_k.") || strstr(name, ".to_v.") ||
         strstr(name, ".to_out.0.")))
        s.n_dims = 2;
    return sd_w_add(w, name, &s, err);
}

static pt_status add_file(sd_weights *w, const char *prefix, const char *path, pt_error *err) {
    st_file *f = NULL;
    pt_status st = st_open(path, &f, err);
    if (st) return st;
    if ((st = sd_w_keep(w, f, err))) return st;
    for (uint64_t i = 0; i < f->n_tensors && !st; i++)
        st = add_component_tensor(w, prefix, f, &f->tensors[i], err);
    return st;
}

/* A sharded checkpoint: every shard named in the index's weight_map, each
 * opened once (the map lists a shard per tensor). */
static pt_status add_sharded(sd_weights *w, const char *prefix, const char *dir,
                             const char *index, pt_error *err) {
    cJSON *j = NULL;
    pt_status st = sd_load_json(index, &j, err);
    if (st) return st;
    const cJSON *map = cJSON_GetObjectItemCaseSensitive(j, "weight_map");
    if (!cJSON_IsObject(map)) {
        cJSON_Delete(j);
        return pt_fail(err, PT_ERR_FORMAT, "%s: no weight_map object", index);
    }
    const char *seen[SD_MAX_FILES];
    int n_seen = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, map) {
        if (!cJSON_IsString(e) || strchr(e->valuestring, '/')) {
            st = pt_fail(err, PT_ERR_FORMAT, "%s: weight_map entry is not a file name in %s", index,
                         dir);
            break;
        }
        bool known = false;
        for (int i = 0; i < n_seen && !known; i++) known = strcmp(seen[i], e->valuestring) == 0;
        if (known) continue;
        if (n_seen == SD_MAX_FILES) {
            st = pt_fail(err, PT_ERR_UNSUPPORTED, "%s: more than %d shards", index, SD_MAX_FILES);
            break;
        }
        seen[n_seen++] = e->valuestring;
        char p[4096];
        if ((st = sd_join(p, sizeof p, dir, e->valuestring, err))) break;
        if ((st = add_file(w, prefix, p, err))) break;
    }
    cJSON_Delete(j);
    return st;
}

/* The weights of one component folder, under `base` (e.g. "model"). */
static pt_status add_component_weights(sd_weights *w, const char *prefix, const char *dir,
                                       const char *base, pt_error *err) {
    static const char *const variants[] = {"", ".fp16"};
    char p[4096], name[256];
    pt_status st;
    for (int v = 0; v < 2; v++) {
        snprintf(name, sizeof name, "%s%s.safetensors", base, variants[v]);
        if ((st = sd_join(p, sizeof p, dir, name, err))) return st;
        if (sd_is_file(p)) return add_file(w, prefix, p, err);
        snprintf(name, sizeof name, "%s%s.safetensors.index.json", base, variants[v]);
        if ((st = sd_join(p, sizeof p, dir, name, err))) return st;
        if (sd_is_file(p)) return add_sharded(w, prefix, dir, p, err);
    }
    return pt_fail(err, PT_ERR_IO, "%s: no weights (%s.safetensors, sharded or .fp16)", dir, base);
}

/* DIR/sub/config.json parsed, or NULL (*j) when the file is absent. */
static pt_status component_json(const char *dir, const char *sub, const char *file, cJSON **j,
                                char *path, size_t cap, pt_error *err) {
    char d[4096];
    pt_status st;
    *j = NULL;
    if ((st = sd_join(d, sizeof d, dir, sub, err)) || (st = sd_join(path, cap, d, file, err)))
        return st;
    if (!sd_is_file(path)) return PT_OK;
    return sd_load_json(path, j, err);
}

#define TRY(x) do { if ((st = (x))) goto done; } while (0)

pt_status sd_load_diffusers(sd_weights *w, const char *dir, pt_error *err) {
    sd_model_config *c = &w->cfg;
    char path[4096], sub[4096];
    cJSON *j = NULL;
    pt_status st = PT_OK;

    /* unet (required: it decides that this is a model folder) */
    TRY(component_json(dir, "unet", "config.json", &j, path, sizeof path, err));
    if (!j) return pt_fail(err, PT_ERR_FORMAT, "%s: not a diffusers model folder (no unet/config.json)",
                           dir);
    TRY(sd_parse_unet_config(j, path, &c->unet, err));
    cJSON_Delete(j);
    j = NULL;
    TRY(sd_join(sub, sizeof sub, dir, "unet", err));
    TRY(add_component_weights(w, "unet.", sub, "diffusion_pytorch_model", err));

    TRY(component_json(dir, "vae", "config.json", &j, path, sizeof path, err));
    if (!j) {
        st = pt_fail(err, PT_ERR_FORMAT, "%s: no vae/config.json", dir);
        goto done;
    }
    TRY(sd_parse_vae_config(j, path, &c->vae, err));
    cJSON_Delete(j);
    j = NULL;
    TRY(sd_join(sub, sizeof sub, dir, "vae", err));
    TRY(add_component_weights(w, "vae.", sub, "diffusion_pytorch_model", err));

    TRY(component_json(dir, "text_encoder", "config.json", &j, path, sizeof path, err));
    if (!j) {
        st = pt_fail(err, PT_ERR_FORMAT, "%s: no text_encoder/config.json", dir);
        goto done;
    }
    TRY(sd_parse_clip_config(j, path, &c->clip, err));
    cJSON_Delete(j);
    j = NULL;
    c->clip.skip = 1; /* a diffusers text encoder holds just the layers it runs */
    c->clip.pad = c->clip.eos;
    TRY(sd_join(sub, sizeof sub, dir, "text_encoder", err));
    TRY(add_component_weights(w, "text_encoder.", sub, "model", err));

    TRY(component_json(dir, "scheduler", "scheduler_config.json", &j, path, sizeof path, err));
    if (j) TRY(sd_parse_schedule_config(j, path, &c->schedule, err));
    cJSON_Delete(j);
    j = NULL;
    c->unet.prediction = c->schedule.prediction;

    /* tokenizer (optional): ids of the specials from its own files */
    TRY(sd_join(sub, sizeof sub, dir, "tokenizer", err));
    TRY(sd_join(path, sizeof path, sub, "vocab.json", err));
    if (sd_is_file(path)) {
        TRY(sd_load_tokenizer(w, sub, err));
        /* pad_token: special_tokens_map.json, else tokenizer_config.json
         * (a string or {"content": ...}); config.json's pad_token_id is
         * transformers' default (1) in real SD folders, not the pad used */
        static const char *const files[] = {"special_tokens_map.json", "tokenizer_config.json"};
        const char *pad = NULL;
        for (int f = 0; f < 2 && !pad; f++) {
            cJSON_Delete(j);
            TRY(component_json(dir, "tokenizer", files[f], &j, path, sizeof path, err));
            const cJSON *p = j ? cJSON_GetObjectItemCaseSensitive(j, "pad_token") : NULL;
            if (cJSON_IsObject(p)) p = cJSON_GetObjectItemCaseSensitive(p, "content");
            if (cJSON_IsString(p)) pad = p->valuestring;
        }
        sd_clip_ids_from_vocab(w->vocab, pad, &c->clip);
        cJSON_Delete(j);
        j = NULL;
    }

    c->vae.has_encoder = false;
    for (size_t i = 0; i < w->n && !c->vae.has_encoder; i++)
        c->vae.has_encoder = strcmp(w->e[i].name, "vae.encoder.conv_in.weight") == 0;
    snprintf(c->family, sizeof c->family, "%s",
             c->clip.act == SD_ACT_GELU || c->unet.linear_proj ? "sd2" : "sd1");
done:
    cJSON_Delete(j);
    return st;
}

/* ---- TAESD ---- */

pt_status sd_load_taesd(sd_weights *w, const char *path, pt_error *err) {
    sd_taesd_config *c = &w->cfg.taesd;
    pt_status st = PT_OK;
    char p[4096];
    st_file *f = NULL;
    if (sd_is_dir(path)) {
        cJSON *j = NULL;
        if ((st = sd_join(p, sizeof p, path, "config.json", err))) return st;
        if (sd_is_file(p)) {
            if ((st = sd_load_json(p, &j, err))) return st;
            st = sd_parse_taesd_config(j, p, c, err);
            cJSON_Delete(j);
            if (st) return st;
        }
        if ((st = sd_join(p, sizeof p, path, "diffusion_pytorch_model.safetensors", err))) return st;
        if ((st = st_open(p, &f, err))) return st;
    } else if ((st = st_open(path, &f, err))) {
        return st;
    }
    if ((st = sd_w_keep(w, f, err))) return st;
    /* diffusers names (decoder.layers.N..., encoder.layers.N...), or
     * madebyollin's standalone taesd_decoder file ("N.conv.0.weight", its
     * layer 0 the clamp, so N - 1 in diffusers' numbering). */
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const st_tensor *t = &f->tensors[i];
        char name[512];
        if (strncmp(t->name, "decoder.layers.", 15) == 0 || strncmp(t->name, "encoder.layers.", 15) == 0) {
            snprintf(name, sizeof name, "taesd.%s", t->name);
        } else if (t->name[0] >= '1' && t->name[0] <= '9') {
            char *end;
            long k = strtol(t->name, &end, 10);
            if (*end != '.' || k < 1 || k > 1000) continue;
            snprintf(name, sizeof name, "taesd.decoder.layers.%ld%.400s", k - 1, end);
        } else {
            continue;
        }
        if ((st = sd_w_add_st(w, name, f, t, err))) return st;
    }
    /* channels and latent channels from the first conv, [c, latent, 3, 3] */
    const st_tensor *c0 = st_find(f, "decoder.layers.0.weight");
    if (!c0) c0 = st_find(f, "1.weight");
    if (!c0 || c0->n_dims != 4)
        return pt_fail(err, PT_ERR_FORMAT, "%s: no TAESD decoder (decoder.layers.0.weight)", f->name);
    c->channels = (int)(c0->shape[0] > 1 << 16 ? 0 : c0->shape[0]);
    c->latent_channels = (int)(c0->shape[1] > 1 << 16 ? 0 : c0->shape[1]);
    c->present = true;
    return PT_OK;
}
