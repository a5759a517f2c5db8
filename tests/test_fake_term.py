"""test_fake_term.py — the terminal harness judged on its own, before it
judges petrel (issue 13): tests/fake_term.py answers each personality's
queries as documented, also when every query arrives one byte a read;
it sees replies left unread in the input, tty settings not restored, keys
and signals delivered at a state of the output; tests/term_images.py
decodes sixel (img2sixel's output, through sixel2png), kitty (raw 24/32-bit,
zlib, PNG, chunked) and iTerm2 (BEL and ST) pictures and character art
back to pictures within a small error of the PNG they came from, and a
wrong picture fails the same comparison by far.
"""
import base64, os, subprocess, sys, tempfile, zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fake_term, png_check, term_images  # noqa: E402

DATA = os.environ.get("PETREL_TEST_DATA", os.path.join(HERE, "data"))
passed = failed = 0


def check(cond, what, detail=""):
    global passed, failed
    if cond:
        passed += 1; print("ok - " + what)
    else:
        failed += 1; print("FAIL - %s%s" % (what, (": " + detail) if detail else ""))


PY = sys.executable
# A program that probes like graphics.h says: every query in one write, DA1
# last, then reads in raw mode until the DA1 reply (or 3 s of silence) and
# prints the replies as hex; argv[1] "split" writes one byte at a time.
PROBE = r'''
import os, re, select, sys, termios, tty
fd = os.open("/dev/tty", os.O_RDWR)
old = termios.tcgetattr(fd)
tty.setraw(fd)
q = (b"\x1b[?1;1;0S\x1b[?2;1;0S\x1b_Gi=31,s=1,v=1,a=q,t=d,f=24;AAAA\x1b\\"
     b"\x1b[>0q\x1b[16t\x1b[14t\x1b[c")
if sys.argv[1:] == ["split"]:
    for b in q: os.write(fd, bytes([b]))
else:
    os.write(fd, q)
got = b""
while not re.search(rb"\x1b\[\?[0-9;]*c", got):
    r, _, _ = select.select([fd], [], [], 3)
    if not r: break
    got += os.read(fd, 1024)
termios.tcsetattr(fd, termios.TCSAFLUSH, old)
print("REPLIES " + got.hex())
'''

EXPECT = {
    "sixel": b"\x1b[?1;0;256S\x1b[?2;0;1000;1000S\x1bP>|XTerm(379)\x1b\\\x1b[6;20;10t\x1b[4;480;800t"
             b"\x1b[?63;1;2;4;6;9;15;16;22;28c",
    "kitty": b"\x1b_Gi=31;OK\x1b\\\x1bP>|kitty(0.26.5)\x1b\\\x1b[6;20;10t\x1b[4;480;800t\x1b[?62;c",
    "iterm2": b"\x1bP>|WezTerm 20240203\x1b\\\x1b[6;20;10t\x1b[4;480;800t\x1b[?65;4;6;18;22c",
    "iterm2-env": b"\x1b[?62;22c",
    "plain": b"\x1b[?1;2c",
    "silent": b"",
}


def replies_of(res):
    k = res.output.find(b"REPLIES ")
    if k < 0: return None
    return bytes.fromhex(res.output[k + 8:res.output.index(b"\n", k)].decode().strip())


def test_personalities():
    with tempfile.TemporaryDirectory() as d:
        probe = os.path.join(d, "probe.py")
        open(probe, "w").write(PROBE)
        for name, want in EXPECT.items():
            for mode, rs in (("whole", 65536), ("split", 1)):
                res = fake_term.run([PY, probe] + (["split"] if mode == "split" else []), name, 24, 80, (10, 20),
                                    read_size=rs, timeout=60)
                got = replies_of(res)
                check(res.rc == 0 and got == want, "%s answers the probe (%s)" % (name, mode),
                      "rc %r, replies %r, want %r" % (res.rc, got, want))
                check(res.leaked == b"" and not res.echoed, "%s (%s): nothing left in the input" % (name, mode),
                      repr(res.leaked))
        # the environment is the personality's, not the caller's
        os.environ["TMUX"] = "/tmp/tmux-0/default,1,0"
        res = fake_term.run([PY, "-c", "import os; print('ENV', os.environ.get('TERM'), os.environ.get('TERM_PROGRAM'),"
                             " os.environ.get('TMUX'))"], "iterm2-env", timeout=60)
        del os.environ["TMUX"]
        check("ENV xterm-256color iTerm.app None" in res.term.screen.text(), "personality's environment",
              res.term.screen.text())


def test_leaks_and_modes():
    # a program that asks and leaves before the reply is read: the reply is
    # echoed on the screen and left in the input, and the harness says so
    res = fake_term.run(["sh", "-c", r"printf '\033[c'; sleep 1"], "sixel", timeout=60)
    check(res.leaked == EXPECT["sixel"][-30:] or res.leaked.endswith(b"28c"), "an unread reply is reported",
          repr(res.leaked))
    check(res.echoed, "an echoed reply is seen (^[ on the screen)")
    res = fake_term.run(["sh", "-c", "stty raw -echo"], "plain", timeout=60)
    diff = fake_term.termios_diff(res.termios_before, res.termios_after)
    check(res.rc == 0 and diff != "", "tty settings left changed are reported", diff)
    res = fake_term.run(["sh", "-c", 'old=$(stty -g); stty raw -echo; stty "$old"'], "plain", timeout=60)
    check(res.termios_before[:3] == res.termios_after[:3], "restored settings compare equal")
    # keys and signals at a state of the output
    res = fake_term.run(["sh", "-c", "echo ready; read x; echo got=$x"], "plain", timeout=60,
                        actions=[(b"ready", b"hello\r")])
    check(res.rc == 0 and "got=hello" in res.term.screen.text(), "typed keys arrive", res.term.screen.text())
    res = fake_term.run(["sh", "-c", "echo ready; sleep 30"], "plain", timeout=60, actions=[(b"ready", b"\x03")])
    check(res.rc == -2, "Ctrl-C typed interrupts the foreground group", repr(res.rc))
    res = fake_term.run(["sh", "-c", "echo ready; read x; stty size"], "plain", timeout=60,
                        actions=[(b"ready", lambda t, p: t.resize(15, 40)), (None, b"\r")])
    check(res.rc == 0 and "15 40" in res.term.screen.text() and res.term.screen.cols == 40,
          "a resize reaches the pty and the screen", res.term.screen.text().strip())
    # a command that exits with the pty's queue full of its last output
    # (a big picture): every byte is read, nothing blocks
    res = fake_term.run([PY, "-c", "import os; os.write(1, b'x' * 300000 + b'END')"], "plain", timeout=60)
    check(res.rc == 0 and len(res.output) == 300003 and res.output.endswith(b"END"),
          "a queue full at exit is read to the end", "%r, %d bytes" % (res.rc, len(res.output)))
    res = fake_term.run(["sleep", "30"], "plain", timeout=1)
    check(res.timed_out and res.rc is None, "a hung command is killed at the timeout")
    # queries split between reads at every byte, in a stream of text
    t = fake_term.Terminal("sixel", 24, 80, 10, 20)
    stream = b"abc\x1b[c\x1b]11;?\x07\x1bP>|x\x1b\\\x1b[16t\x1b[6n\xe2\x96\x80"
    for b in stream: t.feed(bytes([b]))
    check([q for q, _ in t.answered] == [b"\x1b[c", b"\x1b]11;?\x07", b"\x1b[16t", b"\x1b[6n"],
          "a byte-at-a-time stream: every query seen once", repr(t.answered))
    check(t.screen.text().startswith("abc\u2580"), "text around the sequences lands on the screen",
          t.screen.text()[:20])
    # tmux passthrough is unwrapped
    t = fake_term.Terminal("kitty", 24, 80, 10, 20)
    t.feed(b"\x1bPtmux;\x1b\x1b_Gi=7,a=q,s=1,v=1,f=24;AAAA\x1b\x1b\\\x1b\\")
    check(t.answered and t.answered[0][1] == b"\x1b_Gi=7;OK\x1b\\", "tmux passthrough unwrapped", repr(t.answered))


def read_png(path):
    w, h, rgb, _ = png_check.decode(open(path, "rb").read())
    return w, h, rgb


def kitty_stream(w, h, rgb, fmt, compress=False, chunk=4096, ident=5):
    if fmt == "100":
        with tempfile.TemporaryDirectory() as d:
            png_check.write(os.path.join(d, "x.png"), w, h, rgb)
            data = open(os.path.join(d, "x.png"), "rb").read()
        keys = "a=T,f=100,i=%d,q=2" % ident
    else:
        data = rgb if fmt == "24" else b"".join(rgb[i:i + 3] + b"\xff" for i in range(0, len(rgb), 3))
        keys = "a=T,f=%s,s=%d,v=%d,i=%d,q=2" % (fmt, w, h, ident)
    if compress:
        data, keys = zlib.compress(data), keys + ",o=z"
    b64 = base64.b64encode(data)
    parts = [b64[i:i + chunk] for i in range(0, len(b64), chunk)]
    out = b""
    for i, p in enumerate(parts):
        more = "1" if i < len(parts) - 1 else "0"
        head = (keys + ",m=" + more) if i == 0 else "m=" + more
        out += b"\x1b_G" + head.encode() + b";" + p + b"\x1b\\"
    return out


def half_blocks(w, h, rgb, cols):
    """Character art of the image: upper half blocks, fg top pixel, bg bottom."""
    rows = max(1, round(cols * h / w / 2))
    px = term_images.area_scale(w, h, rgb, cols, rows * 2)
    out = b""
    for r in range(rows):
        for c in range(cols):
            top = px[((2 * r) * cols + c) * 3:((2 * r) * cols + c) * 3 + 3]
            bot = px[((2 * r + 1) * cols + c) * 3:((2 * r + 1) * cols + c) * 3 + 3]
            out += b"\x1b[38;2;%d;%d;%dm\x1b[48;2;%d;%d;%dm" % tuple(int(round(v)) for v in top + bot)
            out += "\u2580".encode()
        out += b"\x1b[0m\r\n"
    return out, rows


def test_decoders():
    card, demo = os.path.join(DATA, "pictures", "card-120x90.png"), os.path.join(DATA, "pictures", "demo-128.png")
    cw, ch, crgb = read_png(card)
    dw, dh, drgb = read_png(demo)
    with tempfile.TemporaryDirectory() as d:
        # sixel: img2sixel draws the card at 60 pixels wide; sixel2png decodes it
        six = subprocess.run(["img2sixel", "-w", "60", card], capture_output=True).stdout
        t = fake_term.Terminal("sixel", 24, 80, 10, 20)
        t.feed(b"before\r\n" + six + b"after\r\n")
        pics = term_images.pictures(t)
        ok = len(pics) == 1 and pics[0].proto == "sixel" and (pics[0].w, pics[0].h) == (60, 45)
        check(ok, "sixel: one 60x45 picture decoded", repr(pics))
        if ok:
            e, wrong = term_images.mean_abs_error(pics[0], cw, ch, crgb), term_images.mean_abs_error(pics[0], dw, dh, drgb)
            print("# sixel (img2sixel) vs its PNG: mean abs error %.2f; vs another picture %.2f" % (e, wrong))
            check(e < 10 and wrong > 30, "sixel: right picture close, wrong one far", "%.2f / %.2f" % (e, wrong))
        # kitty: every format, chunked and not, compressed and not
        for fmt, z, chunk in (("24", False, 4096), ("32", True, 4096), ("100", False, 4096), ("24", False, 1 << 20)):
            t = fake_term.Terminal("kitty", 24, 80, 10, 20)
            t.feed(b"x" + kitty_stream(dw, dh, drgb, fmt, z, chunk) + b"y")
            pics = term_images.pictures(t)
            ok = len(pics) == 1 and (pics[0].w, pics[0].h) == (dw, dh)
            e = term_images.mean_abs_error(pics[0], dw, dh, drgb) if ok else -1
            check(ok and e == 0, "kitty f=%s%s, %d chunks: decoded exactly" % (
                fmt, " o=z" if z else "", len(pics[0].info["chunks"]) if ok else 0), "%r %.2f" % (pics, e))
            check(t.answered == [], "kitty q=2: no answer to a transmission", repr(t.answered))
        t = fake_term.Terminal("kitty", 24, 80, 10, 20)
        t.feed(kitty_stream(dw, dh, drgb, "24").replace(b",q=2", b""))
        check(len(t.answered) == 1 and t.answered[0][1] == b"\x1b_Gi=5;OK\x1b\\",
              "kitty without q: answered once after the last chunk, as kitty does", repr(t.answered))
        # iTerm2, ended by BEL and by ST
        png_check.write(os.path.join(d, "c.png"), cw, ch, crgb)
        data = open(os.path.join(d, "c.png"), "rb").read()
        for end in (b"\x07", b"\x1b\\"):
            t = fake_term.Terminal("iterm2", 24, 80, 10, 20)
            t.feed(b"\x1b]1337;File=inline=1;size=%d;width=12;height=5:" % len(data) + base64.b64encode(data) + end)
            pics = term_images.pictures(t)
            ok = len(pics) == 1 and pics[0].proto == "iterm2" and term_images.mean_abs_error(pics[0], cw, ch, crgb) == 0
            check(ok, "iTerm2 OSC 1337 ended by %r: decoded exactly" % end, repr(pics))
        # character art: half blocks of the demo picture, 32 cells wide
        art, rows = half_blocks(dw, dh, drgb, 32)
        t = fake_term.Terminal("plain", 24, 80, 10, 20)
        t.feed(b"$ petrel show x.png\r\n" + art + b"$ ")
        pic = term_images.cell_art(t.screen)
        ok = pic is not None and (pic.w, pic.h) == (32, rows) and pic.info["symbols"] == 32 * rows
        check(ok, "character art: a %dx%d block of symbols found" % (32, rows), repr(pic))
        if ok:
            e, wrong = term_images.mean_abs_error(pic, dw, dh, drgb), term_images.mean_abs_error(pic, cw, ch, crgb)
            print("# half-block art vs its PNG: mean abs error %.2f; vs another picture %.2f" % (e, wrong))
            check(e < 3 and wrong > 30, "character art: right picture close, wrong one far", "%.2f / %.2f" % (e, wrong))
        check(t.screen.sgr_kinds.get("38;2", 0) == 32 * rows, "SGR colour forms counted", repr(t.screen.sgr_kinds))


test_personalities()
test_leaks_and_modes()
test_decoders()
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
