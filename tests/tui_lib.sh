# tui_lib.sh — shared helpers for the tmux-driven tests of the full-screen
# app (tests/test_tui_*.sh source this file; it is not a test itself).
#
# Each test gets a private tmux server (its own socket, no user config), a
# temporary data directory (XDG_DATA_HOME) whose models/ holds links to the
# SmolLM2 GGUF, and a cleanup trap that kills the server and removes the
# directory. Waits poll the screen with a deadline instead of sleeping a
# fixed time, so a slow 2-core machine only makes the tests slower.

set -u

TUI_PASS=0
TUI_FAIL=0

tui_ok() { TUI_PASS=$((TUI_PASS + 1)); echo "ok - $*"; }
tui_bad() { TUI_FAIL=$((TUI_FAIL + 1)); echo "FAIL - $*"; }
# tui_check "description" command args...: pass when the command succeeds
tui_check() {
    local desc=$1
    shift
    if "$@"; then tui_ok "$desc"; else tui_bad "$desc"; fi
}

# tui_not command args...: succeeds when the command fails
tui_not() { ! "$@"; }

tui_done() {
    echo "$TUI_PASS passed, $TUI_FAIL failed"
    [ "$TUI_FAIL" -eq 0 ]
}

tui_now() { date +%s.%N; }
# floating point helpers (awk, no bc needed)
tui_calc() { awk "BEGIN { printf \"%.6f\\n\", $* }"; }
tui_true() { awk "BEGIN { exit !($*) }"; }

tui_setup() {
    PETREL=${PETREL_BIN:?PETREL_BIN must name the petrel binary}
    local data=${XDG_DATA_HOME:-$HOME/.local/share}
    MODEL=${PETREL_SMOLLM2:-$data/petrel/models/SmolLM2-135M-Instruct.Q4_1.gguf}
    if [ ! -r "$MODEL" ]; then
        echo "SmolLM2 model not found at $MODEL: run tools/fetch-model.sh first"
        echo "0 passed, 1 failed"
        exit 1
    fi
    command -v tmux > /dev/null || { echo "tmux is not installed"; echo "0 passed, 1 failed"; exit 1; }
    # A sanitizer build runs the engine many times slower: stretch every
    # deadline (PETREL_TEST_TIMEOUT_SCALE overrides).
    TUI_SCALE=${PETREL_TEST_TIMEOUT_SCALE:-1}
    if [ -z "${PETREL_TEST_TIMEOUT_SCALE:-}" ] && grep -q __asan_init "$PETREL" 2> /dev/null; then
        TUI_SCALE=10
        echo "# sanitizer build: timeouts x$TUI_SCALE"
    fi
    # The app runs on the default (int8 fast path) kernels, as users get it.
    # A test that compares a transcript with transformers' greedy text sets
    # TUI_CPU=ref before tui_setup: the float reference kernels reproduce
    # that text token for token, while the int8 path leaves it at near-ties
    # (checked with its own rules in tests/test_greedy.c).
    TUI_CPU=${TUI_CPU:-native}
    export PETREL_CPU=$TUI_CPU
    TUI_TMP=$(mktemp -d "${TMPDIR:-/tmp}/petrel-tui.XXXXXX")
    TUI_DATA=$TUI_TMP/data
    mkdir -p "$TUI_DATA/petrel/models"
    ln -s "$MODEL" "$TUI_DATA/petrel/models/SmolLM2-135M-Instruct.Q4_1.gguf"
    TUI_CONF=$TUI_TMP/tmux.conf
    # tmux-256color: the terminal most users reach petrel through (tmux,
    # screen and SSH all end up close to it); remain-on-exit keeps the pane
    # readable after petrel exits, with its exit status
    cat > "$TUI_CONF" <<'CONF'
set -g default-terminal "tmux-256color"
set -g remain-on-exit on
set -g history-limit 100
set -g status off
CONF
    TUI_SOCK=$TUI_TMP/tmux.sock   # a private server, gone with the directory
    trap tui_cleanup EXIT
}

tm() { tmux -S "$TUI_SOCK" -f "$TUI_CONF" "$@"; }

tui_cleanup() {
    tm kill-server > /dev/null 2>&1
    [ -n "${TUI_TMP:-}" ] && rm -rf "$TUI_TMP"
}

# tui_deadline SECONDS: the time SECONDS (scaled) from now, for loops
tui_deadline() { tui_calc "$(tui_now) + $1 * $TUI_SCALE"; }

# tui_start WIDTH HEIGHT COMMAND [env assignments...]: a new session whose
# pane runs COMMAND (through sh) in the test's data directory, followed by
# a line "[exited STATUS]". (The pane's sh waits for COMMAND itself: tmux
# 3.3 was seen to miss the SIGCHLD of a multi-threaded child now and then,
# leaving its pane "alive" forever.) The new session is made before the
# previous one is killed, so the tmux server (which exits with its last
# session) stays up in between.
TUI_S=""
TUI_N=0
tui_start() {
    local w=$1 h=$2 cmd=$3
    shift 3
    local envs=(-e LANG=C.UTF-8 -e LC_ALL=C.UTF-8 -e "XDG_DATA_HOME=$TUI_DATA" -e "HOME=$TUI_TMP" -e "PETREL_CPU=$TUI_CPU")
    for e in "$@"; do envs+=(-e "$e"); done
    TUI_N=$((TUI_N + 1))
    local old=$TUI_S
    TUI_S=s$TUI_N
    tm new-session -d -s "$TUI_S" -x "$w" -y "$h" "${envs[@]}" \
        "$cmd; echo \"[exited \$?]\"; exec sleep 3600"
    [ -n "$old" ] && tm kill-session -t "$old" > /dev/null 2>&1
    return 0
}

tui_resize() { tm resize-window -t "$TUI_S" -x "$1" -y "$2"; }
tui_screen() { tm capture-pane -p -t "$TUI_S"; }
tui_screen_escapes() { tm capture-pane -p -e -t "$TUI_S"; }
tui_fmt() { tm display -p -t "$TUI_S" "$1"; }
tui_keys() { tm send-keys -t "$TUI_S" "$@"; }
tui_type() { tm send-keys -t "$TUI_S" -l "$1"; }
tui_pid() { tui_fmt '#{pane_pid}'; }
# The petrel process under the pane (breadth first below the pane's shell).
tui_app_pid() {
    local todo p next
    todo=$(tui_pid)
    for _ in 1 2 3 4; do
        next=""
        for p in $todo; do
            if [ "$(cat "/proc/$p/comm" 2> /dev/null)" = petrel ]; then echo "$p"; return 0; fi
            next="$next $(pgrep -P "$p")"
        done
        todo=$next
    done
    return 1
}

# tui_poll SECONDS PAUSE COMMAND...: run COMMAND every PAUSE seconds until
# it succeeds (return 0) or SECONDS (scaled) have passed (return 1).
tui_poll() {
    local end pause=$2
    end=$(tui_deadline "$1")
    shift 2
    until "$@"; do
        tui_true "$(tui_now) > $end" && return 1
        sleep "$pause"
    done
}

# Predicates for tui_poll.
tui_screen_has() { tui_screen | grep -qE -- "$1"; }
tui_flat_has() { tui_screen | tr -d '\n' | grep -qE -- "$1"; }
tui_cursor_at() { [ "$(tui_fmt '#{cursor_x}')" = "$1" ]; }
tui_rule_is() { [ "$(tui_rule_width)" = "$1" ]; }
tui_reply_words() { [ "$(tui_last_reply | wc -w)" -ge "$1" ]; }   # at least $1 words
tui_dump() { tui_screen | sed 's/^/#  /'; }

# tui_wait REGEX [SECONDS]: wait until the screen matches (grep -E).
tui_wait() {
    tui_poll "${2:-60}" 0.1 tui_screen_has "$1" && return 0
    echo "# timed out after $(( ${2:-60} * TUI_SCALE ))s waiting for /$1/; screen:"
    tui_dump
    return 1
}

# tui_wait_flat REGEX [SECONDS]: like tui_wait, on the screen's rows joined
# into one line (for text the terminal wrapped at an arbitrary column).
tui_wait_flat() {
    tui_poll "${2:-60}" 0.1 tui_flat_has "$1" && return 0
    echo "# timed out waiting for /$1/ (rows joined); screen:"
    tui_dump
    return 1
}

# tui_wait_cursor X [SECONDS]: wait until the cursor is in column X.
tui_wait_cursor() {
    tui_poll "${2:-10}" 0.05 tui_cursor_at "$1" && return 0
    echo "# cursor at column $(tui_fmt '#{cursor_x}'), not $1"
    return 1
}

# tui_wait_rule WIDTH [SECONDS]: wait until the status rule is WIDTH cells.
# (A wait, not a one-shot look: capture-pane can catch the terminal between
# two writes of one frame, with a status line half redrawn.)
tui_wait_rule() {
    tui_poll "${2:-10}" 0.05 tui_rule_is "$1" && return 0
    echo "# status rule $(tui_rule_width) cells wide, not $1"
    return 1
}

# tui_wait_gone REGEX [SECONDS]: wait until the screen no longer matches.
tui_wait_gone() {
    tui_poll "${2:-60}" 0.1 tui_not tui_screen_has "$1" && return 0
    echo "# timed out after $(( ${2:-60} * TUI_SCALE ))s waiting for /$1/ to go; screen:"
    tui_dump
    return 1
}

# tui_wait_dead [SECONDS]: wait until the pane's program has exited.
tui_wait_dead() { tui_wait '^\[exited [0-9]+\]$' "${1:-60}"; }
# Its exit status (after tui_wait_dead).
tui_exit_status() { tui_screen | sed -nE 's/^\[exited ([0-9]+)\]$/\1/p' | tail -1; }

# The app is up with the model loaded and nothing running.
tui_wait_ready() {
    tui_wait 'loaded .*gguf in' "${1:-60}" && tui_wait ' idle *$' 10
}

# Width in cells of the status rule (the line of ─ above the input), which
# petrel draws across the whole window: it equals the window width exactly
# when every row was laid out for the current size. (wc -L measures display
# width with the C library's wcwidth, independently of petrel.)
tui_rule_width() { tui_screen | grep -E '^──' | head -1 | LC_ALL=C.UTF-8 wc -L; }
# Width in cells of each line matching REGEX, space separated.
tui_widths() {
    tui_screen | grep -E -- "$1" | while IFS= read -r l; do printf '%s' "$l" | LC_ALL=C.UTF-8 wc -L; done | tr '\n' ' '
}

# Reply text of the last "petrel" message on screen (lines after the
# last line that is exactly "petrel" or "petrel [stopped]").
tui_last_reply() {
    tui_screen | awk '/^petrel( \[stopped\])?( thinking\.\.\.)?$/ { buf = ""; on = 1; next }
                      on && /^[^ ]/ { on = 0 }
                      on { buf = buf $0 "\n" }
                      END { printf "%s", buf }'
}

# Bytes from "145M" / "1.21G" / "512K" as pt_fmt_bytes prints them.
tui_bytes() {
    awk -v s="$1" 'BEGIN {
        u = substr(s, length(s)); v = substr(s, 1, length(s) - 1) + 0
        if (u == "K") v *= 1024; else if (u == "M") v *= 1048576; else if (u == "G") v *= 1073741824
        else v = s + 0
        printf "%.0f\n", v }'
}
