#!/usr/bin/env bash
# test_hostile_cli.sh — hostile input from the command line: crafted strings
# in a model file, write errors on stdout, absurd option values, unusable data
# directories, a model file truncated while in use. Each case asserts the exit
# status and the one-line "petrel: ..." message. No sleeps as synchronisation:
# waits poll for a condition with a generous deadline.
# (Cases that need the engine's regular-file check live in test_hostile_fifo.sh.)
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=cli_lib.sh
. "$SRC/tests/cli_lib.sh"
TINY=$SRC/tests/data/tiny_llama.gguf

# ---- 1. strings from the file are escaped (no ESC/BEL reaches the terminal) --
python3 "$SRC/tools/make_hostile_gguf.py" "$TINY" "$TMP/evil.gguf" || bad "make_hostile_gguf.py failed"
expect_exit 0 "info evil.gguf" -- "$BIN" info --tensors "$TMP/evil.gguf"
if LC_ALL=C grep -q $'[\x1b\x07]' "$TMP/out"; then bad "info prints raw ESC/BEL: $(cat -v "$TMP/out" | grep -m3 '\^\[')"; else ok; fi
grep -q '^name  *evil\\e\[2J\\e\]0;pwned\\x07name$' "$TMP/out" && ok || bad "info name not escaped: $(grep '^name' "$TMP/out" | cat -v)"
grep -q '^  evil\\e\[2J\\e\]0;pwned\\x07\.key ' "$TMP/out" && ok || bad "info key not escaped"
grep -q '"value\\x1b\[2J\\x1b\]0;pwned\\x07"' "$TMP/out" && ok || bad "info value not escaped"
grep -q '^  evil\\e\[2J\\e\]0;pwned\\x07\.weight ' "$TMP/out" && ok || bad "info tensor name not escaped"

# ---- 2. write errors on stdout: one line, exit 1 -------------------------------
# (/dev/full: every write fails with ENOSPC; run and chat flush per token, so
# the errno may be gone by exit: the line starts the same either way)
write_error() {
    local what=$1
    [ "$(grep -c '^petrel: ' "$TMP/err")" -eq 1 ] && grep -q '^petrel: write error on standard output' "$TMP/err" \
        && ok || bad "$what: no single write-error line: $(cat "$TMP/err")"
}
if [ -w /dev/full ]; then
    for args in "info $TINY" "tokenize -m $TINY -p hello" "run -m $TINY -p hi -n 4 --temp 0" \
                "bench -m $TINY -p 4 -n 0 -r 1" "--help" "--version" "run --help" "info --help"; do
        # shellcheck disable=SC2086
        "$BIN" $args >/dev/full 2>"$TMP/err"; st=$?
        [ "$st" -eq 1 ] && ok || bad "$args >/dev/full: exit $st, want 1"
        write_error "$args >/dev/full"
    done
    printf 'hi\nhello\n' | "$BIN" chat --plain -m "$TINY" -n 4 >/dev/full 2>"$TMP/err"; st=$?
    [ "$st" -eq 1 ] && ok || bad "chat --plain >/dev/full: exit $st, want 1"
    write_error "chat --plain >/dev/full"
else
    bad "/dev/full is missing: the write-error cases did not run"
fi

# stdout closed before petrel writes (the read end of its pipe is already
# closed: deterministic, unlike a race with `| head -c1`). With SIGPIPE at its
# default petrel ends by SIGPIPE, silently, like cat (status 128+13); with
# SIGPIPE ignored the EPIPE is a write error: one line, exit 1.
closed_stdout() { # closed_stdout default|ignore ARGS...
    python3 - "$@" <<'PY'
import os, signal, subprocess, sys
mode, argv = sys.argv[1], sys.argv[2:]
r, w = os.pipe()
os.close(r)
pre = (lambda: signal.signal(signal.SIGPIPE, signal.SIG_IGN)) if mode == "ignore" else None
p = subprocess.run(argv, stdout=w, stderr=subprocess.PIPE, preexec_fn=pre)
sys.stderr.write(p.stderr.decode(errors="replace"))
sys.exit(128 - p.returncode if p.returncode < 0 else p.returncode)
PY
}
for args in "run -m $TINY -p hi -n 8 --temp 0" "info $TINY" "tokenize -m $TINY -p hello" "--version"; do
    # shellcheck disable=SC2086
    closed_stdout default "$BIN" $args 2>"$TMP/err"; st=$?
    [ "$st" -eq 141 ] && ok || bad "$args, stdout closed: exit $st, want 141 (SIGPIPE)"
    ! grep -q "^petrel: " "$TMP/err" && ok || bad "$args, stdout closed: says $(cat "$TMP/err")"
    # shellcheck disable=SC2086
    closed_stdout ignore "$BIN" $args 2>"$TMP/err"; st=$?
    [ "$st" -eq 1 ] && ok || bad "$args, stdout closed, SIGPIPE ignored: exit $st, want 1"
    write_error "$args, stdout closed, SIGPIPE ignored"
done

# ---- 3. the data directory: what is wrong and how to fix it; never the cwd ----
mkdir -p "$TMP/cwd" "$TMP/home"
in_cwd() { (cd "$TMP/cwd" && "$@"); }
save_chat() { printf '/save x\n' | "$BIN" chat --plain -m "$TINY" -n 1; }
only_error() { # only_error WHAT REGEX: stderr is one petrel: line matching REGEX
    [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -Eq "^petrel: $2" "$TMP/err" && ok || bad "$1: stderr: $(cat "$TMP/err")"
}
in_cwd env -u HOME -u XDG_DATA_HOME "$BIN" info >"$TMP/out" 2>"$TMP/err"; st=$?
[ "$st" -eq 1 ] && ok || bad "info, no HOME: exit $st, want 1"
only_error "info, no HOME" "cannot work out the data directory: HOME is not set \(set HOME, or XDG_DATA_HOME to an absolute path\)$"
in_cwd env -u HOME -u XDG_DATA_HOME bash -c "$(declare -f save_chat); BIN=$BIN TINY=$TINY save_chat" >"$TMP/out" 2>"$TMP/err"; st=$?
[ "$st" -eq 1 ] && ok || bad "chat /save, no HOME: exit $st, want 1"
only_error "chat, no HOME" "cannot work out the data directory: HOME is not set"
[ -z "$(ls -A "$TMP/cwd")" ] && ok || bad "no HOME: wrote into the current directory: $(ls -A "$TMP/cwd")"
in_cwd env -u HOME XDG_DATA_HOME=rel "$BIN" info >"$TMP/out" 2>"$TMP/err"; st=$?
[ "$st" -eq 1 ] && ok || bad "info, relative XDG_DATA_HOME, no HOME: exit $st"
only_error "relative XDG_DATA_HOME, no HOME" "cannot work out the data directory: HOME is not set and XDG_DATA_HOME is not an absolute path"
in_cwd env -u XDG_DATA_HOME HOME=relhome "$BIN" info >"$TMP/out" 2>"$TMP/err"; st=$?
[ "$st" -eq 1 ] && ok || bad "info, relative HOME: exit $st"
only_error "relative HOME" "cannot work out the data directory: HOME \('relhome'\) is not an absolute path$"
long=/$(printf 'a%.0s' $(seq 5000))
env XDG_DATA_HOME="$long" "$BIN" info >"$TMP/out" 2>"$TMP/err"; st=$?
[ "$st" -eq 1 ] && ok || bad "info, long XDG_DATA_HOME: exit $st"
only_error "long XDG_DATA_HOME" "XDG_DATA_HOME is too long \(5001 bytes; the data directory must fit in 4095\): shorten it$"
# a relative XDG_DATA_HOME is ignored (XDG spec): /save goes under $HOME
in_cwd env HOME="$TMP/home" XDG_DATA_HOME=rel bash -c "$(declare -f save_chat); BIN=$BIN TINY=$TINY save_chat" >"$TMP/out" 2>"$TMP/err"; st=$?
[ "$st" -eq 0 ] && ok || bad "chat /save, relative XDG_DATA_HOME: exit $st; $(cat "$TMP/err")"
[ -f "$TMP/home/.local/share/petrel/chats/x.json" ] && [ -z "$(ls -A "$TMP/cwd")" ] && ok \
    || bad "relative XDG_DATA_HOME: saved in the wrong place: cwd has $(ls -A "$TMP/cwd")"
# unusable data directories: a file in the way, a file where chats/ goes, a
# directory that cannot be created (under /proc: fails for root too)
touch "$TMP/afile"; mkdir -p "$TMP/d/petrel"; touch "$TMP/d/petrel/chats"
for case in "$TMP/afile|cannot create $TMP/afile/petrel/chats: Not a directory" \
            "$TMP/d|cannot write $TMP/d/petrel/chats/x.json: Not a directory" \
            "/proc/self|cannot create /proc/self/petrel/chats: No such file or directory"; do
    dir=${case%%|*} msg=${case#*|}
    XDG_DATA_HOME=$dir save_chat >"$TMP/out" 2>"$TMP/err"; st=$?
    [ "$st" -eq 1 ] && ok || bad "/save into $dir: exit $st, want 1"
    only_error "/save into $dir" "$msg$"
done
if [ "$(id -u)" -ne 0 ]; then # permissions do not stop root
    mkdir -p "$TMP/ro"; chmod 555 "$TMP/ro"
    XDG_DATA_HOME=$TMP/ro save_chat >"$TMP/out" 2>"$TMP/err"; st=$?
    [ "$st" -eq 1 ] && ok || bad "/save into a read-only dir: exit $st, want 1"
    only_error "/save into a read-only dir" "cannot create $TMP/ro/petrel.*: Permission denied$"
    chmod 755 "$TMP/ro"
fi

# ---- 4. the model file truncated while it is mapped and in use ---------------
# The reference kernels read the weights from the mapping on every token, so
# truncating the file makes the next read fault (SIGBUS): one line naming the
# file, exit 1, no core dump (not 135). The fast kernels repacked every matrix
# at load and read the mapping no more: their run completes normally (exit 0),
# or, should they ever read it again, ends the same clean way.
# Sync: poll until the first generated bytes appear, then truncate.
truncated_run() { # truncated_run CPU N_PREDICT -> $st, $TMP/out, $TMP/err
    cp "$MODEL" "$TMP/copy.gguf"
    : >"$TMP/out"
    env ${1:+PETREL_CPU=$1} "$BIN" run -m "$TMP/copy.gguf" -p "1, 2, 3, 4, 5, 6, 7," -n "$2" --temp 0 -t 1 \
        >"$TMP/out" 2>"$TMP/err" &
    local pid=$! deadline=$((SECONDS + 300))
    while [ ! -s "$TMP/out" ] && [ $SECONDS -lt $deadline ] && kill -0 $pid 2>/dev/null; do sleep 0.05; done
    [ -s "$TMP/out" ] || bad "truncated ($1): no output before the deadline"
    truncate -s 4096 "$TMP/copy.gguf"
    wait $pid; st=$?
}
truncated_run ref 4000
[ "$st" -eq 1 ] && ok || bad "truncated while in use (ref): exit $st, want 1; $(cat "$TMP/err")"
only_error "truncated while in use (ref)" "model file $TMP/copy.gguf changed or was truncated while in use$"
truncated_run "" 40
if [ "$st" -eq 0 ]; then
    ok; echo "fast kernels: no read of the mapping after load (normal completion)"
else
    [ "$st" -eq 1 ] && ok || bad "truncated while in use (fast): exit $st, want 0 or 1"
    only_error "truncated while in use (fast)" "model file $TMP/copy.gguf changed or was truncated while in use$"
fi
rm -f "$TMP/copy.gguf"

# ---- 5. absurd numbers: usage error, exit 2, one line naming the option -------
BAD_VALUES=(-99999999999999999999 99999999999999999999 abc 12abc nan inf -inf "" 1e999 0x10)
absurd() { # absurd WHAT OPTION VALUE... -- command prefix (the option and value appended)
    local what=$1 opt=$2; shift 2
    local vals=() v
    while [ "$1" != "--" ]; do vals+=("$1"); shift; done
    shift
    for v in "${vals[@]}"; do
        "$@" "$opt" "$v" </dev/null >"$TMP/out" 2>"$TMP/err"; st=$?
        [ "$st" -eq 2 ] && ok || bad "$what $opt '$v': exit $st, want 2; $(head -c 200 "$TMP/err")"
        { [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q '^petrel: ' "$TMP/err" && grep -qF -- "$opt" "$TMP/err"; } \
            && ok || bad "$what $opt '$v': not one line naming the option: $(cat "$TMP/err")"
    done
}
for opt in --temp --top-k --top-p --min-p --repeat-penalty --presence-penalty --frequency-penalty \
           --repeat-last-n -s --seed -c --ctx-size -t --threads -b --batch-size -n --n-predict; do
    absurd run "$opt" "${BAD_VALUES[@]}" -1000 -- "$BIN" run -m "$TINY" -p hi
    absurd chat "$opt" "${BAD_VALUES[@]}" -1000 -- "$BIN" chat --plain -m "$TINY"
done
# zero (or one past the end) where it is invalid
absurd run --repeat-penalty 0 101 -- "$BIN" run -m "$TINY" -p hi
absurd run --top-p 1.5 -- "$BIN" run -m "$TINY" -p hi
absurd run -b 0 -- "$BIN" run -m "$TINY" -p hi
absurd run -n -2 -- "$BIN" run -m "$TINY" -p hi
for opt in -p --n-prompt -n --n-gen -d --n-depth -b -ub -t -r -pg; do
    absurd bench "$opt" "${BAD_VALUES[@]}" -1 "1,-2" "1-99999999999999999999" -- "$BIN" bench -m "$TINY"
done
absurd bench -b 0 -- "$BIN" bench -m "$TINY"
absurd bench -ub 0 -- "$BIN" bench -m "$TINY"
absurd bench -t 0 -- "$BIN" bench -m "$TINY"
absurd bench -r 0 -- "$BIN" bench -m "$TINY"
# the full-screen app's own options are checked before the terminal is touched
for opt in -t --threads -c --ctx-size -n --n-predict; do
    absurd app "$opt" "${BAD_VALUES[@]}" -1 -- "$BIN" -m "$TINY"
done

# ---- 6. prompts: invalid UTF-8 works, longer than the context is an error ----
expect_exit 0 "run, invalid UTF-8 prompt" -- "$BIN" run -m "$TINY" -p $'\xff\xfe bad \xc3 end' -n 3 --temp 0
expect_exit 0 "tokenize, invalid UTF-8" -- "$BIN" tokenize -m "$TINY" -p $'\xff\xfe bad \xc3'
grep -qF "'\\xFF'" "$TMP/out" && ok || bad "tokenize does not show the byte 0xFF as \\xFF: $(cat -v "$TMP/out")"
python3 -c 'import sys; open(sys.argv[1], "rb").read().decode("utf-8")' "$TMP/out" 2>/dev/null && ok \
    || bad "tokenize printed bytes that are not UTF-8: $(cat -v "$TMP/out")"
long_prompt=$(printf 'word %.0s' $(seq 100))
expect_exit 1 "run, prompt longer than the context" -- "$BIN" run -m "$TINY" -c 16 -p "$long_prompt" -n 3
only_error "prompt longer than the context" "prompt of [0-9]+ tokens does not fit: 0 of 16 context tokens already used$"
printf '%s\n' "$long_prompt" | "$BIN" chat --plain -m "$TINY" -c 16 -n 3 >"$TMP/out" 2>"$TMP/err"; st=$?
[ "$st" -eq 1 ] && ok || bad "chat, prompt longer than the context: exit $st, want 1"
grep -q '^petrel: the message is too long for the context window$' "$TMP/err" && ok || bad "chat, long prompt: $(cat "$TMP/err")"

# ---- 7. model paths that are not model files ----------------------------------
: >"$TMP/empty.gguf"
for case in "$TMP|cannot open '$TMP': it is a directory, not a regular file" \
            "/dev/zero|cannot open '/dev/zero': it is a character device, not a regular file" \
            "$TMP/empty.gguf|gguf: '$TMP/empty.gguf' is empty \(0 bytes\)"; do
    f=${case%%|*} msg=${case#*|}
    expect_exit 1 "info $f" -- timeout 20 "$BIN" info "$f"
    only_error "info $f" "$msg$"
    expect_exit 1 "run -m $f" -- timeout 20 "$BIN" run -m "$f" -p hi -n 1
    only_error "run -m $f" "$msg$"
done

# ---- 8. signals mid-generation ------------------------------------------------
# SIGINT stops the reply cleanly: the text so far, a newline, exit 130.
# SIGTERM and SIGHUP keep their default action (the process ends by the
# signal: status 143 / 129); stdout holds whole tokens only, each flushed as
# it is generated. Sync: poll until the first bytes appear, then signal.
signal_run() { # signal_run SIGNAL -> $st
    : >"$TMP/out"
    "$BIN" run -m "$MODEL" -p "1, 2, 3, 4, 5, 6, 7," -n 4000 --temp 0 -t 1 >"$TMP/out" 2>"$TMP/err" &
    local pid=$! deadline=$((SECONDS + 300))
    while [ ! -s "$TMP/out" ] && [ $SECONDS -lt $deadline ] && kill -0 $pid 2>/dev/null; do sleep 0.05; done
    kill -s "$1" $pid
    wait $pid; st=$?
}
signal_run INT
[ "$st" -eq 130 ] && ok || bad "SIGINT mid-generation: exit $st, want 130; $(cat "$TMP/err")"
[ "$(tail -c1 "$TMP/out" | od -An -c | tr -d ' ')" = '\n' ] && ok || bad "SIGINT: output does not end with a newline"
! grep -q '^petrel: ' "$TMP/err" && ok || bad "SIGINT: error line: $(cat "$TMP/err")"
signal_run TERM
[ "$st" -eq 143 ] && ok || bad "SIGTERM mid-generation: exit $st, want 143"
signal_run HUP
[ "$st" -eq 129 ] && ok || bad "SIGHUP mid-generation: exit $st, want 129"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
