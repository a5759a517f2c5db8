#!/usr/bin/env bash
# test_tui_plain.sh — `petrel chat --plain`, the line-oriented chat: a
# greedy multi-turn conversation equals transformers' replies for the same
# conversation read from scratch (so reusing the KV cache between turns
# changes nothing; tests/data/tui, made by tools/gen_tui_fixture.py); the
# cache is really reused; slash commands and settings; chats saved as JSON
# and loaded back; Ctrl-C stops a reply in a terminal; usage errors.
. "$(dirname "$0")/tui_lib.sh"
TUI_CPU=ref   # compared with transformers' greedy text
tui_setup
DATA=${PETREL_TEST_DATA:?PETREL_TEST_DATA not set}/tui
export XDG_DATA_HOME=$TUI_DATA LANG=C.UTF-8
ln -s "$MODEL" "$TUI_DATA/petrel/models/Other-Name.gguf"
out=$TUI_TMP/out
err=$TUI_TMP/err

# --- multi-turn greedy chat against the reference -------------------------------
{ for k in 0 1 2; do cat "$DATA/turn_$k.user"; echo; done; } > "$TUI_TMP/in"
{ for k in 0 1 2; do cat "$DATA/turn_$k.expected"; echo; done; } > "$TUI_TMP/want"
"$PETREL" chat --plain --temp 0 -n 40 --stats < "$TUI_TMP/in" > "$out" 2> "$err"
st=$?
tui_check "three turns, exit 0 (got $st)" [ "$st" = 0 ]
if cmp -s "$out" "$TUI_TMP/want"; then tui_ok "greedy replies equal transformers' for the whole conversation"
else tui_bad "replies differ:"; diff "$TUI_TMP/want" "$out" | sed 's/^/#  /'; fi
cached=$(sed -nE 's/^\[prompt [0-9]+ tok \(([0-9]+) cached\).*/\1/p' "$err" | tr '\n' ' ')
echo "# cached prompt tokens per turn: $cached"
read -r -a turns <<< "$cached"
set -- "${turns[@]}"
tui_check "turn 1 prefills everything" [ "${1:-x}" = 0 ]
tui_check "turns 2 and 3 reuse the KV cache" tui_true "${2:-0} > 0 && ${3:-0} > ${2:-0}"
tui_check "stats lines report speeds" grep -qE 'prefill [0-9.]+ t/s, decode [0-9.]+ t/s' "$err"

# /retry answers the last question again (greedy: the same words)
{ cat "$DATA/turn_0.user"; echo; echo /retry; } |
    "$PETREL" chat --plain --temp 0 -n 40 > "$out" 2> "$err"
{ cat "$DATA/turn_0.expected"; echo; cat "$DATA/turn_0.expected"; echo; } > "$TUI_TMP/want"
tui_check "/retry gives the greedy reply again" cmp -s "$out" "$TUI_TMP/want"

# a small context window: old turns are left out, the chat goes on
# (six exchanges of at least ~20 + a few tokens cannot all fit in 128)
for i in 1 2 3 4 5 6; do echo "Write a long paragraph about the moon, fact number $i."; done |
    "$PETREL" chat --plain -c 128 -n 24 > "$out" 2> "$err"
st=$?
tui_check "six turns in a 128-token context succeed (exit $st)" [ "$st" = 0 ]
tui_check "... leaving out the oldest messages" grep -q 'oldest messages were left out' "$err"
tui_check "... with six replies" [ "$(grep -c . "$out")" -ge 6 ]

# --- commands, settings, save and load ------------------------------------------------
cat > "$TUI_TMP/in" <<'IN'
/temp 0.5
/temp hot
/top_k 7
/set max 6
/bogus
/system Answer in one word.
/system
Hi\
there
/save first chat
/chats
/reset
/load first chat
/set
/models
/model Other-Name
//slash at the start
/stats
/quit
this line is never read
IN
"$PETREL" chat --plain --temp 0 < "$TUI_TMP/in" > "$out" 2> "$err"
st=$?
tui_check "command session exits 0 (got $st)" [ "$st" = 0 ]
tui_check "/temp sets" grep -q '^temp = 0.5$' "$out"
tui_check "/temp hot is refused" grep -q 'temp: not a valid number: "hot"' "$err"
tui_check "/top_k sets" grep -q '^top_k = 7$' "$out"
tui_check "/set NAME VALUE sets" grep -q '^max = 6$' "$out"
tui_check "unknown command reported" grep -q 'unknown command /bogus' "$err"
tui_check "/system shows the prompt" grep -q '^system prompt: Answer in one word\.$' "$out"
f=$TUI_DATA/petrel/chats/first\ chat.json
tui_check "/save wrote the JSON file" grep -q "^saved $f\$" "$out"
tui_check "saved JSON names the format" grep -q '"format":[[:space:]]*"petrel-chat"' "$f"
tui_check "saved JSON keeps the multi-line message" grep -q '"content":[[:space:]]*"Hi\\nthere"' "$f"
tui_check "saved JSON keeps the system prompt" grep -q '"system":[[:space:]]*"Answer in one word."' "$f"
tui_check "saved JSON keeps the settings" grep -q '"top_k":[[:space:]]*7' "$f"
tui_check "/chats lists it" grep -qx 'first chat' "$out"
tui_check "/load reads it back (2 messages)" grep -q "^loaded $f (2 messages)\$" "$out"
tui_check "/set lists the loaded settings" grep -q '^top_k = 7$' <<< "$(sed -n '/^loaded /,$p' "$out")"
tui_check "/models lists both files" grep -qE '^ *1 Other-Name\.gguf +[0-9.]+M' "$out"
tui_check "/model switches" grep -q "^loaded .*Other-Name.gguf\$" "$out"
tui_check "//text is sent as a message (a reply follows)" \
    [ "$(sed -n '/Other-Name.gguf$/,/^\[prompt/p' "$out" | wc -l)" -ge 3 ]
tui_check "/stats after a reply" grep -qE '^\[prompt [0-9]+ tok .*generated [1-6] tok' "$out"
tui_check "/quit stops reading" tui_not grep -q 'never read' "$out"

# a saved chat opens with --load and goes on from there
printf 'Thanks.\n/stats\n' | "$PETREL" chat --plain --load "first chat" > "$out" 2> "$err"
tui_check "--load continues a saved chat" grep -qE '^\[prompt [0-9]+ tok' "$out"
printf '{"messages": [{"role": "wizard", "content": "x"}]}' > "$TUI_DATA/petrel/chats/bad.json"
"$PETREL" chat --plain --load bad < /dev/null > "$out" 2> "$err"
st=$?
tui_check "a bad chat file is refused (exit $st)" [ "$st" = 1 ]
tui_check "... naming the problem" grep -q 'unknown role "wizard"' "$err"

# --- usage errors -----------------------------------------------------------------------
"$PETREL" chat --plain --bogus < /dev/null > "$out" 2> "$err"
st=$?
tui_check "unknown option: exit 2 (got $st)" [ "$st" = 2 ]
"$PETREL" chat --plain -n zero < /dev/null > "$out" 2> "$err"
st=$?
tui_check "bad -n: exit 2 (got $st)" [ "$st" = 2 ]
"$PETREL" chat --plain -m "$TUI_TMP/missing.gguf" < /dev/null > "$out" 2> "$err"
st=$?
tui_check "missing model: exit 1 (got $st)" [ "$st" = 1 ]
tui_check "... with a message" grep -q '^petrel: cannot open' "$err"

# --- Ctrl-C in a terminal: stop the reply, then quit at the prompt -------------------
# (the pane's sh traps SIGINT so that it survives to print petrel's status;
# petrel itself gets the default disposition, as from an interactive shell)
tui_start 80 24 "trap : INT; $PETREL chat --plain -n 400; echo exit=\$?; sleep 600"
tui_check "prompt shown on a terminal" tui_wait '^> ?$' 120
tui_type "Write a long essay about the history of ships."; tui_keys Enter
reply_words() { tui_screen | sed -n '/^> Write/,$p' | tail -n +2 | wc -w; }
end=$(tui_deadline 90)
until [ "$(reply_words)" -ge 4 ] || tui_true "$(tui_now) > $end"; do sleep 0.1; done
tui_check "the reply streams on the terminal" [ "$(reply_words)" -ge 4 ]
tui_keys C-c
tui_check "Ctrl-C stops the reply" tui_wait_flat '\^C \[stopped\]' 20
tui_check "... and prompts again" tui_wait '^> ?$' 10
tui_keys C-c
tui_check "Ctrl-C at the prompt quits (130)" tui_wait 'exit=130$' 10
tui_start 80 24 "$PETREL chat --plain; echo exit=\$?; sleep 600"
tui_wait '^> ?$' 120
tui_keys C-d
tui_check "Ctrl-D quits (0)" tui_wait 'exit=0$' 10

tui_done
