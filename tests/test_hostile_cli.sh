#!/usr/bin/env bash
# test_hostile_cli.sh — hostile input from the command line: crafted strings
# in a model file, write errors on stdout, absurd option values, unusable data
# directories, a model file truncated while in use. Each case asserts the exit
# status and the one-line "petrel: ..." message. No sleeps as synchronisation:
# waits poll for a condition with a generous deadline.
# (Cases that need the engine's regular-file check live in test_hostile_fifo.sh.)
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=cli_lib.sh
. "$SRC/tests/cli_lib.sh"
TINY=$SRC/tests/data/tiny_llama.gguf

# ---- 1. strings from the file are escaped (no ESC/BEL reaches the terminal) --
python3 "$SRC/tools/make_hostile_gguf.py" "$TINY" "$TMP/evil.gguf" || bad "make_hostile_gguf.py failed"
expect_exit 0 "info evil.gguf" -- "$BIN" info --tensors "$TMP/evil.gguf"
if LC_ALL=C grep -q $'[\x1b\x07]' "$TMP/out"; then bad "info prints raw ESC/BEL: $(cat -v "$TMP/out" | grep -m3 '\^\[')"; else ok; fi
grep -q '^name  *evil\\e\[2J\\e\]0;pwned\\x07name$' "$TMP/out" && ok || bad "info name not escaped: $(grep '^name' "$TMP/out" | cat -v)"
grep -q '^  evil\\e\[2J\\e\]0;pwned\\x07\.key ' "$TMP/out" && ok || bad "info key not escaped"
grep -q '"value\\x1b\[2J\\x1b\]0;pwned\\x07"' "$TMP/out" && ok || bad "info value not escaped"
grep -q '^  evil\\e\[2J\\e\]0;pwned\\x07\.weight ' "$TMP/out" && ok || bad "info tensor name not escaped"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
