/*
 * test_sd_weights.c — reading image-model weights (engine/diffusion/
 * safetensors.c, sd_weights*.c, sd_config_parse.c).
 *
 * 1. The safetensors reader on a file written here byte by byte: names,
 *    dtypes, shapes, offsets, data and __metadata__ read back; every
 *    prefix of it fails with PT_ERR_FORMAT (exact-size heap copies, so an
 *    ASan build catches any read past the end).
 * 2. Hostile files (tools/make_bad_safetensors.py -> tests/data/sd-bad,
 *    the expected status and message word in its cases.tsv), a FIFO, a
 *    directory, an empty file: one-line errors naming the file, no crash.
 * 3. The minimal LDM checkpoint: its inferred config, hand-checked LDM ->
 *    diffusers names, sd_weights_need's missing-tensor and wrong-shape
 *    errors; the same model as a Q4_0 GGUF and as a diffusers folder
 *    (sharded, .fp16 variant, old VAE attention names) must agree.
 * 4. The diffusers fixture (tests/data/sd-tiny, made with diffusers):
 *    configs against the values in its config.json files (written out
 *    here), tensors against the raw file.
 * 5. The fixture converted to LDM (tools/sd_ldm_names.py): SD 1.x F32 —
 *    same config, every canonical tensor byte-for-byte equal to the
 *    diffusers one; SD 2.x (OpenCLIP, fused in_proj, F16) — same config,
 *    every tensor within F16 rounding of the diffusers F32 value.
 * 6. The fixture in petrel's GGUF at Q8_0 (tools/sd_to_gguf.py): same
 *    config, tokenizer text equal to the files, 1-D tensors byte-equal,
 *    quantized linears and OHWI-padded convs within Q8_0 rounding of the
 *    diffusers values, padding exactly zero; TAESD inside.
 */
#include "check.h"
#include "quant.h"
#include "safetensors.h"
#include "sd_weights_impl.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <sys/stat.h>

static char *fixture(const char *name) {
    static char buf[8][4096];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s", test_data(name));
    return buf[k];
}

static bool one_line(const pt_error *e) { return e->msg[0] && !strchr(e->msg, '\n'); }

/* ---- 1. the reader on a hand-written file ---- */

static size_t build_two(uint8_t *out) {
    /* "a": F32 [2,3] = 0..5 at data [0,24); "b": F16 [4] = 1.0 at [24,32) */
    const char *hdr = "{\"__metadata__\":{\"format\":\"pt\"},"
                      "\"b\":{\"dtype\":\"F16\",\"shape\":[4],\"data_offsets\":[24,32]},"
                      "\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}}   ";
    uint64_t n = strlen(hdr);
    for (int i = 0; i < 8; i++) out[i] = (uint8_t)(n >> (8 * i));
    memcpy(out + 8, hdr, n);
    uint8_t *d = out + 8 + n;
    for (int i = 0; i < 6; i++) {
        float f = (float)i;
        memcpy(d + 4 * i, &f, 4);
    }
    for (int i = 0; i < 4; i++) { d[24 + 2 * i] = 0x00; d[25 + 2 * i] = 0x3c; }
    return 8 + n + 32;
}

static void test_reader(void) {
    uint8_t buf[512];
    size_t n = build_two(buf);
    st_file *f = NULL;
    pt_error err = {0};
    uint8_t *copy = malloc(n);
    memcpy(copy, buf, n);
    CHECK(st_open_memory(copy, n, "two", &f, &err) == PT_OK, "valid file: %s", err.msg);
    if (f) {
        CHECK(f->n_tensors == 2, "2 tensors, got %llu", (unsigned long long)f->n_tensors);
        const st_tensor *a = st_find(f, "a"), *b = st_find(f, "b");
        CHECK(a && a->dtype == ST_F32 && a->n_dims == 2 && a->shape[0] == 2 && a->shape[1] == 3 &&
                  a->nbytes == 24 && a->offset == f->data_offset,
              "tensor a");
        CHECK(b && b->dtype == ST_F16 && b->n_dims == 1 && b->shape[0] == 4 && b->nbytes == 8 &&
                  b->offset == f->data_offset + 24,
              "tensor b");
        if (a) {
            float v;
            memcpy(&v, (const uint8_t *)a->data + 20, 4);
            CHECK(v == 5.0f, "a[1][2] = 5, got %g", v);
        }
        CHECK(!st_find(f, "c") && !st_find(f, "__metadata__"), "no c, metadata not a tensor");
        CHECK(st_meta(f, "format") && strcmp(st_meta(f, "format"), "pt") == 0, "metadata format");
        CHECK(st_dtype_pt_type(ST_BF16) == PT_TYPE_BF16 && st_dtype_pt_type(ST_I64) == UINT32_MAX,
              "dtype to pt_type");
        st_close(f);
    }
    free(copy);
    /* every proper prefix fails cleanly */
    int bad = 0;
    for (size_t len = 0; len < n; len++) {
        uint8_t *p = malloc(len ? len : 1);
        memcpy(p, buf, len);
        st_file *g = NULL;
        pt_error e = {0};
        pt_status st = st_open_memory(p, len, "prefix", &g, &e);
        if (st != PT_ERR_FORMAT || g || !one_line(&e) || strncmp(e.msg, "prefix: ", 8) != 0) {
            if (bad++ < 3) fprintf(stderr, "prefix %zu: status %d '%s'\n", len, st, e.msg);
        }
        st_close(g);
        free(p);
    }
    CHECK(bad == 0, "%d prefixes did not fail with a one-line format error", bad);
}

/* ---- 2. hostile files ---- */

static pt_status status_of(const char *s) {
    if (!strcmp(s, "OK")) return PT_OK;
    if (!strcmp(s, "FORMAT")) return PT_ERR_FORMAT;
    if (!strcmp(s, "UNSUPPORTED")) return PT_ERR_UNSUPPORTED;
    if (!strcmp(s, "IO")) return PT_ERR_IO;
    return (pt_status)-1;
}

static void test_hostile(void) {
    size_t len;
    char *tsv = test_read_file(fixture("sd-bad/cases.tsv"), &len);
    int n = 0;
    for (char *line = strtok(tsv, "\n"); line; line = strtok(NULL, "\n")) {
        char file[128] = {0}, stat[32] = {0}, word[128] = {0};
        char *t1 = strchr(line, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
        if (!t1 || !t2) continue;
        snprintf(file, sizeof file, "%.*s", (int)(t1 - line), line);
        snprintf(stat, sizeof stat, "%.*s", (int)(t2 - t1 - 1), t1 + 1);
        snprintf(word, sizeof word, "%s", t2 + 1);
        char rel[256];
        snprintf(rel, sizeof rel, "sd-bad/%s", file);
        const char *path = fixture(rel);
        pt_status want = status_of(stat);
        pt_error err = {0};
        pt_status got;
        if (strncmp(file, "ldm_", 4) == 0) {
            sd_weights *w = NULL;
            got = sd_weights_open(path, NULL, NULL, &w, &err);
            sd_weights_close(w);
        } else {
            st_file *f = NULL;
            got = st_open(path, &f, &err);
            st_close(f);
        }
        CHECK(got == want, "%s: status %d, want %s (%s)", file, got, stat, err.msg);
        if (want != PT_OK) {
            CHECK(strstr(err.msg, word) != NULL, "%s: message '%s' lacks '%s'", file, err.msg, word);
            CHECK(strstr(err.msg, file) != NULL, "%s: message '%s' does not name the file", file,
                  err.msg);
            CHECK(one_line(&err), "%s: one line", file);
        }
        n++;
    }
    free(tsv);
    CHECK(n >= 20, "cases.tsv had %d cases", n);

    /* a FIFO: refused before anything is read (no writer: would block) */
    char fifo[] = "/tmp/petrel-sdw-fifo-XXXXXX";
    int fd = mkstemp(fifo);
    if (fd >= 0) { close(fd); unlink(fifo); }
    CHECK(mkfifo(fifo, 0600) == 0, "mkfifo: %s", strerror(errno));
    pt_error err = {0};
    sd_weights *w = NULL;
    pt_status st = sd_weights_open(fifo, NULL, NULL, &w, &err);
    CHECK(st == PT_ERR_IO && strstr(err.msg, "not a regular file") && strstr(err.msg, fifo),
          "FIFO: %d '%s'", st, err.msg);
    st_file *f = NULL;
    st = st_open(fifo, &f, &err);
    CHECK(st == PT_ERR_IO && strstr(err.msg, "named pipe"), "FIFO st_open: '%s'", err.msg);
    unlink(fifo);
    /* an empty file, a missing one, a folder that is no model */
    char empty[] = "/tmp/petrel-sdw-empty-XXXXXX";
    fd = mkstemp(empty);
    if (fd >= 0) close(fd);
    st = sd_weights_open(empty, NULL, NULL, &w, &err);
    CHECK(st == PT_ERR_FORMAT && strstr(err.msg, "empty"), "empty: %d '%s'", st, err.msg);
    unlink(empty);
    st = sd_weights_open("/nonexistent/model.safetensors", NULL, NULL, &w, &err);
    CHECK(st == PT_ERR_IO && strstr(err.msg, "/nonexistent/model.safetensors"), "missing: '%s'",
          err.msg);
    st = sd_weights_open(fixture("sd-bad"), NULL, NULL, &w, &err);
    CHECK(st == PT_ERR_FORMAT && strstr(err.msg, "unet/config.json"), "not a model folder: '%s'",
          err.msg);
    CHECK(w == NULL, "no handle on failure");
    /* a GGUF that is not an image model */
    st = sd_weights_open(fixture("tiny_llama.gguf"), NULL, NULL, &w, &err);
    CHECK(st == PT_ERR_UNSUPPORTED && strstr(err.msg, "architecture"), "LLM GGUF: '%s'", err.msg);
}

static bool config_equal(const sd_model_config *a, const sd_model_config *b, char *why, size_t cap);
static float *as_floats(const sd_tensor *t, int64_t *n);

/* ---- 3. the minimal LDM ---- */

static void test_mini_ldm(void) {
    sd_weights *w = NULL;
    pt_error err = {0};
    const char *path = fixture("sd-bad/mini_ldm.safetensors");
    CHECK(sd_weights_open(path, NULL, NULL, &w, &err) == PT_OK, "mini_ldm: %s", err.msg);
    if (!w) return;
    const sd_model_config *c = sd_weights_config(w);
    const sd_unet_config *u = &c->unet;
    CHECK(!strcmp(c->family, "sd1"), "family %s", c->family);
    CHECK(u->n_levels == 2 && u->channels[0] == 4 && u->channels[1] == 4 && u->cross_attn[0] &&
              !u->cross_attn[1] && u->layers_per_block == 1 && u->heads[0] == 1 &&
              u->groups == 2 && u->cross_dim == 4 && u->time_embed_dim == 4 &&
              u->in_channels == 4 && u->out_channels == 4 && !u->linear_proj &&
              u->transformer_depth[0] == 1,
          "unet config");
    const sd_vae_config *v = &c->vae;
    CHECK(v->n_levels == 2 && v->channels[0] == 4 && v->layers_per_block == 1 && v->groups == 2 &&
              v->latent_channels == 4 && v->has_encoder && v->in_channels == 3 &&
              v->out_channels == 3,
          "vae config");
    const sd_clip_config *t = &c->clip;
    CHECK(t->vocab == 10 && t->hidden == 4 && t->layers == 1 && t->heads == 1 &&
              t->intermediate == 4 && t->max_pos == 8 && t->bos == 8 && t->eos == 9 &&
              t->pad == 9 && t->skip == 1 && t->act == SD_ACT_QUICK_GELU,
          "clip config");
    /* LDM -> diffusers, from the SD layout (n = 2, L = 1): the canonical
     * tensor must hold the bytes of the LDM key (a second mapping of the
     * file; every tensor's values are distinct random draws) */
    static const char *const pairs[][2] = {
        {"model.diffusion_model.input_blocks.0.0.weight", "unet.conv_in.weight"},
        {"model.diffusion_model.input_blocks.1.0.in_layers.0.weight", "unet.down_blocks.0.resnets.0.norm1.weight"},
        {"model.diffusion_model.input_blocks.1.0.emb_layers.1.weight", "unet.down_blocks.0.resnets.0.time_emb_proj.weight"},
        {"model.diffusion_model.input_blocks.1.1.proj_in.weight", "unet.down_blocks.0.attentions.0.proj_in.weight"},
        {"model.diffusion_model.input_blocks.2.0.op.weight", "unet.down_blocks.0.downsamplers.0.conv.weight"},
        {"model.diffusion_model.input_blocks.3.0.out_layers.3.weight", "unet.down_blocks.1.resnets.0.conv2.weight"},
        {"model.diffusion_model.middle_block.1.transformer_blocks.0.attn2.to_k.weight", "unet.mid_block.attentions.0.transformer_blocks.0.attn2.to_k.weight"},
        {"model.diffusion_model.middle_block.2.skip_connection.weight", NULL},
        {"model.diffusion_model.output_blocks.0.0.skip_connection.weight", "unet.up_blocks.0.resnets.0.conv_shortcut.weight"},
        {"model.diffusion_model.output_blocks.1.1.conv.weight", "unet.up_blocks.0.upsamplers.0.conv.weight"},
        {"model.diffusion_model.output_blocks.3.1.transformer_blocks.0.ff.net.0.proj.weight", "unet.up_blocks.1.attentions.1.transformer_blocks.0.ff.net.0.proj.weight"},
        {"model.diffusion_model.out.0.bias", "unet.conv_norm_out.bias"},
        {"model.diffusion_model.time_embed.2.weight", "unet.time_embedding.linear_2.weight"},
        {"first_stage_model.decoder.up.0.block.1.conv1.weight", "vae.decoder.up_blocks.1.resnets.1.conv1.weight"},
        {"first_stage_model.decoder.up.1.upsample.conv.weight", "vae.decoder.up_blocks.0.upsamplers.0.conv.weight"},
        {"first_stage_model.encoder.down.0.downsample.conv.bias", "vae.encoder.down_blocks.0.downsamplers.0.conv.bias"},
        {"first_stage_model.decoder.mid.attn_1.norm.weight", "vae.decoder.mid_block.attentions.0.group_norm.weight"},
        {"first_stage_model.decoder.mid.attn_1.proj_out.weight", "vae.decoder.mid_block.attentions.0.to_out.0.weight"},
        {"first_stage_model.decoder.norm_out.bias", "vae.decoder.conv_norm_out.bias"},
        {"first_stage_model.post_quant_conv.weight", "vae.post_quant_conv.weight"},
        {"cond_stage_model.transformer.text_model.encoder.layers.0.mlp.fc2.weight", "text_encoder.text_model.encoder.layers.0.mlp.fc2.weight"},
    };
    st_file *f = NULL;
    CHECK(st_open(path, &f, &err) == PT_OK, "st_open mini: %s", err.msg);
    for (size_t i = 0; f && i < sizeof pairs / sizeof pairs[0]; i++) {
        const st_tensor *lt = st_find(f, pairs[i][0]);
        if (!pairs[i][1]) { CHECK(lt == NULL, "%s should not exist (same channels)", pairs[i][0]); continue; }
        sd_tensor s;
        bool have = sd_weights_get(w, pairs[i][1], &s);
        CHECK(lt && have && s.nbytes == lt->nbytes && !memcmp(s.data, lt->data, s.nbytes) &&
                  s.type == PT_TYPE_F16,
              "%s -> %s", pairs[i][0], pairs[i][1]);
    }
    /* every tensor of the file is mapped (none left behind) */
    CHECK(f && w->n == f->n_tensors, "%zu canonical tensors for %llu in the file", w->n,
          f ? (unsigned long long)f->n_tensors : 0ULL);
    st_close(f);
    sd_tensor s;
    CHECK(sd_weights_get(w, "vae.decoder.mid_block.attentions.0.to_q.weight", &s) && s.n_dims == 2 &&
              s.shape[0] == 4 && s.shape[1] == 4,
          "VAE 1x1-conv attention as [c,c]");
    int64_t want[4] = {4, 4, 3, 3};
    CHECK(sd_weights_need(w, "unet.down_blocks.0.resnets.0.conv2.weight", 4, want, &s, &err) == PT_OK,
          "need ok: %s", err.msg);
    pt_status st = sd_weights_need(w, "unet.nope.weight", 4, want, &s, &err);
    CHECK(st == PT_ERR_FORMAT && strstr(err.msg, "missing tensor 'unet.nope.weight'"), "need missing: %s",
          err.msg);
    int64_t wrong[4] = {4, 4, 1, 1};
    st = sd_weights_need(w, "unet.conv_in.weight", 4, wrong, &s, &err);
    CHECK(st == PT_ERR_FORMAT && strstr(err.msg, "[4, 4, 3, 3], expected [4, 4, 1, 1]"), "need shape: %s",
          err.msg);
    CHECK(sd_weights_vocab_json(w, NULL) == NULL && sd_weights_merges(w, NULL) == NULL, "no tokenizer");
    CHECK(u->channels[2] == 0 && u->heads[3] == 0 && c->vae.channels[2] == 0, "unused levels zero");

    /* the same model through tools/sd_to_gguf.py's LDM path, Q4_0: same
     * config; 1-D tensors are the F16 values widened to F32 exactly;
     * 4-input linears stay F16 (4 is no multiple of 32), same bytes */
    sd_weights *g = NULL;
    CHECK(sd_weights_open(fixture("sd-bad/mini_q4.gguf"), NULL, NULL, &g, &err) == PT_OK, "mini_q4: %s",
          err.msg);
    if (g) {
        char why[64] = "";
        CHECK(config_equal(c, sd_weights_config(g), why, sizeof why), "mini GGUF config: %s", why);
        CHECK(g->n == w->n, "mini GGUF %zu tensors vs %zu", g->n, w->n);
        int diff = 0;
        for (size_t i = 0; i < w->n; i++) {
            sd_tensor t;
            const sd_tensor *r = &w->e[i].t;
            bool ok = sd_weights_get(g, w->e[i].name, &t) && !memcmp(t.shape, r->shape, sizeof t.shape);
            if (ok && r->n_dims == 1) {
                int64_t n1, n2;
                float *a = as_floats(&t, &n1), *b = as_floats(r, &n2);
                ok = t.type == PT_TYPE_F32 && n1 == n2 && !memcmp(a, b, (size_t)n1 * sizeof *a);
                free(a);
                free(b);
            } else if (ok && r->n_dims == 2) {
                ok = t.type == PT_TYPE_F16 && t.nbytes == r->nbytes && !memcmp(t.data, r->data, t.nbytes);
            } else if (ok) {
                ok = t.type == PT_TYPE_Q4_0 && t.layout == SD_LAYOUT_CONV_OHWI_PAD && t.k_pad % 32 == 0;
            }
            if (!ok && diff++ < 5) fprintf(stderr, "mini GGUF differs: %s\n", w->e[i].name);
        }
        CHECK(diff == 0, "%d mini GGUF tensors differ", diff);
        sd_weights_close(g);
    }

    /* the same model as a diffusers folder with the loader's other paths
     * (sharded UNet + index, .fp16 text encoder with an I64 position_ids
     * buffer, VAE attention under old names as [c,c,1,1]): same config,
     * every tensor the same bytes */
    g = NULL;
    CHECK(sd_weights_open(fixture("sd-bad/mini_diffusers"), NULL, NULL, &g, &err) == PT_OK,
          "mini_diffusers: %s", err.msg);
    if (g) {
        char why[64] = "";
        CHECK(config_equal(c, sd_weights_config(g), why, sizeof why), "mini diffusers config: %s", why);
        CHECK(g->n == w->n, "mini diffusers %zu tensors vs %zu", g->n, w->n);
        int diff = 0;
        for (size_t i = 0; i < w->n; i++) {
            sd_tensor t;
            const sd_tensor *r = &w->e[i].t;
            bool ok = sd_weights_get(g, w->e[i].name, &t) && t.n_dims == r->n_dims &&
                      !memcmp(t.shape, r->shape, sizeof t.shape) && t.nbytes == r->nbytes &&
                      !memcmp(t.data, r->data, t.nbytes);
            if (!ok && diff++ < 5) fprintf(stderr, "mini diffusers differs: %s\n", w->e[i].name);
        }
        CHECK(diff == 0, "%d mini diffusers tensors differ", diff);
        sd_weights_close(g);
    }
    sd_weights_close(w);

    /* the broken variants load (the file is fine), and need() names the problem */
    w = NULL;
    CHECK(sd_weights_open(fixture("sd-bad/ldm_missing_tensor.safetensors"), NULL, NULL, &w, &err) == PT_OK,
          "ldm_missing_tensor opens: %s", err.msg);
    if (w) {
        st = sd_weights_need(w, "unet.down_blocks.0.resnets.0.conv2.weight", 4, want, &s, &err);
        CHECK(st == PT_ERR_FORMAT && strstr(err.msg, "missing tensor"), "missing: %s", err.msg);
        sd_weights_close(w);
    }
    w = NULL;
    CHECK(sd_weights_open(fixture("sd-bad/ldm_wrong_shape.safetensors"), NULL, NULL, &w, &err) == PT_OK,
          "ldm_wrong_shape opens: %s", err.msg);
    if (w) {
        st = sd_weights_need(w, "unet.down_blocks.0.resnets.0.conv2.weight", 4, want, &s, &err);
        CHECK(st == PT_ERR_FORMAT && strstr(err.msg, "has shape [4, 4, 1, 3], expected [4, 4, 3, 3]"),
              "wrong shape: %s", err.msg);
        sd_weights_close(w);
    }
}

/* ---- 4. the diffusers fixture ---- */

static void check_tiny_common(const sd_model_config *c) {
    const sd_unet_config *u = &c->unet;
    /* unet/config.json: block_out_channels [16,32,32], Cross x2 + Down,
     * layers_per_block 2, cross_attention_dim 32, norm_num_groups 8 */
    CHECK(u->n_levels == 3 && u->channels[0] == 16 && u->channels[1] == 32 && u->channels[2] == 32,
          "unet channels");
    CHECK(u->cross_attn[0] && u->cross_attn[1] && !u->cross_attn[2], "unet attention levels");
    CHECK(u->layers_per_block == 2 && u->cross_dim == 32 && u->groups == 8 && u->in_channels == 4 &&
              u->out_channels == 4 && u->time_embed_dim == 64 && u->flip_sin_to_cos &&
              u->freq_shift == 0 && fabsf(u->norm_eps - 1e-5f) < 1e-12f &&
              u->transformer_depth[0] == 1 && u->transformer_depth[1] == 1,
          "unet scalars");
    /* vae/config.json: [8,16,16,16], 2 layers, 4 groups, 4 latents, 0.18215 */
    const sd_vae_config *v = &c->vae;
    CHECK(v->n_levels == 4 && v->channels[0] == 8 && v->channels[1] == 16 && v->channels[3] == 16 &&
              v->layers_per_block == 2 && v->groups == 4 && v->latent_channels == 4 &&
              v->scaling_factor == 0.18215f && v->has_encoder && v->in_channels == 3 &&
              v->out_channels == 3,
          "vae config");
    /* text_encoder/config.json: 695 / 32 / 48 / 2 layers / 2 heads / 77 */
    const sd_clip_config *t = &c->clip;
    CHECK(t->vocab == 695 && t->hidden == 32 && t->intermediate == 48 && t->layers == 2 &&
              t->heads == 2 && t->max_pos == 77 && t->bos == 693 && t->eos == 694 &&
              t->skip == 1 && fabsf(t->ln_eps - 1e-5f) < 1e-12f,
          "clip config");
    const sd_schedule_config *s = &c->schedule;
    CHECK(s->num_train_timesteps == 1000 && s->beta_start == 0.00085f && s->beta_end == 0.012f &&
              s->beta_schedule == SD_BETA_SCALED_LINEAR && s->steps_offset == 1,
          "schedule");
}

static void test_diffusers(void) {
    sd_weights *w = NULL;
    pt_error err = {0};
    CHECK(sd_weights_open(fixture("sd-tiny/model"), fixture("sd-tiny/taesd"), NULL, &w, &err) == PT_OK,
          "sd-tiny/model: %s", err.msg);
    if (!w) return;
    const sd_model_config *c = sd_weights_config(w);
    check_tiny_common(c);
    CHECK(!strcmp(c->family, "sd1") && c->clip.act == SD_ACT_QUICK_GELU && c->clip.pad == 694 &&
              c->unet.heads[0] == 2 && c->unet.heads[2] == 2 && !c->unet.linear_proj &&
              c->unet.prediction == SD_PRED_EPSILON && c->schedule.prediction == SD_PRED_EPSILON,
          "sd1 specifics");
    /* taesd/config.json: 8 channels, [3,3,3,1] blocks, 4 latents */
    CHECK(c->taesd.present && c->taesd.channels == 8 && c->taesd.latent_channels == 4 &&
              c->taesd.blocks_per_stage == 3 && c->taesd.n_upsamples == 3,
          "taesd config");
    sd_tensor s;
    CHECK(sd_weights_get(w, "taesd.decoder.layers.0.weight", &s) && s.shape[0] == 8 && s.shape[1] == 4,
          "taesd conv_in");
    /* a tensor against the raw file */
    st_file *f = NULL;
    CHECK(st_open(fixture("sd-tiny/model/unet/diffusion_pytorch_model.safetensors"), &f, &err) == PT_OK,
          "raw unet: %s", err.msg);
    const st_tensor *raw = f ? st_find(f, "conv_in.weight") : NULL;
    CHECK(raw && sd_weights_get(w, "unet.conv_in.weight", &s) && s.type == PT_TYPE_F32 && s.n_dims == 4 &&
              s.shape[0] == 16 && s.shape[1] == 4 && s.shape[2] == 3 && s.layout == SD_LAYOUT_TORCH &&
              s.nbytes == raw->nbytes && memcmp(s.data, raw->data, s.nbytes) == 0,
          "unet.conv_in.weight");
    st_close(f);
    CHECK(sd_weights_get(w, "vae.decoder.mid_block.attentions.0.to_q.weight", &s) && s.n_dims == 2 &&
              s.shape[0] == 16 && s.shape[1] == 16,
          "vae attention");
    CHECK(sd_weights_get(w, "text_encoder.text_model.embeddings.token_embedding.weight", &s) &&
              s.shape[0] == 695 && s.shape[1] == 32,
          "token embedding");
    CHECK(!sd_weights_get(w, "text_encoder.text_model.embeddings.position_ids", NULL), "no position_ids");
    size_t vl = 0, ml = 0;
    const char *vocab = sd_weights_vocab_json(w, &vl), *merges = sd_weights_merges(w, &ml);
    size_t fl = 0;
    char *file = test_read_file(fixture("sd-tiny/model/tokenizer/vocab.json"), &fl);
    CHECK(vocab && vl == fl && memcmp(vocab, file, fl) == 0 && vocab[vl] == 0, "vocab.json text");
    free(file);
    file = test_read_file(fixture("sd-tiny/model/tokenizer/merges.txt"), &fl);
    CHECK(merges && ml == fl && memcmp(merges, file, fl) == 0, "merges.txt text");
    free(file);
    /* bytes: the sum over the prefix; release keeps the data readable */
    uint64_t all = sd_weights_bytes(w, ""), te = sd_weights_bytes(w, "text_encoder."),
             un = sd_weights_bytes(w, "unet."), va = sd_weights_bytes(w, "vae."),
             ta = sd_weights_bytes(w, "taesd.");
    CHECK(all == te + un + va + ta && te > 695 * 32 * 4 && un > 0 && ta > 0, "bytes");
    sd_weights_get(w, "text_encoder.text_model.final_layer_norm.weight", &s);
    float before[32];
    memcpy(before, s.data, sizeof before);
    sd_weights_release(w, "text_encoder.");
    CHECK(memcmp(before, s.data, sizeof before) == 0, "data reads back after release");
    sd_weights_close(w);

    w = NULL;
    CHECK(sd_weights_open(fixture("sd-tiny/model-v"), NULL, NULL, &w, &err) == PT_OK,
          "sd-tiny/model-v: %s", err.msg);
    if (!w) return;
    c = sd_weights_config(w);
    check_tiny_common(c);
    /* model-v: gelu, pad "!" = 0, linear projections, heads [2,4,4], v */
    CHECK(!strcmp(c->family, "sd2") && c->clip.act == SD_ACT_GELU && c->clip.pad == 0 &&
              c->unet.linear_proj && c->unet.heads[0] == 2 && c->unet.heads[1] == 4 &&
              c->unet.heads[2] == 4 && c->unet.prediction == SD_PRED_V &&
              c->schedule.prediction == SD_PRED_V && !c->taesd.present,
          "sd2 specifics");
    CHECK(sd_weights_get(w, "unet.down_blocks.0.attentions.0.proj_in.weight", &s) && s.n_dims == 2,
          "linear proj_in");
    sd_weights_close(w);
}

/* ---- 5./6. conversions against the diffusers folder ---- */

static bool config_equal(const sd_model_config *a, const sd_model_config *b, char *why, size_t cap) {
#define SAME(f) if (memcmp(&a->f, &b->f, sizeof a->f)) { snprintf(why, cap, "%s", #f); return false; }
    SAME(family); SAME(clip); SAME(schedule); SAME(taesd);
    const sd_unet_config *u = &a->unet, *v = &b->unet;
    if (u->n_levels != v->n_levels) { snprintf(why, cap, "unet.n_levels"); return false; }
    for (int i = 0; i < u->n_levels; i++)
        if (u->channels[i] != v->channels[i] || u->cross_attn[i] != v->cross_attn[i] ||
            u->heads[i] != v->heads[i] || u->transformer_depth[i] != v->transformer_depth[i]) {
            snprintf(why, cap, "unet level %d", i);
            return false;
        }
    if (u->in_channels != v->in_channels || u->out_channels != v->out_channels ||
        u->layers_per_block != v->layers_per_block || u->cross_dim != v->cross_dim ||
        u->groups != v->groups || u->norm_eps != v->norm_eps || u->linear_proj != v->linear_proj ||
        u->flip_sin_to_cos != v->flip_sin_to_cos || u->freq_shift != v->freq_shift ||
        u->time_embed_dim != v->time_embed_dim || u->prediction != v->prediction) {
        snprintf(why, cap, "unet scalars");
        return false;
    }
    const sd_vae_config *x = &a->vae, *y = &b->vae;
    for (int i = 0; i < x->n_levels; i++)
        if (x->channels[i] != y->channels[i]) { snprintf(why, cap, "vae.channels"); return false; }
    if (x->n_levels != y->n_levels || x->in_channels != y->in_channels ||
        x->out_channels != y->out_channels || x->latent_channels != y->latent_channels ||
        x->layers_per_block != y->layers_per_block || x->groups != y->groups ||
        x->scaling_factor != y->scaling_factor || x->has_encoder != y->has_encoder) {
        snprintf(why, cap, "vae");
        return false;
    }
    return true;
#undef SAME
}

/* Tensor t as floats (F32 or F16 torch layout). */
static float *as_floats(const sd_tensor *t, int64_t *n) {
    *n = (int64_t)(t->nbytes / (t->type == PT_TYPE_F32 ? 4 : 2));
    float *out = malloc((size_t)*n * sizeof *out + 1);
    pt_dequant_row(t->type, t->data, out, *n);
    return out;
}

static void test_ldm_equals_diffusers(void) {
    sd_weights *d = NULL, *l = NULL;
    pt_error err = {0};
    CHECK(sd_weights_open(fixture("sd-tiny/model"), NULL, NULL, &d, &err) == PT_OK, "diffusers: %s", err.msg);
    /* the tokenizer given separately: LDM files carry none */
    CHECK(sd_weights_open(fixture("sd-tiny-ldm.safetensors"), NULL, fixture("sd-tiny/model/tokenizer"), &l,
                          &err) == PT_OK,
          "ldm: %s", err.msg);
    if (!d || !l) { sd_weights_close(d); sd_weights_close(l); return; }
    char why[64] = "";
    CHECK(config_equal(sd_weights_config(d), sd_weights_config(l), why, sizeof why), "sd1 LDM config differs: %s", why);
    CHECK(d->n == l->n, "tensor counts %zu vs %zu", d->n, l->n);
    int diff = 0;
    for (size_t i = 0; i < d->n; i++) {
        sd_tensor t;
        const sd_tensor *r = &d->e[i].t;
        bool ok = sd_weights_get(l, d->e[i].name, &t) && t.type == r->type && t.n_dims == r->n_dims &&
                  !memcmp(t.shape, r->shape, sizeof t.shape) && t.nbytes == r->nbytes &&
                  !memcmp(t.data, r->data, t.nbytes);
        if (!ok && diff++ < 5) fprintf(stderr, "ldm differs: %s\n", d->e[i].name);
    }
    CHECK(diff == 0, "%d LDM tensors differ from diffusers", diff);
    sd_weights_close(d);
    sd_weights_close(l);

    /* SD 2.x style: OpenCLIP names, fused in_proj, F16 */
    d = l = NULL;
    CHECK(sd_weights_open(fixture("sd-tiny/model-v"), NULL, NULL, &d, &err) == PT_OK, "diffusers v: %s", err.msg);
    CHECK(sd_weights_open(fixture("sd-tiny-v-ldm.safetensors"), NULL, fixture("sd-tiny/model-v/tokenizer"), &l,
                          &err) == PT_OK,
          "ldm v: %s", err.msg);
    if (!d || !l) { sd_weights_close(d); sd_weights_close(l); return; }
    const sd_model_config *lc = sd_weights_config(l);
    CHECK(config_equal(sd_weights_config(d), lc, why, sizeof why), "sd2 LDM config differs: %s", why);
    CHECK(lc->clip.pad == 0 && lc->clip.act == SD_ACT_GELU, "OpenCLIP pad and act");
    CHECK(d->n == l->n, "v tensor counts %zu vs %zu", d->n, l->n);
    diff = 0;
    for (size_t i = 0; i < d->n; i++) {
        sd_tensor t;
        const sd_tensor *r = &d->e[i].t;
        bool ok = sd_weights_get(l, d->e[i].name, &t) && t.type == PT_TYPE_F16 && t.n_dims == r->n_dims &&
                  !memcmp(t.shape, r->shape, sizeof t.shape) && t.nbytes * 2 == r->nbytes;
        if (ok) {
            int64_t n1, n2;
            float *a = as_floats(&t, &n1), *b = as_floats(r, &n2);
            /* F16 rounding to nearest: relative error <= 2^-11 for normal
             * values, absolute <= 2^-25 in the subnormal range */
            for (int64_t k = 0; k < n1 && ok; k++)
                ok = fabsf(a[k] - b[k]) <= fabsf(b[k]) * 0x1p-11f + 0x1p-25f;
            free(a);
            free(b);
        }
        if (!ok && diff++ < 5) fprintf(stderr, "ldm-v differs: %s\n", d->e[i].name);
    }
    CHECK(diff == 0, "%d SD2 LDM tensors differ from diffusers beyond F16 rounding", diff);
    sd_weights_close(d);
    sd_weights_close(l);
}

static void test_gguf(void) {
    sd_weights *d = NULL, *g = NULL;
    pt_error err = {0};
    CHECK(sd_weights_open(fixture("sd-tiny/model"), fixture("sd-tiny/taesd"), NULL, &d, &err) == PT_OK,
          "diffusers: %s", err.msg);
    CHECK(sd_weights_open(fixture("sd-tiny-q8.gguf"), NULL, NULL, &g, &err) == PT_OK, "gguf: %s", err.msg);
    if (!d || !g) { sd_weights_close(d); sd_weights_close(g); return; }
    char why[64] = "";
    CHECK(config_equal(sd_weights_config(d), sd_weights_config(g), why, sizeof why), "GGUF config differs: %s", why);
    size_t a = 0, b = 0;
    const char *va = sd_weights_vocab_json(d, &a), *vb = sd_weights_vocab_json(g, &b);
    CHECK(va && vb && a == b && !memcmp(va, vb, a), "GGUF vocab");
    va = sd_weights_merges(d, &a);
    vb = sd_weights_merges(g, &b);
    CHECK(va && vb && a == b && !memcmp(va, vb, a), "GGUF merges");
    CHECK(d->n == g->n, "tensor counts %zu vs %zu", d->n, g->n);
    int diff = 0, n_conv = 0, n_lin = 0;
    for (size_t i = 0; i < d->n; i++) {
        const char *name = d->e[i].name;
        const sd_tensor *r = &d->e[i].t;
        sd_tensor t;
        bool ok = sd_weights_get(g, name, &t) && t.n_dims == r->n_dims &&
                  !memcmp(t.shape, r->shape, sizeof t.shape);
        int64_t nr = 0;
        float *ref = ok ? as_floats(r, &nr) : NULL;
        if (ok && r->n_dims == 1) {
            ok = t.type == PT_TYPE_F32 && t.nbytes == r->nbytes && !memcmp(t.data, r->data, t.nbytes);
        } else if (ok && t.type == PT_TYPE_Q8_0) {
            /* rows of the stored matrix and the reference in the same order */
            bool conv = t.layout == SD_LAYOUT_CONV_OHWI_PAD;
            int64_t rows = t.shape[0], cols = conv ? t.k_pad : t.shape[1];
            int64_t ci = t.shape[1], kh = conv ? t.shape[2] : 1, kw = conv ? t.shape[3] : 1;
            int64_t k = conv ? ci * kh * kw : cols;
            ok = cols % 32 == 0 && (!conv || (t.n_dims == 4 && cols >= k && cols < k + 32)) &&
                 t.nbytes == (uint64_t)rows * pt_type_row_bytes(PT_TYPE_Q8_0, cols);
            float *row = malloc((size_t)cols * sizeof *row), *want = malloc((size_t)cols * sizeof *want);
            for (int64_t o = 0; ok && o < rows; o++) {
                pt_dequant_row(PT_TYPE_Q8_0, (const uint8_t *)t.data + o * pt_type_row_bytes(PT_TYPE_Q8_0, cols),
                               row, cols);
                for (int64_t j = 0; j < cols; j++) want[j] = 0;
                for (int64_t y = 0; y < kh; y++)
                    for (int64_t x = 0; x < kw; x++)
                        for (int64_t c = 0; c < ci; c++)
                            want[(y * kw + x) * ci + c] = conv ? ref[((o * ci + c) * kh + y) * kw + x]
                                                               : ref[o * cols + c];
                /* Q8_0: per block of 32, d = amax/127 (stored as F16), q =
                 * round(x/d): |error| <= d/2 plus d's own F16 rounding
                 * (127 * d * 2^-11); padding is exactly 0 */
                for (int64_t b0 = 0; b0 < cols && ok; b0 += 32) {
                    float amax = 0;
                    for (int64_t j = b0; j < b0 + 32; j++) amax = fmaxf(amax, fabsf(want[j]));
                    float tol = amax / 254.0f * 1.001f + amax * 0x1p-11f;
                    for (int64_t j = b0; j < b0 + 32 && ok; j++)
                        ok = j >= k ? row[j] == 0.0f : fabsf(row[j] - want[j]) <= tol;
                }
            }
            free(row);
            free(want);
            if (conv) n_conv++; else n_lin++;
        } else if (ok) {
            /* embeddings and linears whose inputs are not a multiple of 32: F16 */
            ok = t.type == PT_TYPE_F16 && t.layout == SD_LAYOUT_TORCH;
            int64_t nt;
            float *v = ok ? as_floats(&t, &nt) : NULL;
            for (int64_t j = 0; ok && j < nt; j++) ok = fabsf(v[j] - ref[j]) <= fabsf(ref[j]) * 0x1p-11f + 0x1p-25f;
            free(v);
        }
        free(ref);
        if (!ok && diff++ < 5) fprintf(stderr, "gguf differs: %s\n", name);
    }
    CHECK(diff == 0, "%d GGUF tensors differ from diffusers beyond their type's rounding", diff);
    CHECK(n_conv > 50 && n_lin > 20, "quantized convs %d, linears %d", n_conv, n_lin);
    sd_tensor t;
    CHECK(sd_weights_get(g, "unet.conv_in.weight", &t) && t.layout == SD_LAYOUT_CONV_OHWI_PAD &&
              t.k_pad == 64 && t.shape[1] == 4,
          "conv_in padded from 36 to 64 columns");
    sd_weights_close(d);
    sd_weights_close(g);
    /* a TAESD path given with a GGUF that has one replaces it */
    g = NULL;
    CHECK(sd_weights_open(fixture("sd-tiny-q8.gguf"), fixture("sd-tiny/taesd"), NULL, &g, &err) == PT_OK,
          "gguf + taesd: %s", err.msg);
    if (g) {
        CHECK(sd_weights_get(g, "taesd.decoder.layers.0.weight", &t) && t.type == PT_TYPE_F32,
              "the given TAESD (F32), not the GGUF's (Q8_0)");
        sd_weights_close(g);
    }
}

int main(void) {
    test_reader();
    test_hostile();
    test_mini_ldm();
    test_diffusers();
    test_ldm_equals_diffusers();
    test_gguf();
    return check_done("sd_weights");
}
