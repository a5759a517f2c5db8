#!/usr/bin/env bash
# test_hostile_fifo.sh — a named pipe as the model must not hang any command:
# one line naming the problem, exit 1, well inside `timeout 20` (a hang shows
# as exit 124). Needs the engine's pt_gguf_open to refuse non-regular files
# before it opens them (issue 10); kept apart from test_hostile_cli.sh so the
# two can be checked separately.
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=cli_lib.sh
. "$SRC/tests/cli_lib.sh"
mkfifo "$TMP/model.fifo" || { bad "mkfifo failed"; echo "$passed passed, $failed failed"; exit 1; }
F=$TMP/model.fifo
for args in "info $F" "run -m $F -p hi -n 1" "tokenize -m $F -p hi" "bench -m $F -p 1 -n 0 -r 1"; do
    # shellcheck disable=SC2086
    expect_exit 1 "$args" -- timeout 20 "$BIN" $args
    { [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q "^petrel: .*not a regular file" "$TMP/err"; } \
        && ok || bad "$args: want one 'petrel: ... not a regular file' line: $(cat "$TMP/err")"
done
printf 'hi\n' | timeout 20 "$BIN" chat --plain -m "$F" >"$TMP/out" 2>"$TMP/err"; st=$?
[ "$st" -eq 1 ] && ok || bad "chat --plain -m FIFO: exit $st, want 1"
grep -q "^petrel: .*not a regular file" "$TMP/err" && ok || bad "chat -m FIFO: $(cat "$TMP/err")"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
