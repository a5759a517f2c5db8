/*
 * test_chat_template.c — template family detection, default system prompt
 * extraction and byte-exact rendering against transformers.
 *
 * tests/data/chat_templates.cases (written by tools/gen_chat_fixture.py from
 * real templates; format described there) gives, for every template, the
 * family petrel must detect, the default system prompt and Llama 3.1+
 * preamble found by rendering through transformers, and the reference
 * rendering of each conversation (or the error the template raised).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "chat_template.h"
#include "check.h"

/* ---- fixture reader ---------------------------------------------------- */

typedef struct field {
    char tag[32];
    const char *val;
    size_t len;
} field;

/* Read the field at *p ("tag n\n" + n bytes + "\n"). False at the end. */
static bool next_field(const char **p, const char *end, field *f) {
    if (*p >= end) return false;
    const char *nl = memchr(*p, '\n', (size_t)(end - *p));
    unsigned long n;
    char head[64];
    size_t hl = nl ? (size_t)(nl - *p) : 0;
    if (!nl || hl >= sizeof head) goto bad;
    memcpy(head, *p, hl);
    head[hl] = 0;
    if (sscanf(head, "%31s %lu", f->tag, &n) != 2) goto bad;
    if ((size_t)(end - (nl + 1)) < n + 1 || nl[1 + n] != '\n') goto bad;
    f->val = nl + 1;
    f->len = n;
    *p = nl + 1 + n + 1;
    return true;
bad:
    fprintf(stderr, "chat_templates.cases: malformed field\n");
    exit(1);
}

static char *dup_field(const field *f) {
    char *s = malloc(f->len + 1);
    memcpy(s, f->val, f->len);
    s[f->len] = 0;
    return s;
}

/* Print a window of s around byte i with control characters escaped. */
static void show_around(const char *label, const char *s, size_t n, size_t i) {
    size_t from = i > 30 ? i - 30 : 0, to = i + 30 < n ? i + 30 : n;
    fprintf(stderr, "  %s[%zu..]: \"", label, from);
    for (size_t k = from; k < to; k++) {
        unsigned char c = (unsigned char)s[k];
        if (c == '\n') fputs("\\n", stderr);
        else if (c == '\t') fputs("\\t", stderr);
        else if (c < 0x20) fprintf(stderr, "\\x%02x", c);
        else fputc(c, stderr);
    }
    fputs("\"\n", stderr);
}

static bool same_bytes(const char *what, const char *got, const char *want, size_t want_len) {
    size_t got_len = strlen(got);
    size_t i = 0;
    while (i < got_len && i < want_len && got[i] == want[i]) i++;
    if (i == got_len && i == want_len) return true;
    fprintf(stderr, "%s: differs at byte %zu (got %zu bytes, want %zu)\n", what, i, got_len,
            want_len);
    show_around("got ", got, got_len, i);
    show_around("want", want, want_len, i);
    return false;
}

/* "DD Mon YYYY" for today, as Python's datetime.now().strftime("%d %b %Y")
 * gives it in the C locale (this test never calls setlocale). */
static void today(char out[32]) {
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(out, 32, "%d %b %Y", &tm);
}

static char *replace_today(const char *s, const char *date) {
    const char *at = strstr(s, "{today}");
    if (!at) return strdup(s);
    size_t n = strlen(s) - 7 + strlen(date);
    char *r = malloc(n + 1);
    snprintf(r, n + 1, "%.*s%s%s", (int)(at - s), s, date, at + 7);
    return r;
}

/* ---- fixture-driven checks --------------------------------------------- */

#define MAX_MSGS 64

typedef struct tmpl_state {
    char *name, *text, *bos, *eos, *kind, *default_system, *preamble, *render_date;
    size_t text_len;
    pt_chat_template t;
    bool detected;
} tmpl_state;

static void tmpl_reset(tmpl_state *s) {
    free(s->name); free(s->text); free(s->bos); free(s->eos); free(s->kind);
    free(s->default_system); free(s->preamble); free(s->render_date);
    pt_chat_template_clear(&s->t);
    memset(s, 0, sizeof *s);
}

/* Detect the template and compare with what the fixture says; then, for
 * templates whose date comes from the clock, pin the preamble to the date
 * the reference renderings used. */
static void check_detection(tmpl_state *s, int *n_templates) {
    if (s->detected || !s->name) return;
    s->detected = true;
    (*n_templates)++;
    pt_chat_template_detect(s->text, s->text_len, &s->t);
    const char *kind = pt_tmpl_kind_name(s->t.kind);
    CHECK(!strcmp(kind, s->kind), "%s: detected '%s', want '%s'", s->name, kind, s->kind);

    if (s->default_system)
        CHECK(s->t.default_system && !strcmp(s->t.default_system, s->default_system),
              "%s: default system '%s', want '%s'", s->name,
              s->t.default_system ? s->t.default_system : "(none)", s->default_system);
    else
        CHECK(!s->t.default_system, "%s: default system '%s', want none", s->name,
              s->t.default_system);

    if (s->preamble) {
        char date[32];
        today(date);
        char *want = replace_today(s->preamble, date);
        CHECK(s->t.system_preamble && !strcmp(s->t.system_preamble, want),
              "%s: preamble '%s', want '%s'", s->name,
              s->t.system_preamble ? s->t.system_preamble : "(none)", want);
        free(want);
        if (s->render_date) {
            free(s->t.system_preamble);
            s->t.system_preamble = replace_today(s->preamble, s->render_date);
        }
    } else {
        CHECK(!s->t.system_preamble, "%s: preamble '%s', want none", s->name,
              s->t.system_preamble);
    }
    bool want_think = !strcmp(s->name, "qwen3");
    CHECK(s->t.qwen3_think == want_think, "%s: qwen3_think %d, want %d", s->name,
          s->t.qwen3_think, want_think);
}

/* SmolLM2's rendering of the system-user case with a generation prompt,
 * kept for the public API check. */
static char *smollm2_expect;

static void test_fixture(void) {
    size_t len;
    char *data = test_read_file(test_data("chat_templates.cases"), &len);
    const char *p = data, *end = data + len;

    tmpl_state s = {0};
    char *case_name = NULL;
    bool add_gen = false;
    pt_chat_message msgs[MAX_MSGS];
    char *owned[2 * MAX_MSGS];
    int n_msgs = 0, n_owned = 0, n_templates = 0, n_cases = 0, n_errors = 0;
    char *role = NULL;

    field f;
    while (next_field(&p, end, &f)) {
        if (!strcmp(f.tag, "template")) {
            check_detection(&s, &n_templates);
            tmpl_reset(&s);
            s.name = dup_field(&f);
        } else if (!strcmp(f.tag, "source")) {
        } else if (!strcmp(f.tag, "text")) {
            s.text = dup_field(&f);
            s.text_len = f.len;
        } else if (!strcmp(f.tag, "bos")) {
            s.bos = dup_field(&f);
        } else if (!strcmp(f.tag, "eos")) {
            s.eos = dup_field(&f);
        } else if (!strcmp(f.tag, "kind")) {
            s.kind = dup_field(&f);
        } else if (!strcmp(f.tag, "default_system")) {
            s.default_system = dup_field(&f);
        } else if (!strcmp(f.tag, "preamble")) {
            s.preamble = dup_field(&f);
        } else if (!strcmp(f.tag, "render_date")) {
            s.render_date = dup_field(&f);
        } else if (!strcmp(f.tag, "case")) {
            check_detection(&s, &n_templates);
            free(case_name);
            case_name = dup_field(&f);
            for (int i = 0; i < n_owned; i++) free(owned[i]);
            n_msgs = n_owned = 0;
        } else if (!strcmp(f.tag, "add_generation_prompt")) {
            add_gen = f.len == 1 && f.val[0] == '1';
        } else if (!strcmp(f.tag, "role")) {
            role = owned[n_owned++] = dup_field(&f);
        } else if (!strcmp(f.tag, "content")) {
            if (n_msgs == MAX_MSGS) {
                fprintf(stderr, "too many messages in case %s\n", case_name);
                exit(1);
            }
            char *content = owned[n_owned++] = dup_field(&f);
            msgs[n_msgs++] = (pt_chat_message){role, content};
        } else if (!strcmp(f.tag, "expect") || !strcmp(f.tag, "error")) {
            bool want_error = !strcmp(f.tag, "error");
            char *out = NULL;
            pt_error err = {0};
            pt_status st = pt_chat_template_render(&s.t, msgs, n_msgs, add_gen, s.bos, s.eos,
                                                   &out, &err);
            char what[160];
            snprintf(what, sizeof what, "%s/%s/gen=%d", s.name, case_name, add_gen);
            if (want_error) {
                n_errors++;
                CHECK(st == PT_ERR_TEMPLATE && !out && err.msg[0],
                      "%s: want PT_ERR_TEMPLATE (template raised '%.*s'), got %s", what,
                      (int)f.len, f.val, pt_status_name(st));
            } else {
                CHECK(st == PT_OK && out, "%s: render failed: %s", what, err.msg);
                if (!strcmp(s.name, "smollm2") && !strcmp(case_name, "system-user") && add_gen)
                    smollm2_expect = dup_field(&f);
                if (st == PT_OK && out) {
                    bool same = same_bytes(what, out, f.val, f.len);
                    CHECK(same, "%s: rendering differs from transformers", what);
                }
            }
            free(out);
            n_cases++;
        } else {
            fprintf(stderr, "chat_templates.cases: unknown tag '%s'\n", f.tag);
            exit(1);
        }
    }
    check_detection(&s, &n_templates);
    tmpl_reset(&s);
    for (int i = 0; i < n_owned; i++) free(owned[i]);
    free(case_name);
    free(data);
    /* the fixture must actually hold what this test claims to cover */
    CHECK(n_templates >= 13, "only %d templates in the fixture", n_templates);
    CHECK(n_cases >= 300, "only %d cases in the fixture", n_cases);
    CHECK(n_errors >= 2, "only %d error cases in the fixture", n_errors);
}

/* ---- direct checks ----------------------------------------------------- */

static pt_tmpl_kind detect_kind(const char *text) {
    pt_chat_template t;
    pt_chat_template_detect(text, text ? strlen(text) : 0, &t);
    pt_tmpl_kind k = t.kind;
    pt_chat_template_clear(&t);
    return k;
}

static void test_detect_edges(void) {
    pt_chat_template t;
    pt_chat_template_detect(NULL, 0, &t);
    CHECK(t.kind == PT_TMPL_UNKNOWN && !t.default_system && !t.system_preamble,
          "NULL template must be unknown");
    pt_chat_template_clear(&t);
    pt_chat_template_detect("", 0, &t);
    CHECK(t.kind == PT_TMPL_UNKNOWN, "empty template must be unknown");
    pt_chat_template_clear(&t);
    CHECK(detect_kind("INVALID TEMPLATE") == PT_TMPL_UNKNOWN, "garbage must be unknown");

    /* only len bytes count: the markers past len are not seen */
    const char *chatml = "{{ 'x' }}<|im_start|>user<|im_end|>";
    pt_chat_template_detect(chatml, 9, &t);
    CHECK(t.kind == PT_TMPL_UNKNOWN, "detection read past len");
    pt_chat_template_clear(&t);
    pt_chat_template_detect(chatml, strlen(chatml), &t);
    CHECK(t.kind == PT_TMPL_CHATML && !t.default_system, "minimal ChatML: kind %s",
          pt_tmpl_kind_name(t.kind));
    pt_chat_template_clear(&t);

    /* default system in a double-quoted literal with escapes */
    const char *dq = "{% if messages[0]['role'] != 'system' %}{{ \"<|im_start|>system\\nYou are "
                     "\\\"Q\\\"\\tand \\\\ok.<|im_end|>\\n\" }}{% endif %}"
                     "{% for m in messages %}{{ '<|im_start|>' + m.role }}{% endfor %}";
    pt_chat_template_detect(dq, strlen(dq), &t);
    CHECK(t.kind == PT_TMPL_CHATML && t.default_system &&
              !strcmp(t.default_system, "You are \"Q\"\tand \\ok."),
          "escaped default system: '%s'", t.default_system ? t.default_system : "(none)");
    pt_chat_template_clear(&t);

    /* an escape petrel does not decode: unknown rather than a wrong prompt */
    const char *ue = "{{ '<|im_start|>system\\nCaf\\u00e9<|im_end|>\\n' }}";
    CHECK(detect_kind(ue) == PT_TMPL_UNKNOWN, "unreadable default system must give unknown");

    /* <think> rules other than Qwen3's are not guessed at */
    CHECK(detect_kind("<|im_start|>{{ m.content.split('</think>')[-1] }}<|im_end|>") ==
              PT_TMPL_UNKNOWN,
          "ChatML with an unknown <think> rule must be unknown");

    /* a Llama 3.1 date line in another shape */
    CHECK(detect_kind("<|start_header_id|>{{ \"Cutting Knowledge Date: 2023\\n\" }}"
                      "{{ 'Today: ' + today }}<|eot_id|>") == PT_TMPL_UNKNOWN,
          "unexpected Llama 3.1 preamble must be unknown");
    CHECK(detect_kind("[INST] hi") == PT_TMPL_UNKNOWN, "[INST] without <<SYS>> is Mistral");
    CHECK(detect_kind("<|user|>{{ eos_token }}") == PT_TMPL_ZEPHYR, "zephyr markers");
    CHECK(detect_kind("<|user|>\n{{ c }}<|end|>{{ eos_token }}") == PT_TMPL_UNKNOWN,
          "Phi-3 is not zephyr");

    CHECK(!strcmp(pt_tmpl_kind_name(PT_TMPL_UNKNOWN), "unknown"), "name unknown");
    CHECK(!strcmp(pt_tmpl_kind_name(PT_TMPL_CHATML), "chatml"), "name chatml");
    CHECK(!strcmp(pt_tmpl_kind_name(PT_TMPL_LLAMA3), "llama3"), "name llama3");
    CHECK(!strcmp(pt_tmpl_kind_name(PT_TMPL_LLAMA2), "llama2"), "name llama2");
    CHECK(!strcmp(pt_tmpl_kind_name(PT_TMPL_ZEPHYR), "zephyr"), "name zephyr");
}

static void test_render_errors(void) {
    pt_chat_message ok[] = {{"user", "hi"}};
    pt_error err = {0};
    char *out = (char *)1;

    pt_chat_template unknown = {0};
    pt_status st = pt_chat_template_render(&unknown, ok, 1, true, "", "", &out, &err);
    CHECK(st == PT_ERR_TEMPLATE && !out, "unknown template: %s", pt_status_name(st));
    CHECK(strstr(err.msg, "not recognised") != NULL, "unclear message: '%s'", err.msg);

    pt_chat_template chatml = {.kind = PT_TMPL_CHATML};
    pt_chat_message tool[] = {{"user", "hi"}, {"tool", "42"}};
    memset(&err, 0, sizeof err);
    st = pt_chat_template_render(&chatml, tool, 2, true, "", "", &out, &err);
    CHECK(st == PT_ERR_TEMPLATE && !out && strstr(err.msg, "'tool'"),
          "unsupported role: %s '%s'", pt_status_name(st), err.msg);

    pt_chat_message no_content[] = {{"user", NULL}};
    st = pt_chat_template_render(&chatml, no_content, 1, true, "", "", &out, &err);
    CHECK(st == PT_ERR_ARG && !out, "NULL content: %s", pt_status_name(st));
    st = pt_chat_template_render(&chatml, ok, 0, true, "", "", &out, &err);
    CHECK(st == PT_ERR_ARG && !out, "no messages: %s", pt_status_name(st));

    /* NULL bos/eos are taken as "" */
    pt_chat_template zephyr = {.kind = PT_TMPL_ZEPHYR};
    st = pt_chat_template_render(&zephyr, ok, 1, true, NULL, NULL, &out, &err);
    CHECK(st == PT_OK && out && !strcmp(out, "<|user|>\nhi\n<|assistant|>\n"),
          "zephyr with NULL eos: '%s'", out ? out : "(null)");
    free(out);

    /* Llama 2 has no place for a later system message */
    pt_chat_template llama2 = {.kind = PT_TMPL_LLAMA2};
    pt_chat_message late_sys[] = {{"user", "a"}, {"system", "b"}};
    st = pt_chat_template_render(&llama2, late_sys, 2, true, "<s>", "</s>", &out, &err);
    CHECK(st == PT_ERR_TEMPLATE && !out, "llama2 late system: %s", pt_status_name(st));
}

/* The public path: the real SmolLM2 GGUF's template, found and rendered
 * through pt_chat_apply, gives transformers' rendering. */
static void test_public_api(void) {
    CHECK(smollm2_expect != NULL, "fixture lacks smollm2/system-user");
    pt_model *model = NULL;
    pt_error err = {0};
    pt_status st = pt_model_load(test_smollm2_path(), NULL, &model, &err);
    CHECK(st == PT_OK, "loading SmolLM2: %s", err.msg);
    if (st != PT_OK || !smollm2_expect) return;
    pt_model_info info;
    pt_model_get_info(model, &info);
    CHECK(!strcmp(info.chat_template_kind, "chatml"), "SmolLM2 template kind '%s'",
          info.chat_template_kind);
    pt_chat_message m[] = {{"system", "You are a terse assistant."}, {"user", "What is 2+2?"}};
    char *out = NULL;
    st = pt_chat_apply(model, m, 2, true, false, &out, &err);
    CHECK(st == PT_OK && out && !strcmp(out, smollm2_expect), "pt_chat_apply: %s",
          st == PT_OK ? out : err.msg);
    free(out);
    pt_model_free(model);
    free(smollm2_expect);
}

int main(void) {
    test_fixture();
    test_public_api();
    test_detect_edges();
    test_render_errors();
    return check_done("chat_template");
}
