"""test_term_imagine.py — `petrel imagine --show` in the terminals
tests/fake_term.py plays (issue 13, acceptance). The bundled demo model
draws 128x128 in 4 steps:

- under each personality (sixel, kitty, iterm2 by XTVERSION and by
  TERM_PROGRAM, plain, silent) at 80x24 and under three of them at 40x15,
  the picture decoded from the byte stream is the PNG written for the same
  seed scaled to the picture's size, within term_check.BOUND (mean absolute
  colour error; the measured values are printed), and the PNG is the one
  imagine writes without --show; the same comparison against the PNG of
  another seed fails by far (the test can fail); no probe reply is left in
  the input, the tty settings are as before;
- the window shrinks to 40x15 during generation: the picture fits the new size;
- Ctrl-C typed during generation (and SIGINT sent): exit 130, the tty
  settings as before, no PNG and no temporary file, nothing left in the
  input.
"""
import glob, os, shutil, signal, subprocess, tempfile
from term_check import BIN, MIN_CORRELATION, PROTO, Checks, drawn, fake_term, judge, read_png, term_images

c = Checks()
tmp = tempfile.mkdtemp(prefix="petrel-term-imagine-")
GEN = ["imagine", "-p", "a red circle above a blue square", "-W", "128", "-H", "128", "--steps", "4"]
try:
    # the reference PNGs, written with no terminal at all
    for seed in (1, 2):
        p = subprocess.run([BIN] + GEN + ["-s", str(seed), "-o", os.path.join(tmp, "ref%d.png" % seed)],
                           capture_output=True, timeout=300)
        c.check(p.returncode == 0, "reference PNG, seed %d" % seed, p.stderr.decode(errors="replace")[-300:])
    ref1, ref2 = read_png(os.path.join(tmp, "ref1.png")), read_png(os.path.join(tmp, "ref2.png"))

    runs = [(p, 24, 80) for p in ("sixel", "kitty", "iterm2", "iterm2-env", "plain", "silent")]
    runs += [(p, 15, 40) for p in ("sixel", "kitty", "plain")]
    for pers, rows, cols in runs:
        out = os.path.join(tmp, "%s-%d.png" % (pers, cols))
        res = fake_term.run([BIN] + GEN + ["-s", "1", "-o", out, "--show"], pers, rows, cols, (10, 20), timeout=300)
        label = "imagine --show under %s %dx%d" % (pers, cols, rows)
        if not c.check(os.path.exists(out), label + ": PNG written", res.output[-300:]):
            continue
        c.check(read_png(out) == ref1, label + ": the PNG is the one written without --show")
        judge(c, res, PROTO[pers], read_png(out), label, rows, cols)
        # the same picture against another seed's PNG: the comparison must fail
        pic, bound = drawn(res)
        if pic is not None:
            wrong = term_images.mean_abs_error(pic, *ref2)
            print("# %s: against seed 2's PNG the error is %.2f (bound %g)" % (label, wrong, bound))
            c.check(wrong > bound, label + ": another seed's PNG fails the comparison (%.2f)" % wrong)
            if pic.proto == "symbols":
                corr = term_images.luma_correlation(pic, *ref2)
                print("# %s: luma correlation with seed 2's PNG %.3f" % (label, corr))
                c.check(corr < MIN_CORRELATION, label + ": another seed's PNG fails the correlation (%.3f)" % corr)

    # ---- resize during generation: the picture fits the new window
    out = os.path.join(tmp, "resized.png")
    res = fake_term.run([BIN] + GEN[:-1] + ["200", "-s", "1", "-o", out, "--show"], "sixel", 24, 80, (10, 20),
                        timeout=600, actions=[(b"step 1/", lambda t, p: t.resize(15, 40))])
    c.check(res.term.cols == 40, "resize during generation happened")
    if c.check(os.path.exists(out), "resized: PNG written"):
        judge(c, res, "sixel", read_png(out), "imagine --show, window 80x24 -> 40x15 during generation", 15, 40)

    # ---- Ctrl-C during generation
    for pers, how in (("sixel", b"\x03"), ("kitty", signal.SIGINT), ("plain", b"\x03")):
        d = os.path.join(tmp, "cancel-%s" % pers)
        os.mkdir(d)
        out = os.path.join(d, "x.png")
        res = fake_term.run([BIN] + GEN[:-1] + ["1000", "-s", "1", "-o", out, "--show"], pers, 24, 80, (10, 20),
                            timeout=600, actions=[(b"step 1/", how)])
        label = "Ctrl-C (%s) during imagine --show under %s" % ("typed" if isinstance(how, bytes) else "SIGINT", pers)
        c.check(res.rc == 130, label + ": exit 130", "exit %r" % res.rc)
        c.check(os.listdir(d) == [], label + ": no PNG, no temporary file", os.listdir(d))
        c.check(res.termios_before == res.termios_after, label + ": tty settings as before",
                fake_term.termios_diff(res.termios_before, res.termios_after))
        c.check(res.leaked == b"" and not res.echoed, label + ": nothing left in the input",
                repr(res.leaked))
        c.check(not term_images.pictures(res.term), label + ": no picture drawn")
finally:
    shutil.rmtree(tmp, ignore_errors=True)
c.done()
