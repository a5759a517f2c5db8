/* model_text.c — the public tokenizer and chat-template entry points, which
 * forward to the model's tokenizer and recognised template. */
#include <stdlib.h>

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

pt_status pt_chat_apply(const pt_model *m, const pt_chat_message *msgs, int n_msgs,
                        bool add_assistant, bool allow_fallback, char **out, pt_error *err) {
    *out = NULL;
    const pt_chat_template *t = &m->tmpl;
    pt_chat_template chatml = {.kind = PT_TMPL_CHATML, .default_system = NULL};
    if (t->kind == PT_TMPL_UNKNOWN) {
        if (!allow_fallback)
            return pt_fail(err, PT_ERR_TEMPLATE,
                           "the model's chat template is not one petrel recognises");
        t = &chatml;
    }
    return pt_chat_template_render(t, msgs, n_msgs, add_assistant,
                                   special_text(m, pt_tokenizer_bos(m->tok)),
                                   special_text(m, pt_tokenizer_eos(m->tok)), out, err);
}
