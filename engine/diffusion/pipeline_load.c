/*
 * pipeline_load.c — loading an image model (pt_image_model_load): the
 * files (sd_weights), the runtime on the caller's pool, the tokenizer,
 * the OpenCL device when one is asked for, and the UNet prepared for the
 * whole life of the model. The text
 * encoder and the decoders are prepared per generation (pipeline_text.c,
 * pipeline_decode.c), so they cost memory only while they run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline_internal.h"
#include "quant.h"
#include "status.h"

/* The weight policy from its name (pt_image_model_params.weights). */
static pt_status parse_policy(const char *name, sd_weight_policy *out, pt_error *err) {
    if (!name || !strcmp(name, "auto")) *out = SD_WEIGHTS_STORED;
    else if (!strcmp(name, "q8_0")) *out = SD_WEIGHTS_Q8_0;
    else if (!strcmp(name, "q4_0")) *out = SD_WEIGHTS_Q4_0;
    else if (!strcmp(name, "f16")) *out = SD_WEIGHTS_F16;
    else
        return pt_fail(err, PT_ERR_ARG, "weights '%.40s' is not auto, f16, q8_0 or q4_0", name);
    return PT_OK;
}

/* The name of the linear/conv weights' type as they run. */
static void weights_name(pt_image_model *m, sd_weight_policy policy) {
    const char *name = "?";
    sd_tensor t;
    if (policy == SD_WEIGHTS_Q8_0) name = "Q8_0";
    else if (policy == SD_WEIGHTS_Q4_0) name = "Q4_0";
    else if (policy == SD_WEIGHTS_F16) name = "F16";
    else if (sd_weights_get(m->w, "unet.conv_in.weight", &t)) name = pt_type_name(t.type);
    snprintf(m->weights_name, sizeof m->weights_name, "%s", name);
}

/* The UNet's training size in pixels: sample_size latent pixels times 8;
 * when the file does not say, SD's 512 (768 for v-prediction SD 2.x). */
static int default_side(const sd_model_config *c) {
    if (c->unet.sample_size > 0) return 8 * c->unet.sample_size;
    return c->unet.prediction == SD_PRED_V ? 768 : 512;
}

/* Round a default side to the API's rules (multiples of 64 in range). */
static int legal_side(int v) {
    v = v / 64 * 64;
    if (v < PT_IMAGE_MIN_SIZE) v = PT_IMAGE_MIN_SIZE;
    if (v > PT_IMAGE_MAX_SIZE) v = PT_IMAGE_MAX_SIZE;
    return v;
}

/* The model's parts must fit together: latent channels of UNet and VAE,
 * the text width the UNet attends to. */
static pt_status check_config(const sd_model_config *c, const char *path, pt_error *err) {
    if (c->unet.in_channels != c->vae.latent_channels || c->unet.out_channels != c->vae.latent_channels ||
        c->vae.latent_channels < 1)
        return pt_fail(err, PT_ERR_FORMAT, "%s: the UNet takes %d and gives %d channels, the VAE's latent "
                       "has %d", path, c->unet.in_channels, c->unet.out_channels, c->vae.latent_channels);
    if (c->unet.cross_dim != c->clip.hidden)
        return pt_fail(err, PT_ERR_FORMAT, "%s: the UNet attends to %d-wide text states, the text encoder "
                       "gives %d", path, c->unet.cross_dim, c->clip.hidden);
    if (c->clip.max_pos < SD_TEXT_TOKENS)
        return pt_fail(err, PT_ERR_FORMAT, "%s: the text encoder has %d positions, fewer than %d", path,
                       c->clip.max_pos, SD_TEXT_TOKENS);
    /* the API's sizes are multiples of 64 and latents 1/8 of them */
    if (c->vae.n_levels != 4)
        return pt_fail(err, PT_ERR_UNSUPPORTED, "%s: the VAE has %d levels (scale %d); petrel runs SD's "
                       "4 (scale 8)", path, c->vae.n_levels, 1 << (c->vae.n_levels - 1));
    if (c->unet.n_levels < 1 || c->unet.n_levels > 4)
        return pt_fail(err, PT_ERR_UNSUPPORTED, "%s: the UNet has %d levels (1..4 run)", path,
                       c->unet.n_levels);
    if (c->taesd.present && c->taesd.n_upsamples != 3)
        return pt_fail(err, PT_ERR_UNSUPPORTED, "TAESD up-samples %d times, not 3 (scale 8)",
                       c->taesd.n_upsamples);
    if (c->taesd.present && c->taesd.latent_channels != c->vae.latent_channels)
        return pt_fail(err, PT_ERR_FORMAT, "TAESD decodes %d latent channels, the model has %d",
                       c->taesd.latent_channels, c->vae.latent_channels);
    return PT_OK;
}

static pt_status load_tokenizer(pt_image_model *m, const char *path, pt_error *err) {
    size_t vlen = 0, mlen = 0;
    const char *vocab = sd_weights_vocab_json(m->w, &vlen);
    const char *merges = sd_weights_merges(m->w, &mlen);
    if (!vocab || !merges)
        return pt_fail(err, PT_ERR_FORMAT, "%s has no CLIP tokenizer: give a folder with vocab.json and "
                       "merges.txt (--tokenizer)", path);
    /* transformers 5's CLIPTokenizer: what current diffusers pipelines run
     * (and the reference fixture used); plain prompts give the same ids
     * as the slow one */
    return sd_clip_tokenizer_new(vocab, vlen, merges, mlen, SD_CLIP_TRANSFORMERS5, &m->tok, err);
}

pt_status pt_image_model_load(const char *path, const pt_image_model_params *params,
                              pt_image_model **out, pt_error *err) {
    if (!out) return pt_fail(err, PT_ERR_ARG, "pt_image_model_load: no place for the model");
    *out = NULL;
    if (!path || !*path) return pt_fail(err, PT_ERR_ARG, "no image model path given");
    pt_image_model_params p = pt_image_model_default_params();
    pt_status st = pt_params_overlay(&p, sizeof p, params, "pt_image_model_params", err);
    sd_weight_policy policy = SD_WEIGHTS_STORED;
    if (st == PT_OK) st = parse_policy(p.weights, &policy, err);
    if (st == PT_OK && p.n_threads < 0)
        st = pt_fail(err, PT_ERR_ARG, "n_threads %d is negative", p.n_threads);
    if (st == PT_OK && p.backend != PT_BACKEND_CPU && p.backend != PT_BACKEND_OPENCL)
        st = pt_fail(err, PT_ERR_UNSUPPORTED, "backend %d is not cpu or opencl", (int)p.backend);
    if (st != PT_OK) return st;
    const double t0 = sd_now();
    pt_image_model *m = calloc(1, sizeof *m);
    if (!m) return pt_fail(err, PT_ERR_NOMEM, "out of memory loading %s", path);
    st = sd_weights_open(path, p.taesd_path, p.tokenizer_path, &m->w, err);
    if (st == PT_OK) {
        m->cfg = *sd_weights_config(m->w);
        st = check_config(&m->cfg, path, err);
    }
    if (st == PT_OK) st = load_tokenizer(m, path, err);
    if (st == PT_OK) {
        const sd_runtime_params rp = {
            .cpu = p.cpu && strcmp(p.cpu, "auto") ? p.cpu : NULL,
            .threadpool = p.threadpool,
            .n_threads = p.n_threads,
            .policy = policy,
        };
        st = sd_rt_new(&rp, &m->rt, err);
    }
    if (st == PT_OK && p.backend == PT_BACKEND_OPENCL) {
        /* no usable device: the CPU, saying why (pt_image_model_info) */
        pt_error derr = {0};
        if (sd_ocl_open(p.device, p.device_cache, &m->dev, &derr) != PT_OK)
            snprintf(m->device_note, sizeof m->device_note, "%s", derr.msg);
    }
    if (st == PT_OK) {
        /* the UNet's bytes as stored are the load's work */
        const uint64_t total = sd_weights_bytes(m->w, "unet.");
        if (p.progress) p.progress(p.progress_user, 0, total);
        m->resident = p.resident;
        sd_rt_mem_mark(m->rt);
        st = sd_prepare_unet(m, err);
        if (st == PT_OK && p.progress) p.progress(p.progress_user, total, total);
    }
    if (st != PT_OK) {
        pt_image_model_free(m);
        return st;
    }
    sd_stage_end(m, PT_IMAGE_STAGE_LOAD);
    weights_name(m, policy);
    m->has_taesd = m->cfg.taesd.present;
    m->lim = (sd_image_limits){
        .default_width = legal_side(default_side(&m->cfg)),
        .default_height = legal_side(default_side(&m->cfg)),
        .text_layers = m->cfg.clip.layers,
        .latent_channels = m->cfg.vae.latent_channels,
        .has_taesd = m->has_taesd,
    };
    m->load_seconds = sd_now() - t0;
    m->stats.load_seconds = m->load_seconds;
    *out = m;
    return PT_OK;
}

pt_status sd_prepare_unet(pt_image_model *m, pt_error *err) {
    if (m->unet) return PT_OK;
    pt_status st = sd_unet_load(m->w, &m->cfg.unet, m->rt, &m->unet, err);
    /* weights the UNet copied (reordered, quantized, repacked) gave their
     * pages back as they were prepared (sd_prepare_matrix); what is left
     * mapped are the ones it reads in place, which fault back in */
    if (st == PT_OK && m->rt->policy != SD_WEIGHTS_STORED) sd_weights_release(m->w, "unet.");
    return st;
}

void sd_drop_unet(pt_image_model *m) {
    if (m->resident || !m->unet) return;
    sd_ocl_forget_weights(m->dev, SD_OCL_W_UNET); /* from the layers freed here */
    sd_unet_free(m->unet);
    m->unet = NULL;
    sd_weights_release(m->w, "unet.");
    sd_rt_give_back();
}

void pt_image_model_free(pt_image_model *m) {
    if (!m) return;
    sd_ocl_close(m->dev);
    sd_unet_free(m->unet);
    sd_rt_free(m->rt); /* after every graph that counts on it */
    sd_clip_tokenizer_free(m->tok);
    sd_weights_close(m->w);
    free(m);
}

/* Elements of the tensors under a prefix, from their shapes. */
static int64_t count_params(const pt_image_model *m, const char *prefix) {
    return sd_weights_params(m->w, prefix);
}

void pt_image_model_get_info(const pt_image_model *m, pt_image_model_info *info) {
    memset(info, 0, sizeof *info);
    const sd_model_config *c = &m->cfg;
    info->family = c->family;
    info->prediction = c->unet.prediction == SD_PRED_V ? "v" : "epsilon";
    info->weights = m->weights_name;
    info->kernels = pt_cpu_variant_name(m->rt->cpu.variant);
    info->default_width = m->lim.default_width;
    info->default_height = m->lim.default_height;
    info->latent_channels = c->vae.latent_channels;
    info->text_hidden = c->clip.hidden;
    info->text_layers = c->clip.layers;
    info->clip_skip = c->clip.skip;
    info->unet_levels = c->unet.n_levels;
    for (int i = 0; i < c->unet.n_levels && i < 4; i++) info->unet_channels[i] = c->unet.channels[i];
    info->n_params_text = count_params(m, "text_encoder.");
    info->n_params_unet = count_params(m, "unet.");
    info->n_params_vae = count_params(m, "vae.");
    info->n_params_taesd = count_params(m, "taesd.");
    info->bytes_text = sd_weights_bytes(m->w, "text_encoder.");
    info->bytes_unet = sd_weights_bytes(m->w, "unet.");
    info->bytes_vae = sd_weights_bytes(m->w, "vae.");
    info->bytes_taesd = sd_weights_bytes(m->w, "taesd.");
    info->has_taesd = m->has_taesd;
    info->has_vae_encoder = c->vae.has_encoder;
    const pt_image_params api = pt_image_default_params();
    const sd_default_settings *d = &c->defaults;
    info->default_sampler = d->sampler > 0 ? (pt_image_sampler)(d->sampler - 1) : api.sampler;
    info->default_steps = d->steps > 0 ? d->steps : api.steps;
    info->default_cfg = d->has_cfg ? d->cfg : api.cfg;
    info->device = m->dev ? sd_ocl_name(m->dev) : "CPU";
    info->device_note = m->device_note;
}
