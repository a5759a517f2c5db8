#!/usr/bin/env bash
# test_tui_studio.sh — the image studio (issue 13) driven in tmux, on the
# character-art path (tmux has no sixel here: PETREL_GRAPHICS=symbols) and
# without pictures (none), with the bundled demo image model:
#   F6 opens the studio; a small picture (64x64, few steps) is drawn and
#   shown as character art; a long job (512x512) shows its progress line,
#   Esc cancels it mid-way (nothing kept) and Ctrl-C too; the gallery
#   navigates, saves a PNG (read back by tests/png_check.py, A1111
#   parameters inside), re-rolls with a new seed and copies settings back;
#   /imagine puts a picture into the chat transcript; 40x15 works; a resize
#   during a job keeps the layout and the job; quitting during a job
#   restores the terminal and leaves no PNG behind; PETREL_GRAPHICS=none
#   shows a placeholder with the size.
# Every wait is for a screen state, with a deadline; no duration is asserted.
# PETREL_SCREENS=DIR also writes screen captures (-e and plain) there.
. "$(dirname "$0")/tui_lib.sh"
tui_setup
# Rows of character art: rows with 4 or more block, box-drawing or braille
# characters (what libchafa draws with; dark parts of a picture are
# spaces), the status rule (all ─) and the lone spinner not counted
IMAGES=$TUI_DATA/petrel/images

capture() {   # capture NAME: keep the screen (escapes and plain) when asked
    [ -n "${PETREL_SCREENS:-}" ] || return 0
    mkdir -p "$PETREL_SCREENS"
    tui_screen_escapes > "$PETREL_SCREENS/$1.txt"
    tui_screen > "$PETREL_SCREENS/$1.plain.txt"
}
art_rows() {
    tui_screen | python3 -c '
import re, sys
art = re.compile("[\u2580-\u259f\u2501-\u257f\u2800-\u28ff]")
print(sum(1 for l in sys.stdin.read().splitlines() if len(art.findall(l.replace("\u2500", " "))) >= 4))'
}
has_art_rows() { [ "$(art_rows)" -ge "$1" ]; }
# Fields in Tab order: Prompt Negative Steps CFG Seed Size Sampler
# Gallery; the focused one is marked with ▸ (wide layout). tab N moves
# the focus N fields on; focus_prompt tabs until the prompt has it.
tab() { local i; for ((i = 0; i < $1; i++)); do tui_keys Tab; done; }
plus() { local i; for ((i = 0; i < $1; i++)); do tui_type "+"; done; }
minus() { local i; for ((i = 0; i < $1; i++)); do tui_type "-"; done; }
focus_prompt() {
    local i
    for ((i = 0; i < 9; i++)); do
        tui_poll 2 0.05 tui_screen_has '^▸Prompt' && return 0
        tui_keys Tab
    done
    return 1
}
# form STEPS SIDE: from the prompt, set steps and a square size (notches
# of 64 from "auto"), and come back to the prompt
form() {
    tab 2; minus 200; plus "$1"
    tab 3; minus 20; plus $(($2 / 64))
    tab 3
    tui_wait "^(▸| )Steps +$1( |\$)" 5 && tui_wait "^(▸| )Size +$2x$2" 5 && focus_prompt
}
gallery_is() { tui_screen_has "Gallery ◂ $1/$2 ▸"; }

# --- the studio at 80x24 ---------------------------------------------------------
tui_start 80 24 "$PETREL" PETREL_GRAPHICS=symbols
tui_check "app ready" tui_wait_ready 120
tui_check "footer lists the studio key" tui_screen_has 'F6(/\^X)? Studio'
tui_keys F6
tui_check "F6 opens the studio" tui_wait '^ petrel studio demo-sd' 10
tui_check "the form's fields" tui_wait '^ Sampler +auto' 5
s=$(tui_screen)
for f in Prompt Negative Steps CFG Seed Size Sampler Gallery; do
    tui_check "field $f shown" grep -q "$f" <<< "$s"
done
tui_keys Enter
tui_check "an empty prompt is refused in one line" tui_wait 'the prompt is empty' 5
tui_check "the prompt has the focus" focus_prompt
tui_type "a red square"
tui_check "steps 4 and size 64x64 set by keys" form 4 64
tui_keys Enter
tui_check "the picture is drawn" tui_wait 'picture 1 done in' 120
tui_check "the picture shows as character art (8+ rows)" tui_poll 10 0.1 has_art_rows 8
tui_check "the gallery holds it with its settings" \
    tui_wait 'seed 42, 4 steps, cfg [0-9.]+, 64x64, .*: a red square' 5
capture studio-80x24

# --- progress and cancel: a long job (512x512, 40 steps) --------------------------
tui_check "steps 40, size 512x512" form 40 512
tui_keys Enter
tui_check "progress: step, it/s and ETA" tui_wait 'step [0-9]+/40 +[0-9.]+ (it/s|s/it) +ETA [0-9]+:[0-9]{2}' 120
tui_check "progress bar drawn" tui_screen_has '^ \[█*  *\]'
tui_check "the preview forms (character art while running)" tui_poll 10 0.1 has_art_rows 8
capture studio-progress-80x24
tui_keys Escape
tui_check "Esc stops the job mid-way, nothing kept" tui_wait 'stopped at step [0-9]+ of 40: nothing kept' 60
tui_check "the gallery still has one picture" gallery_is 1 1
tui_check "the app is still running" tui_app_pid
tui_keys Enter
tui_wait 'step [0-9]+/40' 120
tui_keys C-c
tui_check "Ctrl-C stops a job too" tui_wait 'stopped at step [0-9]+ of 40: nothing kept' 60
tui_check "still one picture" gallery_is 1 1

# --- gallery: a second picture, navigate, view, save, re-roll, copy ------------------
tab 2; tui_keys Right; tui_keys Left; tui_keys Left   # Left/Right change numbers too
tui_check "Left/Right step a number" tui_wait '^(▸| )Steps +39' 5
tab 6
tui_check "size back to 64x64" form 4 64
tui_keys C-u; tui_type "a blue circle"
tab 4; tui_type "++"; tab 4   # seed 44
tui_keys Enter
tui_check "a second picture" tui_wait 'picture 2 done in' 240
tui_check "gallery shows 2/2" tui_wait 'Gallery ◂ 2/2 ▸' 5
tui_keys PPage
tui_check "PgUp goes to the earlier picture" tui_wait 'Gallery ◂ 1/2 ▸' 5
tui_check "with its own settings" tui_wait 'seed 42, 4 steps.*a red square' 5
tui_keys NPage
tui_check "PgDn back to the later one" tui_wait 'Gallery ◂ 2/2 ▸' 5
tui_keys BTab                 # prompt -> gallery
tui_check "the gallery takes the focus, its keys are listed" tui_wait 'v view +s save +r re-roll +c copy' 5
tui_keys Left
tui_check "Left on the gallery selects the earlier picture" tui_wait 'Gallery ◂ 1/2 ▸' 5
tui_keys v
tui_check "v views it large: the form gives way" tui_wait_gone '^ Sampler' 5
tui_check "the picture takes the rows (20+ rows of art)" tui_poll 10 0.1 has_art_rows 20
capture studio-large-80x24
tui_keys v
tui_keys s
tui_check "s saves a PNG" tui_wait 'saved .*/images/petrel-1-42\.png' 10
png=$IMAGES/petrel-1-42.png
info=$(python3 "$PETREL_SOURCE_DIR/tests/png_check.py" info "$png" 2>&1)
tui_check "the PNG is valid, 64x64 ($(head -1 <<< "$info" | cut -c1-20))" grep -q '^64 64 ' <<< "$info"
tui_check "the PNG carries the A1111 parameters" \
    grep -q '^Steps: 4, Sampler: .*, Seed: 42, Size: 64x64, Model: demo-sd-q8_0' <<< "$info"
tui_check "and the prompt" grep -qx 'a red square' <<< "$info"
tui_keys c
tui_check "c copies its settings to the form" tui_wait 'settings of picture 1 copied' 5
tui_check "the form has its prompt and seed" tui_wait '^  a red square' 5
tui_check "seed 42 in the form" tui_screen_has '^ Seed +42'
tui_keys r
tui_check "r re-rolls with a new seed" tui_wait 'picture 3 done in' 240
seed3=$(tui_screen | sed -nE 's/.*seed ([0-9]+), 4 steps.*a red square.*/\1/p' | head -1)
tui_check "the re-roll's seed differs (${seed3:-none})" [ -n "$seed3" ] && [ "$seed3" != 42 ]

# --- /imagine in the chat ----------------------------------------------------------
tui_keys F6
tui_check "F6 goes back to the chat" tui_wait '^ petrel Smollm2' 10
tui_check "no studio art left on the chat screen" tui_poll 10 0.1 tui_not has_art_rows 1
tui_type "/imagine a green triangle"; tui_keys Enter
tui_check "the picture message arrives in the transcript" tui_wait '^picture$' 120
tui_check "its caption" tui_wait '^  a green triangle$' 5
tui_check "its picture rows (character art inline)" tui_poll 10 0.1 has_art_rows 5
capture chat-imagine-80x24
tui_type "hello"; tui_keys Enter
tui_check "a chat turn after the picture" tui_wait '(end of reply|length limit)' 120
tui_keys F1
tui_check "help lists /imagine and the studio keys" tui_wait 'Image studio \(F6 or \^X\)' 5
tui_keys Escape

# --- resize during a job, then quit during a job --------------------------------------
tui_keys F6
tui_wait '^ petrel studio' 10
focus_prompt
form 40 512
tui_keys Enter
tui_check "a long job runs" tui_wait 'step [0-9]+/40' 120
tui_resize 40 15
tui_check "40x15 while drawing: stacked fields" tui_wait '^Steps 40 CFG' 10
tui_check "the progress line at 40x15" tui_wait 'step [0-9]+/40' 10
tui_check "status rule spans 40 columns" tui_wait_rule 40
tui_check "the job goes on at 40x15" tui_wait 'step [0-9]+/40' 10
capture studio-progress-40x15
tui_resize 80 24
tui_check "back to 80x24: the wide form" tui_wait '^ Sampler ' 10
tui_check "status rule spans 80 columns" tui_wait_rule 80
tui_keys F10
tui_check "F10 during a job quits" tui_wait_dead 60
tui_check "exit status 0 ($(tui_exit_status))" [ "$(tui_exit_status)" = 0 ]
tui_check "alternate screen left" [ "$(tui_fmt '#{alternate_on}')" = 0 ]
tui_check "no partial or unsaved PNG left (only the one saved)" \
    [ "$(ls -A "$IMAGES" | tr '\n' ' ')" = "petrel-1-42.png " ]

# --- 40x15 from the start ------------------------------------------------------------
tui_start 40 15 "$PETREL" PETREL_GRAPHICS=symbols
tui_wait 'loaded SmolLM2' 120 && tui_wait ' idle *$' 10
tui_keys C-x
tui_check "^X opens the studio at 40x15" tui_wait '^ petrel studio' 10
tui_type "a yellow square"
tab 2; minus 200; plus 4; tab 3; minus 20; plus 1; tab 3
tui_check "stacked fields at 40x15" tui_wait '^Steps 4 CFG' 5
tui_check "size 64x64 at 40x15" tui_wait 'Size 64x64' 5
tui_keys Enter
tui_check "drawn at 40x15" tui_wait 'picture 1 done' 120
tui_check "a smaller picture (4+ art rows)" tui_poll 10 0.1 has_art_rows 4
tui_check "15 rows used" [ "$(tui_screen | wc -l)" -eq 15 ]
tui_check "the footer fits" tui_screen_has '^Enter Draw Esc Stop \^X Chat \^Q Quit'
capture studio-40x15
tui_keys C-x
tui_type "/imagine a yellow square"; tui_keys Enter
tui_check "/imagine at 40x15" tui_wait '^picture$' 120
tui_check "inline art at 40x15" tui_poll 10 0.1 has_art_rows 3
capture chat-imagine-40x15
tui_keys C-q
tui_check "^Q quits" tui_wait_dead 60

# --- without pictures: a placeholder --------------------------------------------------
tui_start 80 24 "$PETREL" PETREL_GRAPHICS=none
tui_wait_ready 120
tui_type "/imagine a red square"; tui_keys Enter
tui_check "chat placeholder with the size" tui_wait '^  \[picture 256x256\]' 120
tui_check "no character art" tui_not has_art_rows 1
tui_keys F6
tui_check "studio placeholder with the size" tui_wait '\[picture 1, 256x256\]' 10
capture studio-none-80x24
tui_keys F10
tui_wait_dead 60

# --- a bad PETREL_GRAPHICS is one line, not a crash -------------------------------------
tui_start 80 24 "$PETREL" PETREL_GRAPHICS=bogus
tui_check "bad PETREL_GRAPHICS: a note naming the choices" \
    tui_wait_flat "PETREL_GRAPHICS wants auto, sixel, kitty, iterm2, symbols or none, +not +'bogus'" 60
tui_keys F10
tui_wait_dead 60
tui_start 80 24 "$PETREL --graphics bogus"
tui_check "bad --graphics: one-line error, exit 2" tui_wait "^\[exited 2\]" 30
tui_check "the error names the choices" tui_screen_has "graphics wants auto, sixel, kitty, iterm2, symbols or none"

tui_done
