/*
 * pipeline_text.c — the text stage of a generation: tokenize the prompt
 * and the negative prompt, prepare the text encoder, run both rows in one
 * batch, free the encoder and give its file pages back. The encoder's
 * memory is held only during this stage.
 */
#include <string.h>

#include "clip_encoder.h"
#include "pipeline_internal.h"
#include "status.h"

pt_status sd_encode_text(pt_image_model *m, const pt_image_params *p, int n_rows, float *ctx,
                         pt_error *err) {
    const sd_clip_config *cc0 = &m->cfg.clip;
    /* ids [n_rows][77]: row 0 the negative prompt when n_rows is 2 (the
     * order of diffusers' torch.cat([negative, prompt])), then the prompt */
    int32_t ids[2 * SD_TEXT_TOKENS];
    const char *rows[2] = {p->negative, p->prompt};
    const char *const *text = n_rows == 2 ? rows : rows + 1;
    for (int r = 0; r < n_rows; r++) {
        int n_real = 0;
        pt_status st = sd_clip_tokenize(m->tok, text[r], strlen(text[r]), ids + r * SD_TEXT_TOKENS,
                                        SD_TEXT_TOKENS, cc0->pad, &n_real, err);
        if (st != PT_OK) return st;
        for (int i = 0; i < SD_TEXT_TOKENS; i++)
            if (ids[r * SD_TEXT_TOKENS + i] < 0 || ids[r * SD_TEXT_TOKENS + i] >= cc0->vocab)
                return pt_fail(err, PT_ERR_FORMAT, "the tokenizer gives id %d, outside the text "
                               "encoder's %d tokens", (int)ids[r * SD_TEXT_TOKENS + i], cc0->vocab);
    }
    if (sd_cancelled(p)) return pt_fail(err, PT_ERR_CANCELLED, "cancelled");
    /* clip skip as diffusers' StableDiffusionPipeline applies it: to the
     * prompt only; the negative prompt is encoded with the model's own
     * layer (encode_prompt runs the text encoder plainly for it). When
     * both rows want the same layer they run as one batch. */
    const int skip_prompt = p->clip_skip > 0 ? p->clip_skip : cc0->skip;
    const int skips[2] = {n_rows == 2 ? cc0->skip : skip_prompt, skip_prompt};
    const size_t row = (size_t)SD_TEXT_TOKENS * (size_t)cc0->hidden;
    pt_status st = PT_OK;
    for (int r0 = 0; r0 < n_rows && st == PT_OK;) {
        int r1 = r0 + 1;
        while (r1 < n_rows && skips[r1] == skips[r0]) r1++;
        sd_clip_config cc = *cc0;
        cc.skip = skips[r0];
        sd_clip *clip = NULL;
        st = sd_clip_load(m->w, &cc, m->rt, &clip, err);
        if (st == PT_OK)
            st = sd_clip_encode(clip, m->rt, ids + r0 * SD_TEXT_TOKENS, r1 - r0, SD_TEXT_TOKENS,
                                ctx + (size_t)r0 * row, err);
        sd_clip_free(clip);
        r0 = r1;
    }
    sd_weights_release(m->w, "text_encoder.");
    sd_rt_give_back();
    return st;
}
