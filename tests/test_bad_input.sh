#!/usr/bin/env bash
# test_bad_input.sh — corrupt model files give one clean error line, never a
# crash. tools/make_bad_gguf.py writes damaged copies of the SmolLM2 GGUF
# (and an empty file and a text file); for each, both
#     petrel info FILE
#     petrel run -m FILE -p hi -n 1
# must exit with status 1 (not 0, not a signal), print exactly one line on
# stderr that starts with "petrel: " and names the problem (every keyword of
# the case, case-insensitive), and show no sanitizer report.
set -u

here=$(cd "$(dirname "$0")" && pwd)
src=${PETREL_SOURCE_DIR:-$(dirname "$here")}
bin=${PETREL_BIN:-}
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
    echo "test_bad_input: PETREL_BIN ('$bin') is not an executable" >&2
    exit 1
fi

# The model: $PETREL_SMOLLM2, else the user's data directory (as tests/check.h).
model=${PETREL_SMOLLM2:-}
if [ -z "$model" ]; then
    model=${XDG_DATA_HOME:-${HOME:-.}/.local/share}/petrel/models/SmolLM2-135M-Instruct.Q4_1.gguf
fi
if [ ! -r "$model" ]; then
    echo "test_bad_input: SmolLM2 model not found at $model: run tools/fetch_model.py first" >&2
    exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/petrel-bad-input.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

if ! python3 "$src/tools/make_bad_gguf.py" "$model" "$tmp/files" > "$tmp/list"; then
    echo "test_bad_input: tools/make_bad_gguf.py failed" >&2
    exit 1
fi

# case file | keywords that must all appear in the error line ('|'-separated)
cases=(
    "truncated_half.gguf|end of file"
    "truncated_100.gguf|truncated"
    "bad_magic.gguf|magic"
    "absurd_tensor_count.gguf|tensors"
    "tensor_offset_outside.gguf|token_embd.weight|end of file"
    "unknown_tensor_type.gguf|token_embd.weight|unknown type 99"
    "unknown_arch.gguf|architecture|llamx"
    "missing_tensor.gguf|blk.0.attn_q.weight"
    "empty.gguf|empty"
    "not_gguf.txt|magic"
)

passed=0
failed=0
fail() {
    failed=$((failed + 1))
    echo "FAIL: $*"
}

# The generator must have written exactly the files this table knows.
expected=$(for c in "${cases[@]}"; do echo "${c%%|*}"; done | sort)
written=$(sort "$tmp/list")
if [ "$expected" = "$written" ]; then
    passed=$((passed + 1))
else
    fail "make_bad_gguf.py wrote [$(echo $written)], expected [$(echo $expected)]"
fi

# One run: every problem found is listed, and the run counts once.
run_case() { # name keywords... -- command...
    local name=$1
    shift
    local keywords=()
    while [ "$1" != "--" ]; do keywords+=("$1"); shift; done
    shift
    local out="$tmp/out" err="$tmp/err" rc
    timeout 300 "$@" > "$out" 2> "$err" < /dev/null
    rc=$?
    local what="$name: petrel ${*:2}"
    local line nlines kw
    line=$(head -n 1 "$err")
    nlines=$(awk 'END { print NR }' "$err")
    local problems=()
    if [ "$rc" -eq 124 ]; then problems+=("timed out")
    elif [ "$rc" -ge 128 ]; then problems+=("killed by signal $((rc - 128))")
    elif [ "$rc" -ne 1 ]; then problems+=("exit status $rc, expected 1"); fi
    [ "$nlines" -eq 1 ] || problems+=("$nlines lines on stderr, expected exactly 1")
    case "$line" in
        "petrel: "*) ;;
        *) problems+=("error line does not start with 'petrel: '") ;;
    esac
    for kw in "${keywords[@]}"; do
        printf '%s\n' "$line" | grep -qiF -- "$kw" || problems+=("error line lacks '$kw'")
    done
    if grep -qE 'AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error' "$out" "$err"; then
        problems+=("sanitizer report")
    fi
    if [ "${#problems[@]}" -eq 0 ]; then
        passed=$((passed + 1))
        echo "ok: $what -> $line"
    else
        local joined
        joined=$(printf '%s; ' "${problems[@]}")
        fail "$what: ${joined%; }"
        echo "  stderr was:"
        sed 's/^/    | /' "$err" | head -n 20
    fi
}

for c in "${cases[@]}"; do
    IFS='|' read -r -a parts <<< "$c"
    name=${parts[0]}
    file="$tmp/files/$name"
    if [ ! -e "$file" ]; then
        fail "$name: not written by make_bad_gguf.py"
        continue
    fi
    run_case "$name" "${parts[@]:1}" -- "$bin" info "$file"
    run_case "$name" "${parts[@]:1}" -- "$bin" run -m "$file" -p hi -n 1
done

# A path that does not exist ("cannot open '...': No such file or directory";
# only the locale-independent part and the path are required).
missing="$tmp/no-such-dir/missing-model.gguf"
run_case "nonexistent path" "cannot open" "missing-model.gguf" -- "$bin" info "$missing"
run_case "nonexistent path" "cannot open" "missing-model.gguf" -- "$bin" run -m "$missing" -p hi -n 1

echo "test_bad_input: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
