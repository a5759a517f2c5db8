#!/usr/bin/env bash
# test_lora_cli.sh — `--lora PATH[:SCALE]` on run, chat --plain and bench,
# `petrel info ADAPTER`, `petrel export-lora`, and one-line errors for bad
# adapters, on the tiny llama model and the adapters of
# tools/gen_lora_fixture.py (test_lora.c
# checks the logits themselves against transformers + peft).
CLI_LIB_NO_MODEL=1
. "$(dirname "$0")/cli_lib.sh"
D=${PETREL_TEST_DATA:?}
M=$D/tiny_llama.gguf
A=$D/lora/tiny_llama_a
export PETREL_CPU=ref # the float path: the PEFT and GGUF forms agree bitwise there

# info ADAPTER: what the files say
expect_exit 0 "info peft" -- "$BIN" info "$A"
for want in 'kind *LoRA adapter (peft)' 'rank *4$' 'alpha *8$' 'rslora *no' 'scale *2 (alpha / rank)' \
            'matrices *21 in 3 layers' 'targets *.*attn_q' 'targets *.*ffn_down'; do
    grep -q "$want" "$TMP/out" && ok || bad "info peft: no '$want' in: $(cat "$TMP/out")"
done
expect_exit 0 "info rslora" -- "$BIN" info "$D/lora/tiny_llama_b/adapter_config.json"
grep -q 'rslora *yes' "$TMP/out" && grep -q 'targets *output' "$TMP/out" && ok || bad "info b: $(cat "$TMP/out")"
expect_exit 0 "info gguf" -- "$BIN" info "$D/lora/tiny_llama_a.gguf"
for want in 'kind *LoRA adapter (gguf)' 'architecture *llama' 'rank *4$' 'alpha *8$'; do
    grep -q "$want" "$TMP/out" && ok || bad "info gguf: no '$want' in: $(cat "$TMP/out")"
done

# run: greedy text with the adapter differs from the base's; its PEFT and
# GGUF forms give the same; scale 0 is the base again
run() { "$BIN" run -m "$M" -p "The quick brown fox" -n 24 --temp 0 "$@" 2>"$TMP/err"; }
base=$(run) && ok || bad "run without adapter: $(cat "$TMP/err")"
with_a=$(run --lora "$A") && ok || bad "run --lora: $(cat "$TMP/err")"
with_g=$(run --lora "$D/lora/tiny_llama_a.gguf") && ok || bad "run --lora gguf: $(cat "$TMP/err")"
zero=$(run --lora "$A:0") && ok || bad "run --lora :0: $(cat "$TMP/err")"
stacked=$(run --lora "$A:0.5" --lora "$D/lora/tiny_llama_b:1.5") && ok || bad "run two adapters: $(cat "$TMP/err")"
[ "$with_a" != "$base" ] && ok || bad "the adapter does not change the text"
[ "$with_a" = "$with_g" ] && ok || bad "PEFT and GGUF forms differ: '$with_a' vs '$with_g'"
[ "$zero" = "$base" ] && ok || bad "scale 0 is not the base: '$zero' vs '$base'"
[ "$stacked" != "$with_a" ] && ok || bad "stacking b changes nothing"

# chat --plain and bench take it too
printf 'hello\n' | "$BIN" chat --plain -m "$M" -n 8 --temp 0 --lora "$A:0.7" >"$TMP/out" 2>"$TMP/err" \
    && ok || bad "chat --plain --lora: $(cat "$TMP/err")"
expect_exit 0 "bench --lora" -- "$BIN" bench -m "$M" -p 8 -n 4 -r 1 -o json --lora "$A" --lora "$D/lora/tiny_llama_b"

# bad adapters: one line, non-zero
expect_exit 1 "wrong base" -- "$BIN" run -m "$M" -p hi -n 2 --lora "$D/lora/tiny_llama_rs_a"
one_line_error "wrong base"
grep -q 'another base model' "$TMP/err" && ok || bad "wrong base: $(cat "$TMP/err")"
expect_exit 1 "layer 9" -- "$BIN" run -m "$M" -p hi -n 2 --lora "$D/lora/tiny_llama_a_layer9"
one_line_error "layer 9"
expect_exit 1 "missing" -- "$BIN" run -m "$M" -p hi -n 2 --lora "$TMP/none"
one_line_error "missing"
mkdir -p "$TMP/broken"
head -c 3000 "$A/adapter_model.safetensors" >"$TMP/broken/adapter_model.safetensors"
expect_exit 1 "no config" -- "$BIN" run -m "$M" -p hi -n 2 --lora "$TMP/broken"
one_line_error "no config"
cp "$A/adapter_config.json" "$TMP/broken/"
expect_exit 1 "corrupt safetensors" -- "$BIN" run -m "$M" -p hi -n 2 --lora "$TMP/broken"
one_line_error "corrupt safetensors"
expect_exit 1 "info corrupt" -- "$BIN" info "$TMP/broken"
one_line_error "info corrupt"
expect_exit 1 "model as adapter" -- "$BIN" run -m "$M" -p hi -n 2 --lora "$M"
one_line_error "model as adapter"
expect_exit 2 "bad scale" -- "$BIN" run -m "$M" -p hi -n 2 --lora "$A:1e9"
one_line_error "bad scale"
expect_exit 1 "bench wrong base" -- "$BIN" bench -m "$M" -p 8 -n 0 -r 1 --lora "$D/lora/tiny_llama_rs_a"
grep -q 'another base model' "$TMP/err" && ok || bad "bench wrong base: $(cat "$TMP/err")"

# export-lora: the merged copy runs without the adapter to the adapter's
# greedy text here (F16 merged weights: the tiny model's text is that
# robust; test_lora_merge bounds the logits); bad input one line, nothing
# written
expect_exit 0 "export-lora" -- "$BIN" export-lora -m "$M" --lora "$A" -o "$TMP/merged.gguf"
grep -q 'merged.gguf: llama, 30 tensors' "$TMP/out" && ok || bad "export-lora: $(cat "$TMP/out")"
merged=$("$BIN" run -m "$TMP/merged.gguf" -p "The quick brown fox" -n 24 --temp 0 2>"$TMP/err") && ok \
    || bad "run the merged model: $(cat "$TMP/err")"
[ "$merged" = "$with_a" ] && ok || bad "merged model's text '$merged', with the adapter '$with_a'"
expect_exit 2 "export-lora without -o" -- "$BIN" export-lora -m "$M" --lora "$A"
expect_exit 1 "export-lora wrong base" -- "$BIN" export-lora -m "$D/tiny_qwen2.gguf" --lora "$A" -o "$TMP/x.gguf"
one_line_error "export-lora wrong base"
[ ! -e "$TMP/x.gguf" ] && [ ! -e "$TMP/x.gguf.tmp" ] && ok || bad "export-lora left a file after an error"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
