#!/usr/bin/env bash
# test_tui_hostile.sh — hostile input reaching the full-screen app: model
# metadata and file names holding escape sequences (shown escaped, the
# screen and the window title untouched), pastes of a megabyte and of
# binary junk, escape sequences pasted (text in the editor, not keys), key
# storms and resize storms while a reply streams, ^Z then fg (the screen
# comes back whole), and the terminal going away (SIGHUP: the app exits).
# After each the app must still answer, or have left the terminal restored.
. "$(dirname "$0")/tui_lib.sh"
tui_setup

# A predicate: the app (not the pane's shell) is running.
app_alive() { tui_app_pid > /dev/null; }
# The app answers: a setting change shows in the status line.
responds() {
    tui_keys C-u C-u C-u C-u C-u
    tui_type "/max $1"; tui_keys Enter
    tui_wait "max = $1" 30
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
tui_check "the picker shows the file name escaped" tui_wait '2 evil\\e\[31m\.gguf ' 10
tui_keys Escape
tui_wait_gone 'Models \(Enter opens' 10
tui_check "the screen is intact (rule spans 100 columns)" tui_wait_rule 100
tui_keys F10
tui_check "quit" tui_wait_dead 30

tui_done
