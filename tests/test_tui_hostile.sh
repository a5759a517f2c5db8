#!/usr/bin/env bash
# test_tui_hostile.sh — hostile input reaching the full-screen app: model
# metadata and file names holding escape sequences (shown escaped, the
# screen and the window title untouched), pastes of a megabyte, of binary
# junk and of escape sequences (text in the editor, not keys), key
# storms and resize storms while a reply streams, ^Z then fg (the screen
# comes back whole), and the terminal going away (SIGHUP: the app exits).
# After each the app must still answer, or have left the terminal restored.
. "$(dirname "$0")/tui_lib.sh"
tui_setup

# A predicate: the app (not the pane's shell) is running.
app_alive() { tui_app_pid > /dev/null; }
# The app answers: a setting change shows in the status line.
responds() {
    tui_keys C-c   # clears the input when no reply is being written
    tui_type "/max $1"; tui_keys Enter
    tui_wait "max = $1" 30
}
# The app's frame is on screen: title, status rule across 80 columns, input.
whole_screen() {
    tui_screen_has '^ petrel ' && tui_screen_has '^> ' && tui_rule_is 80 &&
        [ "$(tui_fmt '#{alternate_on}')" = 1 ]
}
reply_done() { tui_wait '(end of reply|length limit \(/max\)|stopped): [0-9]+ tokens' "${1:-120}"; }

# --- metadata and file names with escape sequences ------------------------------
# general.name clears the screen (ESC [2J) and sets the window title (OSC 2);
# the file name turns text red (ESC [31m)
evil=$TUI_DATA/petrel/models/$'evil\e[31m.gguf'
python3 "$PETREL_SOURCE_DIR/tools/gguf_set_name.py" "$PETREL_TEST_DATA/tiny_llama.gguf" "$evil" \
    'Evil\x1b[2J\x1b]2;PWNED\x07Name'
tui_start 100 24 "$PETREL -m '$evil'"
title0=$(tui_fmt '#{pane_title}')
tui_check "a model file name with ESC is shown escaped" tui_wait 'loaded evil\\e\[31m\.gguf in' 60
tui_check "general.name with ESC [2J and OSC 2 is shown escaped in the title" \
    tui_wait '^ petrel Evil\\e\[2J\\e\]2;PWNED\\x07Name' 10
tui_check "the window title did not change (was '$title0', now '$(tui_fmt '#{pane_title}')')" \
    [ "$(tui_fmt '#{pane_title}')" = "$title0" ]
tui_keys F2
tui_check "the Models screen shows the file name escaped" tui_wait '^\* evil\\e\[31m\.gguf ' 10
tui_keys Escape
tui_wait_gone '^ Models  free RAM' 10
tui_check "the screen is intact (rule spans 100 columns)" tui_wait_rule 100
tui_keys F10
tui_check "quit" tui_wait_dead 30

# --- pastes: a megabyte, escape sequences ----------------------------------------
python3 - "$TUI_TMP" <<'PY'
import random, sys
d = sys.argv[1]
with open(d + "/big.txt", "w") as f:             # 1 MiB of text lines
    line = "line %06d: the quick brown fox jumps over the lazy dog, again and again.\n"
    n = 0
    while f.tell() < (1 << 20):
        f.write(line % n); n += 1
    f.write("ENDOFPASTE")
# a Down arrow, PgUp, F10 (quit), ^Q (quit), ^Z (suspend), ^R (reset), ^O (Models)
open(d + "/keys.txt", "wb").write(b"A\x1b[B\x1b[5~\x1b[21~\x11\x1a\x12\x0fZ")
PY
tui_start 80 24 "$PETREL"
tui_check "app ready" tui_wait_ready 120
tm load-buffer -b big "$TUI_TMP/big.txt"
tm paste-buffer -p -b big -t "$TUI_S"
tui_check "a 1 MiB paste arrives whole in the input" tui_wait 'ENDOFPASTE$' 300
tui_check "... sends nothing" tui_not tui_screen_has '^  line 000000'
tui_check "... and the app answers after it" responds 11
tm load-buffer -b esc "$TUI_TMP/keys.txt"
tm paste-buffer -p -b esc -t "$TUI_S"
tui_check "pasted escape sequences and control keys land as text" tui_wait '^> A.\[B.\[5~.\[21~....Z$' 10
tui_check "... and act as no key (no Models screen, no quit)" app_alive
tui_check "... still on the alternate screen" [ "$(tui_fmt '#{alternate_on}')" = 1 ]
tui_check "... and the app answers after it" responds 12
# binary junk: seeded random bytes (a stray UTF-8 lead byte can make
# get_wch swallow the ESC of the end marker; the app then leaves paste mode
# after a second without input). Keys sent within that second are still
# text, so the check retries its question until the app answers.
python3 -c 'import random, sys; r = random.Random(10); sys.stdout.buffer.write(bytes(r.randrange(256) for _ in range(16384)))' \
    > "$TUI_TMP/junk.bin"
tm load-buffer -b junk "$TUI_TMP/junk.bin"
tm paste-buffer -p -b junk -t "$TUI_S"
tui_check "16 KiB of binary junk pasted: the app is alive" app_alive
answers_now() { tui_keys C-c; tui_type "/max 13"; tui_keys Enter; tui_poll 3 0.1 tui_screen_has 'max = 13'; }
tui_check "... and answers again once the paste is over" tui_poll 60 0.5 answers_now
# typed (not pasted) escape sequences are keys; unknown ones must do no harm
tui_keys -l $'\e[999;999R\e]2;PWNED\a\e[?1049l\eP+q544e\e\\'
tui_keys Escape
tui_check "typed unknown escape sequences: the app answers" responds 14
tui_check "... the window title did not change" [ "$(tui_fmt '#{pane_title}')" = "$title0" ]
tui_keys F10
tui_check "quit after the pastes" tui_wait_dead 30

# --- key storm and resize storm while a reply streams -----------------------------
tui_start 80 24 "$PETREL"
tui_check "app ready" tui_wait_ready 120
responds 200
tui_type "Write a long poem about mountains."; tui_keys Enter
tui_poll 90 0.1 tui_reply_words 2
for _ in $(seq 20); do
    tui_keys a b c Left Right Up Down PPage NPage Home End BSpace Tab x y z
done
tui_check "a key storm while streaming: the reply goes on to its end" reply_done 300
tui_check "... the app answers" responds 201
tui_type "Write a long story about a ship."; tui_keys Enter
tui_poll 90 0.1 tui_reply_words 2
pid=$(tui_app_pid)
for i in $(seq 30); do
    case $((i % 3)) in 0) tui_resize 60 20 ;; 1) tui_resize 100 30 ;; 2) tui_resize 40 15 ;; esac
    kill -WINCH "$pid" 2> /dev/null
done
tui_resize 80 24
tui_check "a resize storm while streaming: laid out for 80x24 after it" tui_wait_rule 80
tui_check "... the reply goes on to its end" reply_done 300
tui_check "... the app answers" responds 202
tui_keys F10
tui_check "quit after the storms" tui_wait_dead 30

# --- ^Z then fg, and SIGTSTP from outside ------------------------------------------
tui_start 80 24 "bash --norc --noprofile -i"
tui_type "PS1='PROMPT\$ '"; tui_keys Enter
tui_wait '^PROMPT\$ *$' 10
tui_type "$PETREL"; tui_keys Enter
tui_check "app ready (from an interactive shell)" tui_wait_ready 120
tui_keys C-z
tui_check "^Z stops the app and gives the shell back" tui_wait 'Stopped' 20
tui_check "... on the main screen" [ "$(tui_fmt '#{alternate_on}')" = 0 ]
tui_type "fg"; tui_keys Enter
tui_check "fg: the app's screen comes back whole (title, rule, input)" \
    tui_poll 20 0.1 whole_screen
tui_check "... and the app answers" responds 21
kill -TSTP "$(tui_app_pid)"
tui_check "SIGTSTP from outside stops it too" tui_wait 'Stopped' 20
tui_type "fg"; tui_keys Enter
tui_check "fg: the screen comes back whole again" tui_poll 20 0.1 whole_screen
tui_check "... and the app answers" responds 22
tui_keys F10
tui_check "quit after fg" tui_poll 30 0.1 tui_not app_alive

# --- the terminal going away ----------------------------------------------------------
# the pane's sh traps HUP (a handler, reset for petrel by exec), so it
# outlives the terminal long enough to record petrel's exit status
for when in idle streaming; do
    tui_start 80 24 "trap 'echo' HUP; ulimit -c 0; $PETREL; echo \$? > $TUI_TMP/hup.status"
    tui_check "app ready" tui_wait_ready 120
    if [ "$when" = streaming ]; then
        tui_type "Tell me a long story."; tui_keys Enter
        tui_poll 90 0.1 tui_reply_words 2
    fi
    pid=$(tui_app_pid)
    rm -f "$TUI_TMP/hup.status"
    # a new session keeps the tmux server up; tui_start kills the old one
    tui_start 80 24 "sleep 600"
    tui_check "terminal gone ($when): the app exits" tui_poll 30 0.1 tui_not kill -0 "$pid"
    tui_check "... by SIGHUP, status 129 (got $(cat "$TUI_TMP/hup.status" 2> /dev/null))" \
        tui_poll 10 0.1 grep -qx 129 "$TUI_TMP/hup.status"
done

tui_done
