#!/usr/bin/env bash
# test_tui_chat.sh — the full-screen app in tmux at 80x24: a message gets
# a streamed reply with non-zero tok/s gauges; Esc and Ctrl-C stop a reply
# mid-stream without quitting; resizing to 40x15 and back during
# generation keeps the app drawing within the window; F10 quits cleanly.
. "$(dirname "$0")/tui_lib.sh"
tui_setup

tui_start 80 24 "$PETREL"
tui_check "app starts and loads the default model" tui_wait_ready 120
tui_check "gauges drawn (prefill, decode, RSS, model, context, KV)" \
    tui_wait '^Prefill \[.*Decode +\[' 5
s=$(tui_screen)
for g in '^RSS +\[' 'Model +\[' '^Context \[' 'KV +\[' '^TTFT' '^Rate'; do
    tui_check "gauge /$g/ present" grep -qE -- "$g" <<< "$s"
done
tui_check "footer shows keys with letter alternatives" grep -qE 'F1/\^G Help.*F10/\^Q Quit' <<< "$s"

# --- a streamed reply --------------------------------------------------
tui_type "/max 96"; tui_keys Enter
tui_check "/max sets the reply length" tui_wait 'max = 96' 10
tui_type "Tell me a long story about a brave little robot."; tui_keys Enter
tui_check "the message is echoed in the transcript" \
    tui_wait '^  Tell me a long story about a brave little robot\.$' 10
# watch the reply grow: several distinct partial replies = streaming
lengths=""
live=0
end=$(tui_deadline 90)
while tui_true "$(tui_now) < $end"; do
    s=$(tui_screen)
    r=$(tui_last_reply | tr -d ' \n' | wc -c)
    [ "$r" -gt 0 ] && case " $lengths " in *" $r "*) ;; *) lengths="$lengths $r" ;; esac
    if grep -qE 'Decode +\[[| ]*[0-9.]+ t/s live' <<< "$s" &&
       ! grep -qE 'Decode +\[[| ]*0\.00 t/s live' <<< "$s"; then live=1; fi
    grep -qE '(end of reply|length limit \(/max\)|context full): [0-9]+ tokens' <<< "$s" && break
    sleep 0.02
done
n_lengths=$(wc -w <<< "$lengths")
tui_check "the reply streamed in pieces ($n_lengths distinct lengths seen)" [ "$n_lengths" -ge 3 ]
tui_check "live decode tok/s shown while generating" [ "$live" = 1 ]
tui_check "the reply finished" tui_wait '(end of reply|length limit \(/max\)): [0-9]+ tokens' 5
s=$(tui_screen)
reply=$(tui_last_reply)
tui_check "the reply has text" [ -n "$(tr -d ' \n' <<< "$reply")" ]
pf=$(sed -nE 's/^Prefill +\[[| ]*([0-9.]+) t\/s\].*/\1/p' <<< "$s" | head -1)
dc=$(sed -nE 's/.*Decode +\[[| ]*([0-9.]+) t\/s last\].*/\1/p' <<< "$s" | head -1)
ngen=$(sed -nE 's/.*Last +[0-9]+\+([0-9]+) tok .*/\1/p' <<< "$s" | head -1)
tui_check "prefill tok/s > 0 (got '${pf:-none}')" tui_true "${pf:-0} > 0"
tui_check "decode tok/s > 0 (got '${dc:-none}')" tui_true "${dc:-0} > 0"
tui_check "TTFT shown" grep -qE '^TTFT +[0-9.]+m?s' <<< "$s"
tui_check "the reply stops at /max (generated ${ngen:-?} <= 96)" tui_true "${ngen:-999} <= 96 && ${ngen:-0} > 0"
if grep -q 'length limit' <<< "$s"; then
    tui_check "a reply cut by /max has exactly 96 tokens" [ "$ngen" = 96 ]
fi
tui_check "sparkline has samples" grep -qE "^Rate .*[▁▂▃▄▅▆▇█]" <<< "$s"
tui_check "status rule spans the 80 columns" tui_wait_rule 80

# --- Esc stops a reply mid-stream ---------------------------------------
stop_test() {
    local key=$1
    tui_type "/max 400"; tui_keys Enter
    tui_wait 'max = 400' 10 || return 1
    tui_type "Write a very long essay about the history of computers, with many details."
    tui_keys Enter
    # wait until a few words of the reply are on screen
    tui_poll 90 0.1 tui_reply_words 3 || { echo "# no reply text"; return 1; }
    tui_keys "$key"
    tui_wait 'stopped: [0-9]+ tokens' 60 || return 1
    local n
    n=$(tui_screen | sed -nE 's/.*stopped: ([0-9]+) tokens.*/\1/p' | head -1)
    [ "${n:-400}" -lt 400 ] || { echo "# not stopped early: $n tokens"; return 1; }
    tui_screen | grep -qE '^petrel \[stopped\]$' || { echo "# no [stopped] label"; return 1; }
    # nothing more arrives after the stop (the gauges may still move)
    local a b
    a=$(tui_last_reply | md5sum)
    sleep 1.5
    b=$(tui_last_reply | md5sum)
    [ "$a" = "$b" ] || { echo "# reply still growing after the stop"; return 1; }
    tui_app_pid > /dev/null || { echo "# app quit"; return 1; }
}
tui_check "Esc stops a reply mid-stream, the app stays" stop_test Escape
tui_check "Ctrl-C stops a reply mid-stream, the app stays" stop_test C-c
tui_keys F4
tui_wait 'new conversation' 10

# --- resize to 40x15 and back while generating ---------------------------
# A long reply (the essay runs past 1500 greedy tokens), so that it is still
# being written while the window changes size on the fast kernels too.
tui_type "/max 600"; tui_keys Enter
tui_wait 'max = 600' 10
tui_type "Write a very long essay about the history of computers, with many details."; tui_keys Enter
tui_wait '^petrel' 30
tui_poll 90 0.1 tui_reply_words 2
gen_before=$(tui_screen | grep -cE 'Esc stops')
tui_resize 40 15
tui_check "window is 40x15" [ "$(tui_fmt '#{window_width}x#{window_height}')" = 40x15 ]
tui_check "compact gauges at 40x15" tui_wait '^dc [-0-9.]+ pf ' 10
tui_check "status rule spans the 40 columns" tui_wait_rule 40
tui_check "footer compacted at 40x15" tui_wait '\^G Help.*\^Q Quit' 10
tui_check "15 rows used" [ "$(tui_screen | wc -l)" -eq 15 ]
tui_resize 30 10
tui_check "still drawing at 30x10 (status rule 30 wide)" tui_wait_rule 30
tui_resize 80 24
tui_check "full gauges again at 80x24" tui_wait '^Prefill \[' 10
tui_check "generation was running during the resizes" [ "$gen_before" -ge 1 ]
tui_check "the reply completes after resizing" \
    tui_wait '(end of reply|length limit \(/max\)): [0-9]+ tokens' 120
tui_check "status rule spans 80 columns after resizing" tui_wait_rule 80
tui_check "app still running" tui_app_pid > /dev/null

# --- demo mode: scripted prompts cycle, large gauges ------------------------
tui_type "/max 6"; tui_keys Enter
tui_wait 'max = 6' 10
tui_keys F5
# demo mode shows in the title ("demo" when idle between prompts) and in
# the input hint; the status line's note is replaced by the first reply's
# summary, which on the fast kernels comes within a few milliseconds
tui_check "F5 starts demo mode" tui_wait 'demo mode: (scripted prompts|Esc or F5 leaves it)| demo *$' 10
tui_check "demo sends its first scripted prompt" tui_wait '^  Explain what a petrel is in two sentences\.$' 30
tui_check "large digits for the rates" tui_wait '^Prefill +[█▀▄ ]*█' 120
tui_check "demo moves on to the next prompt by itself" tui_wait '^  Write a haiku about the sea at night\.$' 120
tui_check "status rule spans 80 columns in demo mode" tui_wait_rule 80
tui_keys Escape
tui_check "Esc leaves demo mode (title back to idle)" tui_wait ' idle *$' 120
sleep 3
tui_check "no more scripted prompts after leaving" \
    tui_not grep -q 'List three practical uses of a paperclip' <<< "$(tui_screen)"

# --- quit ------------------------------------------------------------------
tui_keys F10
tui_check "F10 quits" tui_wait_dead 60
st=$(tui_exit_status)
tui_check "exit status 0 (got $st)" [ "$st" = 0 ]
tui_check "alternate screen left" [ "$(tui_fmt '#{alternate_on}')" = 0 ]

tui_done
