#!/usr/bin/env bash
# test_session_cli.sh — --session FILE on `petrel run` and `petrel chat
# --plain`, and the KV cache /save and /load keep beside a saved chat, on
# SmolLM2 with greedy sampling:
#   - run: a new FILE is created; a second run reuses the saved prefix
#     (prefills one token) and prints what a run without a session prints;
#     a longer prompt reuses all of the saved one and still matches;
#   - a truncated FILE, or one saved with another model, is a one-line
#     error (exit 1) and is left as it was;
#   - run says when the context window filled;
#   - a full disk while saving (tests/enospc_shim.c on FILE.tmp) is a
#     one-line error, the earlier FILE intact, no FILE.tmp left;
#   - chat --plain --session restores the tokens (stderr says how many), a
#     turn reuses them (--stats "cached") and replies as without a session;
#   - /save writes NAME.kv beside NAME.json, /load restores it, and a
#     corrupt NAME.kv is a note (the chat still loads, exit 0).
source "$(dirname "$0")/cli_lib.sh"
export XDG_DATA_HOME="$TMP/data"
mkdir -p "$XDG_DATA_HOME"
RUN=("$BIN" run -m "$MODEL" -n 8 --temp 0 -t 2)
P="The capital of France is"

"${RUN[@]}" -p "$P" >"$TMP/ref" 2>/dev/null || bad "reference run failed"
"${RUN[@]}" -p "$P and" >"$TMP/ref2" 2>/dev/null || bad "reference run 2 failed"

S="$TMP/s.session"
expect_exit 0 "run, new session" -- "${RUN[@]}" -p "$P" --session "$S"
cmp -s "$TMP/out" "$TMP/ref" && ok || bad "new session: output differs"
[ -s "$S" ] && [ ! -e "$S.tmp" ] && ok || bad "new session: no file, or a .tmp left"

expect_exit 0 "run, saved session" -- "${RUN[@]}" -p "$P" --session "$S"
cmp -s "$TMP/out" "$TMP/ref" && ok || bad "saved session: output differs: $(cat "$TMP/out")"
grep -Eq '^session: [1-9][0-9]* of [0-9]+ prompt tokens reused' "$TMP/err" && ok || bad "saved session: no reuse: $(cat "$TMP/err")"
grep -q '^prefill: 1 tokens' "$TMP/err" && ok || bad "saved session: prefilled more than one token: $(cat "$TMP/err")"

n_saved=$(sed -n 's/^session: [0-9]* of \([0-9]*\) prompt.*/\1/p' "$TMP/err")
expect_exit 0 "run, longer prompt" -- "${RUN[@]}" -p "$P and" --session "$S"
cmp -s "$TMP/out" "$TMP/ref2" && ok || bad "longer prompt: output differs"
grep -Eq "^session: $n_saved of [0-9]+ prompt tokens reused" "$TMP/err" && ok || bad "longer prompt: did not reuse the $n_saved saved prompt tokens: $(cat "$TMP/err")"

# bad files: one line, exit 1, file untouched
head -c 1000 "$S" >"$TMP/trunc.session"
sum=$(sha256sum <"$TMP/trunc.session")
expect_exit 1 "truncated session" -- "${RUN[@]}" -p "$P" --session "$TMP/trunc.session"
one_line_error "truncated session"
grep -q 'truncated' "$TMP/err" && ok || bad "truncated session: message: $(cat "$TMP/err")"
[ "$(sha256sum <"$TMP/trunc.session")" = "$sum" ] && ok || bad "truncated session: the file changed"

sum=$(sha256sum <"$S")
expect_exit 1 "another model" -- "$BIN" run -m "$PETREL_TEST_DATA/tiny_llama.gguf" -p "$P" -n 2 --session "$S"
one_line_error "another model"
grep -q 'another model' "$TMP/err" && ok || bad "another model: message: $(cat "$TMP/err")"
[ "$(sha256sum <"$S")" = "$sum" ] && ok || bad "another model: the file changed"

if [ -n "${PETREL_ENOSPC_SHIM:-}" ] && [ -r "$PETREL_ENOSPC_SHIM" ]; then
    # (under ASan the shim comes first in the preload list: ASan's link
    # order check is turned off for it, as in test_pull.sh)
    expect_exit 1 "full disk" -- env LD_PRELOAD="$PETREL_ENOSPC_SHIM" PETREL_ENOSPC_SUFFIX=.tmp \
        PETREL_ENOSPC_AFTER=20000 ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
        "${RUN[@]}" -p "$P" --session "$S"
    grep -q '^petrel: .*No space left' "$TMP/err" && ok || bad "full disk: message: $(cat "$TMP/err")"
    [ "$(grep -c '^petrel: ' "$TMP/err")" -eq 1 ] && ok || bad "full disk: not one error line: $(cat "$TMP/err")"
    [ "$(sha256sum <"$S")" = "$sum" ] && [ ! -e "$S.tmp" ] && ok || bad "full disk: the earlier session changed or a .tmp is left"
else
    bad "PETREL_ENOSPC_SHIM not set: the full-disk case did not run"
fi

# run says when the context filled
expect_exit 0 "run, context fills" -- "$BIN" run -m "$MODEL" -n 50 --temp 0 -t 2 -c 16 -p "$P"
grep -q '^petrel: note: the context window (16 tokens) filled' "$TMP/err" && ok || bad "run: no context-full note: $(cat "$TMP/err")"

# chat --plain --session
CHAT=("$BIN" chat --plain -m "$MODEL" -n 6 --temp 0 -t 2 --system "Be brief.")
printf 'Hello!\n' | "${CHAT[@]}" >"$TMP/chat_ref" 2>/dev/null || bad "chat reference failed"
C="$TMP/c.session"
printf 'Hello!\n' | "${CHAT[@]}" --session "$C" >/dev/null 2>&1 && [ -s "$C" ] && ok || bad "chat: no session saved"
printf 'Hello!\n' | "${CHAT[@]}" --session "$C" --stats >"$TMP/out" 2>"$TMP/err" && ok || bad "chat with a session failed"
cmp -s "$TMP/out" "$TMP/chat_ref" && ok || bad "chat with a session: reply differs: $(cat "$TMP/out")"
grep -Eq '^session: [1-9][0-9]* tokens restored' "$TMP/err" && ok || bad "chat: nothing restored: $(cat "$TMP/err")"
grep -Eq '\([1-9][0-9]* cached\)' "$TMP/err" && ok || bad "chat: the turn reused nothing: $(cat "$TMP/err")"

# /save and /load keep the KV beside the JSON
printf 'Hello!\n/save kvchat\n' | "${CHAT[@]}" >"$TMP/out" 2>"$TMP/err" && ok || bad "/save failed: $(cat "$TMP/err")"
J="$XDG_DATA_HOME/petrel/chats/kvchat"
[ -s "$J.json" ] && [ -s "$J.kv" ] && ok || bad "/save: no kvchat.json and kvchat.kv"
printf '/load kvchat\n' | "$BIN" chat --plain -m "$MODEL" -t 2 >"$TMP/out" 2>"$TMP/err" && ok || bad "/load failed"
grep -Eq '^KV cache of [1-9][0-9]* tokens restored from .*kvchat\.kv$' "$TMP/out" && ok || bad "/load: KV not restored: $(cat "$TMP/out" "$TMP/err")"
head -c 100 "$J.kv" >"$TMP/x" && mv "$TMP/x" "$J.kv"
printf '/load kvchat\n' | "$BIN" chat --plain -m "$MODEL" -t 2 >"$TMP/out" 2>"$TMP/err" && ok || bad "/load with a corrupt .kv failed"
grep -q '^loaded ' "$TMP/out" && grep -q '^petrel: note: the KV cache beside the chat was not restored (truncated' "$TMP/err" \
    && ok || bad "/load with a corrupt .kv: $(cat "$TMP/out" "$TMP/err")"

# quantized KV types: a session saved and restored gives the text of a run
# without one (the cache is stored in its own type); a context of another
# type is one line and leaves the file as it was
P2="The history of the lighthouse"
for t in q8f8 f16; do
    plain=$("${RUN[@]}" --kv-type $t -p "$P2" 2>/dev/null) && ok || bad "--kv-type $t run"
    "${RUN[@]}" --kv-type $t -p "$P2" --session "$TMP/s.$t" >/dev/null 2>&1 && ok || bad "--kv-type $t: saving"
    again=$("${RUN[@]}" --kv-type $t -p "$P2" --session "$TMP/s.$t" 2>"$TMP/err") && ok || bad "--kv-type $t: restoring: $(cat "$TMP/err")"
    [ "$again" = "$plain" ] && ok || bad "--kv-type $t: restored text differs: '$again' vs '$plain'"
    cp "$TMP/s.$t" "$TMP/s.before"
    expect_exit 1 "$t session in an f32 context" -- "${RUN[@]}" -p "$P2" --session "$TMP/s.$t"
    one_line_error "$t session in an f32 context"
    grep -q "holds a $t KV cache" "$TMP/err" && ok || bad "type mismatch message: $(cat "$TMP/err")"
    cmp -s "$TMP/s.$t" "$TMP/s.before" && ok || bad "a refused session file was changed"
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
