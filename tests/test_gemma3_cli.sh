#!/usr/bin/env bash
# test_gemma3_cli.sh — the petrel binary on the real Gemma 3 270M
# ($PETREL_GEMMA3, else the data directory; tools/fetch_gemma3.py):
#   - `petrel info` names the architecture, the sliding window (512
#     positions on 15 of 18 layers, local rope base 10000) and the Gemma
#     chat template the loader gives a gemma3 GGUF without one;
#   - `petrel run` on the float path (PETREL_CPU=ref), greedy, prints
#     llama-simple's text for a prompt whose float reference has no
#     near-tie (tests/data/gemma3.llamacpp; smallest gap 2.7);
#   - `petrel chat --plain` renders a user turn with Gemma's template into
#     the same number of tokens llama.cpp made of the hand-written Gemma
#     prompt for that question (the fixture's n_prompt), and answers.
set -u
bin=${PETREL_BIN:?PETREL_BIN not set}
data=${PETREL_TEST_DATA:?PETREL_TEST_DATA not set}
model=${PETREL_GEMMA3:-${XDG_DATA_HOME:-${HOME:-.}/.local/share}/petrel/models/gemma-3-270m-q4_k_m.gguf}
if [ ! -r "$model" ]; then
    echo "test_gemma3_cli: Gemma 3 model not found at $model: run tools/fetch_gemma3.py first" >&2
    exit 1
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/petrel-gemma3.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0
ok() { echo "ok - $1"; }
bad() { echo "not ok - $1"; fails=$((fails + 1)); }

# A record of the fixture: the payload of record KIND that follows the
# greedy record whose prompt is PROMPT (with "chat": PROMPT as a user turn
# in Gemma's format, as the generator wrote it).
fixture() { # PROMPT KIND [chat]
    python3 - "$data/gemma3.llamacpp" "$1" "$2" "${3:-}" <<'PY'
import sys
path, prompt, kind = sys.argv[1], sys.argv[2].encode(), sys.argv[3].encode()
if sys.argv[4] == "chat":
    prompt = b"<start_of_turn>user\n" + prompt + b"<end_of_turn>\n<start_of_turn>model\n"
b = open(path, "rb").read()
i, cur = 0, None
while i < len(b):
    nl = b.index(b"\n", i)
    k, n = b[i:nl].split(b" ")
    val = b[nl + 1:nl + 1 + int(n)]
    i = nl + 1 + int(n) + 1
    if k == b"greedy":
        cur = val
    elif cur == prompt and k == kind:
        sys.stdout.buffer.write(val)
        sys.exit(0)
sys.exit(1)
PY
}

"$bin" info -m "$model" > "$tmp/info" 2>&1
st=$?
[ "$st" = 0 ] && ok "info exits 0" || bad "info exits $st"
grep -qE '^architecture +gemma3$' "$tmp/info" && ok "info: architecture gemma3" || bad "info: architecture"
grep -qE '^sliding window +512 positions on 15 of 18 layers \(rope base 10000\)$' "$tmp/info" &&
    ok "info: the sliding window" || bad "info: sliding window line: $(grep -i sliding "$tmp/info")"
grep -qE '^chat template +gemma$' "$tmp/info" && ok "info: gemma chat template" || bad "info: chat template"

prompt="1, 2, 3, 4, 5,"
fixture "$prompt" text > "$tmp/want" || bad "fixture has no text for '$prompt'"
echo >> "$tmp/want" # run ends its output with a newline
PETREL_CPU=ref "$bin" run -m "$model" --temp 0 -n 32 -t 2 -p "$prompt" > "$tmp/out" 2> "$tmp/err"
st=$?
[ "$st" = 0 ] && ok "run exits 0" || bad "run exits $st: $(cat "$tmp/err")"
if cmp -s "$tmp/out" "$tmp/want"; then ok "run: greedy text equals llama-simple's"
else bad "run: greedy text differs"; diff "$tmp/want" "$tmp/out" | sed 's/^/#  /'; fi

question="What is the largest planet in the solar system?"
want_n=$(fixture "$question" n_prompt chat) ||
    bad "fixture has no chat prompt"
echo "$question" | PETREL_CPU=ref "$bin" chat --plain -m "$model" --temp 0 -n 8 -t 2 --stats > "$tmp/out" 2> "$tmp/err"
st=$?
[ "$st" = 0 ] && ok "chat --plain exits 0" || bad "chat --plain exits $st: $(cat "$tmp/err")"
got_n=$(sed -nE 's/^\[prompt ([0-9]+) tok.*/\1/p' "$tmp/err" | head -1)
[ -n "$want_n" ] && [ "$got_n" = "$want_n" ] && ok "chat: the Gemma prompt is $got_n tokens, as llama.cpp's" ||
    bad "chat: prompt of ${got_n:-?} tokens, llama.cpp ${want_n:-?}"
[ -s "$tmp/out" ] && ok "chat: a reply" || bad "chat: no reply"

echo "gemma3_cli: $fails failed"
[ "$fails" = 0 ]
