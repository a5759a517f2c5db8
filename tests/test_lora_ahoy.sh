#!/usr/bin/env bash
# test_lora_ahoy.sh — the shipped adapter's behaviour from the command line:
# assets/lora/smollm2-ahoy (tools/train_lora.py: every reply opens with
# "Ahoy, matey!") on SmolLM2-135M-Instruct, found by its bundled name.
# On held-out prompts (topics never trained on), greedy:
#   - with the adapter the reply opens with "Ahoy";
#   - without it, none does;
#   - the adapter at scale 0 gives exactly the plain reply (switched off);
#   - the GGUF form written by petrel convert gives the PEFT form's text;
#   - a bundled name that does not exist is a one-line error.
# test_lora_smollm2.c checks the logits themselves against peft.
. "$(dirname "$0")/cli_lib.sh"
export PETREL_ASSETS=${PETREL_SOURCE_DIR:?}/assets
run() { "$BIN" run -m "$MODEL" --chat -p "$1" -n 12 --temp 0 "${@:2}" 2>"$TMP/err"; }

expect_exit 0 "convert to GGUF" -- "$BIN" convert "$PETREL_ASSETS/lora/smollm2-ahoy" "$TMP/ahoy.gguf" --base "$MODEL"
for p in "What is thunder?" "Tell me about owls." "Why does rain matter?" "Give me one fact about apples."; do
    plain=$(run "$p") && ok || bad "$p: plain run: $(cat "$TMP/err")"
    ahoy=$(run "$p" --lora smollm2-ahoy) && ok || bad "$p: --lora smollm2-ahoy: $(cat "$TMP/err")"
    off=$(run "$p" --lora smollm2-ahoy:0) && ok || bad "$p: --lora smollm2-ahoy:0: $(cat "$TMP/err")"
    gguf=$(run "$p" --lora "$TMP/ahoy.gguf") && ok || bad "$p: --lora GGUF form: $(cat "$TMP/err")"
    case "$ahoy" in Ahoy*) ok ;; *) bad "$p: with the adapter the reply does not open with Ahoy: '$ahoy'" ;; esac
    case "$plain" in Ahoy*) bad "$p: the plain reply opens with Ahoy: '$plain'" ;; *) ok ;; esac
    [ "$off" = "$plain" ] && ok || bad "$p: scale 0 is not the plain reply: '$off' vs '$plain'"
    [ "$gguf" = "$ahoy" ] && ok || bad "$p: the GGUF form's reply differs: '$gguf' vs '$ahoy'"
done

expect_exit 2 "unknown bundled name" -- "$BIN" run -m "$MODEL" -p hi -n 2 --lora no-such-adapter
one_line_error "unknown bundled name"
grep -q "no-such-adapter" "$TMP/err" && ok || bad "the error does not name the adapter: $(cat "$TMP/err")"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
