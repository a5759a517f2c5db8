#!/usr/bin/env bash
# test_tui_models_pull.sh — the Models screen's downloads, quantize and
# delete against a loopback HTTP server (tests/http_server.py, 127.0.0.1,
# killed on exit). The catalog entries come from a user models.toml in
# the test's config directory (added to the built-in catalog, as a user's
# would be) and point at the server:
#   tiny-hold    the server sends half and waits for a gate file: the
#                screen shows the download mid-way (bar, bytes, ETA), then
#                it completes and the model is in the local list
#   tiny-cut     the connection is cut half-way: the engine resumes it
#                with a Range request and completes
#   tiny-bad     a wrong sha256: a one-line error, nothing installed
#   tiny-cancel  x cancels mid-way: nothing under the final name, the .part
#                kept; Enter resumes it from there (Range) and completes
#   tiny-sd      an image model: downloaded (the server's sha256), then
#                Enter makes it the studio's model
#   tiny-quit    held half-way while the chat answers a message (the job
#                runs beside the engine), then the app quits: the download
#                is cancelled, its .part kept
# then quantize (a form) to Q8_0, delete (asks first), switch the chat to
# a downloaded model, and a resize to 40 columns. No timed assertions:
# every wait is for a screen state, with generous limits.
. "$(dirname "$0")/tui_lib.sh"
tui_setup
DATA=${PETREL_TEST_DATA:?PETREL_TEST_DATA not set}
SRC=$(cd "$(dirname "$0")" && pwd)
MODELS=$TUI_DATA/petrel/models
WWW=$TUI_TMP/www
mkdir -p "$WWW" "$TUI_TMP/config/petrel"
cp "$DATA/tiny_llama.gguf" "$DATA/sd-tiny-q8.gguf" "$WWW/"
SERVER_PID=
stop_server() {
    [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2> /dev/null && wait "$SERVER_PID" 2> /dev/null
    tui_cleanup
}
trap stop_server EXIT
python3 "$SRC/http_server.py" "$WWW" "$TUI_TMP/port" "$TUI_TMP/log" 2> "$TUI_TMP/server.err" &
SERVER_PID=$!
tui_poll 60 0.1 test -s "$TUI_TMP/port" || { echo "the test server did not start: $(cat "$TUI_TMP/server.err")"; echo "0 passed, 1 failed"; exit 1; }
URL=http://127.0.0.1:$(cat "$TUI_TMP/port")
SHA=$(sha256sum "$WWW/tiny_llama.gguf" | cut -d' ' -f1)
SIZE=$(stat -c %s "$WWW/tiny_llama.gguf")

# in this order, last: End selects tiny-hold, each Up the one before
cat > "$TUI_TMP/config/petrel/models.toml" << EOF
[models.tiny-sd]
title = "tiny image model"
kind = "image"
source = "url"
url = "$URL/sha/s/sd-tiny-q8.gguf"
[models.tiny-quit]
title = "tiny, held while the app quits"
source = "url"
url = "$URL/hold/q/tiny_llama.gguf"
local = "tiny-q.gguf"
sha256 = "$SHA"
size = $SIZE
[models.tiny-bad]
title = "tiny, wrong checksum"
source = "url"
url = "$URL/plain/d/tiny_llama.gguf"
local = "tiny-d.gguf"
sha256 = "0000000000000000000000000000000000000000000000000000000000000000"
[models.tiny-cancel]
title = "tiny, cancelled and resumed"
source = "url"
url = "$URL/hold/b/tiny_llama.gguf"
local = "tiny-b.gguf"
sha256 = "$SHA"
size = $SIZE
[models.tiny-cut]
title = "tiny, cut connection"
source = "url"
url = "$URL/cut/c/tiny_llama.gguf"
local = "tiny-c.gguf"
sha256 = "$SHA"
[models.tiny-hold]
title = "tiny, held half-way"
arch = "llama"
quant = "F16"
license = "apache-2.0"
source = "url"
url = "$URL/hold/a/tiny_llama.gguf"
local = "tiny-a.gguf"
sha256 = "$SHA"
size = $SIZE
EOF

# the selected row is the one the details below the list describe: a
# local file's name and folder, a catalog entry's title
selected() { tui_wait "$1" 10; }

ENVS=("XDG_CONFIG_HOME=$TUI_TMP/config")
tui_start 80 24 "$PETREL" "${ENVS[@]}"
tui_check "app ready" tui_wait_ready 120

# --- the screen ----------------------------------------------------------------
tui_keys F2
tui_check "F2 opens the Models screen" tui_wait '^ Models  free RAM [0-9.]+[KMG]' 10
tui_check "local section with the open model marked and its architecture" \
    tui_wait '^\* SmolLM2-135M-Instruct\.Q4_1\.gguf +llama +Q4_1 +[0-9.]+M +open +(fits|tight|too big)' 30
tui_check "catalog section" tui_wait '^ Catalog \([0-9]+\)' 5
tui_keys End
tui_check "the user's entry is listed: arch, quant, size, not here, fit hint" \
    tui_wait '^  tiny-hold +llama +F16 +223K +- +(fits|tight|too big)' 10
tui_check "details: title, license, source" \
    tui_wait_flat "tiny, held half-way \(apache-2\.0\).*from http://127\.0\.0\.1:[0-9]+/hold/a/tiny_llama\.gguf: Enter downloads" 10

# --- a download caught half-way, then completed -----------------------------------
tui_keys Enter
tui_check "progress: bar, percent, bytes, ETA" \
    tui_wait '^ . ↓ tiny-a\.gguf +\[.*\] +50% +111K / 223K +.* ETA ' 60
tui_check "the row shows the percent" tui_wait '^. tiny-hold .* 50% ' 5
tui_check "the title shows the job" tui_wait '^ petrel .*↓ 50% ' 5
tui_check "nothing under the final name while it runs" test ! -e "$MODELS/tiny-a.gguf"
tui_check "the bytes go to the .part" test -s "$MODELS/tiny-a.gguf.part"
touch "$WWW/a.go"
tui_check "the download completes, checked against the catalog" \
    tui_wait 'installed tiny-a\.gguf \(223K; catalog sha256 ok\)' 60
tui_check "the catalog row says installed" tui_wait '^. tiny-hold .* installed ' 5
tui_check "the file is the server's" cmp -s "$WWW/tiny_llama.gguf" "$MODELS/tiny-a.gguf"
tui_check "no .part left" test ! -e "$MODELS/tiny-a.gguf.part"
tui_keys Home
tui_check "the model is in the local list, probed" tui_wait '^  tiny-a\.gguf +llama +F16 +223K ' 30

# --- a cut connection: resumed by the engine's retry --------------------------------
tui_keys End Up
selected '^ tiny, cut connection '
tui_keys Enter
tui_check "cut connection: the download completes" \
    tui_wait 'installed tiny-c\.gguf \(223K; catalog sha256 ok\)' 120
tui_check "cut: the second request asked for the rest" \
    grep -qE '^GET /cut/c/tiny_llama.gguf range=bytes=[1-9][0-9]*- ' "$TUI_TMP/log"
tui_check "cut: the file is the server's" cmp -s "$WWW/tiny_llama.gguf" "$MODELS/tiny-c.gguf"

# --- a checksum mismatch ---------------------------------------------------------
tui_keys End Up Up Up
selected '^ tiny, wrong checksum '
tui_keys Enter
tui_check "wrong sha256: a one-line error" \
    tui_wait '── download of tiny-d\.gguf failed: .*sha256' 60
tui_check "wrong sha256: nothing installed" test ! -e "$MODELS/tiny-d.gguf"
tui_check "wrong sha256: no .part kept" test ! -e "$MODELS/tiny-d.gguf.part"
tui_check "wrong sha256: the row still says not here" tui_wait '^  tiny-bad .* - +\?' 5

# --- cancel, then resume ----------------------------------------------------------
tui_keys End Up Up
selected '^ tiny, cancelled and resumed '
tui_keys Enter
tui_check "cancel: the download is under way" tui_wait '^ . ↓ tiny-b\.gguf +\[.*\] +50% ' 60
tui_keys x
tui_check "x cancels it" tui_wait 'download of tiny-b\.gguf stopped: the part is kept' 60
tui_check "cancel: nothing under the final name" test ! -e "$MODELS/tiny-b.gguf"
tui_check "cancel: the .part is kept" test -s "$MODELS/tiny-b.gguf.part"
tui_check "cancel: the row says partial" tui_wait '^~ tiny-cancel .* part 50% ' 10
tui_check "cancel: details offer to resume" tui_wait 'of it here: Enter resumes, D discards' 5
tui_keys Enter
tui_check "Enter resumes it and it completes" \
    tui_wait 'installed tiny-b\.gguf \(223K, resumed; catalog sha256 ok\)' 60
tui_check "resume: Range from the .part's length" \
    grep -qE '^GET /hold/b/tiny_llama.gguf range=bytes=114064- ' "$TUI_TMP/log"
tui_check "resume: the file is the server's" cmp -s "$WWW/tiny_llama.gguf" "$MODELS/tiny-b.gguf"

# --- quantize ---------------------------------------------------------------------
tui_keys Home Down
selected '^ tiny-a\.gguf  in /'
tui_keys q
tui_check "q opens the quantize form" tui_wait 'Quantize tiny-a\.gguf' 10
for _ in 1 2 3 4 5 6 7 8 9 10 11 12; do
    tui_screen_has '◂ Q8_0 ▸' && break
    tui_keys Right
    tui_poll 5 0.05 tui_not tui_screen_has 'Quantize tiny-a\.gguf.*never'
done
tui_check "the type is Q8_0 and the output name follows it" \
    tui_wait_flat '◂ Q8_0 ▸.*Output +tiny-a\.Q8_0\.gguf' 10
# tiny_llama holds Q4_0 matrices beside its F16 ones: they must be requantized
tui_check "requantize is off for a float model" tui_wait 'Requantize +no \(the source is F16\)' 5
tui_keys Tab Tab Right
tui_check "Right turns it on" tui_wait 'Requantize +yes' 5
tui_keys Enter
tui_check "quantized: a one-line result" tui_wait 'quantized to tiny-a\.Q8_0\.gguf \(223K -> [0-9.]+K\)' 60
tui_check "the quantized file is in the local list" tui_wait '^  tiny-a\.Q8_0\.gguf +llama +Q8_0 ' 30
tui_check "... and loads (petrel info)" "$PETREL" info -m "$MODELS/tiny-a.Q8_0.gguf"

# --- convert: a Hugging Face folder to F16, through the form -----------------------
HF_LLAMA=$(cd "$(dirname "$0")/data/hf-tiny/llama" && pwd)
tui_keys c
tui_check "c opens the convert form" tui_wait 'Convert a Hugging Face folder or checkpoint' 10
tui_type "$HF_LLAMA"
tui_keys Tab
tui_type "tiny-hf.gguf"
tui_keys Enter
tui_check "converted: a one-line result" tui_wait 'converted to tiny-hf\.gguf' 60
tui_check "the converted file is in the local list" tui_wait '^  tiny-hf\.gguf +llama +F16 ' 30
tui_check "... and equals petrel convert's" bash -c \
    '"$0" convert "$1" "$2" >/dev/null 2>&1 && cmp -s "$2" "$3"' \
    "$PETREL" "$HF_LLAMA" "$TUI_TMP/cli-conv.gguf" "$MODELS/tiny-hf.gguf"
rm -f "$MODELS/tiny-hf.gguf"
tui_keys r

# --- delete -------------------------------------------------------------------------
tui_keys Home Down
selected '^ tiny-a\.Q8_0\.gguf  in /'
tui_keys D
tui_check "D asks first" tui_wait 'Delete tiny-a\.Q8_0\.gguf \([0-9.]+K\)\?' 10
tui_keys n
tui_check "any other key keeps it" tui_wait 'kept tiny-a\.Q8_0\.gguf' 10
tui_check "... the file is still there" test -e "$MODELS/tiny-a.Q8_0.gguf"
tui_keys D
tui_wait 'Delete tiny-a\.Q8_0\.gguf' 10
tui_keys y
tui_check "y deletes it" tui_wait 'deleted tiny-a\.Q8_0\.gguf' 10
tui_check "... the file is gone" test ! -e "$MODELS/tiny-a.Q8_0.gguf"
tui_check "... and so is its row" tui_wait_gone '^  tiny-a\.Q8_0\.gguf ' 10
tui_keys Home
selected '^ SmolLM2-135M-Instruct\.Q4_1\.gguf  in /'
tui_keys D
tui_check "the open model cannot be deleted" tui_wait 'is open: switch to another model first' 10

# --- an image model: the studio's ---------------------------------------------------------
tui_keys End Up Up Up Up Up
selected '^ tiny image model, image model '
tui_keys Enter
tui_check "image model: downloaded, the server's sha256 checked" \
    tui_wait 'installed sd-tiny-q8\.gguf \([0-9.]+[KM]; server sha256 ok\)' 60
tui_keys Enter
tui_check "Enter makes it the studio's model" tui_wait "sd-tiny-q8\.gguf is the studio's image model now" 10

# --- 40 columns ------------------------------------------------------------------------
tui_keys Home
selected '^ SmolLM2-135M-Instruct\.Q4_1\.gguf  in /'
tui_resize 40 15
tui_check "40 columns: the whole layout follows" tui_wait_rule 40 10
tui_check "40 columns: name, size and fit in a row" tui_wait '^\* SmolLM2-135M-Instr.* +[0-9.]+M +(fits|tight)' 10
tui_check "40 columns: no line wider than the window" test "$(tui_screen | LC_ALL=C.UTF-8 wc -L)" -le 40
tui_resize 80 24
tui_check "back to 80 columns" tui_wait_rule 80 10

# --- switch the chat model ---------------------------------------------------------------
# the local files sort SmolLM2..., sd-tiny-q8, tiny-a, tiny-b, tiny-c
tui_keys Home Down Down Down
selected '^ tiny-b\.gguf  in /'
tui_keys Enter
tui_check "Enter switches the chat to it" tui_wait 'loaded tiny-b\.gguf in' 60
tui_check "... and the screen goes back to the chat" tui_wait '^> ' 10
tui_type "/models"; tui_keys Enter
tui_check "/models opens the screen" tui_wait '^ Models  free RAM' 10
tui_check "the new model is marked open" tui_wait '^\* tiny-b\.gguf .* open ' 10
tui_keys Escape
tui_check "Esc goes back" tui_wait_gone '^ Models  free RAM' 10

# --- a download beside the chat, then quit ----------------------------------------------
tui_keys F2
tui_wait '^ Models  free RAM' 10
tui_keys End Up Up Up Up
selected '^ tiny, held while the app quits '
tui_keys Enter
tui_check "quit: the download is under way" tui_wait '^ . ↓ tiny-q\.gguf +\[.*\] +50% ' 60
tui_keys Escape
tui_check "Esc leaves the screen; the title still shows the download" tui_wait '^ petrel .*↓ 50% ' 10
tui_type "/max 4"; tui_keys Enter
tui_wait 'max = 4' 10
tui_type "Hi"; tui_keys Enter
tui_check "the chat answers while the download runs" \
    tui_wait '(end of reply|length limit \(/max\)): [0-9]+ tokens' 120
tui_check "... and the download is still held" tui_wait '^ petrel .*↓ 50% ' 5
tui_keys F10
tui_check "quit during a download" tui_wait_dead 60
tui_check "exit status 0" test "$(tui_exit_status)" = 0
tui_check "quit: nothing under the final name" test ! -e "$MODELS/tiny-q.gguf"
tui_check "quit: the .part is kept for a resume" test -s "$MODELS/tiny-q.gguf.part"
tui_done
