#!/usr/bin/env bash
# test_tui_studio_xterm.sh — the studio's pictures among ncurses' cells in
# a real sixel terminal: xterm -ti vt340 on a virtual X display (Xvfb),
# white background, petrel driven through tests/tty_relay.py (keys from a
# FIFO). Screenshots of the xterm window (ImageMagick's import) check
# ui/picture.c's rules where they matter most, with sixel pixels that the
# terminal keeps apart from its text:
#   the finished picture shows in its slot (the studio's right half);
#   switching to the chat leaves no stale pixels there (erased, repainted);
#   switching back sends it again; the help overlay hides it and closing
#   the overlay brings it back; the app quits with status 0.
# Waits are for files with deadlines; no duration is asserted.
# PETREL_SCREENS=DIR keeps the screenshots.
BIN=${PETREL_BIN:?PETREL_BIN not set}
SRC=${PETREL_SOURCE_DIR:?PETREL_SOURCE_DIR not set}
TMP=$(mktemp -d)
passed=0 failed=0
ok() { passed=$((passed + 1)); echo "ok - $*"; }
bad() { failed=$((failed + 1)); echo "FAIL - $*"; }
check() { local d=$1; shift; if "$@"; then ok "$d"; else bad "$d"; fi; }
for tool in Xvfb xterm import python3; do
    command -v "$tool" >/dev/null || { echo "$tool not found (tools/setup.sh --test)"; echo "0 passed, 1 failed"; exit 1; }
done
SCALE=1
grep -q __asan_init "$BIN" 2>/dev/null && SCALE=10

n=$((450 + $$ % 400))
while [ -e "/tmp/.X11-unix/X$n" ] || [ -e "/tmp/.X$n-lock" ]; do n=$((n + 1)); done
Xvfb ":$n" -screen 0 1024x768x24 -nolisten tcp >/dev/null 2>&1 &
xvfb=$!
xterm_pid=""
cleanup() {
    [ -n "$xterm_pid" ] && kill "$xterm_pid" 2>/dev/null
    kill "$xvfb" 2>/dev/null
    wait 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT
for _ in $(seq 50); do [ -e "/tmp/.X11-unix/X$n" ] && break; sleep 0.1; done
export DISPLAY=":$n"
unset TMUX TERM_PROGRAM LC_TERMINAL COLORTERM KITTY_WINDOW_ID WEZTERM_PANE PETREL_GRAPHICS
# xterm always answers DA1, which ends the probe: a long timeout costs nothing
# and a loaded machine cannot turn a slow answer into a missed sixel
export PETREL_PROBE_TIMEOUT_MS=60000
mkdir -p "$TMP/data/petrel/models"
[ -n "${PETREL_SMOLLM2:-}" ] && ln -s "$PETREL_SMOLLM2" "$TMP/data/petrel/models/"
mkfifo "$TMP/keys"
cat >"$TMP/run.sh" <<EOF
echo "\$WINDOWID" >"$TMP/window"
XDG_DATA_HOME="$TMP/data" HOME="$TMP" LANG=C.UTF-8 python3 "$SRC/tests/tty_relay.py" "$TMP/keys" "$BIN"
echo \$? >"$TMP/status"
sleep 600
EOF
xterm -ti vt340 -geometry 80x24 -fa Monospace -fs 10 -bg white -fg black -e bash "$TMP/run.sh" &
xterm_pid=$!
keys() { printf "$1" >"$TMP/keys"; }
wait_file() { local i; for ((i = 0; i < $2 * 10 * SCALE; i++)); do [ -s "$1" ] && return 0; sleep 0.1; done; return 1; }
shot() {
    import -window "$(cat "$TMP/window")" "PNG24:$TMP/$1.png" 2>/dev/null
    [ -n "${PETREL_SCREENS:-}" ] && cp "$TMP/$1.png" "$PETREL_SCREENS/xterm-$1.png"
    return 0
}
# Share (percent) of the picture slot's area (the studio's right half, rows
# 3..15; with "left": columns 2..24, where the chat's inline picture goes)
# that is not near white: xterm's background there is white, the demo
# model's pictures are dark.
dark() {
    python3 - "$TMP/$1.png" "${2:-right}" <<'PY'
import struct, sys, zlib
d = open(sys.argv[1], "rb").read(); pos, idat = 8, b""
while pos < len(d):
    n, kind = struct.unpack(">I4s", d[pos:pos + 8])
    if kind == b"IHDR": w, h, depth, color = struct.unpack(">IIBB", d[pos + 8:pos + 18])
    elif kind == b"IDAT": idat += d[pos + 8:pos + 8 + n]
    pos += 12 + n
bpp = 3 if color == 2 else 4; raw = zlib.decompress(idat); stride = w * bpp; prev = bytearray(stride); rows = []
for y in range(h):
    f = raw[y * (stride + 1)]; line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0; b = prev[i]; c = prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    rows.append(line); prev = line
x0, x1, y0, y1 = int(w * 0.52), int(w * 0.90), int(h * 3 / 24), int(h * 15 / 24)
if sys.argv[2] == "left": x0, x1 = int(w * 3 / 80), int(w * 20 / 80)
far = sum(1 for y in range(y0, y1) for x in range(x0, x1) if sum(rows[y][x * bpp:x * bpp + 3]) < 3 * 200)
print(int(100 * far / ((x1 - x0) * (y1 - y0))))
PY
}

check "xterm started" wait_file "$TMP/window" 30
sleep 2                                          # the app probes and starts
keys '\033[17~'; sleep 0.5                       # F6: the studio
keys 'a red circle above a blue square'
keys '\t\t'; for _ in $(seq 30); do keys '-'; done; keys '++++'          # steps 4
keys '\t\t\t'; for _ in $(seq 20); do keys '-'; done; keys '++++'        # 256x256
keys '\t\t\t\r'                                  # back on the prompt: draw
sleep 1
keys '\033[Z'; sleep 0.3                         # Shift-Tab: the gallery
# s saves once there is a picture: the PNG appears when it is done
for ((i = 0; i < 120 * SCALE; i++)); do
    keys 's'; sleep 0.5
    ls "$TMP/data/petrel/images/"*.png >/dev/null 2>&1 && break
done
check "the picture was drawn and saved" ls "$TMP/data/petrel/images/"*.png
sleep 1; shot studio
d=$(dark studio); check "the picture shows in its slot (${d}% of it dark)" [ "${d:-0}" -ge 40 ]
keys '\033[17~'; sleep 1.5; shot chat
d=$(dark chat); check "the chat screen has no stale pixels there (${d}% dark)" [ "${d:-100}" -le 2 ]
# a new picture in the chat: xterm paints its stored pictures again, and
# any whose cells were only written over (not erased) would come back
keys '/imagine a red circle\r'
for ((i = 0; i < 240 * SCALE; i++)); do
    sleep 0.5; shot chat-imagine
    [ "$(dark chat-imagine left)" -ge 30 ] && break
done
check "/imagine draws inline in the chat ($(dark chat-imagine left)% dark)" [ "$(dark chat-imagine left)" -ge 30 ]
d=$(dark chat-imagine); check "and the studio's old picture stays gone (${d}% dark)" [ "${d:-100}" -le 2 ]
keys '\033[17~'; sleep 1.5; shot studio-again
d=$(dark studio-again); check "back in the studio the picture is sent again (${d}%)" [ "${d:-0}" -ge 40 ]
keys '\033OP'; sleep 1; shot help
d=$(dark help); check "the help overlay hides it (${d}% dark: text only)" [ "${d:-100}" -le 15 ]
keys '\033'; sleep 1; shot help-closed
d=$(dark help-closed); check "closing the overlay brings it back (${d}%)" [ "${d:-0}" -ge 40 ]
keys '\021'                                      # ^Q
check "the app quits" wait_file "$TMP/status" 30
check "with status 0 ($(cat "$TMP/status" 2>/dev/null))" [ "$(cat "$TMP/status" 2>/dev/null)" = 0 ]
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
