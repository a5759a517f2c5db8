/* model_text.c — the public tokenizer and chat-template entry points, which
 * forward to the model's tokenizer and recognised template. */
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"
#include "status.h"

int pt_tokenize(const pt_model *m, const char *text, size_t len, bool add_special,
                bool parse_special, pt_token *out, int cap) {
    return pt_tokenizer_encode(m->tok, text, len, add_special, parse_special, out, cap);
}

size_t pt_token_to_bytes(const pt_model *m, pt_token tok, bool render_special, char *buf,
                         size_t cap) {
    return pt_tokenizer_decode(m->tok, tok, render_special, buf, cap);
}

pt_token pt_token_bos(const pt_model *m) { return pt_tokenizer_bos(m->tok); }
pt_token pt_token_eos(const pt_model *m) { return pt_tokenizer_eos(m->tok); }
bool pt_token_is_eog(const pt_model *m, pt_token tok) { return pt_tokenizer_is_eog(m->tok, tok); }

/* Text of a special token, or "" when the model has none. */
static const char *special_text(const pt_model *m, pt_token tok) {
    const char *s = tok >= 0 ? pt_tokenizer_piece(m->tok, tok) : NULL;
    return s ? s : "";
}

/* Render with the model's template (ChatML when allow_fallback and the
 * template is unknown); spans as pt_chat_template_render_spans. */
static pt_status render(const pt_model *m, const pt_chat_message *msgs, int n_msgs, bool add_assistant,
                        bool allow_fallback, char **out, pt_text_span **spans, int *n_spans,
                        pt_error *err) {
    *out = NULL;
    const pt_chat_template *t = &m->tmpl;
    const pt_chat_template chatml = {.kind = PT_TMPL_CHATML, .default_system = NULL};
    if (t->kind == PT_TMPL_UNKNOWN) {
        if (!allow_fallback)
            return pt_fail(err, PT_ERR_TEMPLATE,
                           "the model's chat template is not one petrel recognises");
        t = &chatml;
    }
    return pt_chat_template_render_spans(t, msgs, n_msgs, add_assistant,
                                         special_text(m, pt_tokenizer_bos(m->tok)),
                                         special_text(m, pt_tokenizer_eos(m->tok)), out, spans,
                                         n_spans, err);
}

pt_status pt_chat_apply(const pt_model *m, const pt_chat_message *msgs, int n_msgs,
                        bool add_assistant, bool allow_fallback, char **out, pt_error *err) {
    if (!out) return pt_fail(err, PT_ERR_ARG, "chat template: no output pointer");
    return render(m, msgs, n_msgs, add_assistant, allow_fallback, out, NULL, NULL, err);
}

/* Encode text (spans: content, no special tokens parsed there) into a
 * malloc'd array; -1 count on failure. */
static pt_token *encode_all(const pt_model *m, const char *text, const pt_text_span *spans, int n_spans,
                            int *n_out) {
    size_t len = strlen(text);
    int n = pt_tokenizer_encode_spans(m->tok, text, len, true, spans, n_spans, NULL, 0);
    pt_token *toks = n >= 0 ? malloc((size_t)(n ? n : 1) * sizeof *toks) : NULL;
    if (toks) n = pt_tokenizer_encode_spans(m->tok, text, len, true, spans, n_spans, toks, n);
    *n_out = toks ? n : -1;
    return toks;
}

pt_status pt_chat_tokenize(const pt_model *m, const pt_chat_message *msgs, int n_msgs,
                           bool add_assistant, bool allow_fallback, pt_token **out, int *n_out,
                           pt_error *err) {
    if (!m || !out || !n_out) return pt_fail(err, PT_ERR_ARG, "chat tokenize: no model or output");
    *out = NULL;
    *n_out = 0;
    char *text = NULL;
    pt_text_span *spans = NULL;
    int n_spans = 0;
    pt_status st = render(m, msgs, n_msgs, add_assistant, allow_fallback, &text, &spans, &n_spans, err);
    if (st) return st;
    int n = 0;
    pt_token *toks = encode_all(m, text, spans, n_spans, &n);
    free(text);
    free(spans);
    if (!toks) return pt_fail(err, PT_ERR_NOMEM, "out of memory tokenizing the conversation");
    /* A template that writes the BOS text itself, with a tokenizer that
     * also adds BOS, gives two BOS tokens: keep one. */
    pt_token bos = pt_tokenizer_bos(m->tok);
    if (n >= 2 && bos >= 0 && toks[0] == bos && toks[1] == bos) {
        memmove(toks, toks + 1, (size_t)(n - 1) * sizeof *toks);
        n--;
    }
    *out = toks;
    *n_out = n;
    return PT_OK;
}
