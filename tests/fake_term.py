"""fake_term.py — plays a terminal on a pty, for the tests of pictures in the
terminal (issue 13). Python standard library only.

run(argv, personality, ...) starts a command on a new pty of a given size
(rows, columns and the pixel fields of TIOCSWINSZ), becomes the terminal at
the pty's master side and plays one personality: it parses everything the
command writes (escape sequences split across reads included), answers
each query the way that terminal would as soon as the query is complete,
keeps a screen (text, colours, cursor) for the character art, optionally
types keys or sends signals once the output reached a given state, and
after the command exits reports what it left behind: the bytes nobody
read from the pty's input (probe replies leaking into the shell's input
line) and the tty settings before and after.

Personalities (what they answer; anything not listed gets no answer):
  sixel    xterm -ti vt340: DA1 ESC[?63;1;2;4;6;9;15;16;22;28c (4: sixel),
           XTSMGRAPHICS 256 colour registers and 1000x1000 pixels at most,
           XTVERSION XTerm(379), CSI 16t / 14t / 18t, DSR, DA2, OSC 10/11
  kitty    kitty 0.26.5: DA1 ESC[?62;c (no sixel), the kitty graphics
           protocol (query answered OK; transmissions with an id answered
           after their last chunk unless q=1/2, as kitty does), XTVERSION
           kitty(0.26.5), CSI 16t / 14t / 18t, DSR, OSC 10/11; TERM=xterm-kitty
  iterm2   WezTerm: XTVERSION "WezTerm 20240203", DA1 ESC[?65;4;6;18;22c (it
           has sixel too: the ladder must still pick OSC 1337), CSI 16t /
           14t / 18t, DSR, OSC 10/11; TERM_PROGRAM not set (the probe finds it)
  iterm2-env  iTerm2 as its environment names it (TERM_PROGRAM=iTerm.app,
           LC_TERMINAL=iTerm2) answering DA1 ESC[?62;22c and nothing else
  sixel-14t  sixel's DA1 and XTSMGRAPHICS, CSI 14t and 18t but no CSI 16t
           and no XTVERSION (the cell size is the text area over the grid)
  plain    a terminal without pictures: DA1 ESC[?1;2c only; COLORTERM=truecolor
  silent   answers nothing (a dumb serial line, a terminal that drops queries)

Command line (a debugging aid; the tests import the module):
  fake_term.py [-t PERSONALITY] [--size ROWSxCOLS] [--cell WxH] [--read-size N]
               [--timeout S] [--record FILE] -- COMMAND ARGS...
prints the report (queries, replies, exit status, leaks) on stderr and
exits with the command's status.
"""
import base64, codecs, fcntl, os, re, select, signal, struct, subprocess, sys, termios, time, unicodedata

ESC, BEL = 0x1b, 0x07

# Variables that name the terminal in the caller's environment: removed so
# that only the personality speaks.
TERMINAL_VARS = ("TERM", "TERM_PROGRAM", "TERM_PROGRAM_VERSION", "COLORTERM", "TMUX", "TMUX_PANE",
                 "KITTY_WINDOW_ID", "KITTY_PID", "KITTY_INSTALLATION_DIR", "WEZTERM_EXECUTABLE",
                 "WEZTERM_PANE", "WEZTERM_UNIX_SOCKET", "ITERM_SESSION_ID", "ITERM_PROFILE",
                 "LC_TERMINAL", "LC_TERMINAL_VERSION", "VTE_VERSION", "STY", "WINDOWID",
                 "KONSOLE_VERSION", "WT_SESSION", "TERMUX_VERSION", "PETREL_GRAPHICS", "NO_COLOR",
                 "COLUMNS", "LINES", "DISPLAY")


class Seq:
    """One escape sequence: kind is CSI, DCS, OSC, APC, PM, SOS or ESC.
    CSI: prefix ('?', '>', '=', '<' or ''), params (str), inter (str), final (str).
    String sequences: body (bytes between the introducer and ST / BEL).
    ESC: inter + final. raw: the whole sequence; offset: where it began in the
    output stream."""
    __slots__ = ("kind", "prefix", "params", "inter", "final", "body", "raw", "offset")

    def __init__(self, kind, raw, offset, body=b"", prefix="", params="", inter="", final=""):
        self.kind, self.raw, self.offset, self.body = kind, raw, offset, body
        self.prefix, self.params, self.inter, self.final = prefix, params, inter, final

    def __repr__(self):
        return "Seq(%s %r @%d)" % (self.kind, self.raw[:60], self.offset)


class Parser:
    """ECMA-48 / xterm stream parser, fed in pieces of any size: calls
    on_text(bytes) for plain text and controls, on_seq(Seq) for each complete
    escape sequence. tmux's DCS passthrough (ESC P tmux; ... ESC \\ with its
    ESCs doubled) is unwrapped and its content parsed as if written directly
    (seq.raw keeps the wrapper: seq.tmux is True)."""
    GROUND, ESC_, CSI, STR, STR_ESC = range(5)
    STRING_KINDS = {ord("P"): "DCS", ord("]"): "OSC", ord("_"): "APC", ord("^"): "PM", ord("X"): "SOS"}

    def __init__(self, on_text, on_seq):
        self.on_text, self.on_seq = on_text, on_seq
        self.state, self.buf, self.start, self.pos, self.kind = self.GROUND, bytearray(), 0, 0, None

    def feed(self, data):
        i, n = 0, len(data)
        while i < n:
            st = self.state
            if st == self.GROUND:
                j = data.find(b"\x1b", i)
                if j < 0: j = n
                if j > i: self.on_text(bytes(data[i:j]))
                self.pos += j - i; i = j
                if i < n:
                    self.state, self.start, self.buf = self.ESC_, self.pos, bytearray(b"\x1b")
                    i += 1; self.pos += 1
            elif st == self.ESC_:
                b = data[i]; i += 1; self.pos += 1
                self.buf.append(b)
                if b == ord("["):
                    self.state = self.CSI
                elif b in self.STRING_KINDS:
                    self.state, self.kind = self.STR, self.STRING_KINDS[b]
                elif b == ESC:  # ESC ESC: the first one is dropped
                    self.buf = bytearray(b"\x1b"); self.start = self.pos - 1
                elif 0x20 <= b <= 0x2f:
                    pass  # intermediate: wait for the final byte
                else:
                    raw = bytes(self.buf); self.state = self.GROUND
                    self.on_seq(Seq("ESC", raw, self.start, inter=raw[1:-1].decode("latin-1"),
                                    final=chr(b)))
            elif st == self.CSI:
                b = data[i]; i += 1; self.pos += 1
                if b == ESC:  # an unfinished CSI is abandoned
                    self.state, self.start, self.buf = self.ESC_, self.pos - 1, bytearray(b"\x1b")
                elif b < 0x20:
                    self.on_text(bytes([b]))  # controls inside CSI are executed
                else:
                    self.buf.append(b)
                    if 0x40 <= b <= 0x7e:
                        raw = bytes(self.buf); self.state = self.GROUND
                        m = re.match(rb"\x1b\[([<=>?]?)([0-9;:]*)([ -/]*)(.)$", raw, re.S)
                        if m:
                            p, params, inter, final = (g.decode("latin-1") for g in m.groups())
                        else:
                            p, params, inter, final = "", raw[2:-1].decode("latin-1"), "", chr(b)
                        self.on_seq(Seq("CSI", raw, self.start, prefix=p, params=params, inter=inter, final=final))
            elif st == self.STR:
                if self.kind == "OSC":
                    j = min([k for k in (data.find(b"\x1b", i), data.find(b"\x07", i)) if k >= 0], default=-1)
                else:
                    j = data.find(b"\x1b", i)
                if j < 0: j = n
                self.buf += data[i:j]; self.pos += j - i; i = j
                if i < n:
                    b = data[i]; i += 1; self.pos += 1; self.buf.append(b)
                    if b == BEL:
                        self._end_string(1)
                    else:
                        self.state = self.STR_ESC
            else:  # STR_ESC: an ESC inside a string
                b = data[i]
                if b == ord("\\"):
                    i += 1; self.pos += 1; self.buf.append(b)
                    self._end_string(2)
                elif b == ESC and self.kind == "DCS" and bytes(self.buf[2:7]) == b"tmux;":
                    i += 1; self.pos += 1; self.buf.append(b)  # a doubled ESC of tmux passthrough
                    self.state = self.STR
                else:  # ESC + anything else ends the string (ECMA-48) and starts a sequence
                    raw = bytes(self.buf[:-1])
                    self.state = self.GROUND
                    self.on_seq(Seq(self.kind, raw, self.start, body=raw[2:]))
                    self.state, self.start, self.buf = self.ESC_, self.pos - 1, bytearray(b"\x1b")

    def _end_string(self, term_len):
        raw = bytes(self.buf)
        self.state = self.GROUND
        body = raw[2:len(raw) - term_len]
        if self.kind == "DCS" and body.startswith(b"tmux;"):
            inner = body[5:].replace(b"\x1b\x1b", b"\x1b")
            start = self.start
            sub = Parser(self.on_text, lambda s: (setattr(s, "offset", start), self.on_seq(s)))
            sub.feed(inner)
            return
        self.on_seq(Seq(self.kind, raw, self.start, body=body))


def xterm_color(n):
    """The xterm 256-colour palette as RGB."""
    base = [(0, 0, 0), (205, 0, 0), (0, 205, 0), (205, 205, 0), (0, 0, 238), (205, 0, 205), (0, 205, 205),
            (229, 229, 229), (127, 127, 127), (255, 0, 0), (0, 255, 0), (255, 255, 0), (92, 92, 255),
            (255, 0, 255), (0, 255, 255), (255, 255, 255)]
    if n < 16: return base[n]
    if n < 232:
        n -= 16
        lv = [0, 95, 135, 175, 215, 255]
        return (lv[n // 36], lv[n // 6 % 6], lv[n % 6])
    v = 8 + 10 * (n - 232)
    return (v, v, v)


class Screen:
    """A character grid with scrollback: enough of a terminal to see where
    text and character art land, with their colours. Colours are RGB tuples
    or None (the default); wide characters take two cells."""

    def __init__(self, rows, cols):
        self.rows, self.cols = rows, cols
        self.scrollback = []
        self.grid = [self._blank() for _ in range(rows)]
        self.r = self.c = 0
        self.wrap_pending = False
        self.fg = self.bg = None
        self.reverse = False
        self.saved = (0, 0)
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.sgr_kinds = {}  # "38;2", "48;2", "38;5", "48;5", "16": how often each colour form was used

    def resize(self, rows, cols):
        for line in self.scrollback + self.grid:
            del line[cols:]
            line.extend([" ", None, None] for _ in range(cols - len(line)))
        self.cols = cols
        while len(self.grid) > rows:  # xterm keeps the cursor's line: the top goes to the scrollback
            if self.r > 0: self.scrollback.append(self.grid.pop(0)); self.r -= 1
            else: self.grid.pop()
        while len(self.grid) < rows: self.grid.append(self._blank())
        self.rows = rows
        self.r, self.c = min(self.r, rows - 1), min(self.c, cols - 1)

    def _blank(self):
        return [[" ", None, None] for _ in range(self.cols)]

    def lines(self):
        """Every line, scrollback first, as lists of [char, fg, bg]."""
        return self.scrollback + self.grid

    def text(self):
        return "\n".join("".join(c[0] for c in line).rstrip() for line in self.lines())

    def _linefeed(self):
        if self.r == self.rows - 1:
            self.scrollback.append(self.grid.pop(0)); self.grid.append(self._blank())
        else:
            self.r += 1

    def put_text(self, data):
        for ch in self.decoder.decode(data):
            o = ord(ch)
            if o < 0x20 or o == 0x7f:
                self.wrap_pending = False if o in (8, 10, 11, 12, 13) else self.wrap_pending
                if o == 13: self.c = 0
                elif o in (10, 11, 12): self._linefeed()
                elif o == 8: self.c = max(0, self.c - 1)
                elif o == 9: self.c = min(self.cols - 1, (self.c // 8 + 1) * 8)
                continue
            if unicodedata.combining(ch): continue
            w = 2 if unicodedata.east_asian_width(ch) in "WF" else 1
            if self.wrap_pending or self.c + w > self.cols:
                self.c = 0; self._linefeed(); self.wrap_pending = False
            fg, bg = (self.bg, self.fg) if self.reverse else (self.fg, self.bg)
            self.grid[self.r][self.c] = [ch, fg, bg]
            if w == 2: self.grid[self.r][self.c + 1] = ["", fg, bg]
            self.c += w
            if self.c >= self.cols: self.c = self.cols - 1; self.wrap_pending = True

    def _sgr(self, params):
        ps = [p for p in re.split("[;]", params)] if params else ["0"]
        i = 0
        while i < len(ps):
            p = ps[i]
            if ":" in p:  # 38:2::r:g:b / 38:5:n
                sub = [int(x) if x else 0 for x in p.split(":")]
                if sub[0] in (38, 48) and len(sub) >= 3:
                    rgb = xterm_color(sub[2]) if sub[1] == 5 else tuple(sub[-3:])
                    kind = "%d;%d" % (sub[0], sub[1])
                    self.sgr_kinds[kind] = self.sgr_kinds.get(kind, 0) + 1
                    if sub[0] == 38: self.fg = rgb
                    else: self.bg = rgb
                i += 1; continue
            v = int(p) if p else 0
            if v == 0: self.fg = self.bg = None; self.reverse = False
            elif v == 7: self.reverse = True
            elif v == 27: self.reverse = False
            elif 30 <= v <= 37 or 90 <= v <= 97:
                self.fg = xterm_color(v - 30 if v < 90 else v - 82); self.sgr_kinds["16"] = self.sgr_kinds.get("16", 0) + 1
            elif 40 <= v <= 47 or 100 <= v <= 107:
                self.bg = xterm_color(v - 40 if v < 100 else v - 92); self.sgr_kinds["16"] = self.sgr_kinds.get("16", 0) + 1
            elif v == 39: self.fg = None
            elif v == 49: self.bg = None
            elif v in (38, 48) and i + 1 < len(ps):
                mode = int(ps[i + 1] or 0)
                if mode == 5 and i + 2 < len(ps):
                    rgb = xterm_color(int(ps[i + 2] or 0)); i += 2
                elif mode == 2 and i + 4 < len(ps):
                    rgb = tuple(int(x or 0) for x in ps[i + 2:i + 5]); i += 4
                else:
                    i += 1; rgb = None
                kind = "%d;%d" % (v, mode)
                self.sgr_kinds[kind] = self.sgr_kinds.get(kind, 0) + 1
                if v == 38: self.fg = rgb
                else: self.bg = rgb
            i += 1

    def apply(self, seq):
        if seq.kind == "ESC":
            if seq.final == "7": self.saved = (self.r, self.c)
            elif seq.final == "8": self.r, self.c = self.saved
            elif seq.final == "D": self._linefeed()
            elif seq.final == "E": self.c = 0; self._linefeed()
            elif seq.final == "M": self.r = max(0, self.r - 1)
            return
        if seq.kind != "CSI" or seq.prefix or seq.inter: return
        f = seq.final
        nums = [int(x) if x.isdigit() else 0 for x in seq.params.split(";")] if seq.params else []
        n = max(1, nums[0]) if nums else 1
        self.wrap_pending = False
        if f == "m": self._sgr(seq.params)
        elif f == "A": self.r = max(0, self.r - n)
        elif f in "Be": self.r = min(self.rows - 1, self.r + n)
        elif f in "Ca": self.c = min(self.cols - 1, self.c + n)
        elif f == "D": self.c = max(0, self.c - n)
        elif f == "E": self.r = min(self.rows - 1, self.r + n); self.c = 0
        elif f == "F": self.r = max(0, self.r - n); self.c = 0
        elif f in "G`": self.c = min(self.cols - 1, n - 1)
        elif f == "d": self.r = min(self.rows - 1, n - 1)
        elif f in "Hf":
            self.r = min(self.rows - 1, max(1, nums[0] if nums else 1) - 1)
            self.c = min(self.cols - 1, max(1, nums[1] if len(nums) > 1 else 1) - 1)
        elif f == "K":
            mode = nums[0] if nums else 0
            lo, hi = {0: (self.c, self.cols), 1: (0, self.c + 1), 2: (0, self.cols)}.get(mode, (0, 0))
            for x in range(lo, hi): self.grid[self.r][x] = [" ", None, self.bg]
        elif f == "J":
            mode = nums[0] if nums else 0
            rows = {0: range(self.r + 1, self.rows), 1: range(0, self.r), 2: range(self.rows)}.get(mode, ())
            for y in rows: self.grid[y] = self._blank()
            if mode == 0:
                for x in range(self.c, self.cols): self.grid[self.r][x] = [" ", None, None]
        elif f == "s": self.saved = (self.r, self.c)
        elif f == "u": self.r, self.c = self.saved


def _kitty_keys(body):
    """The control keys of a kitty graphics command body (after the G)."""
    ctrl, _, payload = body[1:].partition(b";")
    keys = {}
    for kv in ctrl.split(b","):
        k, eq, v = kv.partition(b"=")
        if eq: keys[k.decode("latin-1")] = v.decode("latin-1")
    return keys, payload


class Personality:
    def __init__(self, name, env, da1=None, xtversion=None, xtsm=False, kitty=False, cell_reports=False,
                 dsr=False, osc_colors=False, da2=None, no_16t=False):
        self.name, self.env, self.da1, self.xtversion, self.xtsm = name, env, da1, xtversion, xtsm
        self.kitty, self.cell_reports, self.dsr, self.osc_colors, self.da2 = kitty, cell_reports, dsr, osc_colors, da2
        self.no_16t = no_16t  # answers CSI 14t and 18t but not 16t (older xterm, some VTEs)


PERSONALITIES = {
    "sixel": Personality("sixel", {"TERM": "xterm-256color"}, da1=b"\x1b[?63;1;2;4;6;9;15;16;22;28c",
                         xtversion=b"XTerm(379)", xtsm=True, cell_reports=True, dsr=True, osc_colors=True,
                         da2=b"\x1b[>41;379;0c"),
    "kitty": Personality("kitty", {"TERM": "xterm-kitty", "COLORTERM": "truecolor"}, da1=b"\x1b[?62;c",
                         xtversion=b"kitty(0.26.5)", kitty=True, cell_reports=True, dsr=True, osc_colors=True,
                         da2=b"\x1b[>1;4000;26c"),
    "iterm2": Personality("iterm2", {"TERM": "xterm-256color", "COLORTERM": "truecolor"},
                          da1=b"\x1b[?65;4;6;18;22c", xtversion=b"WezTerm 20240203", cell_reports=True,
                          dsr=True, osc_colors=True, da2=b"\x1b[>1;277;0c"),
    "iterm2-env": Personality("iterm2-env", {"TERM": "xterm-256color", "COLORTERM": "truecolor",
                                             "TERM_PROGRAM": "iTerm.app", "LC_TERMINAL": "iTerm2"},
                              da1=b"\x1b[?62;22c"),
    "sixel-14t": Personality("sixel-14t", {"TERM": "xterm-256color"}, da1=b"\x1b[?63;1;2;4;6;9;15;16;22;28c",
                             xtsm=True, cell_reports=True, no_16t=True),
    "plain": Personality("plain", {"TERM": "xterm-256color", "COLORTERM": "truecolor"}, da1=b"\x1b[?1;2c"),
    "silent": Personality("silent", {"TERM": "xterm-256color"}),
}


class Terminal:
    """The master side of the pty: parses the output, answers queries, keeps
    the screen and every sequence seen."""

    def __init__(self, personality, rows, cols, cell_w, cell_h):
        self.p = PERSONALITIES[personality] if isinstance(personality, str) else personality
        self.rows, self.cols, self.cell_w, self.cell_h = rows, cols, cell_w, cell_h
        self.screen = Screen(rows, cols)
        self.output = bytearray()
        self.seqs = []       # every escape sequence, in order
        self.answered = []   # (query raw bytes, reply bytes)
        self.pending = bytearray()  # replies not yet written to the master
        self.kitty_chunked = None   # first chunk's keys of a kitty transfer in progress
        self.kitty_data = bytearray()
        self.text = bytearray()  # everything but the escape sequences (unwrapped)
        self.parser = Parser(self._on_text, self._on_seq)
        self.master = None  # the pty's master fd while a run is on

    def resize(self, rows, cols):
        """The window changes size: the pty's (SIGWINCH to the foreground
        group), the screen's and what CSI 14t / 16t / 18t answer."""
        self.rows, self.cols = rows, cols
        self.screen.resize(rows, cols)
        if self.master is not None:
            set_winsize(self.master, rows, cols, cols * self.cell_w, rows * self.cell_h)

    def feed(self, data):
        self.output += data
        self.parser.feed(data)

    def _on_text(self, data):
        self.text += data
        self.screen.put_text(data)

    def _reply(self, seq, data):
        self.answered.append((seq.raw, data))
        self.pending += data

    def _on_seq(self, seq):
        self.seqs.append(seq)
        self.screen.apply(seq)
        p = self.p
        if seq.kind == "CSI":
            q = (seq.prefix, seq.params, seq.inter, seq.final)
            if q[0] == "" and q[2] == "" and q[3] == "c" and q[1] in ("", "0"):
                if p.da1: self._reply(seq, p.da1)
            elif q[0] == ">" and q[3] == "c" and q[1] in ("", "0"):
                if p.da2: self._reply(seq, p.da2)
            elif q[0] == ">" and q[3] == "q" and q[1] in ("", "0"):
                if p.xtversion: self._reply(seq, b"\x1bP>|" + p.xtversion + b"\x1b\\")
            elif q[0] == "?" and q[3] == "S" and p.xtsm:
                a = (seq.params.split(";") + ["", "", ""])[:3]
                item, action = a[0], a[1]
                if item == "1" and action in ("1", "4"): self._reply(seq, b"\x1b[?1;0;256S")
                elif item == "1" and action in ("2", "3"): self._reply(seq, b"\x1b[?1;0;256S")
                elif item == "2" and action in ("1", "4"): self._reply(seq, b"\x1b[?2;0;1000;1000S")
                elif item == "2" and action in ("2", "3"): self._reply(seq, b"\x1b[?2;0;1000;1000S")
                else: self._reply(seq, ("\x1b[?%s;1;0S" % item).encode())  # error in item
            elif q[0] == "" and q[3] == "t" and p.cell_reports:
                if q[1] == "16" and not p.no_16t: self._reply(seq, b"\x1b[6;%d;%dt" % (self.cell_h, self.cell_w))
                elif q[1] in ("14", "14;2") : self._reply(seq, b"\x1b[4;%d;%dt" % (self.rows * self.cell_h, self.cols * self.cell_w))
                elif q[1] == "18": self._reply(seq, b"\x1b[8;%d;%dt" % (self.rows, self.cols))
            elif q[0] == "" and q[3] == "n" and p.dsr:
                if q[1] == "6": self._reply(seq, b"\x1b[%d;%dR" % (self.screen.r + 1, self.screen.c + 1))
                elif q[1] == "5": self._reply(seq, b"\x1b[0n")
        elif seq.kind == "OSC" and p.osc_colors:
            m = re.match(rb"(1[01]);\?$", seq.body)
            if m:
                col = b"ffff/ffff/ffff" if m.group(1) == b"10" else b"0000/0000/0000"
                self._reply(seq, b"\x1b]" + m.group(1) + b";rgb:" + col + b"\x1b\\")
        elif seq.kind == "APC" and seq.body[:1] == b"G" and p.kitty:
            self._kitty(seq)

    def _kitty(self, seq):
        """kitty's answers: a=q always (unless q=2); a transmission (a=t, T, p,
        the default t) with an id i= or I= after its last chunk, OK unless
        q=1 or q=2, an error unless q=2; deletions never."""
        keys, payload = _kitty_keys(seq.body)
        if self.kitty_chunked is not None:  # a continuation chunk: only m= (and q=) matter
            first = self.kitty_chunked
            self.kitty_data += payload
            if keys.get("m", "0") == "1": return
            keys = dict(first, **{k: v for k, v in keys.items() if k in ("q",)})
            payload, self.kitty_chunked = bytes(self.kitty_data), None
        elif keys.get("m") == "1":
            self.kitty_chunked, self.kitty_data = keys, bytearray(payload)
            return
        action = keys.get("a", "t")
        if action == "d": return
        ident = ("i=" + keys["i"]) if "i" in keys else ("I=" + keys["I"]) if "I" in keys else None
        if ident is None or keys.get("q") == "2": return
        err = None
        if action in ("q", "t", "T") and keys.get("t", "d") == "d":
            try:
                data = base64.b64decode(payload, validate=True)
                if keys.get("o") == "z":
                    import zlib
                    data = zlib.decompress(data)
                f = keys.get("f", "32")
                if f in ("24", "32"):
                    need = int(keys.get("s", "0")) * int(keys.get("v", "0")) * (3 if f == "24" else 4)
                    if need == 0 or len(data) < need: err = "ENODATA:Insufficient image data"
                elif f == "100":
                    if data[:8] != b"\x89PNG\r\n\x1a\n": err = "EBADPNG:Not a PNG"
                else:
                    err = "EINVAL:Unknown image format"
            except Exception as e:  # bad base64 / zlib
                err = "EINVAL:%s" % type(e).__name__
        if err is None and (keys.get("q") == "1" and action != "q"): return
        self._reply(seq, b"\x1b_G" + ident.encode() + b";" + (err or "OK").encode() + b"\x1b\\")


class Result:
    """What a run left: rc (exit status, negative: killed by that signal;
    None: timed out and killed), output (every byte written to the tty),
    term (the Terminal: seqs, answered, screen), leaked (bytes left unread in
    the pty's input after exit), echoed (did the tty echo any input back),
    termios_before / termios_after (tcgetattr of the pty), timed_out,
    stderr (bytes, when stderr went to a pipe), elapsed (seconds)."""

    def __repr__(self):
        return "Result(rc=%r, %d bytes out, %d answered, leaked=%r)" % (
            self.rc, len(self.output), len(self.term.answered), self.leaked)


def clean_env(personality, extra=None):
    p = PERSONALITIES[personality] if isinstance(personality, str) else personality
    env = {k: v for k, v in os.environ.items() if k not in TERMINAL_VARS}
    # A terminal that answers ends the probe with its DA1 reply, so a long
    # timeout costs nothing there and keeps a loaded machine (ASan, ctest -j)
    # from turning a slow answer into a wrong protocol; the silent one keeps
    # petrel's default, which is what it tests.
    if p.name != "silent":
        env["PETREL_PROBE_TIMEOUT_MS"] = "60000"
    env.update(p.env)
    env.update(extra or {})
    return {k: v for k, v in env.items() if v is not None}


def set_winsize(fd, rows, cols, xpix, ypix):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, xpix, ypix))


def run(argv, personality="sixel", rows=24, cols=80, cell=(10, 20), pixel_fields=True, env=None,
        cwd=None, timeout=120, read_size=65536, actions=(), stderr_pipe=False, stdin_devnull=False):
    """Run argv on a fresh pty playing `personality`; see the module doc.
    cell: (width, height) of a cell in pixels, as CSI 16t answers it and
    (pixel_fields) TIOCSWINSZ's pixel fields tell it. env: extra variables
    (None values remove). read_size: the most bytes read at once (1 splits
    every query across reads). actions: [(wait, do)] in order: wait is bytes
    (the output contains it after the previous action), a callable(Terminal)
    -> bool, or None; do is bytes (typed) or a signal number (sent to the
    pty's foreground process group) or a callable(Terminal, proc), e.g.
    lambda t, p: t.resize(15, 40)."""
    term = Terminal(personality, rows, cols, cell[0], cell[1])
    master, slave = os.openpty()
    term.master = master
    set_winsize(slave, rows, cols, cols * cell[0] if pixel_fields else 0, rows * cell[1] if pixel_fields else 0)
    before = termios.tcgetattr(slave)
    res = Result()
    res.term, res.termios_before, res.stderr, res.timed_out = term, before, None, False

    def child_setup():
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    t0 = time.monotonic()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL if stdin_devnull else slave, stdout=slave,
                            stderr=subprocess.PIPE if stderr_pipe else slave, env=clean_env(personality, env),
                            cwd=cwd, start_new_session=True, preexec_fn=child_setup, close_fds=True)
    err_chunks = []
    actions = list(actions)
    mark = 0  # output offset where the next action's wait begins
    sentinel = b"<<fake_term:end:%d>>" % os.getpid()
    try:
        fl = fcntl.fcntl(master, fcntl.F_GETFL)
        fcntl.fcntl(master, fcntl.F_SETFL, fl | os.O_NONBLOCK)
        exited_at, post, unsent, marker = None, bytearray(), b"", -1
        while True:
            now = time.monotonic()
            if now - t0 > timeout and exited_at is None:
                res.timed_out = True
                break
            if exited_at is not None and now - exited_at > 30:
                break  # the sentinel never came back: keep what was read
            fds = [master] + ([proc.stderr] if stderr_pipe and proc.stderr and not proc.stderr.closed else [])
            r, _, _ = select.select(fds, [], [], 0.05)
            if master in r:
                try:
                    data = os.read(master, read_size)
                except OSError:  # EAGAIN, or EIO once no one holds the slave
                    data = b""
                if data and exited_at is None:
                    term.feed(data)
                elif data:  # after the exit: the child's last bytes, then the sentinel
                    post += data
                    k = post.find(sentinel)
                    if k >= 0:
                        term.feed(bytes(post[:k]))
                        post = None
                        break
            if stderr_pipe and proc.stderr in r:
                chunk = os.read(proc.stderr.fileno(), 65536)
                if chunk: err_chunks.append(chunk)
                else: proc.stderr.close()
            if term.pending and exited_at is None:
                try:
                    n = os.write(master, bytes(term.pending))
                    del term.pending[:n]
                except BlockingIOError:
                    pass
            while actions and exited_at is None:
                wait, do = actions[0]
                if wait is None: hit = True
                elif isinstance(wait, bytes):
                    k = term.output.find(wait, mark)
                    hit = k >= 0
                    if hit: mark = k + len(wait)
                else: hit = wait(term)
                if not hit: break
                actions.pop(0)
                if isinstance(do, bytes): os.write(master, do)
                elif isinstance(do, int): os.killpg(os.tcgetpgrp(master), do)
                else: do(term, proc)
            if exited_at is None and proc.poll() is not None:
                exited_at = time.monotonic()
                # everything the child wrote is ahead of the sentinel in the
                # master's queue; written without blocking (the queue may be
                # full of the child's last output, which only this loop drains)
                marker = os.open(os.ttyname(slave), os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY)
                unsent = sentinel
            if exited_at is not None and unsent:
                try:
                    unsent = unsent[os.write(marker, unsent):]
                except BlockingIOError:
                    pass
                if not unsent: os.close(marker); marker = -1
        if post:
            term.feed(bytes(post))
        res.rc = proc.returncode if not res.timed_out else None
        res.elapsed = time.monotonic() - t0
        res.termios_after = termios.tcgetattr(slave)
        # what nobody read: switch the slave to non-canonical (all of it readable) and read it
        raw = termios.tcgetattr(slave)
        raw[3] &= ~(termios.ICANON | termios.ECHO)
        raw[6][termios.VMIN], raw[6][termios.VTIME] = 0, 0
        termios.tcsetattr(slave, termios.TCSANOW, raw)
        leaked = bytearray()
        while True:
            chunk = os.read(slave, 4096)
            if not chunk: break
            leaked += chunk
        res.leaked = bytes(leaked)
        if stderr_pipe and proc.stderr and not proc.stderr.closed:
            proc.stderr.close()
    finally:
        if proc.poll() is None or res.timed_out:
            try: os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError: pass
            proc.wait()
        else:  # the child is gone; nothing of its group may outlive the run
            try: os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError): pass
        os.close(master); os.close(slave)
        if marker >= 0: os.close(marker)
        term.master = None
    if res.timed_out: res.rc = None
    res.output = bytes(term.output)
    res.stderr = b"".join(err_chunks) if stderr_pipe else None
    res.echoed = b"^[" in bytes(term.text)  # ECHOCTL shows ESC as ^[ (sixel data may hold "^[" itself)
    return res


def termios_diff(a, b):
    """Human-readable differences of two tcgetattr lists ('' when equal)."""
    names = ["iflag", "oflag", "cflag", "lflag", "ispeed", "ospeed"]
    out = ["%s %#x -> %#x" % (n, x, y) for n, x, y in zip(names, a[:6], b[:6]) if x != y]
    out += ["cc[%d] %r -> %r" % (i, x, y) for i, (x, y) in enumerate(zip(a[6], b[6])) if x != y]
    return ", ".join(out)


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-t", "--personality", default="sixel", choices=sorted(PERSONALITIES))
    ap.add_argument("--size", default="24x80")
    ap.add_argument("--cell", default="10x20")
    ap.add_argument("--read-size", type=int, default=65536)
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--record")
    ap.add_argument("command", nargs="+")
    a = ap.parse_args(argv)
    rows, cols = map(int, a.size.split("x"))
    cw, ch = map(int, a.cell.split("x"))
    res = run(a.command, a.personality, rows, cols, (cw, ch), timeout=a.timeout, read_size=a.read_size)
    if a.record:
        open(a.record, "wb").write(res.output)
    for q, r in res.term.answered:
        print("answered %r with %r" % (q, r), file=sys.stderr)
    print("exit %r, %d bytes written, %d sequences; left unread in the input: %r; tty settings: %s" % (
        res.rc, len(res.output), len(res.term.seqs), res.leaked,
        termios_diff(res.termios_before, res.termios_after) or "unchanged"), file=sys.stderr)
    return 124 if res.rc is None else res.rc if res.rc >= 0 else 128 - res.rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
