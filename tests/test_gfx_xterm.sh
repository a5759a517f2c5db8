# test_gfx_xterm.sh — a real terminal: xterm with sixel graphics
# (`-ti vt340`) on a virtual X display (Xvfb). petrel probes it (DA1,
# XTSMGRAPHICS, cell size), `petrel imagine --show` draws the image, the
# screen is photographed (ImageMagick's import) and the picture found on
# it is compared with the PNG imagine wrote: both cut into 16x16 blocks,
# the mean absolute difference of the blocks' mean colours must be under
# 12 of 255 (printed; the sixel is dithered and scaled, so pixels are not
# compared one by one), and over 12 against the PNG upside down (the
# measure can tell pictures apart). PETREL_GFX_DUMP=DIR keeps the screenshot there.
# Needs Xvfb, xterm and ImageMagick (tools/setup.sh --test installs them).
BIN=${PETREL_BIN:?PETREL_BIN not set}
TMP=$(mktemp -d)
passed=0 failed=0
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }
for tool in Xvfb xterm import; do
    command -v "$tool" >/dev/null || { echo "$tool not found (tools/setup.sh --test)"; echo "0 passed, 1 failed"; exit 1; }
done

# a free display number
n=$((50 + $$ % 400))
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

# In xterm: hide the cursor, clear, ask what the terminal is, then draw the
# image of a short generation with the bundled demo model at the top left.
cat >"$TMP/run.sh" <<EOF
printf '\033[?25l\033[H\033[2J'
echo "\$WINDOWID" >"$TMP/window"
"$BIN" info --terminal >"$TMP/info" 2>&1
"$BIN" imagine -p "a red circle above a blue square" --steps 10 -o "$TMP/x.png" --show 2>"$TMP/err"
echo \$? >"$TMP/drawn"
sleep 400
EOF
xterm -ti vt340 -geometry 80x30 -fa Monospace -fs 10 -bg white -fg black -e bash "$TMP/run.sh" &
xterm_pid=$!
for _ in $(seq 3000); do [ -s "$TMP/drawn" ] && break; sleep 0.1; done # 5 minutes: the ASan build takes 100 s
sleep 0.5 # xterm draws what it read
import -window "$(cat "$TMP/window" 2>/dev/null || echo root)" "PNG24:$TMP/shot.png" 2>/dev/null
[ -n "${PETREL_GFX_DUMP:-}" ] && cp "$TMP/shot.png" "$PETREL_GFX_DUMP/xterm-imagine-show.png"

if [ "$(cat "$TMP/drawn" 2>/dev/null)" = 0 ]; then ok; else bad "imagine --show in xterm: exit '$(cat "$TMP/drawn" 2>/dev/null)', $(head -c 300 "$TMP/err")"; fi
if grep -q "^graphics: sixel$" "$TMP/info"; then ok; else bad "xterm -ti vt340 is not found to do sixel: $(cat "$TMP/info")"; fi
if grep -q "^answered: yes" "$TMP/info" && grep -q "^version: XTerm(" "$TMP/info"; then ok; else bad "xterm's DA1 / XTVERSION not read: $(cat "$TMP/info")"; fi

if python3 - "$TMP/shot.png" "$TMP/x.png" <<'EOF'
import struct, sys, zlib
def read_png(path):
    """8-bit RGB or RGBA PNG (any filter) -> (w, h, rows of RGB tuples)."""
    d = open(path, "rb").read()
    assert d[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, b""
    while pos < len(d):
        n, kind = struct.unpack(">I4s", d[pos:pos + 8])
        if kind == b"IHDR":
            w, h, depth, color = struct.unpack(">IIBB", d[pos + 8:pos + 18])
        elif kind == b"IDAT":
            idat += d[pos + 8:pos + 8 + n]
        pos += 12 + n
    assert depth == 8 and color in (2, 6), (depth, color)
    bpp = 3 if color == 2 else 4
    raw, stride, prev, rows = zlib.decompress(idat), w * bpp, bytearray(w * bpp), []
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1: line[i] = (line[i] + a) & 255
            elif f == 2: line[i] = (line[i] + b) & 255
            elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(w)])
        prev = line
    return w, h, rows
sw, sh, shot = read_png(sys.argv[1])
pw, ph, png = read_png(sys.argv[2])
# the picture: the box of pixels that are not xterm's white background
far = lambda p: sum(p) < 3 * 235
ys = [y for y in range(sh) if any(far(p) for p in shot[y])]
xs = [x for x in range(sw) if any(far(shot[y][x]) for y in ys[:1] + ys[len(ys) // 2:len(ys) // 2 + 1] + ys[-1:])]
x0, x1, y0, y1 = min(xs), max(xs) + 1, min(ys), max(ys) + 1
print(f"picture on screen at ({x0},{y0}), {x1 - x0}x{y1 - y0} pixels; the PNG is {pw}x{ph}")
assert abs((x1 - x0) - (y1 - y0)) <= 8 and (x1 - x0) >= 200, "not the square picture"
def blocks(rows, x0, y0, w, h, n=16):
    out = []
    for by in range(n):
        for bx in range(n):
            # the middle half of each block: edges are where scaling differs
            ya, yb = y0 + (4 * by + 1) * h // (4 * n), y0 + (4 * by + 3) * h // (4 * n)
            xa, xb = x0 + (4 * bx + 1) * w // (4 * n), x0 + (4 * bx + 3) * w // (4 * n)
            px = [rows[y][x] for y in range(ya, max(yb, ya + 1)) for x in range(xa, max(xb, xa + 1))]
            out.append([sum(p[c] for p in px) / len(px) for c in range(3)])
    return out
a = blocks(shot, x0, y0, x1 - x0, y1 - y0)
b = blocks(png, 0, 0, pw, ph)
err = sum(abs(p[c] - q[c]) for p, q in zip(a, b) for c in range(3)) / (len(a) * 3)
# the same measure against the PNG upside down: it must tell them apart
flipped = blocks(png[::-1], 0, 0, pw, ph)
err_flip = sum(abs(p[c] - q[c]) for p, q in zip(a, flipped) for c in range(3)) / (len(a) * 3)
print(f"mean abs difference of 16x16 block colours: {err:.2f} / 255 (bound 12); "
      f"against the PNG upside down: {err_flip:.2f}")
sys.exit(0 if err < 12 and err_flip > 12 else 1)
EOF
then ok; else bad "the picture on xterm's screen does not match the PNG"; fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
