#!/usr/bin/env bash
# test_tui_models.sh — switching models in the full-screen app. The data
# directory holds the SmolLM2 GGUF under two names; the Models screen
# (F2 / ^O / /models) lists both with their architecture and quant,
# opening the other one loads it (progress in the title and status) while
# the app stays responsive, and /model NAME switches back, also in the
# middle of a reply. (Downloads, quantize and delete on that screen:
# test_tui_models_pull.sh.)
. "$(dirname "$0")/tui_lib.sh"
tui_setup
ln -s "$MODEL" "$TUI_DATA/petrel/models/Petrel-Second.Q4_1.gguf"

tui_start 90 26 "$PETREL"
tui_check "app ready" tui_wait_ready 120
tui_check "title names the open model's architecture and quant" \
    tui_wait '^ petrel .* llama Q4_1 ' 10

# --- the Models screen -----------------------------------------------------------
tui_keys F2
tui_check "F2 opens the Models screen" tui_wait '^ Models  free RAM' 10
tui_check "it lists both files" tui_wait '^  Petrel-Second\.Q4_1\.gguf ' 5
tui_check "the open model is marked" tui_wait '^\* SmolLM2-135M-Instruct\.Q4_1\.gguf .* open ' 10
tui_check "probed metadata: architecture and quant for both" \
    tui_wait '^  Petrel-Second\.Q4_1\.gguf +llama +Q4_1 ' 60
tui_wait '^\* SmolLM2-135M-Instruct\.Q4_1\.gguf +llama +Q4_1 ' 60
tui_keys Escape
tui_check "Esc closes the screen" tui_wait_gone '^ Models  free RAM' 5
tui_keys C-o
tui_check "^O opens it too" tui_wait '^ Models  free RAM' 10
# the open model is selected; the row above it is the other file
tui_wait '^ SmolLM2-135M-Instruct\.Q4_1\.gguf  in /' 10
tui_keys Up
tui_check "Up selects the other file (the details name it)" tui_wait '^ Petrel-Second\.Q4_1\.gguf  in /' 10
tui_keys Enter
tui_check "Enter loads the selected model" tui_wait 'loaded Petrel-Second\.Q4_1\.gguf in' 60
tui_check "title shows the new model idle" tui_wait ' idle *$' 10
tui_type "/max 12"; tui_keys Enter
tui_wait 'max = 12' 10
tui_type "Say hello."; tui_keys Enter
tui_check "the new model replies" tui_wait '(end of reply|length limit \(/max\)): [0-9]+ tokens' 120
tui_check "the reply has text" [ -n "$(tui_last_reply | tr -d ' \n')" ]

# --- /model NAME during a reply -----------------------------------------------------
tui_type "/max 300"; tui_keys Enter
tui_wait 'max = 300' 10
tui_type "Write a long poem about mountains."; tui_keys Enter
tui_poll 90 0.1 tui_reply_words 2
tui_type "/model SmolLM2"; tui_keys Enter
tui_check "switching during a reply stops it and loads the model" \
    tui_wait 'loaded SmolLM2-135M-Instruct\.Q4_1\.gguf in' 60
# the reply may fill more than the screen: look from the top of the transcript
tui_keys Home
tui_check "the interrupted reply is marked stopped" tui_wait '^petrel \[stopped\]$' 10
tui_keys End
tui_type "/models"; tui_keys Enter
tui_check "/models opens the screen: both listed, the open one marked" \
    tui_wait '^\* SmolLM2-135M-Instruct\.Q4_1\.gguf +llama +Q4_1 +[0-9.]+M +open ' 10
tui_wait '^  Petrel-Second\.Q4_1\.gguf +llama ' 10
tui_keys Escape
tui_wait_gone '^ Models  free RAM' 10
tui_type "/model nosuch"; tui_keys Enter
tui_check "an unknown model name is an error, not a crash" tui_wait 'no model "nosuch"' 10

# a file that is not a model: the load fails cleanly and the app goes on
printf 'not a gguf file' > "$TUI_DATA/petrel/models/Broken.gguf"
tui_type "/model Broken"; tui_keys Enter
tui_check "a broken model file is reported" tui_wait 'cannot open .*Broken\.gguf' 60
tui_check "... and the app keeps running" tui_app_pid > /dev/null
tui_keys F2
tui_check "the Models screen opens after a failed load" tui_wait '^ Models  free RAM' 10
tui_check "the broken file is listed as unreadable" tui_wait '^  Broken\.gguf +unreadable' 30
# the files sort Broken, Petrel-Second, SmolLM2: the second local row
tui_keys Home Down
tui_wait '^ Petrel-Second\.Q4_1\.gguf  in /' 10
tui_keys Enter
tui_check "loading a good model after a failure works" tui_wait 'loaded Petrel-Second\.Q4_1\.gguf in' 60

tui_keys F10
tui_check "quit" tui_wait_dead 60
tui_done
