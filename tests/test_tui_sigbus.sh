#!/usr/bin/env bash
# test_tui_sigbus.sh — the full-screen app, its model file truncated while a
# reply streams on the reference kernels (which read the mapping per token):
# the SIGBUS goes through the app's fatal-signal handler, which restores the
# terminal (alternate screen off), prints one line naming the file and exits
# with status 1, not a core dump (135). Polls, never sleeps, to synchronise.
TUI_CPU=ref
. "$(dirname "$0")/tui_lib.sh"
tui_setup
cp "$MODEL" "$TUI_TMP/copy.gguf"
tui_start 80 24 "$PETREL -m $TUI_TMP/copy.gguf 2>$TUI_TMP/err"
tui_check "model loaded" tui_wait_ready 120
tui_type "/max 2000"; tui_keys Enter
tui_type "Count from 1 to 1000, one number per line."; tui_keys Enter
tui_check "the reply streams" tui_poll 120 0.1 tui_reply_words 1
truncate -s 4096 "$TUI_TMP/copy.gguf"
tui_check "petrel exits" tui_wait_dead 120
st=$(tui_exit_status)
tui_check "exit status 1 (got $st)" [ "$st" = 1 ]
tui_check "terminal restored (alternate screen off)" [ "$(tui_fmt '#{alternate_on}')" = 0 ]
want="petrel: model file $TUI_TMP/copy.gguf changed or was truncated while in use"
tui_check "one line naming the file (got: $(cat "$TUI_TMP/err"))" [ "$(cat "$TUI_TMP/err")" = "$want" ]
tui_done
