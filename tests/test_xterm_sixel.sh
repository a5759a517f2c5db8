#!/usr/bin/env bash
# test_xterm_sixel.sh — a real terminal (issue 13, acceptance): xterm with
# sixel graphics (-ti vt340, 256 colour registers) under Xvfb runs
# `petrel imagine ... --show` (the bundled demo model, 128x128, 4 steps)
# and `petrel show` of the committed test card; the window is captured
# with ImageMagick's `import -window`, the picture found in it (the
# bounding box of what differs from the background, the cursor hidden) and
# compared with the PNG scaled to the box: mean absolute colour error under
# BOUND, the aspect kept, the box inside the window; the same screenshot
# compared with another picture fails by far (the check can fail).
# Waits are for states (the command's exit status file, then two equal
# screenshots with a picture in them) with generous deadlines; nothing is
# judged by time. PETREL_XTERM_SHOT_DIR: where to keep the screenshots
# (xterm-sixel.png: imagine --show, xterm-sixel-card.png: show), as in
# docs/images. Needs Xvfb, xterm, import (imagemagick), python3: tools/setup.sh --test.
BIN=${PETREL_BIN:?PETREL_BIN not set}
HERE=$(cd "$(dirname "$0")" && pwd)
DATA=${PETREL_TEST_DATA:-$HERE/data}
BOUND=${XTERM_SIXEL_BOUND:-8}
passed=0 failed=0
ok() { passed=$((passed + 1)); echo "ok - $*"; }
bad() { failed=$((failed + 1)); echo "FAIL - $*"; }
for tool in Xvfb xterm import python3; do
    command -v $tool >/dev/null || { echo "$tool not installed (tools/setup.sh --test)"; echo "0 passed, 1 failed"; exit 1; }
done
TMP=$(mktemp -d)
XVFB_PID="" XTERM_PID=""
cleanup() {
    [ -n "$XTERM_PID" ] && kill "$XTERM_PID" 2>/dev/null && wait "$XTERM_PID" 2>/dev/null
    [ -n "$XVFB_PID" ] && kill "$XVFB_PID" 2>/dev/null && wait "$XVFB_PID" 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT

# a private X server on a free display (-displayfd tells which)
Xvfb -displayfd 3 -screen 0 1024x768x24 -nolisten tcp 3>"$TMP/display" 2>"$TMP/xvfb.log" &
XVFB_PID=$!
for _ in $(seq 300); do [ -s "$TMP/display" ] && break; kill -0 $XVFB_PID 2>/dev/null || break; sleep 0.1; done
[ -s "$TMP/display" ] || { echo "Xvfb did not start: $(cat "$TMP/xvfb.log")"; echo "0 passed, 1 failed"; exit 1; }
export DISPLAY=:$(head -1 "$TMP/display")
unset TMUX TERM_PROGRAM COLORTERM PETREL_GRAPHICS KITTY_WINDOW_ID
# xterm always answers DA1, which ends the probe: a long timeout costs nothing
# and a loaded machine cannot turn a slow answer into a missed sixel
export PETREL_PROBE_TIMEOUT_MS=60000

# run_in_xterm NAME COMMAND...: COMMAND runs in a fresh 80x24 xterm; when it
# ends its exit status goes to $TMP/NAME.rc, the cursor is hidden and the
# window id written to $TMP/NAME.wid; the xterm stays up until killed.
run_in_xterm() {
    local name=$1; shift
    printf '%q ' "$@" >"$TMP/$name.cmd"
    xterm -ti vt340 -xrm 'XTerm*decTerminalID: vt340' -xrm 'XTerm*numColorRegisters: 256' \
        -xrm 'XTerm*sixelScrolling: true' -geometry 80x24+0+0 -bg black -fg white -e sh -c \
        ". '$TMP/$name.cmd' 2>'$TMP/$name.err'; echo \$? >'$TMP/$name.rc.tmp'; printf '\\033[?25l';
         echo \$WINDOWID >'$TMP/$name.wid'; mv '$TMP/$name.rc.tmp' '$TMP/$name.rc'; exec sleep 600" \
        2>"$TMP/$name.xterm.log" &
    XTERM_PID=$!
}
stop_xterm() { kill "$XTERM_PID" 2>/dev/null; wait "$XTERM_PID" 2>/dev/null; XTERM_PID=""; }

# shot NAME PNG WRONG_PNG: waits for the picture in NAME's window (two equal
# captures with something on the background, 60 s at most), then judges it
# against PNG and against WRONG_PNG. Prints the measurements.
shot() {
    local name=$1 png=$2 wrong=$3
    for _ in $(seq 600); do [ -s "$TMP/$name.rc" ] && break; sleep 0.1; done
    [ -s "$TMP/$name.rc" ] || { bad "$name: the command did not finish in xterm: $(cat "$TMP/$name.err" "$TMP/$name.xterm.log" 2>/dev/null | head -5)"; return; }
    [ "$(cat "$TMP/$name.rc")" = 0 ] && ok "$name: exit 0 in xterm" || bad "$name: exit $(cat "$TMP/$name.rc"): $(head -c 400 "$TMP/$name.err")"
    local wid prev="" cur
    wid=$(cat "$TMP/$name.wid")
    for _ in $(seq 300); do
        import -window "$wid" -depth 8 "ppm:$TMP/$name.ppm" 2>/dev/null || { sleep 0.2; continue; }
        cur=$(python3 - "$TMP/$name.ppm" <<'EOF'
import hashlib, sys
d = open(sys.argv[1], "rb").read()
print(hashlib.sha256(d).hexdigest() if len(set(d[-(len(d) // 2):] + d[40:len(d) // 2])) > 1 else "empty")
EOF
)
        [ "$cur" != empty ] && [ "$cur" = "$prev" ] && break
        prev=$cur; sleep 0.2
    done
    [ "$cur" != empty ] && [ "$cur" = "$prev" ] || { bad "$name: no steady picture in the window within 60 s"; return; }
    [ -n "${PETREL_XTERM_SHOT_DIR:-}" ] && convert "$TMP/$name.ppm" "$PETREL_XTERM_SHOT_DIR/$name.png"
    python3 - "$HERE" "$TMP/$name.ppm" "$png" "$wrong" "$BOUND" "$name" >"$TMP/$name.judge" 2>&1 <<'EOF'
import sys
sys.path.insert(0, sys.argv[1])
import png_check, term_images
ppm, png, wrong, bound, name = sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5]), sys.argv[6]
import re
d = open(ppm, "rb").read()
m = re.match(rb"P6\s+(?:#[^\n]*\n\s*)*(\d+)\s+(?:#[^\n]*\n\s*)*(\d+)\s+(?:#[^\n]*\n\s*)*255\s", d)
assert m, "not an 8-bit P6 PPM: %r" % d[:40]
W, H, px = int(m.group(1)), int(m.group(2)), d[m.end():]
bg = px[-3:]  # the bottom-right corner: the background
xs, ys = [], []
for y in range(H):
    row = px[y * W * 3:(y + 1) * W * 3]
    for x in range(W):
        if row[3 * x:3 * x + 3] != bg: xs.append(x); ys.append(y)
x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
w, h = x1 - x0 + 1, y1 - y0 + 1
crop = b"".join(px[(y * W + x0) * 3:(y * W + x1 + 1) * 3] for y in range(y0, y1 + 1))
pic = term_images.Picture("screen", w, h, crop)
rw, rh, rrgb, _ = png_check.decode(open(png, "rb").read())
ww, wh, wrgb, _ = png_check.decode(open(wrong, "rb").read())
err, werr = term_images.mean_abs_error(pic, rw, rh, rrgb), term_images.mean_abs_error(pic, ww, wh, wrgb)
print("# %s: window %dx%d, picture %dx%d at (%d,%d); mean abs colour error %.2f (bound %g), "
      "against another picture %.2f" % (name, W, H, w, h, x0, y0, err, bound, werr))
aspect = abs(w / h - rw / rh) <= rw / rh * (2.0 / w + 2.0 / h) + 0.01
print("RESULT", int(err < bound), int(werr > 1.5 * bound), int(aspect), int(w < W and h < H and w > 32))
EOF
    grep '^#' "$TMP/$name.judge"
    local r
    r=$(grep '^RESULT' "$TMP/$name.judge")
    [ -n "$r" ] || { bad "$name: the screenshot could not be judged: $(cat "$TMP/$name.judge")"; return; }
    set -- $r
    [ "$2" = 1 ] && ok "$name: the picture on the screen is the PNG" || bad "$name: the picture on the screen is not the PNG (error over $BOUND)"
    [ "$3" = 1 ] && ok "$name: another picture fails the same comparison" || bad "$name: another picture passes the comparison"
    [ "$4" = 1 ] && ok "$name: aspect kept" || bad "$name: aspect not kept"
    [ "$5" = 1 ] && ok "$name: the picture lies inside the window" || bad "$name: the picture's box is implausible"
}

# ---- imagine --show
GEN=("$BIN" imagine -p "a red circle above a blue square" -W 128 -H 128 --steps 4)
"${GEN[@]}" -s 2 -o "$TMP/seed2.png" 2>/dev/null || bad "imagine seed 2 (no terminal)"
run_in_xterm xterm-sixel "${GEN[@]}" -s 1 -o "$TMP/seed1.png" --show
shot xterm-sixel "$TMP/seed1.png" "$TMP/seed2.png"
stop_xterm

# ---- show, the test card; first what the probe finds in a real xterm
run_in_xterm xterm-sixel-card sh -c '"$1" info --terminal >"$2" 2>&1 && exec "$1" show "$3"' sh \
    "$BIN" "$TMP/info" "$DATA/pictures/card-120x90.png"
shot xterm-sixel-card "$DATA/pictures/card-120x90.png" "$DATA/pictures/demo-128.png"
stop_xterm
grep -q "^graphics: sixel$" "$TMP/info" && ok "info --terminal: xterm -ti vt340 draws sixel" ||
    bad "xterm -ti vt340 is not found to do sixel: $(cat "$TMP/info")"
grep -q "^answered: yes" "$TMP/info" && grep -q "^version: XTerm(" "$TMP/info" &&
    ok "info --terminal: xterm's DA1 and XTVERSION read" || bad "xterm's DA1 / XTVERSION not read: $(cat "$TMP/info")"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
