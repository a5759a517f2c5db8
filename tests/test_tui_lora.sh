#!/usr/bin/env bash
# test_tui_lora.sh — /lora in the full-screen app, with the tiny seeded
# llama (tests/data/tiny_llama.gguf) and its adapters (tests/data/lora/,
# made by tools/gen_lora_fixture.py), greedy (/temp 0), one thread:
#   - a reply without an adapter; /lora tiny_llama_a: the status and the
#     title show it, and /retry (the same prompt) gives another reply;
#   - /lora alone lists it; /lora off: /retry gives the first reply again
#     (the KV cache of the adapted turn is not reused);
#   - an adapter for another base (tiny_llama_a_layer9: a layer 9 the
#     model lacks) is a one-line error and the chat still answers;
#   - a loaded adapter by name with a new scale, two stacked, one taken off
#     by name, /stats reports the active one;
#   - the picker (F7): both listed, Space turns one on, - lowers a scale;
#   - a model switch to tiny_qwen2 drops the adapters (loaded for the
#     llama, active or not) with a one-line error;
#   - --lora PATH:SCALE at start makes it active on the first model.
# No SmolLM2 needed. No timed assertions: every wait is for a screen state.
. "$(dirname "$0")/tui_lib.sh"
DATA=${PETREL_TEST_DATA:?PETREL_TEST_DATA not set}
DATA=$(cd "$DATA" && pwd)
# tui_setup wants a chat model to link into the data directory: the tiny one
PETREL_SMOLLM2=$DATA/tiny_llama.gguf
tui_setup
LORA=$DATA/lora

# a turn is over: its status line, then idle
reply_done() { tui_wait '(end of reply|length limit \(/max\)): [0-9]+ tokens' 60 && tui_wait ' idle *$' 10; }
send() { tui_type "$1"; tui_keys Enter; }

tui_start 120 40 "'$PETREL' -m '$DATA/tiny_llama.gguf' -t 1 -n 12"
tui_check "the tiny model opens" tui_wait_ready 60
send "/temp 0"
tui_wait 'temp = 0' 10
send "hello there"
tui_check "a reply without adapter" reply_done
R1=$(tui_last_reply)
tui_check "... it has text" test -n "$(tr -d ' \n' <<< "$R1")"

send "/lora $LORA/tiny_llama_a"
tui_check "/lora PATH: the status shows the active set" \
    tui_wait 'lora tiny_llama_a×1\.0 \(from the next reply\)' 30
tui_check "... and so does the title" tui_wait '^ petrel .*· lora tiny_llama_a×1\.0' 10
send "/retry"
tui_check "a reply with the adapter" reply_done
R2=$(tui_last_reply)
tui_check "... differs from the one without" test "$R1" != "$R2"

send "/lora"
tui_check "/lora lists the loaded adapters" \
    tui_wait 'tiny_llama_a +1\.0 +rank 4, [0-9.]+[KM]' 10
send "/lora off"
tui_check "/lora off: the status says so" tui_wait 'lora off \(from the next reply\)' 10
tui_check "... and the title has no adapter" tui_wait_gone '^ petrel .*· lora ' 10
send "/retry"
tui_check "a reply after /lora off" reply_done
R3=$(tui_last_reply)
tui_check "... equals the first reply" test "$R1" = "$R3"

send "/lora $LORA/tiny_llama_a_layer9"
tui_check "an adapter for another base: a one-line error" \
    tui_wait '── lora tiny_llama_a_layer9: the adapter is for another base model: it adapts .blk\.9\.' 30
send "/retry"
tui_check "... and the chat still answers" reply_done
tui_check "... the same reply as without adapter" test "$(tui_last_reply)" = "$R1"
send "/lora $LORA/missing-adapter 0.5"
tui_check "a missing adapter: a one-line error" tui_wait '── lora missing-adapter: ' 30
send "/lora tiny_llama_a 2"
tui_check "a loaded adapter by its name, with a scale" tui_wait 'lora tiny_llama_a×2\.0 \(from' 10
send "/lora $LORA/tiny_llama_b 0.5"
tui_check "two adapters stacked" tui_wait 'lora tiny_llama_a×2\.0\+tiny_llama_b×0\.5 \(from' 30
send "/lora $LORA/tiny_llama_b/adapter_config.json 0.75"
tui_check "a PEFT folder's file is the folder's adapter" \
    tui_wait 'lora tiny_llama_a×2\.0\+tiny_llama_b×0\.75 \(from' 30
send "/lora tiny_llama_b 0.5"
tui_wait 'lora tiny_llama_a×2\.0\+tiny_llama_b×0\.5 \(from' 10
send "/lora"
tui_check "... loaded once" tui_wait 'LoRA adapters \(2 loaded\):' 10
send "/lora -tiny_llama_a"
tui_check "/lora -NAME takes one off" tui_wait 'lora tiny_llama_b×0\.5 \(from' 10
send "/retry"
tui_check "a reply with the other adapter" reply_done
tui_check "... differs from the one without" test "$(tui_last_reply)" != "$R1"
send "/stats"
tui_check "/stats reports the active adapter" tui_wait_flat 'LoRA: 1 active, [0-9.]+[KM] of factors' 10
send "/lora -nothing"
tui_check "/lora -NAME of no adapter: one line" tui_wait '── lora: no adapter nothing is loaded' 10

# the picker (F7): a is off at 2.0, b on at 0.5
tui_keys F7
tui_check "F7 opens the adapter picker" tui_wait 'LoRA adapters \(Esc closes\)' 10
tui_check "... listing both with their scales" \
    tui_wait_flat '\[off\] tiny_llama_a +×2\.0 +rank 4 .*\[on\]  tiny_llama_b +×0\.5 +rank 8' 10
tui_keys Space
tui_check "Space turns the selected one on" tui_wait 'lora tiny_llama_a×2\.0\+tiny_llama_b×0\.5 \(from' 10
tui_check "... the picker shows it" tui_wait '\[on\]  tiny_llama_a +×2\.0 ' 10
tui_keys Down
tui_type "-"
tui_check "- lowers the selected one's scale" tui_wait 'lora tiny_llama_a×2\.0\+tiny_llama_b×0\.4 \(from' 10
tui_keys Escape
tui_check "Esc closes the picker" tui_wait_gone 'LoRA adapters \(Esc closes\)' 10
send "/retry"
tui_check "... and the chat answers with both" reply_done

send "/model $DATA/tiny_qwen2.gguf"
tui_check "a model switch drops the adapters that do not fit, in one line" \
    tui_wait '── lora dropped: tiny_llama_a, tiny_llama_b \(the adapter is for another base model' 60
tui_check "... and the title shows none" tui_wait_gone '· lora ' 10
send "hi"
tui_check "... the new model answers" reply_done
tui_keys F10
tui_check "F10 quits" tui_wait_dead 30
tui_check "... with status 0" test "$(tui_exit_status)" = 0

tui_start 120 40 "'$PETREL' -m '$DATA/tiny_llama.gguf' -t 1 -n 12 --lora '$LORA/tiny_llama_a:0.5'"
tui_check "--lora PATH:SCALE is active from the start" tui_wait '^ petrel .*· lora tiny_llama_a×0\.5' 60
tui_check "... and the status keeps the load's line" tui_wait_ready 10
tui_keys F10
tui_check "F10 quits" tui_wait_dead 30

tui_done
