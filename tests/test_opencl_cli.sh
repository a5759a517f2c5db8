# test_opencl_cli.sh — the user side of the OpenCL path on PoCL:
#   - `run --device opencl` runs the model on OpenCL and greedy text equals
#     the CPU float path's (PETREL_CPU=ref); chat --plain and bench too,
#     bench naming OpenCL as the backend;
#   - `info --devices` lists the PoCL platform;
#   - with no platform (OCL_ICD_VENDORS naming an empty folder) and with a
#     device number that does not exist, run, chat and bench work on the
#     CPU (the same text as --device cpu) after exactly one line saying
#     why, and info --devices says there is none, status 0;
#   - imagine --device opencl runs the UNet on OpenCL (its stats name the
#     device) and its picture is the CPU's within 50 dB PSNR (measured: the
#     same pixels); with no platform it runs on the CPU after one line;
#   - a LoRA adapter on an OpenCL model is a one-line error;
#   - a bad --device value is one "petrel: " line and status 2.
# No OpenCL device is a failure unless PETREL_NO_OPENCL=1 (then only the
# CPU fallback parts run).
. "$(dirname "$0")/cli_lib.sh"   # BIN, MODEL, TMP, ok/bad, expect_exit, one_line_error
# The program cache ($XDG_CACHE_HOME/petrel/opencl): kept in the build tree
# across runs (PoCL takes some 20 s of CPU to compile the kernels), else
# made by the first run here.
export XDG_CACHE_HOME="${PETREL_OPENCL_CACHE:-$TMP/cache}/xdg"
DATA=${PETREL_TEST_DATA:?PETREL_TEST_DATA not set}
PROMPT="The capital of France is"
N=6
[ "${PETREL_SANITIZED:-}" = 1 ] && N=2   # the reference kernels run 30x slower there
RUN=(run -m "$MODEL" --temp 0 -n $N -t 2 -p "$PROMPT")
mkdir -p "$TMP/no-icd"

# the CPU's text, float path and default kernels
expect_exit 0 "run ref" -- env PETREL_CPU=ref "$BIN" "${RUN[@]}" --device cpu
cp "$TMP/out" "$TMP/ref.txt"
expect_exit 0 "run cpu" -- "$BIN" "${RUN[@]}"
cp "$TMP/out" "$TMP/cpu.txt"
[ -s "$TMP/ref.txt" ] && ok || bad "the CPU run wrote no text"

if [ "${PETREL_NO_OPENCL:-}" != 1 ]; then
    expect_exit 0 "info --devices" -- "$BIN" info --devices
    grep -q '^opencl:0 ' "$TMP/out" && grep -q 'platform *Portable Computing Language' "$TMP/out" && ok ||
        bad "info --devices does not list PoCL: $(cat "$TMP/out")"

    expect_exit 0 "run --device opencl" -- "$BIN" "${RUN[@]}" --device opencl
    cmp -s "$TMP/out" "$TMP/ref.txt" && ok || bad "OpenCL text '$(cat "$TMP/out")' is not the CPU float path's '$(cat "$TMP/ref.txt")'"
    grep -q 'OpenCL' "$TMP/err" && bad "run --device opencl fell back: $(cat "$TMP/err")" || ok
    ls "$XDG_CACHE_HOME"/petrel/opencl/*.bin >/dev/null 2>&1 && ok || bad "no program binary cached under \$XDG_CACHE_HOME/petrel/opencl"

    expect_exit 0 "run --device opencl:0 (cached program)" -- "$BIN" "${RUN[@]}" --device opencl:0
    cmp -s "$TMP/out" "$TMP/ref.txt" && ok || bad "opencl:0 with the cached program: '$(cat "$TMP/out")'"

    echo "Say hello." | "$BIN" chat --plain -m "$MODEL" --temp 0 -n 4 -t 2 --device opencl >"$TMP/out" 2>"$TMP/err"
    st=$?
    [ "$st" -eq 0 ] && [ -s "$TMP/out" ] && ! grep -q OpenCL "$TMP/err" && ok || bad "chat --plain --device opencl: exit $st: $(cat "$TMP/err")"

    expect_exit 0 "bench --device opencl" -- "$BIN" bench -m "$MODEL" -p 8 -n 2 -r 1 -t 2 --device opencl
    grep -q '| *OpenCL *|' "$TMP/out" && ok || bad "bench does not name OpenCL: $(cat "$TMP/out")"

    # a LoRA adapter on an OpenCL model: refused in one line, not ignored
    expect_exit 1 "run --lora --device opencl" -- "$BIN" run -m "$DATA/tiny_llama_rs.gguf" -p hi -n 2 \
        --lora "$DATA/lora/tiny_llama_rs_a" --device opencl
    one_line_error "run --lora --device opencl"
    grep -q 'do not run on OpenCL' "$TMP/err" && ok || bad "LoRA on OpenCL: $(cat "$TMP/err")"
fi

# no platform at all: the CPU, one line
expect_exit 0 "run, no platform" -- env OCL_ICD_VENDORS="$TMP/no-icd" "$BIN" "${RUN[@]}" --device opencl
cmp -s "$TMP/out" "$TMP/cpu.txt" && ok || bad "no platform: text '$(cat "$TMP/out")' is not the CPU's"
[ "$(grep -c 'OpenCL' "$TMP/err")" -eq 1 ] && grep -q '^petrel: OpenCL unavailable (.*): running on the CPU$' "$TMP/err" && ok ||
    bad "no platform: want one 'OpenCL unavailable' line: $(cat "$TMP/err")"
expect_exit 0 "info --devices, no platform" -- env OCL_ICD_VENDORS="$TMP/no-icd" "$BIN" info --devices
[ "$(wc -l <"$TMP/out")" -eq 1 ] && grep -q '^no OpenCL devices: ' "$TMP/out" && ok || bad "info --devices, no platform: $(cat "$TMP/out")"
# (the sanitized build stops here: every load below repacks for the CPU,
# slow under ASan, and repeats the paths checked above)
if [ "${PETREL_SANITIZED:-}" != 1 ]; then
echo "Say hello." | OCL_ICD_VENDORS="$TMP/no-icd" "$BIN" chat --plain -m "$MODEL" --temp 0 -n 4 -t 2 --device opencl >"$TMP/out" 2>"$TMP/err"
st=$?
[ "$st" -eq 0 ] && [ "$(grep -c 'OpenCL' "$TMP/err")" -eq 1 ] && ok || bad "chat, no platform: exit $st: $(cat "$TMP/err")"
expect_exit 0 "bench, no platform" -- env OCL_ICD_VENDORS="$TMP/no-icd" "$BIN" bench -m "$MODEL" -p 8 -n 2 -r 1 -t 2 --device opencl
grep -q '| *CPU *|' "$TMP/out" && [ "$(grep -c 'OpenCL' "$TMP/err")" -eq 1 ] && ok || bad "bench, no platform: $(cat "$TMP/out" "$TMP/err")"

# a device that does not exist: the same
expect_exit 0 "run --device opencl:9" -- "$BIN" "${RUN[@]}" --device opencl:9
cmp -s "$TMP/out" "$TMP/cpu.txt" && [ "$(grep -c 'OpenCL' "$TMP/err")" -eq 1 ] && ok || bad "opencl:9: $(cat "$TMP/err")"
fi

# imagine: the UNet on OpenCL, the CPU's picture
SD="$DATA/sd-tiny/model"
IMG=(imagine -m "$SD" -p "a red circle" --steps 2 -W 64 -H 64 -t 2 -s 5)
PNG=(python3 "${PETREL_SOURCE_DIR:?}/tests/png_check.py")
expect_exit 0 "imagine --device cpu" -- "$BIN" "${IMG[@]}" --device cpu -o "$TMP/cpu.png"
grep -q '^unet: CPU$' "$TMP/err" && ok || bad "imagine --device cpu: $(cat "$TMP/err")"
if [ "${PETREL_NO_OPENCL:-}" != 1 ]; then
    expect_exit 0 "imagine --device opencl" -- "$BIN" "${IMG[@]}" --device opencl -o "$TMP/ocl.png"
    grep -q '^unet: OpenCL: ' "$TMP/err" && ! grep -q 'unavailable' "$TMP/err" && ok ||
        bad "imagine --device opencl did not run on OpenCL: $(cat "$TMP/err")"
    db=$("${PNG[@]}" psnr "$TMP/cpu.png" "$TMP/ocl.png")
    awk -v d="$db" 'BEGIN { exit !(d >= 50) }' && ok || bad "imagine: OpenCL picture at $db dB of the CPU's (< 50)"
fi
expect_exit 0 "imagine, no platform" -- env OCL_ICD_VENDORS="$TMP/no-icd" "$BIN" "${IMG[@]}" --device opencl \
    -o "$TMP/none.png"
[ "$(grep -c 'OpenCL' "$TMP/err")" -eq 1 ] && grep -q '^petrel: OpenCL unavailable (.*): running on the CPU$' "$TMP/err" &&
    grep -q '^unet: CPU$' "$TMP/err" && cmp -s "$TMP/none.png" "$TMP/cpu.png" && ok ||
    bad "imagine, no platform: want one 'OpenCL unavailable' line and the CPU's picture: $(cat "$TMP/err")"

# bad values
expect_exit 2 "--device gpu" -- "$BIN" "${RUN[@]}" --device gpu
one_line_error "--device gpu"
expect_exit 2 "--device opencl:x" -- "$BIN" bench -m "$MODEL" --device opencl:x
one_line_error "bench --device opencl:x"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
