"""test_term_show.py — `petrel show` and `petrel info --terminal` in the
terminals tests/fake_term.py plays (issue 13, acceptance):

- info --terminal reports what each terminal answered: sixel (with its
  colour registers and maximum size), kitty, iTerm2 by XTVERSION or by
  TERM_PROGRAM, nothing from a plain one; the cell size from CSI 16t, else
  CSI 14t over the grid, else TIOCGWINSZ's pixel fields, else the default;
  a terminal that answers nothing is given up on (the run ends: the harness
  waits up to 60 s, the time it took is printed, not judged);
- show draws each committed picture (tests/data/pictures: a 120x90 test
  card and a 128x128 picture of the demo model) with the protocol auto must
  pick (kitty, iTerm2, sixel, else character art), at 80x24 and 40x15: the
  picture decoded from the byte stream is the PNG scaled to its size
  within term_check.BOUND, it fits the terminal and fills its width or its
  height (less 2 rows), and keeps the aspect; no probe reply is left in the
  input, the tty settings are as before; in a 200x60 window the sixel
  picture keeps within the 1000x1000 pixels XTSMGRAPHICS allows;
- the same with every reply split into 1-byte reads, and with --graphics /
  PETREL_GRAPHICS forcing each protocol whatever the terminal said;
- text before the picture stays above it, text after it starts below it;
- two pictures, by one `show A B` and by two commands: both drawn, in
  order, each its PNG; kitty never gets an image id twice (it would replace
  the first picture with the second, placements and all);
- SIGINT, SIGTERM or SIGHUP while the probe waits for a silent terminal:
  petrel ends by the signal and the tty is not left raw.
"""
import os, signal
from term_check import BIN, BOUND, DATA, PROTO, Checks, describe, extent, fake_term, judge, read_png, term_images

c = Checks()
CARD = os.path.join(DATA, "pictures", "card-120x90.png")
DEMO = os.path.join(DATA, "pictures", "demo-128.png")
refs = {p: read_png(p) for p in (CARD, DEMO)}

# ---- info --terminal
INFO = {  # personality: {key: text the value must contain}
    "sixel": {"graphics": "sixel", "answered": "yes", "sixel": "yes", "kitty": "no", "iterm2": "no",
              "version": "XTerm(379)", "cell": "(CSI 16t)"},
    "kitty": {"graphics": "kitty", "answered": "yes", "sixel": "no", "kitty": "yes", "iterm2": "no",
              "version": "kitty(0.26.5)", "cell": "(CSI 16t)", "colours": "truecolor"},
    "iterm2": {"graphics": "iterm2", "answered": "yes", "sixel": "yes", "kitty": "no", "iterm2": "yes",
               "version": "WezTerm 20240203", "cell": "(CSI 16t)", "colours": "truecolor"},
    "iterm2-env": {"graphics": "iterm2", "answered": "yes", "sixel": "no", "kitty": "no", "iterm2": "yes",
                   "cell": "(TIOCGWINSZ)", "term": "iTerm.app"},
    "sixel-14t": {"graphics": "sixel", "sixel": "yes", "cell": "(CSI 14t)"},
    "plain": {"graphics": "symbols", "answered": "yes", "sixel": "no", "kitty": "no", "iterm2": "no",
              "cell": "(TIOCGWINSZ)", "colours": "truecolor"},
    "silent": {"graphics": "symbols", "answered": "no", "sixel": "no", "kitty": "no", "iterm2": "no",
               "cell": "(TIOCGWINSZ)"},
}
for pers, want in INFO.items():
    for cell in ((10, 20), (8, 17)):
        res = fake_term.run([BIN, "info", "--terminal"], pers, 24, 80, cell, timeout=60)
        got = describe(res)
        label = "info --terminal under %s, cells %dx%d" % (pers, cell[0], cell[1])
        want_cell = dict(want, cell="%dx%d pixels %s" % (cell[0], cell[1], want["cell"]),
                         grid="80x24")
        bad = {k: got.get(k) for k, v in want_cell.items() if v not in (got.get(k) or "")}
        c.check(res.rc == 0 and not bad, label, "wrong: %r; all: %r" % (bad, got))
        c.check(res.leaked == b"" and not res.echoed and res.termios_before == res.termios_after,
                label + ": nothing left in the input, tty as before", "unread %r" % res.leaked)
        if pers == "sixel":
            c.check("256 colour registers" in got.get("sixel", "") and "1000x1000" in got.get("sixel", ""),
                    label + ": XTSMGRAPHICS read", got.get("sixel"))
        if pers == "silent" and cell == (10, 20):
            print("# a terminal that answers nothing: info --terminal took %.2f s" % res.elapsed)
# no pixel fields and no answer: the default cell
res = fake_term.run([BIN, "info", "--terminal"], "plain", 24, 80, (10, 20), pixel_fields=False, timeout=60)
c.check("assumed" in describe(res).get("cell", ""), "no cell size anywhere: the default is assumed",
        describe(res).get("cell"))
# a split stream: every reply read by petrel one byte at a time is the
# terminal's business; here the terminal reads petrel's queries one byte at a time
res = fake_term.run([BIN, "info", "--terminal"], "kitty", 24, 80, (10, 20), read_size=1, timeout=60)
c.check(describe(res).get("kitty", "").startswith("yes") and res.leaked == b"",
        "info --terminal under kitty, queries read a byte at a time", describe(res))

# ---- a signal while the probe waits (a silent terminal, PETREL_PROBE_TIMEOUT_MS=5000,
# the signal sent when the DA1 query appears): petrel ends by it, the tty
# settings as before (not left raw), nothing drawn
for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    res = fake_term.run([BIN, "show", CARD], "silent", 24, 80, (10, 20), env={"PETREL_PROBE_TIMEOUT_MS": "5000"},
                        timeout=120, actions=[(b"\x1b[c", sig)])
    label = "show under a silent terminal, %s during the probe" % signal.Signals(sig).name
    c.check(res.rc in (-sig, 128 + sig), label + ": ended by the signal", "exit %r" % res.rc)
    c.check(res.termios_before == res.termios_after, label + ": tty settings as before",
            fake_term.termios_diff(res.termios_before, res.termios_after))
    c.check(res.leaked == b"" and term_images.cell_art(res.term.screen) is None, label + ": nothing drawn or left")

# ---- show, each personality, two sizes
for rows, cols in ((24, 80), (15, 40)):
    for pers in ("sixel", "kitty", "iterm2", "iterm2-env", "plain", "silent"):
        for png in (CARD, DEMO):
            res = fake_term.run([BIN, "show", png], pers, rows, cols, (10, 20), timeout=120)
            judge(c, res, PROTO[pers], refs[png], "show %s under %s %dx%d" % (os.path.basename(png), pers, cols, rows),
                  rows, cols, fill=(rows - 2, cols))

# ---- two pictures, by one command and by two: both drawn, each its PNG, in
# order; kitty's image ids never repeat (kitty replaces the image of an id
# sent again, and every placement of it: the first picture would vanish)
for pers in ("sixel", "kitty", "iterm2", "plain"):
    for how, argv in (("show A B", [BIN, "show", CARD, DEMO]),
                      ("show A; show B", ["sh", "-c", '"$0" show "$1"; "$0" show "$2"', BIN, CARD, DEMO])):
        res = fake_term.run(argv, pers, 24, 80, (10, 20), timeout=120)
        label = "%s under %s" % (how, pers)
        c.check(res.rc == 0 and res.leaked == b"" and res.termios_before == res.termios_after,
                label + ": exit 0, nothing left in the input, tty as before", "exit %r, unread %r" % (res.rc, res.leaked))
        if pers == "plain":
            c.check(b"\x1b[38;2;" in res.output, label + ": character art")
            continue
        pics = term_images.pictures(res.term)
        if not c.check(len(pics) == 2, label + ": two pictures", repr(pics)):
            continue
        errs = [term_images.mean_abs_error(p, *refs[f]) for p, f in zip(pics, (CARD, DEMO))]
        c.check(all(e < BOUND[pers] for e in errs), label + ": the card, then the demo picture (%.2f, %.2f)" % tuple(errs))
        if pers == "kitty":
            ids = [p.info.get("i") for p in pics if p.info.get("i") not in (None, "0")]
            c.check(len(ids) == len(set(ids)), label + ": no kitty image id sent twice", "ids %r" % ids)

# ---- the cursor afterwards: text written before the picture stays above
# it, text written after it starts on the line below its last row
for pers in ("sixel", "kitty", "iterm2", "plain"):
    for rows, cols in ((24, 80), (15, 40)):
        res = fake_term.run(["sh", "-c", 'echo BEFORE; "$0" show "$1"; echo AFTER', BIN, CARD], pers, rows, cols,
                            (10, 20), timeout=120)
        lines = ["".join(cell[0] for cell in line) for line in res.term.screen.lines()]
        before = [i for i, l in enumerate(lines) if l.startswith("BEFORE")]
        after = [i for i, l in enumerate(lines) if l.startswith("AFTER")]
        pics = term_images.pictures(res.term)
        if pics:
            prows = -(-int(extent(pics[0], 10, 20, rows, cols)[1]) // 20)
        else:
            art = term_images.cell_art(res.term.screen)
            prows = art.h if art else -1
        c.check(before == [0] and after == [1 + prows], "show under %s %dx%d: text before above the picture, text "
                "after on the line below its %d rows" % (pers, cols, rows, prows),
                "BEFORE on lines %r, AFTER on %r" % (before, after))

# ---- a big window: sixel keeps to XTSMGRAPHICS' 1000x1000 (the grid is 2000x1200 pixels)
res = fake_term.run([BIN, "show", CARD], "sixel", 60, 200, (10, 20), timeout=120)
judge(c, res, "sixel", refs[CARD], "show card under sixel 200x60 (larger than the sixel maximum)", 60, 200)

# ---- replies split across reads (the terminal reads petrel's bytes one at a time)
for pers in ("sixel", "kitty"):
    res = fake_term.run([BIN, "show", CARD], pers, 24, 80, (10, 20), read_size=1, timeout=300)
    judge(c, res, PROTO[pers], refs[CARD], "show card under %s, read a byte at a time" % pers, 24, 80)

# ---- forced protocols
for pers, how, want in (("plain", ["--graphics", "sixel"], "sixel"), ("silent", ["--graphics", "kitty"], "kitty"),
                        ("sixel", ["--graphics", "iterm2"], "iterm2"), ("kitty", ["--graphics", "symbols"], "symbols"),
                        ("sixel", ["--graphics", "none"], "none"), ("plain", "PETREL_GRAPHICS=sixel", "sixel"),
                        ("sixel", "PETREL_GRAPHICS=kitty", "kitty")):
    env = dict([how.split("=")]) if isinstance(how, str) else None
    argv = [BIN, "show"] + (how if isinstance(how, list) else []) + [CARD]
    res = fake_term.run(argv, pers, 24, 80, (10, 20), env=env, timeout=120)
    judge(c, res, want, refs[CARD], "show card under %s with %s" % (pers, how if isinstance(how, str) else " ".join(how)),
          24, 80)

c.done()
