/*
 * chat_template.h — turning messages into a prompt string.
 *
 * petrel does not run Jinja. It recognises the template families that GGUF
 * chat models ship (by distinctive markers in tokenizer.chat_template) and
 * renders them in C, byte for byte as transformers' apply_chat_template
 * would. A template's built-in default system prompt (SmolLM2 and Qwen2.5
 * insert one when the conversation has none) is extracted from the
 * template text and used the same way.
 */
#ifndef PETREL_CHAT_TEMPLATE_H
#define PETREL_CHAT_TEMPLATE_H

#include "petrel.h"
#include "tokenizer.h"

typedef enum pt_tmpl_kind {
    PT_TMPL_UNKNOWN = 0,
    PT_TMPL_CHATML,   /* <|im_start|>role\ncontent<|im_end|>\n (SmolLM2, Qwen2/2.5/3) */
    PT_TMPL_LLAMA3,   /* <|start_header_id|>role<|end_header_id|>\n\ncontent<|eot_id|> */
    PT_TMPL_LLAMA2,   /* <s>[INST] <<SYS>>\n...\n<</SYS>>\n\nuser [/INST] answer </s> */
    PT_TMPL_ZEPHYR,   /* <|user|>\ncontent</s>\n (TinyLlama chat) */
    PT_TMPL_GEMMA,    /* <start_of_turn>user\ncontent<end_of_turn>\n (Gemma 2/3; "model" for assistant) */
} pt_tmpl_kind;

typedef struct pt_chat_template {
    pt_tmpl_kind kind;
    /* Default system prompt the template inserts when the conversation has
     * none (heap, NUL-terminated), or NULL. */
    char *default_system;
    /* CHATML only: assistant turns get Qwen3's <think> handling (reasoning
     * kept after the last user turn, stripped before it). */
    bool qwen3_think;
    /* LLAMA3 only: what Llama 3.1+ templates write at the top of the system
     * turn ("Cutting Knowledge Date: ...\nToday Date: ...\n\n"; heap), or
     * NULL for Llama 3.0 templates. A template whose date default is
     * strftime_now gets today's local date at detection time. */
    char *system_preamble;
    /* GEMMA only: the template writes bos_token first (Gemma 2/3; Gemma 1
     * does not), and a leading system message is folded into the first
     * turn (Gemma 3's first_user_prefix; Gemma 1/2 reject it). */
    bool gemma_bos, gemma_system;
} pt_chat_template;

/* Recognise a template string (may be NULL or empty: gives UNKNOWN).
 * Fills *out; free with pt_chat_template_clear. */
void pt_chat_template_detect(const char *tmpl, size_t len, pt_chat_template *out);
void pt_chat_template_clear(pt_chat_template *t);
const char *pt_tmpl_kind_name(pt_tmpl_kind k); /* "chatml", "llama3", ... */

/* Render messages. bos_text/eos_text are the model's BOS/EOS token texts
 * (used by templates that spell them, e.g. Llama 2's "<s>"); may be "".
 * *out is malloc'd. UNKNOWN gives PT_ERR_TEMPLATE. */
pt_status pt_chat_template_render(const pt_chat_template *t, const pt_chat_message *msgs,
                                  int n_msgs, bool add_assistant, const char *bos_text,
                                  const char *eos_text, char **out, pt_error *err);

/* pt_chat_template_render, also giving the byte spans of *out copied from
 * message content (sorted, disjoint; *spans malloc'd, may be NULL when
 * *n_spans is 0). Role names, BOS/EOS texts and the template's own text
 * (default system prompt, Llama 3.1 preamble) are not content. */
pt_status pt_chat_template_render_spans(const pt_chat_template *t, const pt_chat_message *msgs,
                                        int n_msgs, bool add_assistant, const char *bos_text,
                                        const char *eos_text, char **out, pt_text_span **spans,
                                        int *n_spans, pt_error *err);

#endif
