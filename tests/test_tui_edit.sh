#!/usr/bin/env bash
# test_tui_edit.sh — regenerate, edit-and-resend and the KV cache kept with
# a saved chat, in the full-screen app (tmux, greedy replies of 8 tokens):
#   at 80x24: the title shows the context used / size (0 before the first
#   reply, more after); F8 regenerates the last reply: the same greedy
#   text, one prompt token prefilled (the Last gauge); F9 puts the last
#   message back in the input and takes it and its reply out of the
#   transcript, and the edited message resent prefills fewer tokens than
#   the whole prompt; /save writes NAME.kv beside NAME.json and /load
#   restores it (the status says how many tokens);
#   at 40x20: /retry and /edit TEXT work the same, drawn within 40 columns.
. "$(dirname "$0")/tui_lib.sh"
tui_setup

last_prompt() { tui_screen | sed -nE 's/.*Last +([0-9]+)\+[0-9]+ tok .*/\1/p' | head -1; }
ctx_used() { tui_screen | sed -nE 's/.*ctx ([0-9]+)\/[0-9]+.*/\1/p' | head -1; }
reply_done() { tui_wait '(end of reply|length limit \(/max\)): [0-9]+ tokens' "${1:-60}"; }
# a status line of its own before the next reply, so reply_done waits for
# that reply's end, not the last one's
mark() { tui_type "/max 8"; tui_keys Enter; tui_wait 'max = 8' 10 > /dev/null; }

tui_start 80 24 "$PETREL"
tui_check "app starts and loads the model" tui_wait_ready 120
tui_check "title shows ctx 0/SIZE before any reply" tui_wait 'ctx 0/[0-9]+' 5
tui_type "/temp 0"; tui_keys Enter
tui_type "/max 8"; tui_keys Enter
tui_check "/max set" tui_wait 'max = 8' 10

tui_type "What is the capital of France?"; tui_keys Enter
tui_check "first reply" reply_done 90
first=$(tui_last_reply)
p1=$(last_prompt)
tui_check "title shows the context used after the reply ($(ctx_used))" tui_true "$(ctx_used) > ${p1:-0}"

mark
tui_keys F8
tui_check "F8 regenerates" reply_done 60
tui_check "F8: one prompt token prefilled (Last $(last_prompt)+...)" [ "$(last_prompt)" = 1 ]
tui_check "F8: the same greedy reply" [ "$(tui_last_reply)" = "$first" ]

tui_keys F9
tui_check "F9 puts the last message in the input" tui_wait '^> What is the capital of France\?' 10
tui_check "F9 takes it out of the transcript" tui_not tui_screen_has '^  What is the capital of France\?$'
tui_keys BSpace BSpace BSpace BSpace BSpace BSpace BSpace
tui_type "Spain?"; tui_keys Enter
tui_check "the edited message is sent" tui_wait '^  What is the capital of Spain\?$' 10
tui_check "edited reply" reply_done 60
pe=$(last_prompt)
tui_check "the edit prefilled only from the change ($pe of $p1 tokens)" tui_true "${pe:-999} < ${p1:-0} && ${pe:-0} > 0"

tui_type "/save edited"; tui_keys Enter
tui_check "/save keeps the KV beside the chat" tui_wait 'KV cache of [1-9][0-9]* tokens saved in edited.kv' 20
tui_check "edited.kv written" [ -s "$TUI_DATA/petrel/chats/edited.kv" ]
tui_type "/reset"; tui_keys Enter
tui_check "reset empties the context" tui_wait 'ctx 0/' 10
tui_type "/load edited"; tui_keys Enter
tui_check "/load restores the KV" tui_wait 'KV cache of [1-9][0-9]* tokens restored from edited.kv' 20

# --- 40 columns ----------------------------------------------------------
tui_resize 40 20
tui_check "status rule spans 40 columns" tui_wait_rule 40
mark
tui_type "/retry"; tui_keys Enter
tui_check "/retry at 40 columns" reply_done 60
mark
tui_type "/edit And of Italy?"; tui_keys Enter
tui_check "/edit TEXT resends" tui_wait_flat 'And of Italy\?' 10
tui_check "edited reply at 40 columns" reply_done 60
tui_check "every line within 40 columns" tui_true "$(tui_screen | LC_ALL=C.UTF-8 wc -L) <= 40"

tui_keys F10
tui_check "F10 quits cleanly" tui_wait_dead 20
tui_check "exit status 0" [ "$(tui_exit_status)" = 0 ]
tui_done
