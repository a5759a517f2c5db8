/*
 * test_ui_slash.c — the UI pieces that need no terminal: slash command
 * parsing and settings (ui/slash.c), the input editor with history
 * (ui/editor.c) and the transcript layout with code fences
 * (ui/transcript.c).
 */
#include <locale.h>

#include "check.h"
#include "../ui/text.c"
#include "../ui/wrap.c"
#include "../ui/slash.c"
#include "../ui/editor.c"
#include "../ui/transcript.c"

static void test_parse(void) {
    pt_slash c;
    CHECK(!pt_slash_parse("hello", &c), "plain text is not a command");
    CHECK(!pt_slash_parse("//etc/passwd please", &c), "// is a literal slash");
    CHECK(strcmp(pt_slash_literal("//etc"), "/etc") == 0, "literal drops one slash");
    CHECK(strcmp(pt_slash_literal("hi"), "hi") == 0, "literal keeps text");
    CHECK(pt_slash_parse("/reset", &c) && c.id == PT_SLASH_RESET && c.arg_len == 0, "reset");
    CHECK(pt_slash_parse("  /clear  ", &c) && c.id == PT_SLASH_RESET, "alias with blanks");
    CHECK(pt_slash_parse("/system  You are terse.  ", &c) && c.id == PT_SLASH_SYSTEM &&
          c.arg_len == strlen("You are terse.") && strncmp(c.arg, "You are terse.", c.arg_len) == 0,
          "argument trimmed");
    CHECK(pt_slash_parse("/temp 0.2", &c) && c.id == PT_SLASH_SETTING && c.setting &&
          strcmp(c.setting->name, "temp") == 0, "setting by name");
    CHECK(pt_slash_parse("/temperature 0.2", &c) && c.id == PT_SLASH_SETTING, "setting alias");
    CHECK(pt_slash_parse("/nope", &c) && c.id == PT_SLASH_UNKNOWN && c.name_len == 4, "unknown");
    CHECK(pt_slash_parse("/?", &c) && c.id == PT_SLASH_HELP, "/? is help");
    CHECK(pt_slash_parse("/exit", &c) && c.id == PT_SLASH_QUIT, "/exit quits");
}

static void test_settings(void) {
    pt_chat_settings s;
    pt_chat_settings_default(&s);
    pt_sampler_params d = pt_sampler_default_params();
    CHECK(memcmp(&s.sampler, &d, sizeof d) == 0 && s.n_predict == 256, "defaults");
    char msg[200];
    const pt_slash_setting *t = pt_slash_find_setting("temp", 4);
    CHECK(pt_slash_set(&s, t, " 0.25 ", 6, msg, sizeof msg) && s.sampler.temperature == 0.25f, "temp %s", msg);
    CHECK(!pt_slash_set(&s, t, "hot", 3, msg, sizeof msg) && s.sampler.temperature == 0.25f, "bad number kept old");
    /* a value typed over two lines (Alt-Enter): the reason stays one line */
    CHECK(!pt_slash_set(&s, t, "1\n2", 3, msg, sizeof msg) && !strchr(msg, '\n') && strstr(msg, "\"1?2\""),
          "bad value shown on one line: %s", msg);
    CHECK(!pt_slash_set(&s, t, "11", 2, msg, sizeof msg) && strstr(msg, "between"), "out of range: %s", msg);
    CHECK(pt_slash_set(&s, t, "", 0, msg, sizeof msg) && strstr(msg, "temp = 0.25"), "show value: %s", msg);
    const pt_slash_setting *k = pt_slash_find_setting("top_k", 5);
    CHECK(pt_slash_set(&s, k, "7", 1, msg, sizeof msg) && s.sampler.top_k == 7, "top_k");
    CHECK(!pt_slash_set(&s, k, "7.5", 3, msg, sizeof msg) && s.sampler.top_k == 7, "top_k needs an integer");
    const pt_slash_setting *seed = pt_slash_find_setting("seed", 4);
    CHECK(pt_slash_set(&s, seed, "18446744073709551615", 20, msg, sizeof msg) && s.sampler.seed == UINT64_MAX, "seed u64");
    CHECK(!pt_slash_set(&s, seed, "-1", 2, msg, sizeof msg), "negative seed refused");
    const pt_slash_setting *mx = pt_slash_find_setting("max", 3);
    CHECK(pt_slash_set(&s, mx, "12", 2, msg, sizeof msg) && s.n_predict == 12, "max");
    CHECK(!pt_slash_set(&s, mx, "0", 1, msg, sizeof msg) && s.n_predict == 12, "max >= 1");
    char v[32];
    pt_slash_setting_value(&s, k, v, sizeof v);
    CHECK(strcmp(v, "7") == 0, "value %s", v);
    /* help lists every command and setting; the plain chat omits TUI-only ones */
    char help[4096];
    size_t n = pt_slash_help(true, help, sizeof help);
    CHECK(n < sizeof help, "help fits");
    for (int i = 0; i < pt_slash_n_cmds; i++) {
        char want[40];
        snprintf(want, sizeof want, "/%s", pt_slash_cmds[i].name);
        CHECK(strstr(help, want) != NULL, "help lists %s", want);
    }
    for (int i = 0; i < pt_slash_n_settings; i++) {
        char want[40];
        snprintf(want, sizeof want, "/%s ", pt_slash_settings[i].name);
        CHECK(strstr(help, want) != NULL, "help lists %s", want);
    }
    pt_slash_help(false, help, sizeof help);
    CHECK(strstr(help, "/demo") == NULL && strstr(help, "/reset") != NULL, "plain help");
    char small[16];
    size_t full = pt_slash_help(false, small, sizeof small);
    CHECK(full > sizeof small && strlen(small) == sizeof small - 1, "truncated help stays terminated");
    /* completion */
    CHECK(strcmp(pt_slash_complete("res", 3, NULL), "reset") == 0, "complete reset");
    const char *m1 = pt_slash_complete("mo", 2, NULL);
    const char *m2 = pt_slash_complete("mo", 2, m1);
    CHECK(m1 && m2 && strcmp(m1, "model") == 0 && strcmp(m2, "models") == 0, "two completions");
    CHECK(pt_slash_complete("zz", 2, NULL) == NULL, "no completion");
}

static void test_editor(void) {
    pt_editor e;
    pt_editor_init(&e);
    pt_editor_insert(&e, "héllo", strlen("héllo"));
    CHECK(e.cur == e.len && e.len == 6, "insert");
    pt_editor_backspace(&e);
    pt_editor_backspace(&e);
    pt_editor_backspace(&e);
    pt_editor_backspace(&e);
    CHECK(strcmp(e.buf, "h") == 0, "backspace over a 2-byte char: %s", e.buf);
    pt_editor_clear(&e);
    pt_editor_insert(&e, "ae\xCC\x81z", 5);   /* a, e + combining acute, z */
    pt_editor_left(&e);
    pt_editor_left(&e);
    CHECK(e.cur == 1, "left over a base + combining mark as one unit (cur %zu)", e.cur);
    pt_editor_delete(&e);
    CHECK(strcmp(e.buf, "az") == 0, "delete removes the mark too: %s", e.buf);
    pt_editor_clear(&e);
    pt_editor_insert_cp(&e, 0x4E2D);
    pt_editor_insert_cp(&e, 0x6587);
    CHECK(strcmp(e.buf, "中文") == 0, "insert code points");
    pt_editor_home(&e);
    pt_editor_insert(&e, "> ", 2);
    pt_editor_end(&e);
    pt_editor_insert(&e, "!", 1);
    CHECK(strcmp(e.buf, "> 中文!") == 0, "home/end: %s", e.buf);
    pt_editor_set(&e, "one two three");
    pt_editor_kill_word(&e);
    CHECK(strcmp(e.buf, "one two ") == 0, "^W: [%s]", e.buf);
    pt_editor_word_left(&e);
    CHECK(e.cur == 4, "word left %zu", e.cur);
    pt_editor_kill_to_end(&e);
    CHECK(strcmp(e.buf, "one ") == 0, "^K: [%s]", e.buf);
    pt_editor_kill_to_start(&e);
    CHECK(e.len == 0, "^U");
    /* up/down through wrapped lines at width 4: "abcd|efgh|ij" */
    pt_editor_set(&e, "abcdefghij");
    CHECK(pt_editor_up(&e, 4) && e.cur == 6, "up keeps the column (cur %zu)", e.cur);
    CHECK(pt_editor_up(&e, 4) && e.cur == 2, "up again (cur %zu)", e.cur);
    CHECK(!pt_editor_up(&e, 4), "top line: up falls through to history");
    CHECK(pt_editor_down(&e, 4) && e.cur == 6, "down");
    /* history */
    pt_editor_clear(&e);
    pt_editor_remember(&e, "first");
    pt_editor_remember(&e, "second");
    pt_editor_remember(&e, "second");
    CHECK(e.n_hist == 2, "repeat not stored twice");
    pt_editor_set(&e, "draft");
    CHECK(pt_editor_hist_prev(&e) && strcmp(e.buf, "second") == 0, "prev");
    CHECK(pt_editor_hist_prev(&e) && strcmp(e.buf, "first") == 0, "prev 2");
    CHECK(!pt_editor_hist_prev(&e), "oldest");
    CHECK(pt_editor_hist_next(&e) && pt_editor_hist_next(&e) && strcmp(e.buf, "draft") == 0, "back to the draft");
    CHECK(!pt_editor_hist_next(&e), "newest");
    pt_editor_free(&e);
}

static void test_transcript(void) {
    pt_msg m;
    memset(&m, 0, sizeof m);
    m.role = PT_ROLE_ASSISTANT;
    m.text = (char *)"Here:\n```python\nprint('hi')\n```\nDone.\n\n";
    m.len = strlen(m.text);
    pt_tline lines[32];
    int n = pt_layout_message(&m, 0, 40, 8, lines, 32);
    int want[] = {PT_TL_LABEL, PT_TL_TEXT, PT_TL_FENCE, PT_TL_CODE, PT_TL_FENCE, PT_TL_TEXT, PT_TL_BLANK};
    CHECK(n == 7, "lines %d", n);
    for (int i = 0; i < n && i < 7; i++) CHECK(lines[i].kind == want[i], "line %d kind %d want %d", i, lines[i].kind, want[i]);
    CHECK(strncmp(m.text + lines[2].start, "python", lines[2].end - lines[2].start) == 0 &&
          lines[2].end - lines[2].start == 6, "fence tag");
    CHECK(strncmp(m.text + lines[3].start, "print('hi')", 11) == 0, "code line");
    /* code is cut by characters, prose by words, each within its indent */
    m.text = (char *)"```\nabcdefghijklmnopqrstuvwxyz\n```\nalpha beta gamma delta";
    m.len = strlen(m.text);
    n = pt_layout_message(&m, 0, 14, 8, lines, 32);
    int code = 0, prose = 0;
    for (int i = 0; i < n; i++) {
        if (lines[i].kind == PT_TL_CODE) { code++; CHECK(lines[i].cells <= 14 - PT_CODE_INDENT, "code width"); }
        if (lines[i].kind == PT_TL_TEXT) { prose++; CHECK(lines[i].cells <= 14 - PT_TEXT_INDENT, "prose width"); }
    }
    CHECK(code == 3 && prose == 2, "26 chars of code in 10-cell lines: %d; prose lines %d", code, prose);
    /* the layout cache redoes a message only when it changed */
    pt_convo c;
    memset(&c, 0, sizeof c);
    pt_msg msgs[2];
    memset(msgs, 0, sizeof msgs);
    msgs[0].role = PT_ROLE_USER; msgs[0].text = (char *)"hi"; msgs[0].len = 2; msgs[0].rev = 1;
    msgs[1].role = PT_ROLE_ASSISTANT; msgs[1].text = (char *)"hello there"; msgs[1].len = 11; msgs[1].rev = 2;
    c.msgs = msgs; c.n = 2;
    pt_transcript t;
    pt_transcript_init(&t);
    pt_transcript_layout(&t, &c, 80);
    CHECK(t.total == 6, "two messages of 3 lines: %d", t.total);
    const pt_tline *l = pt_transcript_line(&t, 4);
    CHECK(l && l->msg == 1 && l->kind == PT_TL_TEXT, "line 4 is the reply text");
    msgs[1].len = 5; msgs[1].rev = 3;
    pt_transcript_layout(&t, &c, 4);
    l = pt_transcript_line(&t, 4);
    /* "hello" in 2 cells: he|ll|o */
    CHECK(t.total == 8 && l->end - l->start == 2 && l->start == 0, "relayout at width 4 after an edit (total %d)", t.total);
    c.n = 1;
    pt_transcript_layout(&t, &c, 4);
    CHECK(t.total == 3 && pt_transcript_line(&t, 3) == NULL, "fewer messages");
    pt_transcript_free(&t);
}

/* /lora's argument: list, off, -NAME, PATH [SCALE]; a path with blanks;
 * a last word that is not a number stays part of the path. */
static void lora_ok(const char *arg, pt_lora_op op, const char *target, float scale) {
    pt_lora_cmd c;
    char msg[200] = "";
    bool ok = pt_slash_lora_parse(arg, strlen(arg), &c, msg, sizeof msg);
    CHECK(ok && c.op == op && strcmp(c.target, target) == 0 && c.scale == scale,
          "/lora \"%s\": op %d target \"%s\" scale %g (%s)", arg, (int)c.op, c.target, (double)c.scale, msg);
}

static void lora_bad(const char *arg, const char *why) {
    pt_lora_cmd c;
    char msg[200] = "";
    bool ok = pt_slash_lora_parse(arg, strlen(arg), &c, msg, sizeof msg);
    CHECK(!ok && strstr(msg, why) && !strchr(msg, '\n'), "/lora \"%s\" refused: %s", arg, msg);
}

static void test_lora(void) {
    pt_slash c;
    CHECK(pt_slash_parse("/lora a 0.5", &c) && c.id == PT_SLASH_LORA && c.cmd && c.cmd->tui_only,
          "/lora is a TUI command");
    lora_ok("", PT_LORA_LIST, "", 1.0f);
    lora_ok("   ", PT_LORA_LIST, "", 1.0f);
    lora_ok("off", PT_LORA_OFF_ALL, "", 1.0f);
    lora_ok(" off ", PT_LORA_OFF_ALL, "", 1.0f);
    lora_ok("adapters/a", PT_LORA_ON, "adapters/a", 1.0f);
    lora_ok("adapters/a 0.5", PT_LORA_ON, "adapters/a", 0.5f);
    lora_ok("adapters/a   -1.5  ", PT_LORA_ON, "adapters/a", -1.5f);
    lora_ok("my adapters/a b", PT_LORA_ON, "my adapters/a b", 1.0f);
    lora_ok("my adapters/a b 2", PT_LORA_ON, "my adapters/a b", 2.0f);
    lora_ok("a.gguf 1e-1", PT_LORA_ON, "a.gguf", 0.1f);
    lora_ok("offish", PT_LORA_ON, "offish", 1.0f);
    lora_ok("-a", PT_LORA_OFF, "a", 1.0f);
    lora_ok("- adapters/a", PT_LORA_OFF, "adapters/a", 1.0f);
    lora_ok("0.5", PT_LORA_ON, "0.5", 1.0f);   /* one word is always the path */
    lora_bad("-", "which adapter");
    lora_bad("a 101", "[-100, 100]");
    lora_bad("a -1e9", "[-100, 100]");
    lora_bad("a inf", "[-100, 100]");
    lora_bad("a nan", "[-100, 100]");
    char longp[5000];
    memset(longp, 'x', sizeof longp - 1);
    longp[sizeof longp - 1] = 0;
    lora_bad(longp, "too long");
    char help[4096];
    pt_slash_help(true, help, sizeof help);
    CHECK(strstr(help, "/lora PATH [SCALE]") != NULL, "help lists /lora");
    pt_slash_help(false, help, sizeof help);
    CHECK(strstr(help, "/lora") == NULL, "the plain chat's help does not");
}

int main(void) {
    setlocale(LC_ALL, "C.UTF-8");
    pt_text_init();
    test_parse();
    test_settings();
    test_editor();
    test_transcript();
    test_lora();
    return check_done("ui_slash");
}
