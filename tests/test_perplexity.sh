#!/usr/bin/env bash
# test_perplexity.sh — `petrel perplexity` against llama-perplexity, run
# live (the peer built once by bench/build_llamacpp.sh; LLAMA_PERPLEXITY
# names another binary), on SmolLM2-135M-Instruct Q4_1 and
# tests/data/perplexity_text.txt (original prose written for petrel).
#
#  1. Perplexity, -c 128 -b 128, the whole text (25 chunks): the same
#     number of chunks, every running value within PPL_RUN and the final
#     estimate within PPL_FINAL of llama's (measured: 1.5 % and 0.17 %).
#     The two differ by their kernels: each rounds the activations of the
#     Q4_1 products to 8 bits its own way (blocks of 32 both, llama.cpp's
#     Q8_1 with F16 scales, petrel's with F32), and llama.cpp keeps the KV
#     cache in F16, petrel in F32.
#     The batch size and the thread count do not change a digit.
#  2. Base files (--kl-divergence-base, 8 chunks): petrel's and llama's
#     are the same size with the same header and tokens, byte for byte
#     (the same tokenization and chunking); each tool reads the other's and
#     prints the same statistics lines: KLD of the model against the other
#     tool's logits below KLD_CROSS, top-1 agreement above TOP_CROSS
#     (measured: 0.0032 and 94.4 % both ways; petrel's float path against
#     either is as far, 0.0027: SmolLM2-135M is that sensitive to the
#     rounding of its activations, see docs/quality.md); the model against
#     its own petrel base: KLD 0 up to the base's 16-bit rounding (below
#     KLD_SELF), the same top token everywhere (100.000 %).
#  3. A quantized file (Q4_0 from an F16 made of the Q4_1 weights, by
#     petrel quantize) against llama's F16 base: petrel's mean KLD and
#     top-1 agreement equal llama's within KLD_Q_REL and TOP_Q_ABS
#     (measured: 0.2491 vs 0.2513, 70.4 % vs 69.4 %).
#  4. Bad input: one "petrel: " line and exit 1 (2 for usage), nothing
#     left at the base file's name.
# In the ASan+UBSan build (PETREL_SANITIZED=1), where a pass takes about
# 50 times longer, the same checks run on 4 chunks of 64 tokens.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/cli_lib.sh"
SRC=${PETREL_SOURCE_DIR:-$(dirname "$here")}
TEXT=$here/data/perplexity_text.txt
TH=2
C=128 NCH=0 KCH=8 # context; chunks of the perplexity run (0: all) and of the KLD runs
[ "${PETREL_SANITIZED:-}" = 1 ] && C=64 NCH=4 KCH=4
CH=() # --chunks NCH when limited
[ "$NCH" -gt 0 ] && CH=(--chunks $NCH)

LP=${LLAMA_PERPLEXITY:-}
if [ -z "$LP" ] && ! LP=$(bash "$SRC/bench/build_llamacpp.sh" llama-perplexity); then
    echo "llama-perplexity could not be built (bench/build_llamacpp.sh)"
    echo "0 passed, 1 failed"
    exit 1
fi

PPL_RUN=0.03      # |petrel / llama - 1| of each running perplexity
PPL_FINAL=0.01    # ... of the final estimate
KLD_CROSS=0.01    # same model, petrel's logits vs llama's
TOP_CROSS=90      # % of positions with the same top token, same model
KLD_SELF=0.00002  # same model, petrel vs its own base (16-bit log-probabilities)
KLD_Q_REL=0.10    # Q4_0: |KLD petrel / KLD llama - 1|
TOP_Q_ABS=3       # Q4_0: |top-1 petrel - top-1 llama| in points of % (about 1.5 standard errors)

# within A B REL: |A / B - 1| <= REL
within() { awk -v a="$1" -v b="$2" -v r="$3" 'BEGIN { d = a / b - 1; exit !(b > 0 && d <= r && -d <= r) }'; }
# below A B: A <= B;  near A B ABS: |A - B| <= ABS
below() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }
near() { awk -v a="$1" -v b="$2" -v d="$3" 'BEGIN { exit !(a - b <= d && b - a <= d) }'; }
# running values "[1]x,[2]y,..." of a log, one per line
running() { grep -o '\[[0-9]*\][0-9.]*' "$1" | sed 's/.*\]//'; }
final() { sed -n 's/.*Final estimate: PPL = \([0-9.]*\) .*/\1/p' "$1"; }
# stat LOG 'Mean    KLD' -> its value
stat_of() { sed -n "s/^$2 *: *\([-0-9.]*\).*/\1/p" "$1" | head -1; }

# ---- 1. perplexity --------------------------------------------------------------
expect_exit 0 "petrel perplexity" -- "$BIN" perplexity -m "$MODEL" -f "$TEXT" -c $C -b $C -t $TH "${CH[@]}"
cp "$TMP/out" "$TMP/petrel.ppl"
grep -q 'seconds per pass' "$TMP/err" && ok || bad "no progress on stderr: $(cat "$TMP/err")"
"$LP" -m "$MODEL" -f "$TEXT" -c $C -b $C -t $TH "${CH[@]}" >"$TMP/llama.ppl" 2>&1 || bad "llama-perplexity failed: $(tail -5 "$TMP/llama.ppl")"
running "$TMP/petrel.ppl" >"$TMP/p.run"
running "$TMP/llama.ppl" >"$TMP/l.run"
n_p=$(wc -l <"$TMP/p.run") n_l=$(wc -l <"$TMP/l.run")
[ "$n_p" -ge 4 ] && [ "$n_p" -eq "$n_l" ] && ok || bad "chunks: petrel $n_p, llama $n_l"
worst=$(paste "$TMP/p.run" "$TMP/l.run" | awk '{ d = $1 / $2 - 1; if (d < 0) d = -d; if (d > m) m = d } END { printf "%.5f", m }')
echo "perplexity -c $C: petrel $(final "$TMP/petrel.ppl"), llama $(final "$TMP/llama.ppl"); worst running difference $worst"
below "$worst" $PPL_RUN && ok || bad "running perplexities differ by $worst (bound $PPL_RUN)"
fp=$(final "$TMP/petrel.ppl") fl=$(final "$TMP/llama.ppl")
[ -n "$fp" ] && [ -n "$fl" ] && within "$fp" "$fl" $PPL_FINAL && ok || bad "final estimate: petrel '$fp', llama '$fl'"
# the uncertainty is printed as llama prints it
grep -Eq '^Final estimate: PPL = [0-9]+\.[0-9]{4} \+/- [0-9]+\.[0-9]{5}$' "$TMP/petrel.ppl" && ok || bad "final line: $(tail -1 "$TMP/petrel.ppl")"
# batch size and threads change nothing
expect_exit 0 "-b 48 -t 1" -- "$BIN" perplexity -m "$MODEL" -f "$TEXT" -c $C -b 48 -t 1 --chunks 3
running "$TMP/out" >"$TMP/b48.run"
if head -3 "$TMP/p.run" | cmp -s - "$TMP/b48.run"; then ok; else bad "-b 48 -t 1 differs: $(tr '\n' ' ' <"$TMP/b48.run")"; fi

# ---- 2. base files, both ways --------------------------------------------------
expect_exit 0 "petrel base" -- "$BIN" perplexity -m "$MODEL" -f "$TEXT" -c $C -b $C -t $TH --chunks $KCH \
    --kl-divergence-base "$TMP/petrel.base"
running "$TMP/out" >"$TMP/base.run"
# the same perplexities (to float rounding: llama's base-writing path sums
# -log p computed in float, the plain one in double)
d=$(head -$KCH "$TMP/p.run" | paste - "$TMP/base.run" | awk '{ d = $1 / $2 - 1; if (d < 0) d = -d; if (d > m) m = d } END { print m + 0 }')
[ "$(wc -l <"$TMP/base.run")" -eq "$KCH" ] && below "$d" 0.00001 && ok || bad "writing a base changed the perplexities by $d"
"$LP" -m "$MODEL" -f "$TEXT" -c $C -b $C -t $TH --chunks $KCH --kl-divergence-base "$TMP/llama.base" \
    >"$TMP/llama.base.log" 2>&1 || bad "llama-perplexity base failed: $(tail -5 "$TMP/llama.base.log")"
sz_p=$(stat -c %s "$TMP/petrel.base") sz_l=$(stat -c %s "$TMP/llama.base")
[ "$sz_p" -eq "$sz_l" ] && ok || bad "base sizes: petrel $sz_p, llama $sz_l"
head_bytes=$((20 + 4 * KCH * C)) # magic, n_ctx, n_vocab, n_chunk, the tokens
cmp -s -n $head_bytes "$TMP/petrel.base" "$TMP/llama.base" && ok || bad "base headers/tokens differ: $(cmp -n $head_bytes "$TMP/petrel.base" "$TMP/llama.base")"

expect_exit 0 "petrel reads llama's base" -- "$BIN" perplexity -m "$MODEL" -t $TH \
    --kl-divergence-base "$TMP/llama.base" --kl-divergence
cp "$TMP/out" "$TMP/p_on_l.kld"
"$LP" -m "$MODEL" -t $TH -c $C -b $C --kl-divergence-base "$TMP/petrel.base" --kl-divergence \
    >"$TMP/l_on_p.kld" 2>&1 || bad "llama-perplexity could not read petrel's base: $(tail -5 "$TMP/l_on_p.kld")"
for f in p_on_l l_on_p; do
    k=$(stat_of "$TMP/$f.kld" 'Mean    KLD') top=$(stat_of "$TMP/$f.kld" 'Same top p')
    echo "$f: Mean KLD $k, same top $top %"
    [ -n "$k" ] && below "$k" $KLD_CROSS && ok || bad "$f: mean KLD '$k' above $KLD_CROSS"
    [ -n "$top" ] && below $TOP_CROSS "$top" && ok || bad "$f: same top '$top' % below $TOP_CROSS"
done
# what llama prints, petrel prints: the chunk table's header and the
# statistics, the same lines in the same order
labels() { grep '^chunk  ' "$1"; sed -n '/^====== Perplexity statistics/,/^Same top p/p' "$1" | sed 's/:.*//'; }
labels "$TMP/l_on_p.kld" >"$TMP/l.labels"
labels "$TMP/p_on_l.kld" >"$TMP/p.labels"
[ "$(wc -l <"$TMP/p.labels")" -gt 30 ] && cmp -s "$TMP/p.labels" "$TMP/l.labels" && ok \
    || bad "statistics lines differ from llama's: $(diff "$TMP/p.labels" "$TMP/l.labels" | head -5)"

expect_exit 0 "self KLD" -- "$BIN" perplexity -m "$MODEL" -t $TH --kl-divergence-base "$TMP/petrel.base" --kl-divergence
k=$(stat_of "$TMP/out" 'Mean    KLD') top=$(stat_of "$TMP/out" 'Same top p')
echo "self: Mean KLD $k, same top $top %"
[ -n "$k" ] && below "${k#-}" $KLD_SELF && ok || bad "self KLD '$k' above $KLD_SELF"
[ "$top" = 100.000 ] && ok || bad "self: same top '$top' %, want 100.000"

# ---- 3. a quantized file against llama's F16 base --------------------------------
expect_exit 0 "F16" -- "$BIN" quantize --allow-requantize -t $TH "$MODEL" "$TMP/f16.gguf" F16
expect_exit 0 "Q4_0" -- "$BIN" quantize -t $TH "$TMP/f16.gguf" "$TMP/q4_0.gguf" Q4_0
"$LP" -m "$TMP/f16.gguf" -f "$TEXT" -c $C -b $C -t $TH --chunks $KCH --kl-divergence-base "$TMP/f16.base" \
    >"$TMP/f16.base.log" 2>&1 || bad "llama-perplexity F16 base failed: $(tail -5 "$TMP/f16.base.log")"
"$LP" -m "$TMP/q4_0.gguf" -t $TH -c $C -b $C --kl-divergence-base "$TMP/f16.base" --kl-divergence \
    >"$TMP/q_llama.kld" 2>&1 || bad "llama-perplexity Q4_0 KLD failed"
expect_exit 0 "petrel Q4_0 KLD" -- "$BIN" perplexity -m "$TMP/q4_0.gguf" -t $TH --kl-divergence-base "$TMP/f16.base" --kl-divergence
cp "$TMP/out" "$TMP/q_petrel.kld"
kl=$(stat_of "$TMP/q_llama.kld" 'Mean    KLD') kp=$(stat_of "$TMP/q_petrel.kld" 'Mean    KLD')
tl=$(stat_of "$TMP/q_llama.kld" 'Same top p') tp=$(stat_of "$TMP/q_petrel.kld" 'Same top p')
echo "Q4_0 vs F16: KLD petrel $kp llama $kl; same top petrel $tp % llama $tl %"
[ -n "$kp" ] && [ -n "$kl" ] && within "$kp" "$kl" $KLD_Q_REL && ok || bad "Q4_0 KLD: petrel '$kp', llama '$kl'"
[ -n "$tp" ] && [ -n "$tl" ] && near "$tp" "$tl" $TOP_Q_ABS && ok || bad "Q4_0 top-1: petrel '$tp', llama '$tl'"

# ---- 4. bad input -------------------------------------------------------------------
expect_exit 1 "missing text" -- "$BIN" perplexity -m "$MODEL" -f "$TMP/nonexistent.txt"
one_line_error "missing text"
head -c 600 "$TEXT" >"$TMP/short.txt"
expect_exit 1 "short text" -- "$BIN" perplexity -m "$MODEL" -f "$TMP/short.txt" -c 128
one_line_error "short text"
grep -q 'at least 256' "$TMP/err" && ok || bad "short text: $(cat "$TMP/err")"
expect_exit 2 "no text" -- "$BIN" perplexity -m "$MODEL"
one_line_error "no text"
expect_exit 2 "--kl-divergence without a base" -- "$BIN" perplexity -m "$MODEL" --kl-divergence
one_line_error "--kl-divergence without a base"
expect_exit 2 "bad -c" -- "$BIN" perplexity -m "$MODEL" -f "$TEXT" -c 2
one_line_error "bad -c"
# a base for another vocabulary (the tiny test model's 320 tokens)
expect_exit 0 "tiny base" -- "$BIN" perplexity -m "$PETREL_TEST_DATA/tiny_llama.gguf" -f "$TEXT" -c 16 --chunks 2 \
    --kl-divergence-base "$TMP/tiny.base"
expect_exit 1 "other vocabulary" -- "$BIN" perplexity -m "$MODEL" --kl-divergence-base "$TMP/tiny.base" --kl-divergence
one_line_error "other vocabulary"
grep -q 'vocabulary of 320 tokens' "$TMP/err" && ok || bad "other vocabulary: $(cat "$TMP/err")"
# truncated, trailing bytes, a corrupt row, not a base file, missing
head -c $((sz_p - 1000)) "$TMP/petrel.base" >"$TMP/trunc.base"
head -c 10 "$TMP/petrel.base" >"$TMP/trunc10.base"
{ cat "$TMP/petrel.base"; printf 'xx'; } >"$TMP/trail.base"
cp "$TMP/petrel.base" "$TMP/row.base"
printf '\377\377\377\377' | dd of="$TMP/row.base" bs=1 seek=$((head_bytes + 3 * 2 * (49152 + 4))) conv=notrunc status=none
for c in "trunc|truncated" "trunc10|truncated" "trail|after the last" "row|corrupt base file: row 3 of chunk 0" \
         "text|_logits_" "missing|No such file"; do
    name=${c%%|*} want=${c#*|}
    f=$TMP/$name.base
    [ "$name" = text ] && f=$TEXT
    expect_exit 1 "base $name" -- "$BIN" perplexity -m "$MODEL" --kl-divergence-base "$f" --kl-divergence
    one_line_error "base $name"
    grep -qF "$want" "$TMP/err" && ok || bad "base $name: want '$want' in: $(cat "$TMP/err")"
done
# an unwritable base file: nothing left under its name
expect_exit 1 "unwritable base" -- "$BIN" perplexity -m "$MODEL" -f "$TEXT" -c $C --chunks 2 \
    --kl-divergence-base "$TMP/no/such/dir/x.base"
one_line_error "unwritable base"
[ ! -e "$TMP/no/such/dir/x.base" ] && ok || bad "unwritable base left a file"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
