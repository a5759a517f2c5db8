# test_imagine.sh — `petrel imagine` on the tiny SD fixture
# (tests/data/sd-tiny/model): the PNG decodes, has the asked size and the
# A1111 "parameters" chunk; a seed gives identical pixels twice, on every
# thread count and on every CPU kernel variant this machine runs, and
# another seed other pixels; every bad input is one "petrel: " line, a
# non-zero exit and no output file (nor a temporary one); Ctrl-C leaves
# nothing and exits 130.
DATA=${PETREL_TEST_DATA:?PETREL_TEST_DATA not set}
[ -d "$DATA/sd-tiny/model" ] || { echo "fixture not found: $DATA/sd-tiny/model"; echo "0 passed, 1 failed"; exit 1; }
MODEL=$(cd "$DATA/sd-tiny/model" && pwd)   # absolute: the test links to its parts
TAESD=$(cd "$DATA/sd-tiny/taesd" && pwd)
CLI_LIB_NO_MODEL=1 . "$(dirname "$0")/cli_lib.sh"   # TMP, ok/bad, expect_exit, one_line_error

# $TMP/png.py info FILE: checks the PNG's signature, chunk CRCs and zlib
# stream, undoes the scanline filters and prints "WIDTH HEIGHT
# SHA256-OF-PIXELS", then the parameters chunk's text (tEXt or iTXt).
# $TMP/png.py psnr A B: the PSNR in dB of B's pixels against A's.
cp "$(dirname "$0")/png_check.py" "$TMP/png.py"
png_info() { python3 "$TMP/png.py" info "$1"; }
pixels() { png_info "$1" 2>/dev/null | head -1; }

# ---- a good run: size, parameters, determinism
GEN=("$BIN" imagine -m "$MODEL" -p "a red circle above a blue square" --steps 2 -W 64 -H 128)
expect_exit 0 "imagine" -- "${GEN[@]}" -s 1 -o "$TMP/a.png"
info=$(png_info "$TMP/a.png" 2>&1)
[ "$(echo "$info" | head -1 | cut -d' ' -f1-2)" = "64 128" ] && ok || bad "size / decoding: $info"
want=$'a red circle above a blue square\nSteps: 2, Sampler: Euler, CFG scale: 7.5, Seed: 1, Size: 64x128, Model: model'
[ "$(echo "$info" | tail -n +2)" = "$want" ] && ok || bad "parameters chunk: '$(echo "$info" | tail -n +2)'"
grep -q '^sample: 2 steps' "$TMP/err" && ok || bad "no timing lines: $(cat "$TMP/err")"
ref=$(pixels "$TMP/a.png")
expect_exit 0 "imagine again" -- "${GEN[@]}" -s 1 -o "$TMP/b.png"
[ "$(pixels "$TMP/b.png")" = "$ref" ] && ok || bad "the same seed twice gave other pixels"
expect_exit 0 "imagine -t 1" -- "${GEN[@]}" -s 1 -t 1 -o "$TMP/t1.png"
[ "$(pixels "$TMP/t1.png")" = "$ref" ] && ok || bad "-t 1 gave other pixels"
expect_exit 0 "imagine -t 3" -- "${GEN[@]}" -s 1 -t 3 -o "$TMP/t3.png"
[ "$(pixels "$TMP/t3.png")" = "$ref" ] && ok || bad "-t 3 gave other pixels"
expect_exit 0 "imagine seed 2" -- "${GEN[@]}" -s 2 -o "$TMP/s2.png"
s2=$(pixels "$TMP/s2.png")
[ -n "$s2" ] && [ "$s2" != "$ref" ] && ok || bad "seeds 1 and 2 gave the same pixels"
ls -A "$TMP" | grep -q '^\.' && bad "a temporary file was left: $(ls -A "$TMP")" || ok

# ---- every CPU kernel variant this machine runs: the same pixels. A
# variant the CPU lacks is refused with the runtime's documented error
# ("... is unknown or not supported here"); only that skips.
ran="" skipped="" q8_ref=""
for v in ref avx2 avxvnni avx512vnni amx dotprod i8mm; do
    PETREL_CPU=$v "${GEN[@]}" -s 1 -o "$TMP/v.png" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    if [ $rc -ne 0 ] && grep -q "not supported here\|cannot run it" "$TMP/err"; then
        skipped="$skipped $v"; [ ! -e "$TMP/v.png" ] && ok || bad "$v: refused, yet a file was written"
        continue
    fi
    [ $rc -eq 0 ] && ok || { bad "PETREL_CPU=$v: exit $rc: $(cat "$TMP/err")"; continue; }
    ran="$ran $v"
    [ "$(pixels "$TMP/v.png")" = "$ref" ] && ok || bad "PETREL_CPU=$v gave other pixels than the default"
    rm -f "$TMP/v.png"
    # Q8_0 weights: the int8 products are bitwise the same on every variant
    PETREL_CPU=$v "${GEN[@]}" -s 1 --weights q8_0 -o "$TMP/v.png" >"$TMP/out" 2>"$TMP/err" && ok || bad "$v q8_0: $(cat "$TMP/err")"
    q8=$(pixels "$TMP/v.png")
    [ -z "$q8_ref" ] && q8_ref=$q8
    [ -n "$q8" ] && [ "$q8" = "$q8_ref" ] && ok || bad "PETREL_CPU=$v --weights q8_0 gave other pixels than ${ran%% *}"
    rm -f "$TMP/v.png"
done
echo "variants ran:$ran; skipped (not on this CPU):$skipped"
case "$(uname -m)" in
x86_64|aarch64) [ "$(echo $ran | wc -w)" -ge 2 ] && ok || bad "only$ran ran: no SIMD variant compared with ref" ;;
esac

# ---- options that change the picture and the parameters
expect_exit 0 "negative + euler_a + cfg" -- "$BIN" imagine -m "$MODEL" -p "a star" --negative "blurry" \
    --sampler euler_a --cfg 5 --steps 2 -s 9 --clip-skip 2 -W 64 -H 64 -o "$TMP/n.png"
want=$'a star\nNegative prompt: blurry\nSteps: 2, Sampler: Euler a, CFG scale: 5, Seed: 9, Size: 64x64, Model: model, Clip skip: 2'
[ "$(png_info "$TMP/n.png" | tail -n +2)" = "$want" ] && ok || bad "parameters with a negative prompt: '$(png_info "$TMP/n.png" | tail -n +2)'"
expect_exit 0 "non-ASCII prompt" -- "$BIN" imagine -m "$MODEL" -p "café ★" --steps 1 -W 64 -H 64 -o "$TMP/u.png"
[ "$(png_info "$TMP/u.png" | sed -n 2p)" = "café ★" ] && ok || bad "UTF-8 prompt in iTXt: $(png_info "$TMP/u.png" 2>&1 | sed -n 2p)"
expect_exit 0 "taesd" -- "${GEN[@]}" -s 1 --taesd "$TAESD" -o "$TMP/tae.png"
tae=$(pixels "$TMP/tae.png")
[ -n "$tae" ] && [ "$tae" != "$ref" ] && ok || bad "TAESD gave the VAE's pixels or none"
grep -q '^decode: .*(taesd)' "$TMP/err" && ok || bad "timing does not say taesd: $(cat "$TMP/err")"
expect_exit 0 "q8_0 weights" -- "${GEN[@]}" -s 1 --weights q8_0 -o "$TMP/q8.png"
[ "$(pixels "$TMP/q8.png" | cut -d' ' -f1-2)" = "64 128" ] && ok || bad "q8_0 image"
# the same model as a single-file LDM checkpoint (tensors byte for byte
# the folder's, tokenizer given apart) draws the same pixels; petrel's
# Q8_0 GGUF of it a close picture: PSNR >= 30 dB (the Q8_0 bound of
# test_sd_pipeline, which measures about 40 dB on these runs)
expect_exit 0 "LDM single file" -- "$BIN" imagine -m "$DATA/sd-tiny-ldm.safetensors" \
    --tokenizer "$MODEL/tokenizer" -p "a red circle above a blue square" --steps 2 -W 64 -H 128 -s 1 -o "$TMP/ldm.png"
[ "$(pixels "$TMP/ldm.png")" = "$ref" ] && ok || bad "the LDM single file gave other pixels than the folder"
expect_exit 0 "Q8_0 GGUF" -- "$BIN" imagine -m "$DATA/sd-tiny-q8.gguf" \
    -p "a red circle above a blue square" --steps 2 -W 64 -H 128 -s 1 -o "$TMP/gguf.png"
db=$(python3 "$TMP/png.py" psnr "$TMP/a.png" "$TMP/gguf.png" 2>&1)
awk -v d="$db" 'BEGIN { exit !(d + 0 >= 30) }' && ok || bad "Q8_0 GGUF: PSNR $db dB against the F32 folder"
expect_exit 0 "help" -- "$BIN" imagine --help
grep -q 'usage: petrel imagine' "$TMP/out" && ok || bad "no usage on --help"

# ---- bad input: one line, exit != 0, no file
# a model folder with a tensor missing and one with a wrong shape: copies
# of the fixture whose unet safetensors header is edited (data untouched)
mkdir -p "$TMP/missing" "$TMP/shape"
for d in missing shape; do
    for part in model_index.json scheduler text_encoder tokenizer vae; do ln -s "$MODEL/$part" "$TMP/$d/$part"; done
    mkdir "$TMP/$d/unet"; cp "$MODEL/unet/config.json" "$TMP/$d/unet/"
done
python3 - "$MODEL/unet/diffusion_pytorch_model.safetensors" "$TMP" <<'EOF'
import json, struct, sys
src, tmp = sys.argv[1], sys.argv[2]
data = open(src, "rb").read()
n, = struct.unpack("<Q", data[:8]); head = json.loads(data[8:8 + n]); body = data[8 + n:]
def write(path, h):
    raw = json.dumps(h).encode(); raw += b" " * (-len(raw) % 8)
    open(path, "wb").write(struct.pack("<Q", len(raw)) + raw + body)
m = dict(head); del m["conv_in.weight"]
write(tmp + "/missing/unet/diffusion_pytorch_model.safetensors", m)
s = json.loads(json.dumps(head)); sh = s["conv_in.weight"]["shape"]; sh[0], sh[1] = sh[1], sh[0]
write(tmp + "/shape/unet/diffusion_pytorch_model.safetensors", s)
EOF
mkdir -p "$TMP/o"
bad_case() {
    local what=$1 want=$2; shift 2
    expect_exit "$want" "$what" -- "$@"
    one_line_error "$what"
    [ -z "$(ls -A "$TMP/o")" ] && ok || { bad "$what: left $(ls -A "$TMP/o")"; rm -f "$TMP/o"/* "$TMP/o"/.[!.]*; }
}
OUT=(-o "$TMP/o/x.png")
bad_case "missing tensor" 1 "$BIN" imagine -m "$TMP/missing" -p x --steps 1 "${OUT[@]}"
grep -q 'conv_in.weight' "$TMP/err" && ok || bad "missing tensor not named: $(cat "$TMP/err")"
bad_case "wrong shape" 1 "$BIN" imagine -m "$TMP/shape" -p x --steps 1 "${OUT[@]}"
grep -q 'conv_in.weight' "$TMP/err" && ok || bad "wrong shape not named: $(cat "$TMP/err")"
bad_case "width 65" 2 "$BIN" imagine -m "$MODEL" -p x -W 65 "${OUT[@]}"
bad_case "height 4096" 2 "$BIN" imagine -m "$MODEL" -p x -H 4096 "${OUT[@]}"
bad_case "unknown sampler" 2 "$BIN" imagine -m "$MODEL" -p x --sampler heun "${OUT[@]}"
bad_case "steps 0" 2 "$BIN" imagine -m "$MODEL" -p x --steps 0 "${OUT[@]}"
bad_case "cfg nan" 2 "$BIN" imagine -m "$MODEL" -p x --cfg nan "${OUT[@]}"
bad_case "seed -1" 2 "$BIN" imagine -m "$MODEL" -p x -s -1 "${OUT[@]}"
bad_case "weights q5_1" 2 "$BIN" imagine -m "$MODEL" -p x --weights q5_1 "${OUT[@]}"
bad_case "no prompt" 2 "$BIN" imagine -m "$MODEL" "${OUT[@]}"
bad_case "no output" 2 "$BIN" imagine -m "$MODEL" -p x
bad_case "missing value" 2 "$BIN" imagine -m "$MODEL" -p x -o
bad_case "unknown option" 2 "$BIN" imagine -m "$MODEL" -p x --bogus "${OUT[@]}"
bad_case "clip skip past the layers" 1 "$BIN" imagine -m "$MODEL" -p x --steps 1 --clip-skip 5 "${OUT[@]}"
bad_case "single file without a tokenizer" 1 "$BIN" imagine -m "$DATA/sd-tiny-ldm.safetensors" -p x "${OUT[@]}"
grep -q 'tokenizer' "$TMP/err" && ok || bad "no tokenizer: $(cat "$TMP/err")"
bad_case "missing model" 1 "$BIN" imagine -m "$TMP/nonexistent" -p x "${OUT[@]}"
bad_case "missing taesd" 1 "$BIN" imagine -m "$MODEL" -p x --taesd "$TMP/nonexistent" "${OUT[@]}"
bad_case "unknown cpu" 1 env PETREL_CPU=pentium "$BIN" imagine -m "$MODEL" -p x --steps 1 "${OUT[@]}"
# (PETREL_ASSETS set: only looked for there, so the bundled model is hidden)
PETREL_ASSETS=$TMP/no-assets bad_case "no default model" 1 "$BIN" imagine -p x "${OUT[@]}"
grep -q "default image model is not in $TMP/no-assets/demo-sd/" "$TMP/err" && ok || bad "no default model: $(cat "$TMP/err")"

# unwritable outputs: a path under a regular file (fails even for root),
# a read-only directory (when not root), /dev/full (writes fail: ENOSPC)
: >"$TMP/file"
expect_exit 1 "output under a file" -- "$BIN" imagine -m "$MODEL" -p x --steps 1 -W 64 -H 64 -o "$TMP/file/x.png"
one_line_error "output under a file"
expect_exit 1 "output is a directory" -- "$BIN" imagine -m "$MODEL" -p x --steps 1 -W 64 -H 64 -o "$TMP/o"
one_line_error "output is a directory"
if [ "$(id -u)" -ne 0 ]; then
    mkdir "$TMP/ro" && chmod 555 "$TMP/ro"
    expect_exit 1 "read-only directory" -- "$BIN" imagine -m "$MODEL" -p x --steps 1 -W 64 -H 64 -o "$TMP/ro/x.png"
    one_line_error "read-only directory"
    [ -z "$(ls -A "$TMP/ro")" ] && ok || bad "read-only directory: left $(ls -A "$TMP/ro")"
fi
if [ -w /dev/full ]; then
    expect_exit 1 "/dev/full" -- "$BIN" imagine -m "$MODEL" -p x --steps 1 -W 64 -H 64 -o /dev/full
    one_line_error "/dev/full"
    grep -qi 'no space' "$TMP/err" && ok || bad "/dev/full: $(cat "$TMP/err")"
    [ -c /dev/full ] && ok || bad "/dev/full is no longer a device"
fi

# ---- Ctrl-C: cancels between steps, no file, exit 130. SIGINT is sent
# once the background job is petrel itself (not yet the shell's fork,
# which would run this script's EXIT trap), then again and again until
# petrel ends: before imagine installs its handler, a background job
# ignores it. 1000 steps last far longer than that, so the outcome does
# not depend on timing.
( trap - EXIT; exec "$BIN" imagine -m "$MODEL" -p x --steps 1000 -W 64 -H 64 -o "$TMP/o/c.png" ) \
    >"$TMP/out" 2>"$TMP/err" &
pid=$!
bin_path=$(readlink -f "$BIN")
while kill -0 $pid 2>/dev/null && [ "$(readlink /proc/$pid/exe 2>/dev/null)" != "$bin_path" ]; do sleep 0.05; done
while kill -0 $pid 2>/dev/null; do kill -INT $pid 2>/dev/null; sleep 0.2; done
wait $pid
rc=$?
[ $rc -eq 130 ] && ok || bad "Ctrl-C: exit $rc, want 130: $(cat "$TMP/err")"
[ -z "$(ls -A "$TMP/o")" ] && ok || bad "Ctrl-C left $(ls -A "$TMP/o")"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
