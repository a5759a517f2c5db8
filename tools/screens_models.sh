#!/usr/bin/env bash
# screens_models.sh OUTDIR — capture the Models screen as a person sees
# it (docs/screens/models-*.txt: with colours as ANSI escapes, and
# .plain.txt without): the list at 80x24, a download half-way (the
# loopback test server holds the second half) at 80x24 and 40x15, and
# the quantize form. Needs the tests' environment (PETREL_BIN,
# PETREL_TEST_DATA, the SmolLM2 GGUF: see tests/tui_lib.sh).
set -u
OUT=${1:?usage: tools/screens_models.sh OUTDIR}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
. "$(dirname "$0")/../tests/tui_lib.sh"
tui_setup
SRC=$(cd "$(dirname "$0")/../tests" && pwd)
WWW=$TUI_TMP/www
mkdir -p "$WWW" "$TUI_TMP/config/petrel"
cp "$MODEL" "$WWW/SmolLM2-135M-Instruct.Q4_1.gguf"
python3 "$SRC/http_server.py" "$WWW" "$TUI_TMP/port" "$TUI_TMP/log" 2> /dev/null &
SERVER_PID=$!
trap 'kill $SERVER_PID 2> /dev/null; tui_cleanup' EXIT
tui_poll 60 0.1 test -s "$TUI_TMP/port"
URL=http://127.0.0.1:$(cat "$TUI_TMP/port")
# a user entry (the last of the catalog): the SmolLM2 GGUF from a mirror,
# here the loopback server
cat > "$TUI_TMP/config/petrel/models.toml" << TOML
[models.smollm2-135m-mirror]
title = "SmolLM2 135M Instruct (Q4_1), from a local mirror"
arch = "llama"
quant = "Q4_1"
license = "Apache-2.0"
source = "url"
url = "$URL/hold/a/SmolLM2-135M-Instruct.Q4_1.gguf"
local = "SmolLM2-135M-Instruct.mirror.Q4_1.gguf"
sha256 = "$(sha256sum "$MODEL" | cut -d' ' -f1)"
size = $(stat -L -c %s "$MODEL")
TOML
shot() {
    tui_screen_escapes > "$OUT/$1.txt"
    tui_screen > "$OUT/$1.plain.txt"
}
tui_start 80 24 "$PETREL" "XDG_CONFIG_HOME=$TUI_TMP/config"
tui_wait_ready 120
tui_keys F2
tui_wait '^\* SmolLM2-135M-Instruct\.Q4_1\.gguf +llama' 30
shot models-80x24
tui_keys End
tui_wait '^ SmolLM2 135M Instruct \(Q4_1\), from a local mirror' 10
tui_keys Enter
tui_wait '↓ SmolLM2-135M-Instruct.* +\[.*\] +50% ' 60
shot models-download-80x24
tui_resize 40 15
tui_wait_rule 40 10
shot models-download-40x15
tui_resize 80 24
tui_wait_rule 80 10
touch "$WWW/a.go"
tui_wait 'installed SmolLM2-135M-Instruct\.mirror' 120
tui_keys Home
tui_keys q
tui_wait 'Quantize SmolLM2-135M' 10
shot models-quantize-80x24
tui_keys Escape F10
tui_wait_dead 30
