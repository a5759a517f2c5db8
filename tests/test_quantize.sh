#!/usr/bin/env bash
# test_quantize.sh — petrel quantize against llama-quantize, and its errors.
#
# tests/data/quantize_tiny.gguf (tools/gen_quantize_fixture.py: a tiny
# llama, F32/F16/BF16 weights) is quantized to each type that
# tests/data/quantize_tiny.ref.json holds llama-quantize's output for;
# tests/gguf_tensors.py then demands the same tensors in the same order
# with the same types and BYTE-IDENTICAL data, and the same whole file.
# Each result must load and generate (petrel run -n 4). Then the options
# (--leave-output-tensor, --output-tensor-type, --token-embedding-type,
# -t 1 == -t 2, --allow-requantize) and the failures: not a GGUF, a
# truncated file, an unknown TYPE, an unwritable OUT, OUT == IN, a full
# disk (tests/enospc_shim.c), a quantized source: one "petrel: " line,
# a non-zero exit, and nothing left at OUT (nor OUT.tmp).
set -u
here=$(cd "$(dirname "$0")" && pwd)
CLI_LIB_NO_MODEL=1
. "$here/cli_lib.sh"

IN=$here/data/quantize_tiny.gguf
REF=$here/data/quantize_tiny.ref.json
PY=${PYTHON3:-python3}

nothing_left() { # OUT: neither OUT nor OUT.tmp exists
    if [ ! -e "$1" ] && [ ! -e "$1.tmp" ]; then ok; else bad "$2: left $(ls "$1"* 2>/dev/null)"; fi
}

# ---- byte-identical to llama-quantize, and runnable ------------------------
# quantize_tiny.gguf runs; quantize_q6k.gguf (256-wide rows) is for the
# Q6_K output tensor only and does not.
cases=$("$PY" -c 'import json,sys
for i, e in json.load(open(sys.argv[1]))["inputs"].items():
    for t in e["types"]: print(i + ":" + t)' "$REF")
for c in $cases; do
    input=${c%%:*} t=${c#*:}
    out=$TMP/${input%.gguf}.$t.gguf
    expect_exit 0 "quantize $input $t" -- "$BIN" quantize "$here/data/$input" "$out" "$t" -t 2
    grep -q 'MiB ->' "$TMP/out" || bad "quantize $t: no sizes printed: $(cat "$TMP/out")"
    if "$PY" "$here/gguf_tensors.py" "$out" --ref "$REF" "$input" "$t" >"$TMP/cmp"; then ok; else bad "$input $t vs llama-quantize: $(cat "$TMP/cmp")"; fi
    cat "$TMP/cmp"
    if [ "$input" = quantize_tiny.gguf ]; then
        cp "$out" "$TMP/$t.gguf"
        expect_exit 0 "run $t" -- "$BIN" run -m "$out" -p "hello" -n 4
        grep -q 'decode: 4 tokens' "$TMP/err" || bad "run $t: no 4 tokens: $(cat "$TMP/err")"
    fi
done
[ -s "$TMP/Q4_0.gguf" ] && [ -s "$TMP/Q4_1.gguf" ] && [ -s "$TMP/Q8_0.gguf" ] && ok || bad "reference lacks Q8_0/Q4_0/Q4_1"

# threads do not change a byte
expect_exit 0 "quantize Q4_1 -t 1" -- "$BIN" quantize "$IN" "$TMP/t1.gguf" Q4_1 -t 1
if cmp -s "$TMP/t1.gguf" "$TMP/Q4_1.gguf"; then ok; else bad "-t 1 and -t 2 differ"; fi

# ---- per-tensor options -----------------------------------------------------
type_of() { "$PY" "$here/gguf_tensors.py" "$1" | awk -v n="$2" '$1 == n { print $2 }'; }
expect_exit 0 "--leave-output-tensor" -- "$BIN" quantize --leave-output-tensor "$IN" "$TMP/lo.gguf" Q4_0
[ "$(type_of "$TMP/lo.gguf" output.weight)" = F16 ] && ok || bad "--leave-output-tensor: output.weight is $(type_of "$TMP/lo.gguf" output.weight)"
[ "$(type_of "$TMP/lo.gguf" blk.0.ffn_up.weight)" = Q4_0 ] && ok || bad "--leave-output-tensor: ffn_up not Q4_0"
expect_exit 0 "type overrides" -- "$BIN" quantize --output-tensor-type q4_1 --token-embedding-type bf16 "$IN" "$TMP/ov.gguf" q4_0
[ "$(type_of "$TMP/ov.gguf" output.weight)" = Q4_1 ] && ok || bad "--output-tensor-type: output.weight is $(type_of "$TMP/ov.gguf" output.weight)"
[ "$(type_of "$TMP/ov.gguf" token_embd.weight)" = BF16 ] && ok || bad "--token-embedding-type: token_embd is $(type_of "$TMP/ov.gguf" token_embd.weight)"
[ "$(type_of "$TMP/ov.gguf" blk.0.attn_norm.weight)" = F32 ] && ok || bad "norms must stay F32"
expect_exit 0 "run overrides" -- "$BIN" run -m "$TMP/ov.gguf" -p "hello" -n 4

# quantized sources: refused unless --allow-requantize
expect_exit 1 "requantize refused" -- "$BIN" quantize "$TMP/Q4_0.gguf" "$TMP/rq.gguf" Q8_0
one_line_error "requantize refused"
grep -q 'allow-requantize' "$TMP/err" || bad "requantize: message does not name --allow-requantize: $(cat "$TMP/err")"
nothing_left "$TMP/rq.gguf" "requantize refused"
expect_exit 0 "--allow-requantize" -- "$BIN" quantize --allow-requantize "$TMP/Q4_0.gguf" "$TMP/rq.gguf" Q8_0
[ "$(type_of "$TMP/rq.gguf" blk.1.ffn_down.weight)" = Q8_0 ] && ok || bad "--allow-requantize: not Q8_0"

# ---- bad input ------------------------------------------------------------------
printf 'this is not a model\n' >"$TMP/text.gguf"
head -c 3000 "$IN" >"$TMP/trunc.gguf"
head -c 300000 "$IN" >"$TMP/trunc_data.gguf"
for f in text trunc trunc_data; do
    expect_exit 1 "bad input $f" -- "$BIN" quantize "$TMP/$f.gguf" "$TMP/o_$f.gguf" Q4_0
    one_line_error "bad input $f"
    nothing_left "$TMP/o_$f.gguf" "bad input $f"
done
expect_exit 1 "missing input" -- "$BIN" quantize "$TMP/none.gguf" "$TMP/o_none.gguf" Q4_0
one_line_error "missing input"
expect_exit 2 "unknown TYPE" -- "$BIN" quantize "$IN" "$TMP/o_type.gguf" Q3_X
one_line_error "unknown TYPE"
nothing_left "$TMP/o_type.gguf" "unknown TYPE"
expect_exit 2 "missing TYPE" -- "$BIN" quantize "$IN" "$TMP/o_type.gguf"
expect_exit 2 "unknown option" -- "$BIN" quantize --bogus "$IN" "$TMP/o_type.gguf" Q4_0
one_line_error "unknown option"
expect_exit 1 "unwritable OUT" -- "$BIN" quantize "$IN" "$TMP/no/such/dir/out.gguf" Q4_0
one_line_error "unwritable OUT"
nothing_left "$TMP/no/such/dir/out.gguf" "unwritable OUT"
cp "$IN" "$TMP/same.gguf"
sum=$(sha256sum <"$TMP/same.gguf")
expect_exit 1 "OUT == IN" -- "$BIN" quantize "$TMP/same.gguf" "$TMP/../$(basename "$TMP")/same.gguf" Q4_0
one_line_error "OUT == IN"
[ "$(sha256sum <"$TMP/same.gguf")" = "$sum" ] && [ ! -e "$TMP/same.gguf.tmp" ] && ok || bad "OUT == IN: input changed"
mv "$TMP/same.gguf" "$TMP/same.gguf.tmp"   # OUT.tmp == IN: would truncate the input
expect_exit 1 "OUT.tmp == IN" -- "$BIN" quantize "$TMP/same.gguf.tmp" "$TMP/same.gguf" Q4_0
one_line_error "OUT.tmp == IN"
[ "$(sha256sum <"$TMP/same.gguf.tmp")" = "$sum" ] && [ ! -e "$TMP/same.gguf" ] && ok || bad "OUT.tmp == IN: input changed"
if [ -n "${PETREL_ENOSPC_SHIM:-}" ] && [ -r "$PETREL_ENOSPC_SHIM" ]; then
    # (under ASan the shim comes first in the preload list: ASan's link
    # order check is turned off for it, as in test_pull.sh)
    expect_exit 1 "full disk" -- env LD_PRELOAD="$PETREL_ENOSPC_SHIM" PETREL_ENOSPC_SUFFIX=.tmp \
        PETREL_ENOSPC_AFTER=40000 ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
        "$BIN" quantize "$IN" "$TMP/full.gguf" Q8_0
    one_line_error "full disk"
    grep -q 'No space left' "$TMP/err" || bad "full disk: message does not say so: $(cat "$TMP/err")"
    nothing_left "$TMP/full.gguf" "full disk"
else
    bad "PETREL_ENOSPC_SHIM not set: the full-disk case did not run"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
