#!/usr/bin/env bash
# test_lora_llamacpp.sh — llama.cpp loads the GGUF LoRA adapter petrel
# reads (tests/data/lora/tiny_llama_a.gguf, made by llama.cpp's own
# convert_lora_to_gguf.py from the PEFT adapter tiny_llama_a) and gives the
# same greedy text as petrel on the float path, with the adapter in its
# GGUF form and in its PEFT form, at scales 1 and 0.5, on three prompts;
# and the adapters a and b as `petrel convert` writes them; and `petrel
# export-lora` against llama.cpp's llama-export-lora (the merged files, and
# both engines running petrel's).
#
# The float path on both sides: the tiny llama's weights as F32 (converted
# here with llama-quantize), petrel with PETREL_CPU=ref (float products on
# the float input), llama.cpp on the CPU with an F32 KV cache. llama.cpp's
# side is tests/llamacpp_lora_greedy.c, built here against the llama.cpp
# build of bench/build_llamacpp.sh (tools/test.sh builds it once before the
# suites). Texts are compared as Python's decode(errors="replace") of
# llama.cpp's bytes, which is what petrel's UTF-8 stream prints.
CLI_LIB_NO_MODEL=1
SRC=${PETREL_SOURCE_DIR:?PETREL_SOURCE_DIR not set}
. "$(dirname "$0")/cli_lib.sh"
D=${PETREL_TEST_DATA:?}

simple=$(bash "$SRC/bench/build_llamacpp.sh" llama-simple) || { bad "no llama.cpp build"; echo "$passed passed, $failed failed"; exit 1; }
quantize=$(bash "$SRC/bench/build_llamacpp.sh" llama-quantize) || { bad "no llama-quantize"; echo "$passed passed, $failed failed"; exit 1; }
LB=$(dirname "$(dirname "$simple")")
LSRC=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$LB/CMakeCache.txt")
cc -O1 -c "$SRC/tests/llamacpp_lora_greedy.c" -I"$LSRC/include" -I"$LSRC/ggml/include" -o "$TMP/lg.o" \
  && c++ "$TMP/lg.o" "$LB/src/libllama.a" "$LB/ggml/src/libggml.a" "$LB/ggml/src/libggml-cpu.a" \
         "$LB/ggml/src/libggml-base.a" -fopenmp -lpthread -lm -o "$TMP/lg" && ok || bad "building the llama.cpp harness"
"$quantize" --allow-requantize "$D/tiny_llama.gguf" "$TMP/f32.gguf" F32 >"$TMP/q.log" 2>&1 && ok || bad "llama-quantize F32: $(tail -3 "$TMP/q.log")"

same_text() { # what llama_bytes petrel_text
    if python3 - "$2" "$3" <<'PY'
import sys
ref = open(sys.argv[1], "rb").read().decode("utf-8", "replace")
got = open(sys.argv[2], "rb").read().decode("utf-8")
sys.exit(0 if got == ref + "\n" and len(ref) > 0 else 1)
PY
    then ok; else bad "$1: llama.cpp $(od -c "$2" | head -3) vs petrel $(od -c "$3" | head -3)"; fi
}

i=0
for prompt in "The quick brown fox" "Hello, world! hello there" "What is the capital of France?"; do
    for scale in 1 0.5; do
        i=$((i + 1))
        "$TMP/lg" "$TMP/f32.gguf" "$D/lora/tiny_llama_a.gguf" "$scale" 24 "$prompt" >"$TMP/llama$i" 2>"$TMP/err" \
            && ok || bad "llama.cpp with the adapter ($prompt, $scale): $(cat "$TMP/err")"
        for form in "$D/lora/tiny_llama_a.gguf" "$D/lora/tiny_llama_a"; do
            PETREL_CPU=ref "$BIN" run -m "$TMP/f32.gguf" -p "$prompt" -n 24 --temp 0 --lora "$form:$scale" \
                >"$TMP/petrel$i" 2>"$TMP/err" && ok || bad "petrel: $(cat "$TMP/err")"
            same_text "'$prompt' at $scale, $(basename "$form")" "$TMP/llama$i" "$TMP/petrel$i"
        done
    done
done
# adapters petrel converted (`petrel convert`): a, and the rsLoRA b, whose
# alpha petrel writes as alpha * sqrt(r) so that llama.cpp's alpha / r is
# the adapter's scale: llama.cpp with them gives petrel's text with the
# PEFT folders
for name in a b; do
    "$BIN" convert "$D/lora/tiny_llama_$name" "$TMP/conv_$name.gguf" --base "$D/tiny_llama.gguf" >/dev/null 2>"$TMP/err" \
        && ok || bad "petrel convert $name: $(cat "$TMP/err")"
    "$TMP/lg" "$TMP/f32.gguf" "$TMP/conv_$name.gguf" 1 24 "The quick brown fox" >"$TMP/llama_conv_$name" 2>"$TMP/err" \
        && ok || bad "llama.cpp with converted $name: $(cat "$TMP/err")"
    PETREL_CPU=ref "$BIN" run -m "$TMP/f32.gguf" -p "The quick brown fox" -n 24 --temp 0 --lora "$D/lora/tiny_llama_$name" \
        >"$TMP/petrel_conv_$name" 2>"$TMP/err" && ok || bad "petrel: $(cat "$TMP/err")"
    same_text "converted $name" "$TMP/llama_conv_$name" "$TMP/petrel_conv_$name"
done

# and the adapter matters: without it llama.cpp's text is another
"$TMP/lg" "$TMP/f32.gguf" - 1 24 "The quick brown fox" >"$TMP/llama_base" 2>"$TMP/err" && ok || bad "llama.cpp base"
cmp -s "$TMP/llama_base" "$TMP/llama1" && bad "llama.cpp's text does not change with the adapter" || ok

# export-lora: petrel's merged model is the file llama.cpp's llama-export-lora
# writes (tests/lora_merge_compare.py: same metadata and tensor table, data
# equal or within a float sum's rounding), on the F32 base (merged F32) and
# on the committed mixed-type base (merged F16) at scale 0.5; and llama.cpp
# and petrel run petrel's merged F32 file, without the adapter, to the text
# llama.cpp gives with it
xl=$(bash "$SRC/bench/build_llamacpp.sh" llama-export-lora) || bad "no llama-export-lora"
for spec in "$TMP/f32.gguf:1" "$D/tiny_llama.gguf:0.5"; do
    base=${spec%:*} scale=${spec##*:}
    name=$(basename "$base" .gguf)
    "$xl" -m "$base" --lora-scaled "$D/lora/tiny_llama_a.gguf:$scale" -o "$TMP/xl_$name.gguf" >"$TMP/xl.log" 2>&1 \
        && ok || bad "llama-export-lora: $(tail -3 "$TMP/xl.log")"
    "$BIN" export-lora -m "$base" --lora "$D/lora/tiny_llama_a.gguf:$scale" -o "$TMP/pt_$name.gguf" >/dev/null 2>"$TMP/err" \
        && ok || bad "petrel export-lora: $(cat "$TMP/err")"
    python3 "$SRC/tests/lora_merge_compare.py" "$TMP/xl_$name.gguf" "$TMP/pt_$name.gguf" \
        && ok || bad "petrel's merged $name differs from llama-export-lora's"
done
"$TMP/lg" "$TMP/pt_f32.gguf" - 1 24 "The quick brown fox" >"$TMP/llama_merged" 2>"$TMP/err" \
    && ok || bad "llama.cpp on petrel's merged model: $(cat "$TMP/err")"
cmp -s "$TMP/llama1" "$TMP/llama_merged" && ok \
    || bad "llama.cpp on petrel's merged model: $(od -c "$TMP/llama_merged" | head -2) vs with the adapter $(od -c "$TMP/llama1" | head -2)"
PETREL_CPU=ref "$BIN" run -m "$TMP/pt_f32.gguf" -p "The quick brown fox" -n 24 --temp 0 >"$TMP/petrel_merged" 2>"$TMP/err" \
    && ok || bad "petrel on its merged model: $(cat "$TMP/err")"
same_text "petrel on its merged model" "$TMP/llama1" "$TMP/petrel_merged"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
