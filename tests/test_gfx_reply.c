/*
 * test_gfx_reply.c — the probe's reply parser (ui/graphics/reply.c) on
 * replies real terminals send, whole, split at every byte, with typed keys
 * and unknown sequences mixed in, and missing; then the choice of
 * protocol (decide.c) from those replies and the environment; and the
 * names and overrides (--graphics, PETREL_GRAPHICS, the probe timeout).
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "decide.h"
#include "gfx_internal.h"
#include "reply.h"

/* Replies captured from the terminals named (or written from their
 * documentation where noted). */
/* xterm -ti vt340 (xterm 379): DA1, XTSMGRAPHICS colours and geometry,
 * CSI 16t, CSI 14t (80x24 of 6x13) */
static const char XTERM_VT340[] = "\033[?1;0;16S"
                                  "\033[?2;0;800;480S"
                                  "\033[6;13;6t"
                                  "\033[4;312;480t"
                                  "\033[?63;1;2;4;6;9;15;16;22;28c";
/* kitty 0.26: graphics query OK, XTVERSION, cell size, DA1 without sixel */
static const char KITTY[] = "\033_Gi=31;OK\033\\"
                            "\033P>|kitty(0.26.5)\033\\"
                            "\033[6;20;10t"
                            "\033[?62;c";
/* WezTerm 20220408: no kitty by default (no reply), XTVERSION, sixel */
static const char WEZTERM[] = "\033[?1;0;256S"
                              "\033P>|WezTerm 20220408-101518-b908e2dd\033\\"
                              "\033[?65;4;6;18;22c";
/* foot 1.13: XTSMGRAPHICS (1024 registers), XTVERSION, DA1 with 4 */
static const char FOOT[] = "\033[?1;0;1024S"
                           "\033[?2;0;10000;10000S"
                           "\033P>|foot(1.13.1)\033\\"
                           "\033[6;17;8t"
                           "\033[?62;4;22c";
/* a terminal that rejects the kitty query (kitty docs: "ENOENT:..." etc.) */
static const char KITTY_ERROR[] = "\033_Gi=31;EINVAL:Unknown image format\033\\\033[?62;c";
/* VTE (GNOME Terminal): no kitty, no sixel, answers only DA1 and 16t */
static const char VTE[] = "\033[6;17;8t\033[?65;1;9c";

static pt_gfx_replies parse_whole(const char *s) {
    pt_gfx_replies r;
    pt_gfx_replies_init(&r);
    pt_gfx_replies_feed(&r, s, strlen(s));
    return r;
}

/* Parse s one byte per call, and in two pieces cut at every point: the
 * result must equal the whole parse. */
static void check_splits(const char *name, const char *s) {
    const pt_gfx_replies whole = parse_whole(s);
    const size_t n = strlen(s);
    pt_gfx_replies r;
    pt_gfx_replies_init(&r);
    for (size_t i = 0; i < n; i++) pt_gfx_replies_feed(&r, s + i, 1);
    CHECK(r.da1 == whole.da1 && r.sixel == whole.sixel && r.sixel_colors == whole.sixel_colors &&
              r.kitty_ok == whole.kitty_ok && r.cell_w == whole.cell_w && r.text_h == whole.text_h &&
              !strcmp(r.version, whole.version),
          "%s: byte by byte differs from the whole", name);
    int bad = 0;
    for (size_t cut = 1; cut < n; cut++) {
        pt_gfx_replies_init(&r);
        pt_gfx_replies_feed(&r, s, cut);
        pt_gfx_replies_feed(&r, s + cut, n - cut);
        if (r.da1 != whole.da1 || r.sixel != whole.sixel || r.sixel_colors != whole.sixel_colors ||
            r.sixel_max_w != whole.sixel_max_w || r.kitty_ok != whole.kitty_ok ||
            r.cell_h != whole.cell_h || strcmp(r.version, whole.version))
            bad++;
    }
    CHECK(bad == 0, "%s: %d cut points parse differently", name, bad);
}

static void test_terminals(void) {
    pt_gfx_replies r = parse_whole(XTERM_VT340);
    CHECK(r.da1 && r.sixel, "xterm vt340: DA1 with sixel (da1 %d sixel %d)", r.da1, r.sixel);
    CHECK(r.sixel_colors == 16, "xterm vt340: 16 registers, got %d", r.sixel_colors);
    CHECK(r.sixel_max_w == 800 && r.sixel_max_h == 480, "xterm vt340: 800x480, got %dx%d",
          r.sixel_max_w, r.sixel_max_h);
    CHECK(r.cell_w == 6 && r.cell_h == 13, "xterm: cell 6x13, got %dx%d", r.cell_w, r.cell_h);
    CHECK(r.text_w == 480 && r.text_h == 312, "xterm: text 480x312, got %dx%d", r.text_w, r.text_h);
    CHECK(!r.kitty_answered && !r.version[0], "xterm: no kitty, no version");

    r = parse_whole(KITTY);
    CHECK(r.da1 && !r.sixel && r.kitty_answered && r.kitty_ok, "kitty: OK, no sixel");
    CHECK(!strcmp(r.version, "kitty(0.26.5)"), "kitty: version '%s'", r.version);
    CHECK(r.cell_w == 10 && r.cell_h == 20, "kitty: cell %dx%d", r.cell_w, r.cell_h);

    r = parse_whole(WEZTERM);
    CHECK(r.da1 && r.sixel && !r.kitty_answered && r.sixel_colors == 256, "wezterm: sixel, 256");
    CHECK(!strcmp(r.version, "WezTerm 20220408-101518-b908e2dd"), "wezterm: version '%s'", r.version);

    r = parse_whole(FOOT);
    CHECK(r.da1 && r.sixel && r.sixel_colors == 1024 && r.sixel_max_w == 10000, "foot: sixel 1024");
    CHECK(!strcmp(r.version, "foot(1.13.1)") && r.cell_w == 8 && r.cell_h == 17, "foot: '%s' %dx%d",
          r.version, r.cell_w, r.cell_h);

    r = parse_whole(KITTY_ERROR);
    CHECK(r.da1 && r.kitty_answered && !r.kitty_ok, "kitty error reply: answered, not OK");

    r = parse_whole(VTE);
    CHECK(r.da1 && !r.sixel && !r.kitty_answered && r.cell_h == 17, "vte: DA1 only");

    /* XTSMGRAPHICS failure status (Ps 3: failure) is ignored */
    r = parse_whole("\033[?1;3;0S\033[?2;3;0;0S\033[?62c");
    CHECK(r.da1 && r.sixel_colors == 0 && r.sixel_max_w == 0, "XTSMGRAPHICS failure ignored");
    /* the VT100's DA1 "?1;2c": class 1, option 2 (AVO) — no 4, no sixel */
    r = parse_whole("\033[?1;2c");
    CHECK(r.da1 && !r.sixel, "vt100 DA1: no sixel");
    /* 4 as the class (VT420 is 64, never 4) is not an attribute */
    r = parse_whole("\033[?64;1;2c");
    CHECK(r.da1 && !r.sixel, "class 64 is not sixel");

    check_splits("xterm", XTERM_VT340);
    check_splits("kitty", KITTY);
    check_splits("wezterm", WEZTERM);
    check_splits("foot", FOOT);
    check_splits("kitty error", KITTY_ERROR);
}

static void test_garbage(void) {
    /* keys typed during the probe, an arrow key (CSI A), a mouse report, a
     * reply to something we never asked (DSR: CSI 0 n), an OSC colour
     * reply with BEL, an oversized DCS, all around the real replies */
    char big[600];
    memset(big, 'x', sizeof big);
    char s[2048];
    int n = snprintf(s, sizeof s,
                     "hello\033[A\033[<0;3;4M\033[0n\033]11;rgb:0000/0000/0000\a"
                     "\033P>|%.*s\033\\"
                     "q\033_Gi=31;OK\033\\w\033[6;20;10t\r\n"
                     "\033[?62;4c trailing",
                     (int)sizeof big, big);
    pt_gfx_replies r;
    pt_gfx_replies_init(&r);
    CHECK(pt_gfx_replies_feed(&r, s, (size_t)n), "garbage: DA1 still found");
    CHECK(r.sixel && r.kitty_ok && r.cell_w == 10, "garbage: replies among junk parsed");
    CHECK(!r.version[0], "garbage: an oversized DCS is dropped, not cut (got '%s')", r.version);

    /* a reply cut short by a new ESC: ESC [ 6 ; 2 ESC [ ? 62 ; 4 c */
    r = parse_whole("\033[6;2\033[?62;4c");
    CHECK(r.da1 && r.sixel && r.cell_h == 0, "cut CSI: the next sequence parses");
    /* an unterminated kitty reply followed by DA1: ESC starts over */
    r = parse_whole("\033_Gi=31;OK\033[?62;4c");
    CHECK(r.da1 && r.sixel && !r.kitty_answered, "unterminated APC dropped, DA1 parsed");
    /* control characters inside a version string are shown as '?' */
    r = parse_whole("\033P>|evil\x01\x7fname\033\\\033[?62c");
    CHECK(!strcmp(r.version, "evil??name"), "version escaped: '%s'", r.version);
    /* huge numbers are clamped, not overflowed */
    r = parse_whole("\033[?1;0;99999999999999999999S\033[6;99999999999;99999999999t\033[?62c");
    CHECK(r.sixel_colors == 1000000 && r.cell_h == 1000000, "numbers clamped: %d %d", r.sixel_colors,
          r.cell_h);
    /* a version longer than version[] is cut to it */
    r = parse_whole("\033P>|abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnop"
                    "qrstuvwxyzabcdefghijklmnopqrstuvwxyz\033\\");
    CHECK(strlen(r.version) == sizeof r.version - 1 && !r.da1, "long version cut, no DA1");
}

static void test_no_reply(void) {
    pt_gfx_replies r;
    pt_gfx_replies_init(&r);
    CHECK(!pt_gfx_replies_feed(&r, "", 0), "nothing: no DA1");
    CHECK(!pt_gfx_replies_feed(&r, "abc", 3), "typed text: no DA1");
    pt_gfx_env env = {.tty = true, .term = "xterm-256color"};
    pt_term_caps c;
    pt_gfx_decide(&r, &env, PT_GFX_AUTO, &c);
    CHECK(c.proto == PT_GFX_SYMBOLS && !c.answered, "no reply: symbols, got %s", pt_gfx_name(c.proto));
    CHECK(c.color_depth == 256 && c.cols == 80 && c.rows == 24 && c.cell_w == 0 &&
              !strcmp(c.cell_from, "default"),
          "no reply: 256 colours, 80x24, default cell");
}

static pt_term_caps decide(const char *replies, pt_gfx_env env, pt_gfx_proto want) {
    pt_gfx_replies r = parse_whole(replies);
    pt_term_caps c;
    pt_gfx_decide(&r, &env, want, &c);
    return c;
}

static void test_decide(void) {
    const pt_gfx_env tty = {.tty = true, .term = "xterm", .ws_cols = 80, .ws_rows = 24};
    pt_term_caps c = decide(XTERM_VT340, tty, PT_GFX_AUTO);
    CHECK(c.proto == PT_GFX_SIXEL && c.sixel_colors == 16 && !c.wrap_tmux, "xterm: sixel, got %s",
          pt_gfx_name(c.proto));
    CHECK(c.cell_w == 6 && c.cell_h == 13 && !strcmp(c.cell_from, "CSI 16t"), "xterm: cell from 16t");
    CHECK(c.color_depth == 16, "xterm: 16 colours, got %d", c.color_depth);

    c = decide(KITTY, tty, PT_GFX_AUTO);
    CHECK(c.proto == PT_GFX_KITTY && c.color_depth == 24, "kitty: kitty, truecolor");
    c = decide(WEZTERM, tty, PT_GFX_AUTO);
    CHECK(c.proto == PT_GFX_ITERM2 && c.iterm2 && c.sixel, "wezterm: iterm2 over sixel, got %s",
          pt_gfx_name(c.proto));
    c = decide(FOOT, tty, PT_GFX_AUTO);
    CHECK(c.proto == PT_GFX_SIXEL && c.sixel_colors == 1024, "foot: sixel");
    pt_gfx_env iterm = tty;
    iterm.term_program = "iTerm.app";
    c = decide("\033[?62;c", iterm, PT_GFX_AUTO);
    CHECK(c.proto == PT_GFX_ITERM2, "TERM_PROGRAM=iTerm.app: iterm2, got %s", pt_gfx_name(c.proto));
    pt_gfx_env lc = tty;
    lc.lc_terminal = "iTerm2";
    CHECK(decide("", lc, PT_GFX_AUTO).proto == PT_GFX_ITERM2, "LC_TERMINAL=iTerm2: iterm2");

    /* cell size: CSI 14t over the grid, then TIOCGWINSZ pixels */
    c = decide("\033[4;480;800t\033[?62c", tty, PT_GFX_AUTO);
    CHECK(c.cell_w == 10 && c.cell_h == 20 && !strcmp(c.cell_from, "CSI 14t"), "14t: 10x20, got %dx%d",
          c.cell_w, c.cell_h);
    pt_gfx_env px = tty;
    px.ws_xpixel = 640;
    px.ws_ypixel = 384;
    c = decide("\033[?62c", px, PT_GFX_AUTO);
    CHECK(c.cell_w == 8 && c.cell_h == 16 && !strcmp(c.cell_from, "TIOCGWINSZ"), "winsize: 8x16");
    c = decide("\033[6;9999;9999t\033[?62c", tty, PT_GFX_AUTO);
    CHECK(c.cell_w == 0 && !strcmp(c.cell_from, "default"), "absurd cell size ignored");

    /* colour depth */
    pt_gfx_env truecolor = tty;
    truecolor.colorterm = "truecolor";
    CHECK(decide("", truecolor, PT_GFX_AUTO).color_depth == 24, "COLORTERM=truecolor: 24");
    truecolor.colorterm = "24bit";
    CHECK(decide("", truecolor, PT_GFX_AUTO).color_depth == 24, "COLORTERM=24bit: 24");

    /* not a tty: auto is none, forced is kept; dumb: none */
    pt_gfx_env pipe = {.tty = false};
    CHECK(decide("", pipe, PT_GFX_AUTO).proto == PT_GFX_NONE, "pipe + auto: none");
    CHECK(decide("", pipe, PT_GFX_SIXEL).proto == PT_GFX_SIXEL, "pipe + sixel: sixel as told");
    CHECK(decide("", pipe, PT_GFX_SYMBOLS).proto == PT_GFX_SYMBOLS, "pipe + symbols: symbols");
    CHECK(decide(KITTY, tty, PT_GFX_SYMBOLS).proto == PT_GFX_SYMBOLS, "forced beats the probe");
    pt_gfx_env dumb = {.tty = false, .term = "dumb"};
    CHECK(decide("", dumb, PT_GFX_AUTO).color_depth == 2, "dumb: 2 colours");

    /* tmux: its own sixel is used as is; otherwise the outer terminal
     * through passthrough when allowed; else symbols */
    pt_gfx_env tmux = {.tty = true, .tmux = true, .term = "tmux-256color", .term_program = "tmux"};
    c = decide("\033[?62;4c", tmux, PT_GFX_AUTO);
    CHECK(c.proto == PT_GFX_SIXEL && !c.wrap_tmux, "tmux with sixel: sixel unwrapped");
    c = decide("\033[?62c", tmux, PT_GFX_AUTO);
    CHECK(c.proto == PT_GFX_SYMBOLS && !c.wrap_tmux, "tmux no passthrough: symbols, got %s",
          pt_gfx_name(c.proto));
    pt_gfx_env tmux_kitty = tmux;
    tmux_kitty.kitty_window = true;
    c = decide("\033[?62c", tmux_kitty, PT_GFX_AUTO);
    CHECK(c.proto == PT_GFX_SYMBOLS, "tmux in kitty, passthrough off: symbols");
    tmux_kitty.passthrough = true;
    c = decide("\033[?62c", tmux_kitty, PT_GFX_AUTO);
    CHECK(c.proto == PT_GFX_KITTY && c.wrap_tmux && c.passthrough, "tmux in kitty + passthrough: kitty wrapped");
    pt_gfx_env tmux_iterm = tmux;
    tmux_iterm.passthrough = true;
    tmux_iterm.lc_terminal = "iTerm2";
    c = decide("\033[?62c", tmux_iterm, PT_GFX_AUTO);
    CHECK(c.proto == PT_GFX_ITERM2 && c.wrap_tmux, "tmux in iTerm2 + passthrough: iterm2 wrapped");
    c = decide("\033[?62c", tmux_iterm, PT_GFX_SIXEL);
    CHECK(c.proto == PT_GFX_SIXEL && c.wrap_tmux, "tmux forced sixel, tmux has none: wrapped");
    c = decide("\033[?62c", tmux_iterm, PT_GFX_SYMBOLS);
    CHECK(!c.wrap_tmux, "symbols are never wrapped");

    /* describe names what was found */
    char text[2048];
    c = decide(XTERM_VT340, tty, PT_GFX_AUTO);
    pt_gfx_describe(&c, text, sizeof text);
    CHECK(strstr(text, "graphics: sixel\n") && strstr(text, "16 colour registers") &&
              strstr(text, "cell: 6x13 pixels (CSI 16t)") && strstr(text, "grid: 80x24"),
          "describe: %s", text);
    char tiny[16];
    pt_gfx_describe(&c, tiny, sizeof tiny);
    CHECK(strlen(tiny) == sizeof tiny - 1, "describe cut to its buffer");
    pt_gfx_env ctl = tty;
    ctl.term = "x\033]0;pwned\a";
    c = decide("", ctl, PT_GFX_AUTO);
    CHECK(!strchr(c.term, '\033') && !strchr(c.term, '\a'), "TERM's control bytes not kept: %s", c.term);
}

static void test_names(void) {
    static const char *const names[] = {"auto", "none", "symbols", "sixel", "kitty", "iterm2"};
    for (size_t i = 0; i < 6; i++) {
        pt_gfx_proto p;
        CHECK(pt_gfx_parse(names[i], &p) && !strcmp(pt_gfx_name(p), names[i]), "name %s", names[i]);
    }
    pt_gfx_proto p = PT_GFX_KITTY;
    CHECK(!pt_gfx_parse("Sixel", &p) && !pt_gfx_parse("", &p) && !pt_gfx_parse(NULL, &p) &&
              p == PT_GFX_KITTY,
          "bad names rejected");
    char why[256];
    unsetenv("PETREL_GRAPHICS");
    CHECK(pt_gfx_requested(NULL, &p, why, sizeof why) && p == PT_GFX_AUTO, "nothing asked: auto");
    setenv("PETREL_GRAPHICS", "kitty", 1);
    CHECK(pt_gfx_requested(NULL, &p, why, sizeof why) && p == PT_GFX_KITTY, "env: kitty");
    CHECK(pt_gfx_requested("sixel", &p, why, sizeof why) && p == PT_GFX_SIXEL, "flag wins over env");
    setenv("PETREL_GRAPHICS", "bogus\033", 1);
    CHECK(!pt_gfx_requested(NULL, &p, why, sizeof why) && strstr(why, "PETREL_GRAPHICS") &&
              strstr(why, "'bogus?'"),
          "bad env: %s", why);
    CHECK(pt_gfx_requested("none", &p, why, sizeof why) && p == PT_GFX_NONE, "a good flag hides a bad env");
    CHECK(!pt_gfx_requested("blink", &p, why, sizeof why) && strstr(why, "--graphics"), "bad flag: %s", why);
    unsetenv("PETREL_GRAPHICS");

    unsetenv("PETREL_PROBE_TIMEOUT_MS");
    CHECK(pt_gfx_probe_timeout_ms() == 250, "default timeout 250");
    setenv("PETREL_PROBE_TIMEOUT_MS", "40", 1);
    CHECK(pt_gfx_probe_timeout_ms() == 40, "timeout from env");
    setenv("PETREL_PROBE_TIMEOUT_MS", "-3", 1);
    CHECK(pt_gfx_probe_timeout_ms() == 250, "bad timeout ignored");
    /* what the tests' answering fake terminals ask for (it once sat past
     * the cap and was ignored: 250 ms, and a loaded machine lost replies) */
    setenv("PETREL_PROBE_TIMEOUT_MS", "60000", 1);
    CHECK(pt_gfx_probe_timeout_ms() == 60000, "the largest timeout");
    setenv("PETREL_PROBE_TIMEOUT_MS", "60001", 1);
    CHECK(pt_gfx_probe_timeout_ms() == 250, "a timeout over a minute ignored");
    unsetenv("PETREL_PROBE_TIMEOUT_MS");
}

static void test_not_a_tty(void) {
    /* the probe on something that is not a terminal writes nothing */
    char path[] = "/tmp/petrel-gfx-probe-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0, "temp file");
    if (fd < 0) return;
    pt_term_caps c;
    pt_gfx_probe(fd, PT_GFX_AUTO, 50, &c);
    CHECK(c.proto == PT_GFX_NONE && !c.answered, "file: none");
    pt_gfx_probe(fd, PT_GFX_KITTY, 50, &c);
    CHECK(c.proto == PT_GFX_KITTY, "file + kitty: kitty");
    pt_gfx_probe(-1, PT_GFX_AUTO, 50, &c);
    CHECK(c.proto == PT_GFX_NONE, "fd -1: none");
    CHECK(lseek(fd, 0, SEEK_END) == 0, "nothing written to a non-tty");
    close(fd);
    unlink(path);
}

int main(void) {
    test_terminals();
    test_garbage();
    test_no_reply();
    test_decide();
    test_names();
    test_not_a_tty();
    return check_done("gfx_reply");
}
