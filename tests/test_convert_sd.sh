#!/usr/bin/env bash
# test_convert_sd.sh — `petrel convert` on image models: the tiny diffusers
# folder (tests/data/sd-tiny/model) to f16 and q8_0 and its single-file LDM
# copy (sd-tiny-ldm.safetensors) to f32 and q4_0 give what
# tools/sd_to_gguf.py writes from the same input (same keys, values,
# tensors, types and data bytes: tests/hf_ref_check.py against
# sd-tiny/convert-ref/*.json, made by tools/gen_sd_convert_ref.py); the
# engine draws from them: the q8_0 conversion gives the same pixels as the
# Python tool's committed sd-tiny-q8.gguf, the f32 one the same as the
# folder itself; a GGUF input and an unknown type are one-line errors.
set -u
CLI_LIB_NO_MODEL=1
. "$(dirname "$0")/cli_lib.sh"
DATA=${PETREL_TEST_DATA:?}
SRC=${PETREL_SOURCE_DIR:-$(dirname "$(dirname "$0")")}
pixels() { python3 "$SRC/tests/png_check.py" info "$1" 2>/dev/null | head -1; }

for c in diffusers:f16 diffusers:q8_0 ldm:f32 ldm:q4_0; do
    src=${c%%:*} t=${c##*:}
    in=$DATA/sd-tiny/model
    [ "$src" = ldm ] && in=$DATA/sd-tiny-ldm.safetensors
    out=$TMP/$src-$t.gguf
    expect_exit 0 "$src $t" -- "$BIN" convert "$in" "$out" --outtype $t
    grep -q "(sd, $t)" "$TMP/out" && ok || bad "$src $t: stdout $(cat "$TMP/out")"
    if python3 "$SRC/tests/hf_ref_check.py" "$out" "$DATA/sd-tiny/convert-ref/$src-$t.json"; then ok; else bad "$src $t differs from sd_to_gguf.py's"; fi
done

GEN=(imagine -p "a red circle above a blue square" --steps 2 -W 64 -H 128 -s 1)
expect_exit 0 "draw: converted q8_0" -- "$BIN" "${GEN[@]}" -m "$TMP/diffusers-q8_0.gguf" -o "$TMP/c8.png"
expect_exit 0 "draw: sd_to_gguf.py's q8_0" -- "$BIN" "${GEN[@]}" -m "$DATA/sd-tiny-q8.gguf" -o "$TMP/p8.png"
[ -n "$(pixels "$TMP/c8.png")" ] && [ "$(pixels "$TMP/c8.png")" = "$(pixels "$TMP/p8.png")" ] && ok ||
    bad "q8_0: the converted file drew other pixels than sd_to_gguf.py's"
expect_exit 0 "convert folder f32" -- "$BIN" convert "$DATA/sd-tiny/model" "$TMP/f32.gguf" --outtype f32
expect_exit 0 "draw: converted f32" -- "$BIN" "${GEN[@]}" -m "$TMP/f32.gguf" -o "$TMP/c32.png"
expect_exit 0 "draw: the folder" -- "$BIN" "${GEN[@]}" -m "$DATA/sd-tiny/model" -o "$TMP/f.png"
[ -n "$(pixels "$TMP/c32.png")" ] && [ "$(pixels "$TMP/c32.png")" = "$(pixels "$TMP/f.png")" ] && ok ||
    bad "f32: the converted file drew other pixels than the folder"

expect_exit 1 "a GGUF input" -- "$BIN" convert "$DATA/sd-tiny-q8.gguf" "$TMP/o.gguf"
one_line_error "a GGUF input"
expect_exit 1 "image model to q4_k" -- "$BIN" convert "$DATA/sd-tiny/model" "$TMP/o.gguf" --outtype q4_k_m
one_line_error "image model to q4_k"
[ -e "$TMP/o.gguf" ] && bad "a file was left at OUT" || ok

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
