# test_gfx_show.sh — `petrel show`, `petrel info --terminal`, `--graphics`
# and `imagine --show`:
#   - bad input (bad mode in the flag or PETREL_GRAPHICS, no file, a missing,
#     corrupt, truncated or giant file, a directory): one "petrel: " line,
#     exit 2 (usage) or 1 (a file), never a crash; good files still drawn;
#   - stdout not a terminal: auto draws nothing (a note on stderr, exit 0),
#     a named protocol writes its escape codes (checked: sixel raster size,
#     kitty keys and payload, iTerm2 arguments and PNG, symbols' rows);
#   - on a pty (tests/gfx_fake_term.py plays xterm with sixel, kitty, WezTerm,
#     a terminal answering byte by byte and one answering nothing): the
#     protocol chosen, the cell size used, the time a silent terminal
#     costs, and no reply left in the input for the next program to read.
DATA=${PETREL_TEST_DATA:?PETREL_TEST_DATA not set}
HERE=$(cd "$(dirname "$0")" && pwd)
CLI_LIB_NO_MODEL=1 . "$HERE/cli_lib.sh"   # BIN, TMP, ok/bad, expect_exit, one_line_error
check() { # DESCRIPTION -- command... (passes when the command succeeds)
    local what=$1; shift 2
    if "$@"; then ok; else bad "$what"; fi
}
# a known terminal environment: nothing inherited names a terminal
unset TMUX TERM_PROGRAM LC_TERMINAL COLORTERM KITTY_WINDOW_ID WEZTERM_PANE PETREL_GRAPHICS PETREL_PROBE_TIMEOUT_MS
export TERM=xterm-256color COLUMNS=40 LINES=12

# ---- pictures: a 96x64 gradient PNG (written with zlib), broken ones
python3 - "$TMP" <<'EOF'
import struct, sys, zlib
d = sys.argv[1]
def chunk(t, b): return struct.pack(">I", len(b)) + t + b + struct.pack(">I", zlib.crc32(t + b))
def png(w, h, rows, ihdr_w=None, ihdr_h=None):
    raw = b"".join(b"\0" + r for r in rows)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", ihdr_w or w, ihdr_h or h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
w, h = 96, 64
rows = [bytes(v for x in range(w) for v in (x * 255 // (w - 1), y * 255 // (h - 1), 128)) for y in range(h)]
good = png(w, h, rows)
open(d + "/good.png", "wb").write(good)
open(d + "/trunc.png", "wb").write(good[:len(good) // 2])
open(d + "/garbage.png", "wb").write(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4)
open(d + "/giant.png", "wb").write(png(1, 1, [b"\0\0\0"], ihdr_w=60000, ihdr_h=60000))
open(d + "/text.png", "wb").write(b"not a picture at all\n")
open(d + "/empty.png", "wb").write(b"")
EOF

# ---- usage errors: exit 2, one line
expect_exit 0 "show --help" -- "$BIN" show --help
check "show --help documents pipes" -- grep -q "not a terminal" "$TMP/out"
expect_exit 2 "show without files" -- "$BIN" show
one_line_error "show without files"
expect_exit 2 "bad --graphics" -- "$BIN" show --graphics blink "$TMP/good.png"
one_line_error "bad --graphics"
check "bad --graphics names the modes" -- grep -q "auto, sixel, kitty, iterm2, symbols or none" "$TMP/err"
expect_exit 2 "--graphics without value" -- "$BIN" show "$TMP/good.png" --graphics
one_line_error "--graphics without value"
expect_exit 2 "bad PETREL_GRAPHICS" -- env PETREL_GRAPHICS=$'vt\033[31m' "$BIN" show "$TMP/good.png"
one_line_error "bad PETREL_GRAPHICS"
check "bad PETREL_GRAPHICS is not echoed raw" -- bash -c "! grep -q \$'\\033' '$TMP/err'"
expect_exit 0 "--graphics wins over a bad PETREL_GRAPHICS" -- env PETREL_GRAPHICS=bogus "$BIN" show --graphics none "$TMP/good.png"
expect_exit 2 "unknown option" -- "$BIN" show --sixel "$TMP/good.png"
one_line_error "unknown option"

# ---- bad files: exit 1, one line each, no crash
for f in missing.png trunc.png garbage.png giant.png text.png empty.png; do
    expect_exit 1 "show $f" -- "$BIN" show --graphics sixel "$TMP/$f"
    one_line_error "show $f"
    check "show $f: nothing drawn" -- test ! -s "$TMP/out"
done
expect_exit 1 "show a directory" -- "$BIN" show --graphics kitty "$TMP"
one_line_error "show a directory"
# a bad file among good ones: the good ones are drawn, the status says 1
expect_exit 1 "good, bad, good" -- "$BIN" show --graphics none "$TMP/good.png" "$TMP/trunc.png" "$TMP/good.png"
check "good, bad, good: two pictures" -- test "$(grep -c '^\[picture 96x64\]$' "$TMP/out")" -eq 2
one_line_error "good, bad, good"

# ---- stdout not a terminal
expect_exit 0 "auto into a pipe" -- "$BIN" show "$TMP/good.png"
check "auto into a pipe: no bytes on stdout" -- test ! -s "$TMP/out"
one_line_error "auto into a pipe: a note"
expect_exit 1 "auto into a pipe, bad file: still checked" -- "$BIN" show "$TMP/trunc.png"
expect_exit 0 "none" -- "$BIN" show --graphics none "$TMP/good.png"
check "none: one line of text" -- test "$(cat "$TMP/out")" = "[picture 96x64]"
# A named protocol: 40x12 cells from COLUMNS/LINES, 10 rows for the picture,
# cells of 10x20 assumed: 400x200 pixels, the 96x64 fits as 300x200 in 30x10 cells.
expect_exit 0 "sixel into a file" -- "$BIN" show --graphics sixel "$TMP/good.png"
check "sixel: rows made, DCS with the raster size, cursor below" -- python3 - "$TMP/out" <<'EOF'
import sys
b = open(sys.argv[1], "rb").read()
assert b.startswith(b"\n" * 10 + b"\r\033[10A\0337\033Pq\"1;1;300;200#"), b[:40]
assert b.endswith(b"\033\\\0338\033[10B\r"), b[-20:]
EOF
# the sixel decodes (libsixel's sixel2png) to 300x200 (+ band rounding)
if command -v sixel2png >/dev/null; then
    python3 -c "import sys; b=open(sys.argv[1],'rb').read(); s=b.index(b'\033P'); e=b.rindex(b'\033\\\\')+2; open(sys.argv[2],'wb').write(b[s:e])" "$TMP/out" "$TMP/pic.six"
    check "sixel decodes" -- sixel2png -i "$TMP/pic.six" -o "$TMP/six.png"
    check "decoded sixel is 300 wide" -- python3 -c "
import struct,sys; d=open(sys.argv[1],'rb').read(); w,h=struct.unpack('>II',d[16:24]); sys.exit(0 if w==300 and 200<=h<=206 else 1)" "$TMP/six.png"
fi
expect_exit 0 "kitty into a file" -- "$BIN" show --graphics kitty "$TMP/good.png"
check "kitty: keys, chunks and an RGB payload like the PNG" -- python3 - "$TMP/out" <<'EOF'
import base64, re, sys, zlib
b = open(sys.argv[1], "rb").read()
codes = re.findall(rb"\033_G([^;]*);([^\033]*)\033\\", b)
first = codes[0][0].decode()
assert first.startswith("a=T,f=24,o=z,s=300,v=200,") and "q=2" in first and "C=1" in first and "i=" not in first, first
assert all(len(p) <= 4096 for _, p in codes) and (len(codes) == 1 or codes[-1][0] == b"m=0,q=2"), codes[-1][0]
rgb = zlib.decompress(base64.b64decode(b"".join(p for _, p in codes)))
assert len(rgb) == 300 * 200 * 3, len(rgb)
# the scaled gradient keeps the source's mean colour (127.5, 127.5, 128)
means = [sum(rgb[c::3]) / (300 * 200) for c in range(3)]
assert abs(means[0] - 127.5) < 3 and abs(means[1] - 127.5) < 3 and abs(means[2] - 128) < 1.5, means
EOF
expect_exit 0 "iterm2 into a file" -- "$BIN" show --graphics iterm2 "$TMP/good.png"
check "iterm2: OSC 1337 arguments and a 300x200 PNG" -- python3 - "$TMP/out" <<'EOF'
import base64, re, struct, sys
b = open(sys.argv[1], "rb").read()
m = re.search(rb"\0337\033\]1337;File=inline=1;size=(\d+);width=30;height=10;preserveAspectRatio=1:([A-Za-z0-9+/=]+)\a\0338", b)
assert m, b[:80]
png = base64.b64decode(m.group(2))
assert len(png) == int(m.group(1)) and png[:8] == b"\x89PNG\r\n\x1a\n"
assert struct.unpack(">II", png[16:24]) == (300, 200)
EOF
expect_exit 0 "symbols into a file" -- "$BIN" show --graphics symbols "$TMP/good.png"
check "symbols: 10 rows placed by cursor moves, 256 colours for xterm-256color" -- python3 - "$TMP/out" <<'EOF'
import sys
b = open(sys.argv[1], "rb").read()
assert b.startswith(b"\n" * 10 + b"\r\033[10A\0337"), b[:20]
body = b[len(b"\n" * 10 + b"\r\033[10A"):-len(b"\033[10B\r")]
# rows 2..10 each start with DECRC + CSI n B; the last DECRC ends it
assert body.count(b"\0338\033[") == 9 and body.endswith(b"\0338") and b"\n" not in body, body.count(b"\0338")
assert b"38;5;" in body and b"38;2;" not in body
EOF
expect_exit 0 "symbols, truecolor" -- env COLORTERM=truecolor "$BIN" show --graphics symbols "$TMP/good.png"
check "symbols: COLORTERM=truecolor gives 38;2" -- grep -q $'\033\\[38;2;' "$TMP/out"
expect_exit 0 "PETREL_GRAPHICS=kitty" -- env PETREL_GRAPHICS=kitty "$BIN" show "$TMP/good.png"
check "PETREL_GRAPHICS=kitty draws kitty" -- grep -q $'\033_Ga=T' "$TMP/out"

# ---- info --terminal
# no controlling terminal (setsid): nothing to ask
expect_exit 0 "info --terminal (no terminal)" -- setsid -w "$BIN" info --terminal
check "info --terminal: graphics none without a terminal" -- grep -q "^graphics: none$" "$TMP/out"
check "info --terminal: grid from COLUMNS/LINES" -- grep -q "^grid: 40x12 cells$" "$TMP/out"
expect_exit 0 "info --terminal --graphics kitty" -- setsid -w "$BIN" info --terminal --graphics kitty
check "info --terminal --graphics kitty" -- grep -q "^graphics: kitty$" "$TMP/out"
expect_exit 2 "info --terminal --graphics bad" -- "$BIN" info --terminal --graphics bad
one_line_error "info --terminal --graphics bad"
expect_exit 2 "info --graphics without --terminal" -- "$BIN" info --graphics kitty
one_line_error "info --graphics without --terminal"

# ---- on a terminal: the fake one answers as each profile
fake() { # PROFILE -- command...: output in $TMP/tty
    local profile=$1; shift 2
    env -u COLUMNS -u LINES python3 "$HERE/gfx_fake_term.py" "$profile" "$TMP/tty" -- "$@"
}
# after the probe, the shell reads what is waiting in the input: nothing may be
PROBE_THEN_READ='"$0" info --terminal; IFS= read -r -t 0.3 -n 200 x; printf "LEFT:[%s]\n" "$x"'
for profile in xterm:sixel:6x13 kitty:kitty:10x20 iterm2:iterm2:10x20 split:sixel:6x13 silent:symbols:10x20; do
    IFS=: read -r name proto cell <<<"$profile"
    check "$name: exit 0" -- fake "$name" -- bash -c "$PROBE_THEN_READ" "$BIN"
    check "$name: picks $proto" -- grep -qa "graphics: $proto"$'\r' "$TMP/tty"
    check "$name: cell $cell" -- grep -q "^cell: $cell pixels" "$TMP/tty"
    check "$name: no reply left in the input" -- grep -q '^LEFT:\[\]' "$TMP/tty"
done
# the leak check can fail: a DA1 asked by printf and not read leaves its reply
fake xterm -- bash -c 'printf "\033[c"; IFS= read -r -t 0.5 -n 200 x; printf "LEFT:[%q]\n" "$x"'
check "control: an unread reply is seen by the leak check" -- grep -q 'LEFT:\[\$.*63;1;2;4' "$TMP/tty"
# info --terminal asks the terminal even when its own output is piped
check "info --terminal | cat on xterm" -- fake xterm -- bash -c '"$0" info --terminal | cat' "$BIN"
check "info --terminal | cat on xterm: sixel" -- grep -qa "graphics: sixel"$'\r' "$TMP/tty"
# a silent terminal: the probe waits its whole timeout (no upper bound is
# asserted: a loaded machine may take longer to run the rest)
fake silent -- env PETREL_PROBE_TIMEOUT_MS=300 bash -c 's=$EPOCHREALTIME; "$0" info --terminal; e=$EPOCHREALTIME; echo "MS:$(( (${e/./} - ${s/./}) / 1000 ))"' "$BIN"
ms=$(grep -ao 'MS:[0-9]*' "$TMP/tty" | cut -d: -f2)
check "silent terminal: probe gave up after ${ms:-?} ms (at least 300)" -- test "${ms:-0}" -ge 300
# show on the fake xterm: sixel at its cell size (6x13: 22 rows, 286 px high)
check "show on xterm" -- fake xterm -- "$BIN" show "$TMP/good.png"
check "show on xterm: sixel of 429x286" -- grep -qa '"1;1;429;286#' "$TMP/tty"
check "show on kitty" -- fake kitty -- "$BIN" show "$TMP/good.png"
# kitty's cells 10x20: 80x22 cells are 800x440 pixels, the 96x64 fits as 660x440
check "show on kitty: kitty at 10x20 cells" -- grep -qa $'\033_Ga=T,f=24,o=z,s=660,v=440,r=22,' "$TMP/tty"
check "show on silent terminal: symbols" -- fake silent -- env PETREL_PROBE_TIMEOUT_MS=100 "$BIN" show "$TMP/good.png"
check "show on silent terminal: no picture protocol" -- bash -c "! grep -qa -e $'\033P' -e $'\033_Ga=T' -e '1337;File' '$TMP/tty'"

# ---- inside tmux (a private server): tmux answers the probe itself (DA1
# without sixel in 3.3), passthrough is asked of tmux; with it on and the
# outer terminal named by the environment (LC_TERMINAL=iTerm2) that
# terminal's protocol goes out wrapped, with it off: character cells
if command -v tmux >/dev/null; then
    sock="petrel-gfx-$$"
    in_tmux() { # PASSTHROUGH COMMAND: run COMMAND in a tmux window, output in $TMP/tmux
        tmux -L "$sock" set -g allow-passthrough "$1"
        rm -f "$TMP/tmux"
        tmux -L "$sock" new-window -d "$2 >$TMP/tmux.part 2>&1; mv $TMP/tmux.part $TMP/tmux"
        for _ in $(seq 100); do [ -f "$TMP/tmux" ] && break; sleep 0.1; done
    }
    tmux -L "$sock" -f /dev/null new-session -d -x 80 -y 24 "sleep 60"
    in_tmux on "env LC_TERMINAL=iTerm2 $BIN info --terminal"
    check "tmux, passthrough on, in iTerm2: iterm2 wrapped" -- grep -q "^graphics: iterm2$" "$TMP/tmux"
    check "tmux, passthrough on: said" -- grep -q "^tmux: yes, pictures through passthrough$" "$TMP/tmux"
    check "tmux answered XTVERSION" -- grep -q "^version: tmux " "$TMP/tmux"
    in_tmux off "env LC_TERMINAL=iTerm2 $BIN info --terminal"
    check "tmux, passthrough off: symbols" -- grep -q "^graphics: symbols$" "$TMP/tmux"
    check "tmux, passthrough off: said" -- grep -q "^tmux: yes, passthrough off$" "$TMP/tmux"
    # no kitty query inside tmux: tmux takes an APC as the pane's title
    tmux -L "$sock" new-window -d -n probe "$BIN info --terminal >/dev/null; touch $TMP/probed; sleep 10"
    for _ in $(seq 100); do [ -f "$TMP/probed" ] && break; sleep 0.1; done
    title=$(tmux -L "$sock" display -p -t probe '#{pane_title}')
    check "tmux: the probe leaves the pane title alone (got '$title')" -- test -n "$title" -a "${title#Gi=}" = "$title"
    tmux -L "$sock" kill-server
fi

# ---- imagine --show (the tiny SD fixture, one step)
if [ -d "$DATA/sd-tiny/model" ]; then
    expect_exit 2 "imagine --graphics bad" -- "$BIN" imagine -m "$DATA/sd-tiny/model" -p x -o "$TMP/i.png" --graphics vt100
    one_line_error "imagine --graphics bad"
    expect_exit 0 "imagine --show --graphics kitty" -- "$BIN" imagine -m "$DATA/sd-tiny/model" -p "a red circle" \
        --steps 1 -W 64 -H 64 -o "$TMP/i.png" --show --graphics kitty
    check "imagine --show: the PNG is saved" -- test -s "$TMP/i.png"
    check "imagine --show: a kitty picture of the 64x64 image on stdout" -- grep -qa $'\033_Ga=T,f=24,o=z,s=200,v=200,' "$TMP/out"
    expect_exit 0 "imagine --show into a pipe" -- "$BIN" imagine -m "$DATA/sd-tiny/model" -p "a red circle" \
        --steps 1 -W 64 -H 64 -o "$TMP/j.png" --show
    check "imagine --show into a pipe: nothing on stdout" -- test ! -s "$TMP/out"
    check "imagine --show into a pipe: a note" -- grep -q "not a terminal" "$TMP/err"
else
    bad "fixture not found: $DATA/sd-tiny/model"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
