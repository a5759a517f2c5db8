"""term_check.py — what the terminal picture tests (test_term_show.py,
test_term_imagine.py) share: the counters, petrel's paths, and judge(),
which checks one run of petrel under tests/fake_term.py against the PNG it
was meant to draw (issue 13)."""
import os, re, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fake_term, png_check, term_images  # noqa: E402

BIN = os.environ.get("PETREL_BIN")
DATA = os.environ.get("PETREL_TEST_DATA", os.path.join(HERE, "data"))
if not BIN:
    print("PETREL_BIN not set"); print("0 passed, 1 failed"); sys.exit(1)

# What auto must pick under each personality.
PROTO = {"sixel": "sixel", "kitty": "kitty", "iterm2": "iterm2", "iterm2-env": "iterm2", "plain": "symbols",
         "silent": "symbols"}
# Mean absolute colour error (0..255, every channel of every pixel) of the
# picture the stream draws against the PNG scaled to its size, at most.
# Chosen from the measurements printed by the tests (see the docstrings
# of the tests) with a margin; a wrong picture measures far above them.
BOUND = {"sixel": 8.0, "kitty": 4.0, "iterm2": 4.0, "symbols": 5.0, "symbols256": 40.0}
# Character art must also correlate with the PNG (luma, Pearson) at least
# this much: measured 0.92-1.00; an unrelated picture -0.03-0.09.
MIN_CORRELATION = 0.8


def art_palette(term):
    """256 when the character art's colours are xterm 256-colour indexes
    only (SGR 38;5 / 48;5), else None (truecolor)."""
    k = term.screen.sgr_kinds
    return 256 if not (k.get("38;2") or k.get("48;2")) and (k.get("38;5") or k.get("48;5")) else None


def drawn(res):
    """(the picture the run drew or None, its bound): the one protocol
    picture, else the character art."""
    pics = term_images.pictures(res.term)
    if pics: return pics[0], BOUND[pics[0].proto]
    art = term_images.cell_art(res.term.screen)
    return art, BOUND["symbols256" if art_palette(res.term) == 256 else "symbols"]


class Checks:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, cond, what, detail=""):
        if cond:
            self.passed += 1; print("ok - " + what)
        else:
            self.failed += 1; print("FAIL - %s%s" % (what, (": " + str(detail)[:600]) if detail else ""))
        return cond

    def done(self):
        print("%d passed, %d failed" % (self.passed, self.failed))
        sys.exit(1 if self.failed else 0)


def read_png(path):
    w, h, rgb, _ = png_check.decode(open(path, "rb").read())
    return w, h, rgb


def _cells(v, cell, total):
    """An iTerm2 width=/height= value in cells (None: auto / unknown)."""
    if v is None or v == "auto": return None
    if v.endswith("px"): return int(v[:-2]) / cell
    if v.endswith("%"): return int(v[:-1]) * total / 100.0
    return int(v)


def extent(pic, cell_w, cell_h, rows, cols):
    """The block the picture covers on the screen, in pixels."""
    if pic.proto == "kitty" and "c" in pic.info and "r" in pic.info:
        return int(pic.info["c"]) * cell_w, int(pic.info["r"]) * cell_h
    if pic.proto == "iterm2":
        wc = _cells(pic.info.get("width"), cell_w, cols)
        hc = _cells(pic.info.get("height"), cell_h, rows)
        if wc is not None and hc is not None and pic.info.get("preserveAspectRatio") == "0":
            return wc * cell_w, hc * cell_h
        if wc is not None and hc is not None:  # the aspect kept inside the box
            k = min(wc * cell_w / pic.w, hc * cell_h / pic.h)
            return pic.w * k, pic.h * k
        if wc is not None: return wc * cell_w, pic.h * wc * cell_w / pic.w
        if hc is not None: return pic.w * hc * cell_h / pic.h, hc * cell_h
    return pic.w, pic.h


def judge(c, res, want, ref, label, rows, cols, cell=(10, 20), fill=None, bound=None):
    """One run of petrel that should have drawn ref = (w, h, rgb) with the
    protocol `want` (sixel, kitty, iterm2, symbols, none). Checks: exit 0,
    no reply left in the input or echoed, tty settings as before, exactly
    one picture of that protocol and none of another, its colours within
    BOUND of ref scaled to its size, the block it covers on the grid and
    its aspect; fill: rows the picture must fill up to (within one cell) in
    at least one direction, e.g. `petrel show` fits the terminal. Returns
    the measured error (None when there was nothing to measure)."""
    rw, rh, rrgb = ref
    cw, ch = cell
    c.check(res.rc == 0, "%s: exit 0" % label, "exit %r, output tail %r" % (res.rc, res.output[-300:]))
    c.check(res.leaked == b"" and not res.echoed, "%s: no terminal reply left in the input or echoed" % label,
            "unread %r, echoed %r" % (res.leaked, res.echoed))
    c.check(res.termios_before == res.termios_after, "%s: tty settings as before" % label,
            fake_term.termios_diff(res.termios_before, res.termios_after))
    try:
        pics = term_images.pictures(res.term)
    except ValueError as e:
        c.check(False, "%s: the picture sequences decode" % label, e)
        return None
    err = None
    if want in ("sixel", "kitty", "iterm2"):
        if not c.check(len(pics) == 1 and pics[0].proto == want, "%s: one %s picture" % (label, want),
                       "got %r" % pics):
            return None
        pic = pics[0]
        err = term_images.mean_abs_error(pic, rw, rh, rrgb)
        b = bound if bound is not None else BOUND[want]
        print("# %s: %s %dx%d, mean abs colour error %.2f (bound %g)" % (label, want, pic.w, pic.h, err, b))
        c.check(err < b, "%s: the %s picture is the PNG (error %.2f < %g)" % (label, want, err, b))
        ew, eh = extent(pic, cw, ch, rows, cols)
        c.check(ew <= cols * cw + 0.5 and eh <= rows * ch + 0.5, "%s: the picture fits the %dx%d grid" % (
            label, cols, rows), "covers %.0fx%.0f pixels of %dx%d" % (ew, eh, cols * cw, rows * ch))
        # the aspect within a cell's rounding either way
        c.check(abs(ew / eh - rw / rh) <= max(rw / rh * (cw / ew + ch / eh), 0.01),
                "%s: aspect kept" % label, "covers %.0fx%.0f, PNG %dx%d" % (ew, eh, rw, rh))
        if fill:
            fr, fc = fill
            c.check(ew >= (fc - 1) * cw or eh >= (fr - 1) * ch, "%s: fills %d columns or %d rows" % (label, fc, fr),
                    "covers %.0fx%.0f pixels" % (ew, eh))
        if want == "sixel":
            c.check(pic.info["colors"] <= 256 and pic.w <= 1000 and pic.h <= 1000,
                    "%s: within XTSMGRAPHICS (256 registers, 1000x1000)" % label, repr(pic.info))
        if want == "kitty":
            ch_ = pic.info["chunks"]
            c.check(all(n <= 4096 for n in ch_) and all(n % 4 == 0 for n in ch_[:-1]) and pic.info.get("q") == "2",
                    "%s: kitty chunks of <= 4096 bytes, multiples of 4, q=2 (no replies)" % label, repr(pic.info)[:300])
    elif want == "symbols":
        c.check(not pics, "%s: no picture protocol used" % label, repr(pics))
        art = term_images.cell_art(res.term.screen)
        if not c.check(art is not None and art.info["symbols"] > 0, "%s: character art drawn" % label,
                       res.term.screen.text()[-400:]):
            return None
        kinds = res.term.screen.sgr_kinds
        c.check(any(kinds.get(k) for k in ("38;2", "48;2", "38;5", "48;5")),
                "%s: coloured cells (SGR 38;2 / 48;2 / 38;5 / 48;5)" % label, repr(kinds))
        pal = art_palette(res.term)
        err = term_images.mean_abs_error(art, rw, rh, rrgb)
        corr = term_images.luma_correlation(art, rw, rh, rrgb)
        b = bound if bound is not None else BOUND["symbols256" if pal == 256 else "symbols"]
        print("# %s: symbols %dx%d cells (%d symbols), colours %r, mean abs colour error %.2f (bound %g), "
              "luma correlation %.3f (at least %g)" % (label, art.w, art.h, art.info["symbols"], kinds, err, b, corr,
                                                       MIN_CORRELATION))
        c.check(err < b, "%s: the character art is the PNG (error %.2f < %g)" % (label, err, b))
        c.check(corr >= MIN_CORRELATION, "%s: the character art follows the PNG (luma correlation %.3f)" % (label, corr))
        c.check(art.h <= rows and art.w <= cols, "%s: the art fits the %dx%d grid" % (label, cols, rows),
                "%dx%d cells" % (art.w, art.h))
        ew, eh = art.w * cw, art.h * ch
        c.check(abs(ew / eh - rw / rh) <= rw / rh * (cw / ew + ch / eh) + 0.01,
                "%s: the art has the picture's aspect in %dx%d cells (%d rows)" % (label, cw, ch, art.h),
                "%dx%d cells for a %dx%d PNG" % (art.w, art.h, rw, rh))
        if fill:
            fr, fc = fill
            c.check(art.w >= fc - 1 or art.h >= fr - 1, "%s: fills %d columns or %d rows" % (label, fc, fr),
                    "%dx%d cells" % (art.w, art.h))
    else:  # none
        c.check(not pics and term_images.cell_art(res.term.screen) is None, "%s: no picture, no art" % label)
    return err


def describe(res):
    """info --terminal's "key: value" lines as a dict."""
    out = {}
    for line in res.term.text.decode("utf-8", "replace").replace("\r", "").splitlines():
        m = re.match(r"([a-z0-9 ]+): (.*)$", line)
        if m: out[m.group(1)] = m.group(2).strip()
    return out
