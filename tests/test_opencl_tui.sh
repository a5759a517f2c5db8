#!/usr/bin/env bash
# test_opencl_tui.sh — `petrel --device` in the full-screen app (tmux):
#   - --device cpu: the title bar says CPU, at 80 and at 40 columns, and
#     no OpenCL note appears;
#   - --device opencl on PoCL: the title bar names the device as
#     `petrel info --devices` does (whole on a wide window, cut with an
#     ellipsis at 80 columns, just "OpenCL" at 40), no fallback note, and
#     a reply comes;
#   - --device opencl with no platform (OCL_ICD_VENDORS naming an empty
#     folder): one note in the chat saying why it runs on the CPU, the
#     title says CPU, a reply comes, loading the model again adds no second
#     note;
#   - each time the app quits with ^Q, status 0 (under ASan: no error, no
#     leak of petrel's);
#   - a bad --device value: the same one line on stderr and status 2 as
#     `petrel run --device bogus`; --help lists --device.
# No OpenCL device is a failure unless PETREL_NO_OPENCL=1 (then the PoCL
# part is left out). No timed assertions: every wait is for a screen state.
. "$(dirname "$0")/tui_lib.sh"
tui_setup
# The program cache ($XDG_CACHE_HOME/petrel/opencl), shared with the other
# OpenCL tests in the build tree: PoCL compiles the kernels once
CACHE=${PETREL_OPENCL_CACHE:-$TUI_TMP/cache}/xdg
mkdir -p "$TUI_TMP/no-icd"
ELL=…   # the title's ellipsis (the panes run in C.UTF-8)

send() { tui_type "$1"; tui_keys Enter; }
reply_done() { tui_wait '(end of reply|length limit \(/max\)): [0-9]+ tokens' 60 && tui_wait ' idle *$' 10; }
title() { tui_screen | head -1; }
# title_has TEXT: the title row holds TEXT (a fixed string)
title_has() { title | grep -qF -- "$1"; }
# title_ends TEXT: the title row ends with TEXT then the state ("  idle ")
title_ends() { title | grep -qE -- "$(printf '%s' "$1" | sed 's/[][\.*^$()+?{}|]/\\&/g')  idle *\$"; }
notes() { tui_screen | tr -d '\n' | grep -o 'OpenCL unavailable' | wc -l; }

# quit_ok WHAT: ^Q quits the app with status 0 (under ASan: no leak, no error)
quit_ok() {
    tui_keys C-q
    tui_check "$1: the app quits" tui_wait_dead 30
    tui_check "... with status 0 (got $(tui_exit_status))" [ "$(tui_exit_status)" = 0 ]
}

# --- usage -------------------------------------------------------------------------------
"$PETREL" --device bogus > "$TUI_TMP/out" 2> "$TUI_TMP/err"
st=$?
"$PETREL" run --device bogus > /dev/null 2> "$TUI_TMP/err_run"
tui_check "--device bogus: status 2 (got $st)" [ "$st" = 2 ]
tui_check "... one line, as run says it: $(head -c 200 "$TUI_TMP/err")" \
    eval '[ "$(wc -l < "$TUI_TMP/err")" = 1 ] && grep -q "^petrel: --device wants" "$TUI_TMP/err" &&
          cmp -s "$TUI_TMP/err" "$TUI_TMP/err_run" && [ ! -s "$TUI_TMP/out" ]'
"$PETREL" --device > /dev/null 2> "$TUI_TMP/err"
st=$?
tui_check "--device without a value: status 2, one line (got $st)" \
    eval '[ "$st" = 2 ] && [ "$(wc -l < "$TUI_TMP/err")" = 1 ]'
tui_check "--help lists --device" eval '"$PETREL" --help | grep -q -- "--device cpu|opencl\[:N\]"'

# --- --device cpu ----------------------------------------------------------------------------
tui_start 80 24 "'$PETREL' --device cpu -n 8" "XDG_CACHE_HOME=$CACHE"
tui_check "--device cpu: the model opens" tui_wait_ready 60
tui_check "... the title says CPU at 80 columns" title_ends "CPU"
tui_check "... no OpenCL note" [ "$(notes)" = 0 ]
tui_resize 40 24
tui_check "... and at 40 columns" tui_poll 10 0.1 title_ends "CPU"
tui_check "... in 40 cells" eval '[ "$(title | LC_ALL=C.UTF-8 wc -L)" -le 40 ]'
quit_ok "--device cpu"

# --- --device opencl on PoCL -------------------------------------------------------------
if [ "${PETREL_NO_OPENCL:-}" != 1 ]; then
    NAME=$("$PETREL" info --devices | sed -n 's/^opencl:0  //p')
    tui_check "info --devices names device 0 ('$NAME')" [ -n "$NAME" ]
    # (ASan: PoCL's LLVM replaces the alternate signal stack of the thread
    # that opens the platform, the app's worker, with one from malloc; when
    # that thread ends ASan unmaps it as its own, fails and aborts. With
    # use_sigaltstack=0 ASan makes and unmaps none.)
    tui_start 200 24 "'$PETREL' --device opencl -n 8" "XDG_CACHE_HOME=$CACHE" \
        "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}use_sigaltstack=0"
    # (the first run here compiles the kernels: PoCL takes its time)
    tui_check "--device opencl: the model opens" tui_wait_ready 120
    tui_check "... the title names the device: OpenCL: $NAME" title_ends "OpenCL: $NAME"
    tui_check "... no fallback note" [ "$(notes)" = 0 ]
    send "Say hello."
    tui_check "... a reply comes" reply_done
    tui_check "... with text" eval '[ -n "$(tui_last_reply | tr -d " \n")" ]'
    tui_resize 80 24
    tui_check "... at 80 columns: OpenCL: ${NAME:0:8}...$ELL" \
        tui_poll 10 0.1 eval 'title | grep -qF -- "OpenCL: ${NAME:0:8}" && title | grep -qE -- "$ELL  idle *\$"'
    tui_check "... in 80 cells" eval '[ "$(title | LC_ALL=C.UTF-8 wc -L)" -le 80 ]'
    tui_resize 40 24
    tui_check "... at 40 columns: OpenCL" tui_poll 10 0.1 title_ends "OpenCL"
    quit_ok "--device opencl"
fi

# --- --device opencl, no platform ----------------------------------------------------------
tui_start 80 24 "'$PETREL' --device opencl -n 8" "XDG_CACHE_HOME=$CACHE" "OCL_ICD_VENDORS=$TUI_TMP/no-icd"
tui_check "no platform: the model opens" tui_wait_ready 60
tui_check "... a note says why it runs on the CPU" \
    tui_wait_flat 'OpenCL unavailable \(.+\): the model runs *on the CPU' 10
tui_check "... once" [ "$(notes)" = 1 ]
tui_check "... the title says CPU" title_ends "CPU"
send "Say hello."
tui_check "... a reply comes" reply_done
tui_check "... with text" eval '[ -n "$(tui_last_reply | tr -d " \n")" ]'
send "/model SmolLM2-135M-Instruct.Q4_1"
tui_check "... the model loads again" tui_wait_ready 60
tui_check "... without a second note" [ "$(notes)" = 1 ]
quit_ok "no platform"

tui_done
