#!/usr/bin/env bash
# test_lora_convert.sh — `petrel convert PEFT_FOLDER OUT.gguf --base
# MODEL.gguf` writes llama.cpp's GGUF adapter form: on tiny_llama's adapter
# a it matches tests/data/lora/tiny_llama_a.gguf, which llama.cpp's own
# convert_lora_to_gguf.py wrote (tools/gen_lora_fixture.py): the same
# adapter keys and values, the same tensors (names, shapes, types, data
# bytes; tests/lora_ref_check.py). Not byte-identical: the script also
# writes keys gguf-py guesses from the model card (general.name,
# general.base_model.count, general.tags), which petrel does not. The
# converted files give the same greedy text as their PEFT forms (float
# path), for a, its f16 form and the rsLoRA adapter b; bad folders, a
# missing or wrong base are one-line errors that leave nothing at OUT.
CLI_LIB_NO_MODEL=1
. "$(dirname "$0")/cli_lib.sh"
D=${PETREL_TEST_DATA:?}
M=$D/tiny_llama.gguf
A=$D/lora/tiny_llama_a
HERE=$(dirname "$0")
export PETREL_CPU=ref # the float path: the PEFT and GGUF forms agree bitwise there

# a against llama.cpp's converter
expect_exit 0 "convert a" -- "$BIN" convert "$A" "$TMP/a.gguf" --base "$M"
grep -q 'llama, f32' "$TMP/out" && grep -q 'adapter *42 tensors' "$TMP/out" && ok || bad "convert a said: $(cat "$TMP/out")"
python3 "$HERE/lora_ref_check.py" "$TMP/a.gguf" "$D/lora/tiny_llama_a.gguf" >"$TMP/check" 2>&1 \
    && ok || bad "a differs from llama.cpp's: $(cat "$TMP/check")"
expect_exit 0 "info converted" -- "$BIN" info "$TMP/a.gguf"
grep -q 'kind *LoRA adapter (gguf)' "$TMP/out" && grep -q 'alpha *8$' "$TMP/out" && ok || bad "info: $(cat "$TMP/out")"

# the converted forms run as their PEFT forms
run() { "$BIN" run -m "$M" -p "The quick brown fox" -n 24 --temp 0 "$@" 2>"$TMP/err"; }
same_text() { # same_text WHAT PEFT GGUF
    local p g
    p=$(run --lora "$2") && g=$(run --lora "$3") && ok || { bad "$1: run: $(cat "$TMP/err")"; return; }
    [ -n "$p" ] && [ "$p" = "$g" ] && ok || bad "$1: PEFT '$p' vs converted '$g'"
}
same_text "a" "$A" "$TMP/a.gguf"
expect_exit 0 "convert a_f16 --outtype f16" -- "$BIN" convert "$D/lora/tiny_llama_a_f16" "$TMP/a16.gguf" --base "$M" --outtype f16
same_text "a_f16" "$D/lora/tiny_llama_a_f16" "$TMP/a16.gguf"
expect_exit 0 "convert b (rsLoRA, lm_head)" -- "$BIN" convert "$D/lora/tiny_llama_b" "$TMP/b.gguf" --base "$M"
same_text "b" "$D/lora/tiny_llama_b" "$TMP/b.gguf"
base=$(run) && with_a=$(run --lora "$TMP/a.gguf") && [ "$base" != "$with_a" ] && ok || bad "the converted adapter changes nothing"

# bad input: one line, non-zero, nothing at OUT
nothing_at() { [ ! -e "$1" ] && [ ! -e "$1.tmp" ] && ok || bad "$2: something left at $1"; }
expect_exit 1 "no --base" -- "$BIN" convert "$A" "$TMP/x.gguf"
one_line_error "no --base"
grep -q -- '--base' "$TMP/err" && ok || bad "no --base: $(cat "$TMP/err")"
nothing_at "$TMP/x.gguf" "no --base"
expect_exit 1 "wrong base" -- "$BIN" convert "$D/lora/tiny_llama_rs_a" "$TMP/x.gguf" --base "$M"
one_line_error "wrong base"
grep -q 'another base model' "$TMP/err" && ok || bad "wrong base: $(cat "$TMP/err")"
nothing_at "$TMP/x.gguf" "wrong base"
expect_exit 1 "layer 9" -- "$BIN" convert "$D/lora/tiny_llama_a_layer9" "$TMP/x.gguf" --base "$M"
one_line_error "layer 9"
nothing_at "$TMP/x.gguf" "layer 9"
expect_exit 1 "adapter as base" -- "$BIN" convert "$A" "$TMP/x.gguf" --base "$D/lora/tiny_llama_a.gguf"
one_line_error "adapter as base"
expect_exit 1 "missing base" -- "$BIN" convert "$A" "$TMP/x.gguf" --base "$TMP/none.gguf"
one_line_error "missing base"
expect_exit 1 "bad outtype" -- "$BIN" convert "$A" "$TMP/x.gguf" --base "$M" --outtype q4_k_m
one_line_error "bad outtype"
nothing_at "$TMP/x.gguf" "bad outtype"
cp "$M" "$TMP/base.gguf"
expect_exit 1 "OUT is the base" -- "$BIN" convert "$A" "$TMP/base.gguf" --base "$TMP/base.gguf"
one_line_error "OUT is the base"
cmp -s "$M" "$TMP/base.gguf" && ok || bad "OUT is the base: the base was changed"
mkdir -p "$TMP/broken"
cp "$A/adapter_config.json" "$TMP/broken/"
expect_exit 1 "no safetensors" -- "$BIN" convert "$TMP/broken" "$TMP/x.gguf" --base "$M"
one_line_error "no safetensors"
head -c 3000 "$A/adapter_model.safetensors" >"$TMP/broken/adapter_model.safetensors"
expect_exit 1 "corrupt safetensors" -- "$BIN" convert "$TMP/broken" "$TMP/x.gguf" --base "$M"
one_line_error "corrupt safetensors"
nothing_at "$TMP/x.gguf" "corrupt safetensors"
cp "$A/adapter_model.safetensors" "$TMP/broken/"
printf '{"r": 4}' >"$TMP/broken/adapter_config.json"
expect_exit 1 "bad config" -- "$BIN" convert "$TMP/broken" "$TMP/x.gguf" --base "$M"
one_line_error "bad config"
nothing_at "$TMP/x.gguf" "bad config"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
