#!/usr/bin/env bash
# test_tui_terminal.sh — the full-screen app and the terminal: the terminal
# is restored (main screen, cursor, keypad and mouse modes, tty settings)
# after quitting and after fatal signals; UTF-8 wide characters round-trip
# with the right widths; colour modes (256, 8, NO_COLOR); help screen,
# multi-line input, history and scrollback; refusal on unusable terminals.
. "$(dirname "$0")/tui_lib.sh"
tui_setup

# The pane runs a plain sh (which never touches tty modes itself) that
# records `stty -a` before and after petrel and prints petrel's exit status.
runner() {
    cat > "$TUI_TMP/run.sh" <<RUN
ulimit -c 0
stty -a > "$TUI_TMP/stty.before"
"$PETREL" "\$@"
echo "exit=\$?"
stty -a > "$TUI_TMP/stty.after"
echo "PROMPT\$ "
exec sleep 600
RUN
    echo "sh $TUI_TMP/run.sh"
}
RUN=$(runner)

restored() {
    local want=$1
    tui_wait "^exit=$want\$" 20 || return 1
    [ "$(tui_fmt '#{alternate_on}')" = 0 ] || { echo "# still on the alternate screen"; return 1; }
    [ "$(tui_fmt '#{cursor_flag}')" = 1 ] || { echo "# cursor hidden"; return 1; }
    [ "$(tui_fmt '#{keypad_flag}#{keypad_cursor_flag}')" = 00 ] || { echo "# keypad mode left on"; return 1; }
    [ "$(tui_fmt '#{mouse_any_flag}#{mouse_standard_flag}')" = 00 ] || { echo "# mouse mode left on"; return 1; }
    tui_wait '^PROMPT\$' 5 || return 1
    cmp -s "$TUI_TMP/stty.before" "$TUI_TMP/stty.after" || {
        echo "# tty settings differ:"; diff "$TUI_TMP/stty.before" "$TUI_TMP/stty.after" | sed 's/^/#  /'; return 1; }
}

# --- quit restores the terminal --------------------------------------------------
tui_start 80 24 "$RUN"
tui_check "app ready" tui_wait_ready 120
tui_check "app runs on the alternate screen" [ "$(tui_fmt '#{alternate_on}')" = 1 ]
tui_check "app turned the mouse on (wheel)" [ "$(tui_fmt '#{mouse_any_flag}')" = 1 ]
tui_keys F10
tui_check "quit (F10): terminal restored, exit 0" restored 0

# --- fatal signals restore it too ---------------------------------------------------
for sig in TERM HUP INT SEGV; do
    case $sig in TERM) code=143 ;; HUP) code=129 ;; INT) code=130 ;; SEGV) code=139 ;; esac
    tui_start 80 24 "$RUN"
    tui_check "app ready" tui_wait_ready 120
    # mid-reply for the crash, to catch the worker thread busy
    if [ "$sig" = SEGV ]; then tui_type "Tell me a story."; tui_keys Enter; tui_wait '^petrel' 30; fi
    pid=$(tui_app_pid)
    kill -"$sig" "$pid"
    tui_check "SIG$sig: terminal restored, exit $code" restored "$code"
done

# --- UTF-8 wide characters -----------------------------------------------------------
tui_start 80 24 "$PETREL"
tui_check "app ready" tui_wait_ready 120
tui_type "/max 4"; tui_keys Enter
tui_wait 'max = 4' 10
text="你好世界 café 😀 ｗｉｄｅ"
tui_type "$text"
# "> " + 4 CJK (8 cells) + " café " (6) + emoji (2) + " " + 4 fullwidth (8) = 2 + 25
tui_check "cursor column counts wide characters as two cells (2+25=27)" tui_wait_cursor 27
tui_check "input echoed" tui_wait "> $text" 10
tui_keys BSpace BSpace
tui_check "backspace removes whole wide characters (cursor 23)" tui_wait_cursor 23
tui_keys Left Left Left
tui_check "cursor moves over wide characters (cursor 18)" tui_wait_cursor 18
tui_keys End
tui_type "ｄｅ"
tui_keys Enter
tui_check "the wide text round-trips into the transcript" tui_wait "^  $text\$" 10
tui_check "status rule spans 80 columns with wide text on screen" tui_wait_rule 80
tui_wait '(end of reply|length limit \(/max\)): [0-9]+ tokens' 60
# a long CJK message wraps inside 40 columns without splitting characters
tui_resize 40 15
long="一二三四五六七八九十一二三四五六七八九十一二三四五六七八九十"
tui_type "$long"; tui_keys Enter
tui_wait '^  一二三四五六七八九十' 10
# 30 characters of 2 cells in 40 - 2 (indent) columns: 19 + 11 per line
w=$(tui_widths '^  [一二三四五六七八九十]+$')
tui_check "wide text wraps at 38 cells: line widths 40 24 (got $w)" [ "$w" = "40 24 " ]
joined=$(tui_screen | sed -nE '/^  [一二三四五六七八九十]+$/p' | tr -d ' \n')
tui_check "no character lost in wrapping" [ "$joined" = "$long" ]
tui_wait '(end of reply|length limit \(/max\)): [0-9]+ tokens' 60
tui_resize 80 24

# --- multi-line input, history, scrollback, help -----------------------------------
tui_type "first line"; tui_keys C-j; tui_type "second line"
tui_check "^J starts a second input line" tui_wait '^… second line' 5
tui_keys Enter
tui_check "both lines sent" tui_wait '^  second line$' 10
tui_check "... after the first" tui_wait '^  first line$' 10
tui_wait '(end of reply|length limit \(/max\)): [0-9]+ tokens' 60
# a bracketed paste keeps its newlines in the input instead of sending
tm set-buffer -b pb $'pasted one\npasted two'
tm paste-buffer -p -b pb -t "$TUI_S"
tui_check "a pasted newline stays in the input" tui_wait '^… pasted two$' 5
tui_check "... and sends nothing" tui_not grep -qE '^  pasted one$' <<< "$(tui_screen)"
tui_keys C-u C-u C-u
tui_wait '^> message, or /help' 5
tui_keys Up
tui_check "Up recalls the last message" tui_wait '^… second line' 5
tui_keys C-u C-u C-u
tui_check "^U clears it" tui_wait '^> message, or /help' 5
for _ in 1 2 3 4; do tui_type "/system"; tui_keys Enter; done
tui_keys PPage
tui_check "PgUp scrolls back (indicator shown)" tui_wait 'more below \(End\)' 5
tui_keys End
tui_check "End returns to the bottom" tui_wait_gone 'more below \(End\)' 5
tui_keys F1
tui_check "F1 shows help with keys and commands" tui_wait 'Help \(Esc closes\)' 5
tui_check "help lists F-keys with letter alternatives" tui_wait 'F2  or \^O +models: switch, download, quantize, delete' 10
tui_keys Escape
tui_check "Esc closes help" tui_wait_gone 'Help \(Esc closes\)' 5
tui_keys C-g
tui_check "^G opens help too" tui_wait 'Help \(Esc closes\)' 5
tui_keys q
tui_wait_gone 'Help \(Esc closes\)' 5

# --- save and load (JSON in the data directory) ---------------------------------------
tui_type "/save roundtrip"; tui_keys Enter
f=$TUI_DATA/petrel/chats/roundtrip.json
# The chat's KV cache is saved (and restored) beside the JSON on the worker
# thread; its status message replaces the JSON's whenever it lands, which
# on a loaded machine can be before the screen is read: either counts, and
# the KV message is waited for before F4, so it cannot replace F4's notice.
kv_msg="KV cache of [0-9]+ tokens"
tui_check "/save writes data/petrel/chats/roundtrip.json" tui_wait "saved $f|$kv_msg saved in roundtrip.kv" 10
tui_check "saved chat holds the wide text" grep -qF "你好世界 café" "$f"
tui_check "saved chat holds the multi-line message" grep -qF 'first line\nsecond line' "$f"
tui_check "/save keeps the KV cache beside it" tui_wait "$kv_msg saved in roundtrip.kv" 10
tui_keys F4
tui_wait 'new conversation' 5
tui_check "F4 clears the conversation" tui_wait_gone '^  first line$' 5
tui_type "/load roundtrip"; tui_keys Enter
tui_check "/load brings it back" tui_wait "loaded $f|$kv_msg restored from roundtrip.kv" 10
tui_check "/load restores the KV cache" tui_wait "$kv_msg restored from roundtrip.kv" 10
tui_check "loaded messages shown" tui_wait '^  first line$' 10
tui_keys F10
tui_wait_dead 60

# --- colour modes -------------------------------------------------------------------------
colours() {   # 256 / 8 / none: which colour escapes the screen holds
    local e
    e=$(tui_screen_escapes)
    if grep -qE $'\e\\[[0-9;]*38;5;' <<< "$e"; then echo 256
    elif grep -qE $'\e\\[([0-9;]*;)?3[0-7](;[0-9;]*)?m' <<< "$e"; then echo 8
    else echo none; fi
}
tui_start 80 24 "$PETREL"
tui_check "app ready" tui_wait_ready 120
tui_check "256 colours on tmux-256color (got $(colours))" [ "$(colours)" = 256 ]
tui_keys F10; tui_wait_dead 60
# tmux sets TERM itself, so change it in the command
tui_start 80 24 "TERM=screen $PETREL"
tui_check "app ready" tui_wait_ready 120
tui_check "8 colours on TERM=screen (got $(colours))" [ "$(colours)" = 8 ]
tui_keys F10; tui_wait_dead 60
tui_start 80 24 "$PETREL" NO_COLOR=1
tui_check "app ready" tui_wait_ready 120
tui_check "no colour with NO_COLOR (got $(colours))" [ "$(colours)" = none ]
tui_check "monochrome still marks the title (reverse video)" grep -qE $'\e\\[[0-9;]*7[0-9;]*m petrel' <<< "$(tui_screen_escapes)"
tui_keys F10; tui_wait_dead 60

# --- small and unusable terminals ---------------------------------------------------------
tui_start 40 15 "$PETREL"
tui_check "starts at 40x15 with compact gauges" tui_wait '^dc [-0-9.]+ pf ' 120
tui_check "status rule spans 40 columns at 40x15" tui_wait_rule 40
tui_keys C-q; tui_wait_dead 60
tui_start 80 24 "TERM=dumb $PETREL; echo exit=\$?; sleep 600"
tui_check "TERM=dumb: refuses with a pointer to chat --plain" tui_wait 'petrel chat --plain' 20
tui_check "... and exit status 1" tui_wait '^exit=1$' 5
out=$("$PETREL" < /dev/null 2>&1)
st=$?
tui_check "no terminal: refuses with exit 1 (got $st)" [ "$st" = 1 ]
tui_check "... and says why" grep -q 'needs a terminal' <<< "$out"

tui_done
