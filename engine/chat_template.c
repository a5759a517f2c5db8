/*
 * chat_template.c — recognising chat template families and rendering them.
 *
 * Detection looks for each family's distinctive markers in the template
 * text; a template that has a family's markers but also something petrel
 * would render differently (a <think> rule other than Qwen3's, a Llama 3.1
 * date line in an unexpected shape, a default system prompt it cannot read)
 * is reported as UNKNOWN rather than rendered wrong.
 *
 * Rendering reproduces, byte for byte, what transformers' Jinja environment
 * (trim_blocks, lstrip_blocks) makes of the real templates of each family;
 * tests/data/chat_templates.cases holds the reference renderings. Where the
 * templates call Python string methods, the helpers below follow Python:
 * `trim` / `strip()` remove str.isspace() characters (Unicode whitespace,
 * not only ASCII), `strip('\n')` only newlines.
 */
#include "chat_template.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "status.h"
#include "utf8.h"

/* ---- byte slices and a growable output buffer -------------------------- */

typedef struct slice {
    const char *p;
    size_t n;
} slice;

static slice sl(const char *s) { return (slice){s, strlen(s)}; }

static bool sl_eq(slice a, const char *b) {
    size_t n = strlen(b);
    return a.n == n && memcmp(a.p, b, n) == 0;
}

static bool starts_with(slice a, const char *b) {
    size_t n = strlen(b);
    return a.n >= n && memcmp(a.p, b, n) == 0;
}

static bool ends_with(slice a, const char *b) {
    size_t n = strlen(b);
    return a.n >= n && memcmp(a.p + a.n - n, b, n) == 0;
}

/* First / last occurrence of needle in a, or NULL. */
static const char *find_first(slice a, const char *needle) {
    return memmem(a.p, a.n, needle, strlen(needle));
}

static const char *find_last(slice a, const char *needle) {
    size_t n = strlen(needle);
    if (n > a.n) return NULL;
    for (size_t i = a.n - n + 1; i-- > 0;)
        if (memcmp(a.p + i, needle, n) == 0) return a.p + i;
    return NULL;
}

/* Byte spans of the output that came from message content (what
 * pt_chat_tokenize must never parse special tokens in). */
typedef struct span_list {
    pt_text_span *v;
    int n, cap;
} span_list;

/* Where message content lives in the caller's memory: an append whose
 * source lies inside one of these ranges is content. */
typedef struct content_src {
    const char *const *lo; /* content start of each message */
    const size_t *n;       /* its length */
    int n_msgs;
} content_src;

/* Output under construction. After an allocation failure `oom` is set and
 * further appends do nothing, so callers check once at the end. When
 * spans is set, appends copied from message content are recorded there. */
typedef struct sbuf {
    char *p;
    size_t len, cap;
    bool oom;
    const content_src *src;
    span_list *spans;
} sbuf;

static bool from_content(const content_src *src, const char *s, size_t n) {
    for (int i = 0; i < src->n_msgs; i++) {
        uintptr_t lo = (uintptr_t)src->lo[i], p = (uintptr_t)s;
        if (p >= lo && p + n <= lo + src->n[i]) return true;
    }
    return false;
}

/* Record [lo, hi) as content, merging with a span it touches. */
static void spans_add(sbuf *b, size_t lo, size_t hi) {
    span_list *l = b->spans;
    if (lo >= hi) return;
    if (l->n > 0 && l->v[l->n - 1].hi == lo) {
        l->v[l->n - 1].hi = hi;
        return;
    }
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        pt_text_span *v = realloc(l->v, (size_t)cap * sizeof *v);
        if (!v) {
            b->oom = true;
            return;
        }
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = (pt_text_span){lo, hi};
}

static void sb_put(sbuf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->spans && n && from_content(b->src, s, n)) spans_add(b, b->len, b->len + n);
    if (b->oom) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (b->len + n + 1 > cap) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

static void sb_str(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }
static void sb_sl(sbuf *b, slice s) { sb_put(b, s.p, s.n); }

/* ---- Python string semantics ------------------------------------------- */

/* Python's str.isspace(), code point by code point. */
static bool py_space(uint32_t c) {
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
}

/* Bytes of the whitespace character starting at s[0], or 0 when s does not
 * start with one. Ill-formed bytes are never whitespace. */
static size_t space_at(const char *s, size_t n) {
    size_t len;
    uint32_t cp;
    if (n == 0) return 0;
    if (pt_utf8_scan((const unsigned char *)s, n, &len, &cp) != PT_UTF8_VALID) return 0;
    return py_space(cp) ? len : 0;
}

/* Bytes of the whitespace character ending at s[n-1], or 0. */
static size_t space_before(const char *s, size_t n) {
    for (size_t k = 1; k <= 4 && k <= n; k++) {
        unsigned char c = (unsigned char)s[n - k];
        if ((c & 0xC0) == 0x80) continue; /* continuation byte: look further back */
        size_t len;
        uint32_t cp;
        if (pt_utf8_scan((const unsigned char *)s + n - k, k, &len, &cp) != PT_UTF8_VALID ||
            len != k)
            return 0;
        return py_space(cp) ? k : 0;
    }
    return 0;
}

/* Jinja's `|trim` and Python's str.strip() with no argument. */
static slice py_strip(slice s) {
    size_t k;
    while ((k = space_at(s.p, s.n)) > 0) s.p += k, s.n -= k;
    while ((k = space_before(s.p, s.n)) > 0) s.n -= k;
    return s;
}

static slice lstrip_nl(slice s) {
    while (s.n && s.p[0] == '\n') s.p++, s.n--;
    return s;
}

static slice rstrip_nl(slice s) {
    while (s.n && s.p[s.n - 1] == '\n') s.n--;
    return s;
}

/* ---- detection --------------------------------------------------------- */

static bool has(slice t, const char *needle) { return find_first(t, needle) != NULL; }

/* Outcome of reading a literal out of the template text. */
typedef enum lit_result { LIT_FOUND, LIT_NONE, LIT_UNREADABLE } lit_result;

/* Read the text that starts at p and runs to the first `stop` (exclusive),
 * as the renderer would output it. quote is the Jinja string delimiter p
 * sits inside (' or "), or 0 for raw template text. The literal must reach
 * `stop` without leaving the string (an unescaped quote means the text is
 * concatenated with something else: LIT_NONE) and, in raw text, without a
 * Jinja tag. Escapes are those of Jinja string literals (Python's); one
 * petrel does not know makes the literal LIT_UNREADABLE. stop may be NULL:
 * the literal then runs to its closing quote. */
static lit_result read_literal(const char *p, const char *end, char quote, const char *stop,
                               sbuf *out) {
    size_t stop_n = stop ? strlen(stop) : 0;
    while (p < end) {
        if (stop && (size_t)(end - p) >= stop_n && memcmp(p, stop, stop_n) == 0) return LIT_FOUND;
        char c = *p;
        if (quote && c == quote) return stop ? LIT_NONE : LIT_FOUND;
        if (!quote && c == '{' && p + 1 < end && (p[1] == '{' || p[1] == '%' || p[1] == '#'))
            return LIT_NONE;
        if (quote && c == '\\') {
            if (p + 1 >= end) return LIT_UNREADABLE;
            char e = p[1], v;
            switch (e) {
            case 'n': v = '\n'; break;
            case 't': v = '\t'; break;
            case 'r': v = '\r'; break;
            case '\\': v = '\\'; break;
            case '\'': v = '\''; break;
            case '"': v = '"'; break;
            default: return LIT_UNREADABLE;
            }
            sb_put(out, &v, 1);
            p += 2;
            continue;
        }
        sb_put(out, p, 1);
        p++;
    }
    return LIT_NONE;
}

/* The quote character a literal starting at p is inside: the character just
 * before it when that is a quote, else 0 (raw template text). */
static char quote_before(slice t, const char *p) {
    return (p > t.p && (p[-1] == '\'' || p[-1] == '"')) ? p[-1] : 0;
}

/* ChatML default system prompt: the literal the template writes as
 * "<|im_start|>system" newline TEXT "<|im_end|>" in one piece (the branch
 * taken when the conversation has no system message). Occurrences where the
 * header is followed by a variable ('...system\n' + messages[0].content) are
 * not it. */
static lit_result chatml_default_system(slice t, char **out) {
    static const char head[] = "<|im_start|>system";
    const char *end = t.p + t.n;
    for (const char *p = find_first(t, head); p;
         p = memmem(p + 1, (size_t)(end - p - 1), head, sizeof head - 1)) {
        char quote = quote_before(t, p);
        const char *q = p + sizeof head - 1;
        if (q < end && *q == '\n')
            q++;
        else if (quote && end - q >= 2 && q[0] == '\\' && q[1] == 'n')
            q += 2;
        else
            continue;
        sbuf lit = {0};
        lit_result r = read_literal(q, end, quote, "<|im_end|>", &lit);
        if (r == LIT_NONE) {
            free(lit.p);
            continue;
        }
        if (r == LIT_UNREADABLE || lit.oom) {
            free(lit.p);
            return LIT_UNREADABLE;
        }
        *out = lit.p ? lit.p : strdup("");
        return *out ? LIT_FOUND : LIT_UNREADABLE;
    }
    return LIT_NONE;
}

static void today_string(char out[16]) {
    static const char *const month[12] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                          "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    time_t now = time(NULL);
    struct tm tm;
    if (!localtime_r(&now, &tm)) memset(&tm, 0, sizeof tm);
    /* strftime("%d %b %Y") in the C locale, as Python's strftime_now gives */
    snprintf(out, 16, "%02d %s %04d", tm.tm_mday % 100, month[(unsigned)tm.tm_mon % 12],
             (tm.tm_year + 1900) % 10000);
}

/* The Llama 3.1+ system preamble:
 *     {{- "Cutting Knowledge Date: December 2023\n" }}
 *     {{- "Today Date: " + date_string + "\n\n" }}
 * with date_string defaulting to a literal (3.1, 3.3) or to
 * strftime_now("%d %b %Y") (3.2). Anything else: LIT_UNREADABLE. */
static lit_result llama3_preamble(slice t, char **out) {
    const char *end = t.p + t.n;
    const char *k = find_first(t, "Cutting Knowledge Date:");
    if (!k) return LIT_NONE;
    char quote = quote_before(t, k);
    if (!quote || !has(t, "\"Today Date: \" + date_string + \"\\n\\n\"")) return LIT_UNREADABLE;

    char date[64];
    if (has(t, "strftime_now")) {
        if (!has(t, "strftime_now(\"%d %b %Y\")")) return LIT_UNREADABLE;
        today_string(date);
    } else {
        const char *d = find_first(t, "set date_string = ");
        if (!d) return LIT_UNREADABLE;
        d += strlen("set date_string = ");
        if (d >= end || (*d != '"' && *d != '\'')) return LIT_UNREADABLE;
        sbuf lit = {0};
        lit_result r = read_literal(d + 1, end, *d, NULL, &lit);
        if (r != LIT_FOUND || lit.oom || lit.len >= sizeof date) {
            free(lit.p);
            return LIT_UNREADABLE;
        }
        memcpy(date, lit.p ? lit.p : "", lit.len + 1);
        free(lit.p);
    }

    sbuf pre = {0};
    if (read_literal(k, end, quote, NULL, &pre) != LIT_FOUND) {
        free(pre.p);
        return LIT_UNREADABLE;
    }
    sb_str(&pre, "Today Date: ");
    sb_str(&pre, date);
    sb_str(&pre, "\n\n");
    if (pre.oom) {
        free(pre.p);
        return LIT_UNREADABLE;
    }
    *out = pre.p;
    return LIT_FOUND;
}

void pt_chat_template_clear(pt_chat_template *t) {
    if (!t) return;
    free(t->default_system);
    free(t->system_preamble);
    memset(t, 0, sizeof *t);
}

void pt_chat_template_detect(const char *tmpl, size_t len, pt_chat_template *out) {
    memset(out, 0, sizeof *out);
    if (!tmpl || len == 0) return;
    slice t = {tmpl, len};

    if (has(t, "<|im_start|>") && has(t, "<|im_end|>")) {
        /* <think> handling differs between reasoning models (QwQ strips it
         * everywhere but the last turn and opens one in the generation
         * prompt); only Qwen3's rule is implemented. */
        if (has(t, "<think>") || has(t, "</think>")) {
            if (!has(t, "last_query_index") || !has(t, "reasoning_content")) return;
            out->qwen3_think = true;
        }
        if (chatml_default_system(t, &out->default_system) == LIT_UNREADABLE) {
            pt_chat_template_clear(out);
            return;
        }
        out->kind = PT_TMPL_CHATML;
        return;
    }
    if (has(t, "<|start_header_id|>") && has(t, "<|eot_id|>")) {
        if (llama3_preamble(t, &out->system_preamble) == LIT_UNREADABLE) {
            pt_chat_template_clear(out);
            return;
        }
        out->kind = PT_TMPL_LLAMA3;
        return;
    }
    if (has(t, "[INST]") && has(t, "<<SYS>>")) {
        out->kind = PT_TMPL_LLAMA2;
        return;
    }
    if (has(t, "<start_of_turn>") && has(t, "<end_of_turn>")) {
        /* Google's templates: Gemma 3 folds a system message into the
         * first turn, Gemma 1/2 raise on one; others are not known */
        out->gemma_system = has(t, "first_user_prefix");
        if (!out->gemma_system && !has(t, "System role not supported")) return;
        out->gemma_bos = has(t, "bos_token");
        out->kind = PT_TMPL_GEMMA;
        return;
    }
    /* Phi-3 also writes <|user|>, but ends turns with <|end|>. */
    if (has(t, "<|user|>") && (has(t, "eos_token") || has(t, "</s>")) && !has(t, "<|end|>")) {
        out->kind = PT_TMPL_ZEPHYR;
        return;
    }
}

const char *pt_tmpl_kind_name(pt_tmpl_kind k) {
    switch (k) {
    case PT_TMPL_UNKNOWN: return "unknown";
    case PT_TMPL_CHATML: return "chatml";
    case PT_TMPL_LLAMA3: return "llama3";
    case PT_TMPL_LLAMA2: return "llama2";
    case PT_TMPL_ZEPHYR: return "zephyr";
    case PT_TMPL_GEMMA: return "gemma";
    }
    return "unknown";
}

/* ---- rendering --------------------------------------------------------- */

/* One message with its role classified; content as a slice. */
typedef enum role { ROLE_SYSTEM, ROLE_USER, ROLE_ASSISTANT } role;

typedef struct msg {
    role r;
    slice role_name, content;
} msg;

typedef struct render_in {
    const msg *m;
    int n;
    bool add_assistant;
    slice bos, eos;
} render_in;

/* ChatML:  <|im_start|>ROLE\nCONTENT<|im_end|>\n  per message, the default
 * system turn first when the chat does not open with a system message, and
 * <|im_start|>assistant\n as the generation prompt. */
static void render_chatml(const pt_chat_template *t, const render_in *in, sbuf *b) {
    if (t->default_system && in->m[0].r != ROLE_SYSTEM) {
        sb_str(b, "<|im_start|>system\n");
        sb_str(b, t->default_system);
        sb_str(b, "<|im_end|>\n");
    }
    for (int i = 0; i < in->n; i++) {
        sb_str(b, "<|im_start|>");
        sb_sl(b, in->m[i].role_name);
        sb_str(b, "\n");
        sb_sl(b, in->m[i].content);
        sb_str(b, "<|im_end|>\n");
    }
    if (in->add_assistant) sb_str(b, "<|im_start|>assistant\n");
}

/* Qwen3: ChatML, except for assistant turns. A turn's reasoning is the text
 * between its last <think> before the first </think> and that </think>; its
 * answer what follows the last </think>. Turns after the last real user
 * query (a user turn that is not a <tool_response>) keep a <think> block
 * when they are the final turn or have reasoning; earlier turns keep only
 * the answer. */
static void render_qwen3(const render_in *in, sbuf *b) {
    int last_query = in->n - 1;
    for (int i = in->n - 1; i >= 0; i--) {
        slice c = in->m[i].content;
        if (in->m[i].r == ROLE_USER &&
            !(starts_with(c, "<tool_response>") && ends_with(c, "</tool_response>"))) {
            last_query = i;
            break;
        }
    }
    for (int i = 0; i < in->n; i++) {
        const msg *m = &in->m[i];
        if (m->r != ROLE_ASSISTANT) {
            sb_str(b, "<|im_start|>");
            sb_sl(b, m->role_name);
            sb_str(b, "\n");
            sb_sl(b, m->content);
            sb_str(b, "<|im_end|>\n");
            continue;
        }
        slice content = m->content, reasoning = {"", 0};
        const char *close = find_first(content, "</think>");
        if (close) {
            slice before = rstrip_nl((slice){content.p, (size_t)(close - content.p)});
            const char *open = find_last(before, "<think>");
            if (open) {
                size_t skip = (size_t)(open - before.p) + strlen("<think>");
                before.p += skip;
                before.n -= skip;
            }
            reasoning = lstrip_nl(before);
            const char *last = find_last(content, "</think>") + strlen("</think>");
            content = lstrip_nl((slice){last, (size_t)(content.p + content.n - last)});
        }
        sb_str(b, "<|im_start|>assistant\n");
        if (i > last_query && (i == in->n - 1 || reasoning.n > 0)) {
            sb_str(b, "<think>\n");
            sb_sl(b, rstrip_nl(lstrip_nl(reasoning)));
            sb_str(b, "\n</think>\n\n");
            sb_sl(b, lstrip_nl(content));
        } else {
            sb_sl(b, content);
        }
        sb_str(b, "<|im_end|>\n");
    }
    if (in->add_assistant) sb_str(b, "<|im_start|>assistant\n");
}

/* Llama 3: <|start_header_id|>ROLE<|end_header_id|>\n\nTRIMMED<|eot_id|>.
 * 3.0 puts BOS before the first message; 3.1+ always opens with BOS and a
 * system turn holding the preamble and the (trimmed) system message. */
static void render_llama3(const pt_chat_template *t, const render_in *in, sbuf *b) {
    int first = 0;
    if (t->system_preamble) {
        sb_sl(b, in->bos);
        sb_str(b, "<|start_header_id|>system<|end_header_id|>\n\n");
        sb_str(b, t->system_preamble);
        if (in->m[0].r == ROLE_SYSTEM) {
            sb_sl(b, py_strip(in->m[0].content));
            first = 1;
        }
        sb_str(b, "<|eot_id|>");
    }
    for (int i = first; i < in->n; i++) {
        if (i == 0 && !t->system_preamble) sb_sl(b, in->bos);
        sb_str(b, "<|start_header_id|>");
        sb_sl(b, in->m[i].role_name);
        sb_str(b, "<|end_header_id|>\n\n");
        sb_sl(b, py_strip(in->m[i].content));
        sb_str(b, "<|eot_id|>");
    }
    if (in->add_assistant) sb_str(b, "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

/* Append body, a slice of the buffer base whose content spans are
 * body_spans, carrying those spans over (shifted) into b's. */
static void sb_sl_spans(sbuf *b, slice body, const char *base, const span_list *body_spans) {
    size_t at = b->len, off = base ? (size_t)(body.p - base) : 0;
    sb_sl(b, body);
    if (!b->spans || b->oom) return;
    for (int k = 0; k < body_spans->n; k++) {
        size_t lo = body_spans->v[k].lo > off ? body_spans->v[k].lo : off;
        size_t hi = body_spans->v[k].hi < off + body.n ? body_spans->v[k].hi : off + body.n;
        if (lo < hi) spans_add(b, at + lo - off, at + hi - off);
    }
}

/* Llama 2 chat: BOS[INST] USER [/INST] ANSWER EOS..., the system message
 * folded into the first user turn as <<SYS>>\n...\n<</SYS>>\n\n. Each turn is
 * strip()ped after that folding (so an all-blank first user message also
 * loses the blank lines after <</SYS>>). There is no generation prompt: the
 * prompt already ends with [/INST]. */
static pt_status render_llama2(const render_in *in, sbuf *b, pt_error *err) {
    int first = 0;
    const slice *sys = NULL;
    if (in->m[0].r == ROLE_SYSTEM) {
        sys = &in->m[0].content;
        first = 1;
    }
    for (int k = 0; first + k < in->n; k++) {
        const msg *m = &in->m[first + k];
        if (m->r == ROLE_SYSTEM)
            return pt_fail(err, PT_ERR_TEMPLATE,
                           "llama2 chat template: message %d is a system message; only the "
                           "first message may be one", first + k + 1);
        if ((m->r == ROLE_USER) != (k % 2 == 0))
            return pt_fail(err, PT_ERR_TEMPLATE,
                           "llama2 chat template: conversation roles must alternate "
                           "user/assistant/user/assistant/... (message %d is '%.*s')",
                           first + k + 1, (int)m->role_name.n, m->role_name.p);
        span_list turn_spans = {0};
        sbuf turn = {.src = b->src, .spans = b->spans ? &turn_spans : NULL};
        if (k == 0 && sys) {
            sb_str(&turn, "<<SYS>>\n");
            sb_sl(&turn, *sys);
            sb_str(&turn, "\n<</SYS>>\n\n");
        }
        sb_sl(&turn, m->content);
        if (turn.oom) {
            free(turn.p);
            free(turn_spans.v);
            return pt_fail(err, PT_ERR_NOMEM, "out of memory rendering the chat template");
        }
        slice body = py_strip((slice){turn.p ? turn.p : "", turn.len});
        if (m->r == ROLE_USER) {
            sb_sl(b, in->bos);
            sb_str(b, "[INST] ");
            sb_sl_spans(b, body, turn.p, &turn_spans);
            sb_str(b, " [/INST]");
        } else {
            sb_str(b, " ");
            sb_sl_spans(b, body, turn.p, &turn_spans);
            sb_str(b, " ");
            sb_sl(b, in->eos);
        }
        free(turn.p);
        free(turn_spans.v);
    }
    return PT_OK;
}

/* Zephyr / TinyLlama: <|ROLE|>\nCONTENT EOS \n, then <|assistant|>\n. */
static void render_zephyr(const render_in *in, sbuf *b) {
    for (int i = 0; i < in->n; i++) {
        sb_str(b, "<|");
        sb_sl(b, in->m[i].role_name);
        sb_str(b, "|>\n");
        sb_sl(b, in->m[i].content);
        sb_sl(b, in->eos);
        sb_str(b, "\n");
    }
    if (in->add_assistant) sb_str(b, "<|assistant|>\n");
}

/* Gemma 1/2/3 (Google's templates): BOS (Gemma 2/3), then per message
 * <start_of_turn>ROLE\nTRIMMED<end_of_turn>\n with "model" for the
 * assistant, and <start_of_turn>model\n as the generation prompt. A
 * leading system message is an error (Gemma 1/2) or no turn of its own
 * (Gemma 3): its content (untrimmed) and "\n\n" open the first turn's
 * text. The turns must alternate user/model, starting with user, as the
 * templates check it: a later system message takes an assistant's place
 * (and is written as a "system" turn). */
static pt_status render_gemma(const pt_chat_template *t, const render_in *in, sbuf *b,
                              pt_error *err) {
    int first = 0;
    const slice *sys = NULL;
    if (in->m[0].r == ROLE_SYSTEM) {
        if (!t->gemma_system)
            return pt_fail(err, PT_ERR_TEMPLATE, "gemma chat template: system role not supported");
        sys = &in->m[0].content;
        first = 1;
    }
    if (t->gemma_bos) sb_sl(b, in->bos);
    for (int k = 0; first + k < in->n; k++) {
        const msg *m = &in->m[first + k];
        if ((m->r == ROLE_USER) != (k % 2 == 0))
            return pt_fail(err, PT_ERR_TEMPLATE,
                           "gemma chat template: conversation roles must alternate "
                           "user/assistant/user/assistant/... (message %d is '%.*s')",
                           first + k + 1, (int)m->role_name.n, m->role_name.p);
        sb_str(b, "<start_of_turn>");
        if (m->r == ROLE_ASSISTANT)
            sb_str(b, "model");
        else
            sb_sl(b, m->role_name);
        sb_str(b, "\n");
        if (k == 0 && sys) {
            sb_sl(b, *sys);
            sb_str(b, "\n\n");
        }
        sb_sl(b, py_strip(m->content));
        sb_str(b, "<end_of_turn>\n");
    }
    if (in->add_assistant) sb_str(b, "<start_of_turn>model\n");
    return PT_OK;
}

/* Check and classify the caller's messages into m[0..n). */
static pt_status classify(const pt_chat_message *msgs, int n, msg *m, pt_error *err) {
    for (int i = 0; i < n; i++) {
        if (!msgs[i].role || !msgs[i].content)
            return pt_fail(err, PT_ERR_ARG, "chat template: message %d has no %s", i + 1,
                           msgs[i].role ? "content" : "role");
        m[i].role_name = sl(msgs[i].role);
        m[i].content = sl(msgs[i].content);
        if (sl_eq(m[i].role_name, "system"))
            m[i].r = ROLE_SYSTEM;
        else if (sl_eq(m[i].role_name, "user"))
            m[i].r = ROLE_USER;
        else if (sl_eq(m[i].role_name, "assistant"))
            m[i].r = ROLE_ASSISTANT;
        else
            return pt_fail(err, PT_ERR_TEMPLATE,
                           "chat template: message %d has role '%.40s'; petrel renders only "
                           "system, user and assistant turns", i + 1, msgs[i].role);
    }
    return PT_OK;
}

/* Messages are classified into a small fixed array when they fit, else
 * into a heap one. */
#define PT_CHAT_STACK_MSGS 32

pt_status pt_chat_template_render(const pt_chat_template *t, const pt_chat_message *msgs,
                                  int n_msgs, bool add_assistant, const char *bos_text,
                                  const char *eos_text, char **out, pt_error *err) {
    return pt_chat_template_render_spans(t, msgs, n_msgs, add_assistant, bos_text, eos_text, out,
                                         NULL, NULL, err);
}

/* Point src at the messages' content (arrays malloc'd into lo/len). */
static bool content_src_init(content_src *src, const msg *m, int n, const char ***lo, size_t **len) {
    *lo = malloc((size_t)n * sizeof **lo);
    *len = malloc((size_t)n * sizeof **len);
    if (!*lo || !*len) return false;
    for (int i = 0; i < n; i++) {
        (*lo)[i] = m[i].content.p;
        (*len)[i] = m[i].content.n;
    }
    *src = (content_src){*lo, *len, n};
    return true;
}

pt_status pt_chat_template_render_spans(const pt_chat_template *t, const pt_chat_message *msgs,
                                        int n_msgs, bool add_assistant, const char *bos_text,
                                        const char *eos_text, char **out, pt_text_span **spans,
                                        int *n_spans, pt_error *err) {
    if (!out) return pt_fail(err, PT_ERR_ARG, "chat template: no output pointer");
    *out = NULL;
    if (spans) *spans = NULL;
    if (n_spans) *n_spans = 0;
    if (!spans != !n_spans) return pt_fail(err, PT_ERR_ARG, "chat template: spans without a count");
    if (!t) return pt_fail(err, PT_ERR_ARG, "chat template: no template");
    if (t->kind == PT_TMPL_UNKNOWN)
        return pt_fail(err, PT_ERR_TEMPLATE,
                       "chat template not recognised: petrel renders ChatML, Llama 3, Llama 2, "
                       "Zephyr and Gemma templates only");
    if (!msgs || n_msgs <= 0) return pt_fail(err, PT_ERR_ARG, "chat template: no messages");

    msg stack[PT_CHAT_STACK_MSGS];
    msg *m = n_msgs <= PT_CHAT_STACK_MSGS ? stack : malloc((size_t)n_msgs * sizeof *m);
    if (!m) return pt_fail(err, PT_ERR_NOMEM, "out of memory rendering the chat template");
    pt_status st = classify(msgs, n_msgs, m, err);

    span_list content = {0};
    content_src src = {0};
    const char **src_lo = NULL;
    size_t *src_len = NULL;
    sbuf b = {0};
    if (st == PT_OK && spans) {
        if (!content_src_init(&src, m, n_msgs, &src_lo, &src_len))
            st = pt_fail(err, PT_ERR_NOMEM, "out of memory rendering the chat template");
        b.src = &src;
        b.spans = &content;
    }
    sb_put(&b, "", 0); /* an empty rendering is still a string */
    render_in in = {m, n_msgs, add_assistant, sl(bos_text ? bos_text : ""),
                    sl(eos_text ? eos_text : "")};
    if (st == PT_OK) {
        switch (t->kind) {
        case PT_TMPL_CHATML:
            if (t->qwen3_think)
                render_qwen3(&in, &b);
            else
                render_chatml(t, &in, &b);
            break;
        case PT_TMPL_LLAMA3: render_llama3(t, &in, &b); break;
        case PT_TMPL_LLAMA2: st = render_llama2(&in, &b, err); break;
        case PT_TMPL_ZEPHYR: render_zephyr(&in, &b); break;
        case PT_TMPL_GEMMA: st = render_gemma(t, &in, &b, err); break;
        case PT_TMPL_UNKNOWN: break; /* rejected above */
        }
    }
    if (st == PT_OK && b.oom)
        st = pt_fail(err, PT_ERR_NOMEM, "out of memory rendering the chat template");
    if (st == PT_OK) {
        *out = b.p;
        if (spans) {
            *spans = content.v;
            *n_spans = content.n;
            content.v = NULL;
        }
    } else {
        free(b.p);
    }
    free(content.v);
    free(src_lo);
    free(src_len);
    if (m != stack) free(m);
    return st;
}
