# cli_lib.sh — shared by the shell tests that drive the petrel binary
# (sourced; the name keeps it out of the test glob). Sets BIN, MODEL, TMP
# (removed on exit) and the counters; gives ok/bad, expect_exit and
# one_line_error. Fails (never skips) when the model is missing, unless the
# test says it needs none (CLI_LIB_NO_MODEL=1 before sourcing).
BIN=${PETREL_BIN:?PETREL_BIN not set}
if [ -z "${CLI_LIB_NO_MODEL:-}" ]; then
    MODEL=${PETREL_SMOLLM2:-${XDG_DATA_HOME:-$HOME/.local/share}/petrel/models/SmolLM2-135M-Instruct.Q4_1.gguf}
    [ -r "$MODEL" ] || { echo "model not found: $MODEL (run tools/fetch_model.py)"; echo "0 passed, 1 failed"; exit 1; }
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
passed=0 failed=0

ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }
# expect_exit CODE DESCRIPTION -- command...   (stdout in $TMP/out, stderr in $TMP/err)
expect_exit() {
    local want=$1 what=$2; shift 3
    "$@" >"$TMP/out" 2>"$TMP/err"
    local got=$?
    if [ "$got" -eq "$want" ]; then ok; else bad "$what: exit $got, want $want; stderr: $(head -c 300 "$TMP/err")"; fi
}
# stderr of the last command is exactly one "petrel: ..." line
one_line_error() {
    local what=$1
    if [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q '^petrel: ' "$TMP/err"; then ok; else bad "$what: stderr is not one 'petrel: ' line: $(cat "$TMP/err")"; fi
}
