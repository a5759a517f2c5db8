#!/usr/bin/env bash
# test_convert_llamacpp.sh — llama.cpp loads what `petrel convert` writes:
# each tiny HF checkpoint of tests/data/hf-tiny (llama, qwen2, qwen3, gemma3)
# is converted to f16 and q8_0, and llama.cpp's llama-simple (built from the
# llama-cpp-python sdist by bench/build_llamacpp.sh, pinned there; the test
# command builds it once before ctest) runs a short greedy generation on
# each file: it must exit 0 and print a continuation after the prompt. The
# weights are random, so the text is not checked, only that llama.cpp
# accepted the file's metadata, tokenizer and every tensor's shape and type
# and ran the graph (gemma3 too: sliding-window layers and all). On the
# f32 conversions of llama/qwen2/qwen3 petrel's greedy continuation must
# be llama.cpp's. And `petrel quantize`'s Q8_0/Q4_0/Q4_1/Q4_K_M files of
# tests/data/quantize_tiny.gguf load and run in llama.cpp.
set -u
CLI_LIB_NO_MODEL=1
. "$(dirname "$0")/cli_lib.sh"
DATA=${PETREL_TEST_DATA:?}
SRC=${PETREL_SOURCE_DIR:-$(dirname "$(dirname "$0")")}

if ! SIMPLE=$(bash "$SRC/bench/build_llamacpp.sh" llama-simple 2>"$TMP/build.log") || [ ! -x "$SIMPLE" ]; then
    tail -5 "$TMP/build.log"
    echo "llama-simple could not be built"
    echo "0 passed, 1 failed"
    exit 1
fi

prompt="The quick brown fox"
for fam in llama llama3 qwen2 qwen3 gemma3; do
    for t in f16 q8_0; do
        out=$TMP/$fam-$t.gguf
        expect_exit 0 "convert $fam $t" -- "$BIN" convert "$DATA/hf-tiny/$fam" "$out" --outtype $t
        "$SIMPLE" -m "$out" -n 8 "$prompt" >"$TMP/gen" 2>"$TMP/gen.err"
        rc=$?
        if [ $rc -ne 0 ]; then
            bad "llama-simple on $fam $t: exit $rc: $(tail -3 "$TMP/gen.err")"
            continue
        fi
        ok
        # the prompt is echoed, then the continuation
        text=$(tr -d '\n' <"$TMP/gen")
        if [ "${#text}" -gt "${#prompt}" ]; then ok; else bad "$fam $t: no continuation: '$text'"; fi
        echo "$fam $t: $(head -c 120 "$TMP/gen" | LC_ALL=C tr -c '[:print:]' '.')"
    done
done

# the f32 conversions: llama.cpp and petrel continue the prompt greedily
# with the same tokens (compared as their letters, digits and spaces: the
# two print undecodable byte tokens differently)
alnum() { LC_ALL=C tr -cd 'A-Za-z0-9 '; }
for fam in llama llama3 qwen2 qwen3; do
    out=$TMP/$fam-f32.gguf
    expect_exit 0 "convert $fam f32" -- "$BIN" convert "$DATA/hf-tiny/$fam" "$out" --outtype f32
    ll=$("$SIMPLE" -m "$out" -n 12 "$prompt" 2>/dev/null | alnum)
    ll=${ll#beginoftext}
    ll=${ll#"$prompt"}
    pt=$("$BIN" run -m "$out" -p "$prompt" -n 12 --temp 0 2>/dev/null | alnum)
    if [ -n "$ll" ] && [ "$ll" = "$pt" ]; then ok; else bad "$fam f32 greedy: llama.cpp '$ll', petrel '$pt'"; fi
done

# petrel quantize's files load too: the types whose blocks are byte-
# identical to llama-quantize's (tests/test_quantize.sh) and a K mix
for t in Q8_0 Q4_0 Q4_1 Q4_K_M; do
    out=$TMP/quantized-$t.gguf
    expect_exit 0 "quantize $t" -- "$BIN" quantize "$DATA/quantize_tiny.gguf" "$out" $t
    if "$SIMPLE" -m "$out" -n 4 "$prompt" >"$TMP/gen" 2>"$TMP/gen.err"; then ok
    else bad "llama-simple on quantize_tiny $t: $(tail -3 "$TMP/gen.err")"; fi
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
