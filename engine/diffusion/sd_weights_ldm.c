/*
 * sd_weights_ldm.c — single-file checkpoints in the original Stable
 * Diffusion (LDM) layout, SD 1.x and SD 2.x: the config is inferred from
 * tensor shapes, then every LDM key is mapped to its canonical diffusers
 * name by prefix rules derived from that config (the tables of diffusers'
 * convert_ldm_unet_checkpoint, convert_ldm_vae_checkpoint,
 * convert_ldm_clip_checkpoint and convert_open_clip_checkpoint).
 *
 * Key layout of the UNet ("model.diffusion_model." + ...), with n levels
 * and L = layers_per_block:
 *   time_embed.{0,2}                     time_embedding.linear_{1,2}
 *   input_blocks.0.0                     conv_in
 *   input_blocks.(1 + l(L+1) + j).0      down_blocks.l.resnets.j     (resnet keys)
 *   input_blocks.(1 + l(L+1) + j).1      down_blocks.l.attentions.j
 *   input_blocks.((l+1)(L+1)).0.op       down_blocks.l.downsamplers.0.conv   (l < n-1)
 *   middle_block.{0,1,2}                 mid_block.{resnets.0, attentions.0, resnets.1}
 *   output_blocks.(b(L+1) + j).0         up_blocks.b.resnets.j       (j <= L)
 *   output_blocks.(b(L+1) + j).1         up_blocks.b.attentions.j    (level n-1-b has attention)
 *   output_blocks.(b(L+1) + L).{1|2}.conv up_blocks.b.upsamplers.0.conv (b < n-1; 2 after an attention)
 *   out.{0,2}                            conv_norm_out, conv_out
 *   resnet keys: in_layers.0 norm1, in_layers.2 conv1, emb_layers.1
 *   time_emb_proj, out_layers.0 norm2, out_layers.3 conv2, skip_connection
 *   conv_shortcut; transformer keys are the same in both layouts.
 * The VAE ("first_stage_model." + ...):
 *   {encoder,decoder}.{conv_in,conv_out}, quant_conv, post_quant_conv   same
 *   {encoder,decoder}.norm_out           conv_norm_out
 *   encoder.down.i.block.j               encoder.down_blocks.i.resnets.j (nin_shortcut -> conv_shortcut)
 *   encoder.down.i.downsample.conv       encoder.down_blocks.i.downsamplers.0.conv
 *   decoder.up.i.block.j                 decoder.up_blocks.(n-1-i).resnets.j
 *   decoder.up.i.upsample.conv           decoder.up_blocks.(n-1-i).upsamplers.0.conv
 *   *.mid.block_{1,2}                    *.mid_block.resnets.{0,1}
 *   *.mid.attn_1.{norm,q,k,v,proj_out}   *.mid_block.attentions.0.{group_norm,to_q,to_k,to_v,to_out.0}
 *                                        (1x1-conv weights [c,c,1,1] shown as [c,c])
 * The text encoder: SD 1.x "cond_stage_model.transformer.[text_model.]" +
 * transformers' keys; SD 2.x OpenCLIP "cond_stage_model.model." with
 *   token_embedding, positional_embedding, ln_final, transformer.resblocks.i.
 *   {ln_1, ln_2, attn.in_proj_{weight,bias} (q,k,v thirds), attn.out_proj,
 *   mlp.c_fc, mlp.c_proj} -> text_model.encoder.layers.i.{layer_norm1, ...}.
 *
 * What shapes cannot tell (heads, GroupNorm groups, prediction type, VAE
 * scaling) follows the family (SD 1.x: 8 UNet heads, CLIP hidden/64;
 * SD 2.x: 64-wide heads everywhere; 32 groups; epsilon; 0.18215) unless
 * the file's __metadata__ holds petrel's keys with the same names as the
 * GGUF's (sd_weights_gguf.c): "sd.clip.heads", "sd.unet.heads" ("8" or
 * "5,10,20,20"), "sd.unet.groups", "sd.vae.groups", "sd.vae.scaling_factor",
 * "sd.schedule.prediction" ("epsilon" / "v_prediction"),
 * "sd.clip.skip" — tools/sd_ldm_names.py writes them for small models.
 */
#include "sd_weights_impl.h"

#include "status.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UNET "model.diffusion_model."
#define VAE "first_stage_model."
#define CLIP1 "cond_stage_model.transformer."
#define CLIP2 "cond_stage_model.model."

typedef enum rule_kind {
    R_SAME = 0,  /* the rest of the key unchanged */
    R_RESNET,    /* UNet resnet suffixes */
    R_VAE_RESNET,
    R_VAE_ATTN,
} rule_kind;

/* Keys starting with ldm map to canon + the rest (rewritten per kind). */
typedef struct rule {
    char ldm[96], canon[96];
    rule_kind kind;
} rule;

typedef struct rules {
    rule r[512];
    int n;
} rules;

static void add_rule(rules *rs, rule_kind k, const char *canon, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void add_rule(rules *rs, rule_kind k, const char *canon, const char *fmt, ...) {
    if (rs->n == (int)(sizeof rs->r / sizeof rs->r[0])) return; /* bounded by the config checks */
    rule *r = &rs->r[rs->n++];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->ldm, sizeof r->ldm, fmt, ap);
    va_end(ap);
    snprintf(r->canon, sizeof r->canon, "%s", canon);
    r->kind = k;
}

static const char *const RESNET_SUFFIX[][2] = {
    {"in_layers.0.", "norm1."}, {"in_layers.2.", "conv1."}, {"emb_layers.1.", "time_emb_proj."},
    {"out_layers.0.", "norm2."}, {"out_layers.3.", "conv2."}, {"skip_connection.", "conv_shortcut."},
};
static const char *const VAE_RESNET_SUFFIX[][2] = {{"nin_shortcut.", "conv_shortcut."}};
static const char *const VAE_ATTN_SUFFIX[][2] = {
    {"norm.", "group_norm."}, {"q.", "to_q."}, {"k.", "to_k."}, {"v.", "to_v."},
    {"proj_out.", "to_out.0."},
};

/* ---- reading the file ---- */

typedef struct ldm {
    const st_file *f;
    const char *path;
} ldm;

static const st_tensor *find(const ldm *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static const st_tensor *find(const ldm *m, const char *fmt, ...) {
    char name[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    return st_find(m->f, name);
}

/* Dimension d of a tensor, or 0 when it is absent or out of int range. */
static int dim(const st_tensor *t, int d) {
    if (!t || d >= t->n_dims || t->shape[d] > 1 << 24) return 0;
    return (int)t->shape[d];
}

/* A hint from __metadata__ as an int list of up to n; returns the count. */
static int hint_ints(const st_file *f, const char *key, int *out, int n) {
    const char *v = st_meta(f, key);
    if (!v) return 0;
    int k = 0;
    while (k < n) {
        char *end;
        long x = strtol(v, &end, 10);
        if (end == v || x < 1 || x > 1 << 16) return 0;
        out[k++] = (int)x;
        if (*end == 0) break;
        if (*end != ',') return 0;
        v = end + 1;
    }
    return k;
}

/* ---- config inference ---- */

static pt_status infer_unet(const ldm *m, sd_unet_config *u, bool sd2, pt_error *err) {
    const st_tensor *cin = find(m, UNET "input_blocks.0.0.weight");
    const st_tensor *cout = find(m, UNET "out.2.weight");
    const st_tensor *temb = find(m, UNET "time_embed.0.weight");
    if (!cin || cin->n_dims != 4 || !cout || !temb)
        return pt_fail(err, PT_ERR_FORMAT, "%s: not a Stable Diffusion checkpoint (no %sinput_blocks.0.0, "
                       "out.2 or time_embed.0 weight)", m->path, UNET);
    u->in_channels = dim(cin, 1);
    u->out_channels = dim(cout, 0);
    u->time_embed_dim = dim(temb, 0);
    /* the highest input block index, and the first downsampler's index */
    int max_in = 0, first_op = 0;
    for (uint64_t i = 0; i < m->f->n_tensors; i++) {
        const char *nm = m->f->tensors[i].name;
        if (strncmp(nm, UNET "input_blocks.", strlen(UNET "input_blocks.")) != 0) continue;
        long k = strtol(nm + strlen(UNET "input_blocks."), NULL, 10);
        if (k < 0 || k >= 1000) continue;
        if (k > max_in) max_in = (int)k;
        char op[64];
        snprintf(op, sizeof op, ".%ld.0.op.weight", k);
        if (strstr(nm, op) && (!first_op || k < first_op)) first_op = (int)k;
    }
    int L = first_op ? first_op - 1 : max_in;
    if (L < 1 || L > 16 || (max_in + 1) % (L + 1) != 0 || (max_in + 1) / (L + 1) > SD_MAX_LEVELS)
        return pt_fail(err, PT_ERR_UNSUPPORTED, "%s: UNet input blocks (0..%d, first downsampler %d) "
                       "do not form 1..%d SD levels", m->path, max_in, first_op, SD_MAX_LEVELS);
    u->layers_per_block = L;
    u->n_levels = (max_in + 1) / (L + 1);
    const st_tensor *proj = NULL;
    for (int l = 0; l < u->n_levels; l++) {
        int b = 1 + l * (L + 1);
        u->channels[l] = dim(find(m, UNET "input_blocks.%d.0.in_layers.2.weight", b), 0);
        const st_tensor *p = find(m, UNET "input_blocks.%d.1.proj_in.weight", b);
        u->cross_attn[l] = p != NULL;
        if (p && !proj) proj = p;
        int d = 0;
        while (p && d < 64 && find(m, UNET "input_blocks.%d.1.transformer_blocks.%d.attn1.to_q.weight", b, d))
            d++;
        u->transformer_depth[l] = d ? d : 1;
        u->heads[l] = sd2 ? u->channels[l] / 64 : 8;
        if (u->heads[l] < 1) u->heads[l] = 1;
    }
    if (!proj) proj = find(m, UNET "middle_block.1.proj_in.weight");
    u->linear_proj = proj && proj->n_dims == 2;
    const st_tensor *k2 = find(m, UNET "middle_block.1.transformer_blocks.0.attn2.to_k.weight");
    if (!k2)
        for (int l = 0; l < u->n_levels && !k2; l++)
            k2 = find(m, UNET "input_blocks.%d.1.transformer_blocks.0.attn2.to_k.weight", 1 + l * (L + 1));
    u->cross_dim = dim(k2, 1);
    int h[SD_MAX_LEVELS];
    int nh = hint_ints(m->f, "sd.unet.heads", h, SD_MAX_LEVELS);
    for (int l = 0; nh && l < u->n_levels; l++) u->heads[l] = h[nh == 1 ? 0 : l < nh ? l : nh - 1];
    hint_ints(m->f, "sd.unet.groups", &u->groups, 1);
    return PT_OK;
}

static pt_status infer_vae(const ldm *m, sd_vae_config *v, pt_error *err) {
    const st_tensor *din = find(m, VAE "decoder.conv_in.weight");
    const st_tensor *dout = find(m, VAE "decoder.conv_out.weight");
    if (!din || din->n_dims != 4 || !dout)
        return pt_fail(err, PT_ERR_FORMAT, "%s: no VAE decoder (%sdecoder.conv_in.weight)", m->path, VAE);
    v->latent_channels = dim(din, 1);
    v->out_channels = dim(dout, 0);
    const st_tensor *ein = find(m, VAE "encoder.conv_in.weight");
    v->has_encoder = ein != NULL;
    if (ein) v->in_channels = dim(ein, 1);
    int n = 0;
    while (n < SD_MAX_LEVELS + 1 && find(m, VAE "decoder.up.%d.block.0.conv1.weight", n)) n++;
    if (n < 1 || n > SD_MAX_LEVELS)
        return pt_fail(err, PT_ERR_UNSUPPORTED, "%s: VAE decoder has %d levels (1..%d)", m->path, n,
                       SD_MAX_LEVELS);
    v->n_levels = n;
    int b = 0;
    while (b < 17 && find(m, VAE "decoder.up.0.block.%d.conv1.weight", b)) b++;
    if (b < 2 || b > 17)
        return pt_fail(err, PT_ERR_UNSUPPORTED, "%s: VAE up block of %d resnets", m->path, b);
    v->layers_per_block = b - 1;
    for (int i = 0; i < n; i++) v->channels[i] = dim(find(m, VAE "decoder.up.%d.block.0.conv2.weight", i), 0);
    hint_ints(m->f, "sd.vae.groups", &v->groups, 1);
    const char *sf = st_meta(m->f, "sd.vae.scaling_factor");
    if (sf) {
        float x = strtof(sf, NULL);
        if (x > 0 && x < 100) v->scaling_factor = x;
    }
    return PT_OK;
}

static void infer_clip(const ldm *m, sd_clip_config *c, bool sd2) {
    const st_tensor *tok = sd2 ? find(m, CLIP2 "token_embedding.weight")
                               : find(m, CLIP1 "text_model.embeddings.token_embedding.weight");
    if (!sd2 && !tok) tok = find(m, CLIP1 "embeddings.token_embedding.weight");
    const st_tensor *pos = sd2 ? find(m, CLIP2 "positional_embedding")
                               : find(m, CLIP1 "text_model.embeddings.position_embedding.weight");
    if (!sd2 && !pos) pos = find(m, CLIP1 "embeddings.position_embedding.weight");
    c->vocab = dim(tok, 0);
    c->hidden = dim(tok, 1);
    c->max_pos = dim(pos, 0);
    const char *tm = find(m, CLIP1 "text_model.final_layer_norm.weight") ? "text_model." : "";
    int n = 0;
    while (n < 256 && (sd2 ? find(m, CLIP2 "transformer.resblocks.%d.ln_1.weight", n)
                           : find(m, CLIP1 "%sencoder.layers.%d.layer_norm1.weight", tm, n)))
        n++;
    c->layers = n;
    c->intermediate = dim(sd2 ? find(m, CLIP2 "transformer.resblocks.0.mlp.c_fc.weight")
                              : find(m, CLIP1 "%sencoder.layers.0.mlp.fc1.weight", tm), 0);
    c->heads = c->hidden >= 64 ? c->hidden / 64 : 1;
    c->act = sd2 ? SD_ACT_GELU : SD_ACT_QUICK_GELU;
    c->skip = sd2 ? 2 : 1;
    /* CLIP's vocabularies end in <|startoftext|>, <|endoftext|> */
    c->bos = c->vocab - 2;
    c->eos = c->vocab - 1;
    c->pad = sd2 ? 0 : c->eos;
    hint_ints(m->f, "sd.clip.heads", &c->heads, 1);
    hint_ints(m->f, "sd.clip.skip", &c->skip, 1);
}

/* ---- the rules ---- */

static void unet_rules(rules *rs, const sd_unet_config *u) {
    int L = u->layers_per_block, n = u->n_levels;
    add_rule(rs, R_SAME, "unet.time_embedding.linear_1.", UNET "time_embed.0.");
    add_rule(rs, R_SAME, "unet.time_embedding.linear_2.", UNET "time_embed.2.");
    add_rule(rs, R_SAME, "unet.conv_in.", UNET "input_blocks.0.0.");
    add_rule(rs, R_SAME, "unet.conv_norm_out.", UNET "out.0.");
    add_rule(rs, R_SAME, "unet.conv_out.", UNET "out.2.");
    char c[96];
    for (int l = 0; l < n; l++) {
        for (int j = 0; j < L; j++) {
            int i = 1 + l * (L + 1) + j;
            snprintf(c, sizeof c, "unet.down_blocks.%d.resnets.%d.", l, j);
            add_rule(rs, R_RESNET, c, UNET "input_blocks.%d.0.", i);
            snprintf(c, sizeof c, "unet.down_blocks.%d.attentions.%d.", l, j);
            if (u->cross_attn[l]) add_rule(rs, R_SAME, c, UNET "input_blocks.%d.1.", i);
        }
        snprintf(c, sizeof c, "unet.down_blocks.%d.downsamplers.0.conv.", l);
        if (l < n - 1) add_rule(rs, R_SAME, c, UNET "input_blocks.%d.0.op.", (l + 1) * (L + 1));
    }
    add_rule(rs, R_RESNET, "unet.mid_block.resnets.0.", UNET "middle_block.0.");
    add_rule(rs, R_SAME, "unet.mid_block.attentions.0.", UNET "middle_block.1.");
    add_rule(rs, R_RESNET, "unet.mid_block.resnets.1.", UNET "middle_block.2.");
    for (int b = 0; b < n; b++) {
        bool attn = u->cross_attn[n - 1 - b];
        for (int j = 0; j <= L; j++) {
            int i = b * (L + 1) + j;
            snprintf(c, sizeof c, "unet.up_blocks.%d.resnets.%d.", b, j);
            add_rule(rs, R_RESNET, c, UNET "output_blocks.%d.0.", i);
            snprintf(c, sizeof c, "unet.up_blocks.%d.attentions.%d.", b, j);
            if (attn) add_rule(rs, R_SAME, c, UNET "output_blocks.%d.1.", i);
        }
        snprintf(c, sizeof c, "unet.up_blocks.%d.upsamplers.0.conv.", b);
        if (b < n - 1) add_rule(rs, R_SAME, c, UNET "output_blocks.%d.%d.conv.", b * (L + 1) + L, attn ? 2 : 1);
    }
}

static void vae_rules(rules *rs, const sd_vae_config *v) {
    static const char *const same[] = {"encoder.conv_in.", "encoder.conv_out.", "decoder.conv_in.",
                                       "decoder.conv_out.", "quant_conv.", "post_quant_conv."};
    char c[96];
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        snprintf(c, sizeof c, "vae.%s", same[i]);
        add_rule(rs, R_SAME, c, VAE "%s", same[i]);
    }
    static const char *const part[] = {"encoder", "decoder"};
    for (int p = 0; p < 2; p++) {
        snprintf(c, sizeof c, "vae.%s.conv_norm_out.", part[p]);
        add_rule(rs, R_SAME, c, VAE "%s.norm_out.", part[p]);
        snprintf(c, sizeof c, "vae.%s.mid_block.resnets.0.", part[p]);
        add_rule(rs, R_VAE_RESNET, c, VAE "%s.mid.block_1.", part[p]);
        snprintf(c, sizeof c, "vae.%s.mid_block.resnets.1.", part[p]);
        add_rule(rs, R_VAE_RESNET, c, VAE "%s.mid.block_2.", part[p]);
        snprintf(c, sizeof c, "vae.%s.mid_block.attentions.0.", part[p]);
        add_rule(rs, R_VAE_ATTN, c, VAE "%s.mid.attn_1.", part[p]);
    }
    int n = v->n_levels;
    for (int i = 0; i < n; i++) {
        for (int j = 0; j <= v->layers_per_block; j++) {
            snprintf(c, sizeof c, "vae.encoder.down_blocks.%d.resnets.%d.", i, j);
            if (j < v->layers_per_block) add_rule(rs, R_VAE_RESNET, c, VAE "encoder.down.%d.block.%d.", i, j);
            snprintf(c, sizeof c, "vae.decoder.up_blocks.%d.resnets.%d.", n - 1 - i, j);
            add_rule(rs, R_VAE_RESNET, c, VAE "decoder.up.%d.block.%d.", i, j);
        }
        snprintf(c, sizeof c, "vae.encoder.down_blocks.%d.downsamplers.0.conv.", i);
        if (i < n - 1) add_rule(rs, R_SAME, c, VAE "encoder.down.%d.downsample.conv.", i);
        snprintf(c, sizeof c, "vae.decoder.up_blocks.%d.upsamplers.0.conv.", n - 1 - i);
        if (i > 0) add_rule(rs, R_SAME, c, VAE "decoder.up.%d.upsample.conv.", i);
    }
}

/* The rule whose ldm prefix is the longest prefix of name, or NULL. */
static const rule *match(const rules *rs, const char *name) {
    const rule *best = NULL;
    size_t best_len = 0;
    for (int i = 0; i < rs->n; i++) {
        size_t l = strlen(rs->r[i].ldm);
        if (l > best_len && strncmp(name, rs->r[i].ldm, l) == 0) {
            best = &rs->r[i];
            best_len = l;
        }
    }
    return best;
}

/* canon + rest, with rest's leading suffix rewritten by the table. */
static void apply(char *out, size_t cap, const rule *r, const char *rest) {
    const char *const (*tab)[2] = NULL;
    size_t n = 0;
    if (r->kind == R_RESNET) { tab = RESNET_SUFFIX; n = sizeof RESNET_SUFFIX / sizeof RESNET_SUFFIX[0]; }
    if (r->kind == R_VAE_RESNET) { tab = VAE_RESNET_SUFFIX; n = 1; }
    if (r->kind == R_VAE_ATTN) { tab = VAE_ATTN_SUFFIX; n = sizeof VAE_ATTN_SUFFIX / sizeof VAE_ATTN_SUFFIX[0]; }
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(tab[i][0]);
        if (strncmp(rest, tab[i][0], l) == 0) {
            snprintf(out, cap, "%s%s%s", r->canon, tab[i][1], rest + l);
            return;
        }
    }
    snprintf(out, cap, "%s%s", r->canon, rest);
}

static bool ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && strcmp(s + n - m, tail) == 0;
}

/* OpenCLIP keys of one tensor -> canonical tensor(s); in_proj splits in 3. */
static pt_status add_open_clip(sd_weights *w, const ldm *m, const st_tensor *t, const char *rest,
                               pt_error *err) {
    static const char *const same[][2] = {
        {"token_embedding.", "text_model.embeddings.token_embedding."},
        {"ln_final.", "text_model.final_layer_norm."},
    };
    char name[320];
    for (size_t i = 0; i < 2; i++)
        if (strncmp(rest, same[i][0], strlen(same[i][0])) == 0) {
            snprintf(name, sizeof name, "text_encoder.%s%s", same[i][1], rest + strlen(same[i][0]));
            return sd_w_add_st(w, name, m->f, t, err);
        }
    if (strcmp(rest, "positional_embedding") == 0)
        return sd_w_add_st(w, "text_encoder.text_model.embeddings.position_embedding.weight", m->f,
                           t, err);
    int layer, used = 0;
    if (sscanf(rest, "transformer.resblocks.%d.%n", &layer, &used) != 1 || !used || layer < 0)
        return PT_OK; /* text_projection, logit_scale, attn_mask: unused */
    const char *r = rest + used;
    static const char *const sub[][2] = {
        {"ln_1.", "layer_norm1."}, {"ln_2.", "layer_norm2."}, {"attn.out_proj.", "self_attn.out_proj."},
        {"mlp.c_fc.", "mlp.fc1."}, {"mlp.c_proj.", "mlp.fc2."},
    };
    for (size_t i = 0; i < sizeof sub / sizeof sub[0]; i++)
        if (strncmp(r, sub[i][0], strlen(sub[i][0])) == 0) {
            snprintf(name, sizeof name, "text_encoder.text_model.encoder.layers.%d.%s%s", layer,
                     sub[i][1], r + strlen(sub[i][0]));
            return sd_w_add_st(w, name, m->f, t, err);
        }
    bool wt = strcmp(r, "attn.in_proj_weight") == 0, bias = strcmp(r, "attn.in_proj_bias") == 0;
    if (!wt && !bias) return PT_OK;
    if (st_dtype_pt_type(t->dtype) == UINT32_MAX || t->n_dims != (wt ? 2 : 1) || t->shape[0] % 3)
        return pt_fail(err, PT_ERR_FORMAT, "%s: tensor '%s' is not a fused q/k/v projection "
                       "(rows a multiple of 3, float)", m->path, t->name);
    /* the thirds are row blocks: q, k, v, each nbytes / 3 long */
    static const char *const qkv[3] = {"q_proj", "k_proj", "v_proj"};
    for (int k = 0; k < 3; k++) {
        sd_tensor s;
        sd_tensor_from_st(t, &s);
        s.shape[0] /= 3;
        s.nbytes = t->nbytes / 3;
        s.data = (const uint8_t *)t->data + (uint64_t)k * s.nbytes;
        snprintf(name, sizeof name, "text_encoder.text_model.encoder.layers.%d.self_attn.%s.%s",
                 layer, qkv[k], wt ? "weight" : "bias");
        pt_status st = sd_w_add(w, name, &s, err);
        if (st) return st;
    }
    return PT_OK;
}

pt_status sd_load_ldm(sd_weights *w, const char *path, pt_error *err) {
    st_file *f = NULL;
    pt_status st = st_open(path, &f, err);
    if (st) return st;
    if ((st = sd_w_keep(w, f, err))) return st;
    ldm m = {f, path};
    sd_model_config *c = &w->cfg;
    bool sd2 = find(&m, CLIP2 "token_embedding.weight") != NULL;
    bool sd1 = find(&m, CLIP1 "text_model.embeddings.token_embedding.weight") ||
               find(&m, CLIP1 "embeddings.token_embedding.weight");
    if (!sd1 && !sd2)
        return pt_fail(err, PT_ERR_FORMAT, "%s: no text encoder (%s* or %s*)", path, CLIP1, CLIP2);
    snprintf(c->family, sizeof c->family, "%s", sd2 ? "sd2" : "sd1");
    if ((st = infer_unet(&m, &c->unet, sd2, err)) || (st = infer_vae(&m, &c->vae, err))) return st;
    infer_clip(&m, &c->clip, sd2);
    const char *pred = st_meta(f, "sd.schedule.prediction");
    if (pred && strcmp(pred, "v_prediction") == 0) c->schedule.prediction = SD_PRED_V;
    c->unet.prediction = c->schedule.prediction;
    /* the rule tables are sized for these bounds (checked before use) */
    if ((st = sd_config_validate(c, path, err))) return st;

    rules *rs = calloc(1, sizeof *rs);
    if (!rs) return pt_fail(err, PT_ERR_NOMEM, "out of memory");
    unet_rules(rs, &c->unet);
    vae_rules(rs, &c->vae);
    const char *tm = find(&m, CLIP1 "text_model.final_layer_norm.weight") ? "" : "text_model.";
    char name[512];
    for (uint64_t i = 0; i < f->n_tensors && !st; i++) {
        const st_tensor *t = &f->tensors[i];
        if (ends_with(t->name, "position_ids")) continue;
        if (strncmp(t->name, CLIP1, strlen(CLIP1)) == 0) {
            snprintf(name, sizeof name, "text_encoder.%s%s", tm, t->name + strlen(CLIP1));
            st = sd_w_add_st(w, name, f, t, err);
            continue;
        }
        if (strncmp(t->name, CLIP2, strlen(CLIP2)) == 0) {
            st = add_open_clip(w, &m, t, t->name + strlen(CLIP2), err);
            continue;
        }
        const rule *r = match(rs, t->name);
        if (!r) continue; /* EMA copies, loss buffers, other models' keys */
        apply(name, sizeof name, r, t->name + strlen(r->ldm));
        if (r->kind == R_VAE_ATTN && t->n_dims == 4 && t->shape[2] == 1 && t->shape[3] == 1 &&
            st_dtype_pt_type(t->dtype) != UINT32_MAX) {
            sd_tensor s; /* a 1x1 conv [c,c,1,1] is the linear [c,c], same bytes */
            sd_tensor_from_st(t, &s);
            s.n_dims = 2;
            st = sd_w_add(w, name, &s, err);
            continue;
        }
        st = sd_w_add_st(w, name, f, t, err);
    }
    free(rs);
    return st;
}
