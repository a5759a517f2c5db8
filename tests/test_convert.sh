#!/usr/bin/env bash
# test_convert.sh — `petrel convert` on the tiny HF checkpoints of
# tests/data/hf-tiny (tools/gen_hf_tiny.py):
#   - each family (llama, llama3 (rope scaling), qwen2, qwen3, gemma3) to
#     f32, f16 and q8_0 gives
#     the GGUF llama.cpp's convert_hf_to_gguf.py wrote from the same folder,
#     byte for byte: same metadata keys, order, types and values, same
#     tensors, order, shapes, types and data bytes, same file
#     (tests/hf_ref_check.py against hf-tiny/<family>/ref-<type>.json);
#   - the same for a checkpoint of bfloat16 weights (hf-tiny/qwen2-bf16),
#     to f32, f16, bf16 and q8_0;
#   - general.name / basename / finetune / version / size_label /
#     organization as llama.cpp's converter derives them from folder names
#     and _name_or_path (hf-tiny/names.json);
#   - petrel's tokenizer on the converted llama/qwen2/qwen3 files gives
#     transformers' ids for the texts of hf-tiny/<family>/tokens.json;
#   - bf16 and q4_k_m conversions succeed and `petrel info` reads them;
#   - bad inputs (no folder, no config.json, an unknown architecture, a
#     tensor whose shape contradicts config.json, a truncated safetensors, a
#     shard the index names but which is missing, broken tokenizer.json, an
#     unknown pre-tokenizer, an unknown --outtype) exit 1 with one
#     "petrel: " line naming the problem, and leave neither OUT nor OUT.tmp.
set -u
CLI_LIB_NO_MODEL=1
. "$(dirname "$0")/cli_lib.sh"
DATA=${PETREL_TEST_DATA:?}
SRC=${PETREL_SOURCE_DIR:-$(dirname "$(dirname "$0")")}

for fam in llama llama3 qwen2 qwen3 gemma3; do
    for t in f32 f16 q8_0; do
        out=$TMP/$fam-$t.gguf
        expect_exit 0 "$fam $t" -- "$BIN" convert "$DATA/hf-tiny/$fam" "$out" --outtype $t
        arch=$fam
        [ "$fam" = llama3 ] && arch=llama
        if grep -q "($arch, $t)" "$TMP/out"; then ok; else bad "$fam $t: stdout $(cat "$TMP/out")"; fi
        if python3 "$SRC/tests/hf_ref_check.py" "$out" "$DATA/hf-tiny/$fam/ref-$t.json"; then ok; else bad "$fam $t differs from llama.cpp"; fi
        [ -e "$out.tmp" ] && bad "$fam $t: $out.tmp left behind" || ok
    done
done
# the converted vocabulary tokenizes as transformers does on the original
# folder (hf-tiny/<family>/tokens.json)
for fam in llama llama3 qwen2 qwen3 gemma3; do
    n=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$DATA/hf-tiny/$fam/tokens.json")
    for ((i = 0; i < n; i++)); do
        text=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[int(sys.argv[2])]["text"], end="")' \
            "$DATA/hf-tiny/$fam/tokens.json" $i)
        want=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[int(sys.argv[2])]["ids"])' \
            "$DATA/hf-tiny/$fam/tokens.json" $i)
        expect_exit 0 "tokenize $fam $i" -- "$BIN" tokenize --ids -m "$TMP/$fam-f32.gguf" "$text"
        [ "$(cat "$TMP/out")" = "$want" ] && ok || bad "$fam text $i: petrel $(cat "$TMP/out"), transformers $want"
    done
done

# bfloat16 weights (most real checkpoints): the same, and bf16 out too
for t in f32 f16 bf16 q8_0; do
    out=$TMP/bf16src-$t.gguf
    expect_exit 0 "qwen2-bf16 $t" -- "$BIN" convert "$DATA/hf-tiny/qwen2-bf16" "$out" --outtype $t
    if python3 "$SRC/tests/hf_ref_check.py" "$out" "$DATA/hf-tiny/qwen2-bf16/ref-$t.json"; then ok; else bad "qwen2-bf16 $t differs from llama.cpp"; fi
done

for t in bf16 q4_k_m; do
    expect_exit 0 "qwen2 $t" -- "$BIN" convert "$DATA/hf-tiny/qwen2" "$TMP/q-$t.gguf" --outtype $t
    expect_exit 0 "info on qwen2 $t" -- "$BIN" info "$TMP/q-$t.gguf"
    [ -e "$TMP/q-$t.gguf.convert" ] && bad "$t: intermediate left behind" || ok
done

# bad inputs: a copy of the llama folder, broken one way each time
broken() { rm -rf "$TMP/bad"; cp -r "$DATA/hf-tiny/$1" "$TMP/bad"; chmod -R u+w "$TMP/bad"; }
# expect_error DESCRIPTION KEYWORD... -- petrel convert arguments
expect_error() {
    local what=$1; shift
    local words=()
    while [ "$1" != "--" ]; do words+=("$1"); shift; done
    shift
    rm -f "$TMP/o.gguf" "$TMP/o.gguf.tmp"
    expect_exit 1 "$what" -- "$BIN" convert "$@"
    one_line_error "$what"
    for w in "${words[@]}"; do
        grep -qi -- "$w" "$TMP/err" || bad "$what: error lacks '$w': $(cat "$TMP/err")"
    done
    [ -e "$TMP/o.gguf" ] || [ -e "$TMP/o.gguf.tmp" ] && bad "$what: a file was left at OUT" || ok
}

expect_error "no input" "no such file" -- "$TMP/nowhere" "$TMP/o.gguf"
broken llama; rm "$TMP/bad/config.json"
expect_error "no config" "config.json" "missing" -- "$TMP/bad" "$TMP/o.gguf"
broken llama; sed -i 's/LlamaForCausalLM/FooForCausalLM/' "$TMP/bad/config.json"
expect_error "unknown arch" "FooForCausalLM" "architecture" -- "$TMP/bad" "$TMP/o.gguf"
broken llama; sed -i 's/"intermediate_size": 128/"intermediate_size": 96/' "$TMP/bad/config.json"
expect_error "shape mismatch" "down_proj" "shape" "config.json" -- "$TMP/bad" "$TMP/o.gguf"
broken llama; truncate -s 200000 "$TMP/bad/model.safetensors"
expect_error "truncated safetensors" "model.safetensors" "outside the data area" -- "$TMP/bad" "$TMP/o.gguf"
broken llama; printf '{"a": ' > "$TMP/bad/model.safetensors"
expect_error "not safetensors" "model.safetensors" -- "$TMP/bad" "$TMP/o.gguf"
broken qwen3; rm "$TMP/bad/model-00003-of-00012.safetensors"
expect_error "missing shard" "model-00003-of-00012.safetensors" "missing" -- "$TMP/bad" "$TMP/o.gguf"
broken qwen2; printf '{"model": ' > "$TMP/bad/tokenizer.json"
expect_error "broken tokenizer.json" "tokenizer.json" "JSON" -- "$TMP/bad" "$TMP/o.gguf"
broken qwen2; sed -i 's/p{N}|/p{N}{1,2}|/' "$TMP/bad/tokenizer.json"
expect_error "unknown pre-tokenizer" "pre-tokenizer" -- "$TMP/bad" "$TMP/o.gguf"
broken gemma3; printf '\x0a\xff\xff' > "$TMP/bad/tokenizer.model"
expect_error "broken tokenizer.model" "tokenizer.model" -- "$TMP/bad" "$TMP/o.gguf"
cp "$DATA/sd-tiny-ldm.safetensors" "$TMP/same.safetensors"
expect_exit 1 "output is the input" -- "$BIN" convert "$TMP/same.safetensors" "$TMP/same.safetensors"
one_line_error "output is the input"
cmp -s "$DATA/sd-tiny-ldm.safetensors" "$TMP/same.safetensors" && ok || bad "the input was overwritten"
expect_error "unknown outtype" "q9_9" -- "$DATA/hf-tiny/llama" "$TMP/o.gguf" --outtype q9_9
expect_error "an SD file that is not safetensors" "ref.json" "header length" -- "$DATA/sd-tiny/ref.json" "$TMP/o.gguf"

# general.name and co. from folder names and _name_or_path as llama.cpp's
# converter derives them (hf-tiny/names.json)
n=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$DATA/hf-tiny/names.json")
for ((i = 0; i < n; i++)); do
    dir=$(python3 - "$DATA/hf-tiny" "$TMP/names" $i <<'PY'
import json, os, shutil, sys
data, root, i = sys.argv[1], sys.argv[2], int(sys.argv[3])
case = json.load(open(os.path.join(data, "names.json")))[i]
d = os.path.join(root, case["dir"])
shutil.rmtree(root, ignore_errors=True)
shutil.copytree(os.path.join(data, "qwen2"), d)
if case["name_or_path"] is not None:
    cfg = json.load(open(os.path.join(d, "config.json")))
    cfg["_name_or_path"] = case["name_or_path"]
    json.dump(cfg, open(os.path.join(d, "config.json"), "w"))
print(d)
PY
)
    expect_exit 0 "names case $i" -- "$BIN" convert "$dir" "$TMP/names.gguf"
    if python3 - "$SRC/tests" "$TMP/names.gguf" "$DATA/hf-tiny/names.json" $i <<'PY'
import json, sys
sys.path.insert(0, sys.argv[1])
import hf_ref_check
kv, _ = hf_ref_check.read(sys.argv[2])
want = json.load(open(sys.argv[3]))[int(sys.argv[4])]
skip = ("general.architecture", "general.type", "general.file_type", "general.quantization_version")
got = {k: v for k, _, v in kv if k.startswith("general.") and not k.startswith("general.sampling") and k not in skip}
if got != want["general"]:
    print(f"{want['dir']!r}: petrel {got}, llama.cpp {want['general']}")
    sys.exit(1)
PY
    then ok; else bad "naming of '$(basename "$dir")'"; fi
done

# usage
expect_exit 2 "no arguments" -- "$BIN" convert
grep -q "usage: petrel convert" "$TMP/err" && ok || bad "no usage on stderr without arguments"
expect_exit 0 "--help" -- "$BIN" convert --help
grep -q "usage: petrel convert" "$TMP/out" && ok || bad "no usage on --help"
expect_exit 2 "unknown option" -- "$BIN" convert --frobnicate a b
one_line_error "unknown option"
expect_exit 2 "three paths" -- "$BIN" convert a b c
one_line_error "three paths"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
