#!/usr/bin/env bash
# test_tui_gauges.sh — the gauges' numbers against measurements taken by
# this test, outside petrel: decode tok/s against tokens counted over the
# wall time the reply took to appear in the terminal; TTFT and prefill
# tok/s against the time from Enter to the first reply text; RSS and its
# peak against /proc/<pid>/status read here; model bytes mapped against the
# GGUF file's size; context used against the prompt + reply token counts.
. "$(dirname "$0")/tui_lib.sh"
tui_setup

tui_start 100 30 "$PETREL"
tui_check "app ready" tui_wait_ready 120
pid=$(tui_app_pid)

# --- model mapping vs the file -----------------------------------------------
size=$(stat -L -c %s "$MODEL")
tui_wait 'Model +\[[| ]*[0-9.]+[KMG]/[0-9.]+[KMG] resident' 10
s=$(tui_screen)
res=$(sed -nE 's/.*Model +\[[| ]*([0-9.]+[KMG])\/([0-9.]+[KMG]) resident.*/\1/p' <<< "$s" | head -1)
map=$(sed -nE 's/.*Model +\[[| ]*([0-9.]+[KMG])\/([0-9.]+[KMG]) resident.*/\2/p' <<< "$s" | head -1)
mapb=$(tui_bytes "${map:-0}")
resb=$(tui_bytes "${res:-0}")
tui_check "model mapped ${map:-?} = file size $size (within 1%, at most a page more)" \
    tui_true "$mapb >= $size * 0.99 && $mapb <= $size * 1.01 + 4096"
tui_check "model resident ${res:-?} <= mapped" tui_true "$resb <= $mapb && $resb > 0"

# --- RSS and peak vs /proc/<pid>/status -------------------------------------
rss_check() {
    local s rss peak vm hwm
    s=$(tui_screen)
    vm=$(awk '/^VmRSS:/ { print $2 * 1024 }' "/proc/$pid/status")
    hwm=$(awk '/^VmHWM:/ { print $2 * 1024 }' "/proc/$pid/status")
    rss=$(sed -nE 's/^RSS +\[[| ]*([0-9.]+[KMG]) peak ([0-9.]+[KMG])\].*/\1/p' <<< "$s" | head -1)
    peak=$(sed -nE 's/^RSS +\[[| ]*([0-9.]+[KMG]) peak ([0-9.]+[KMG])\].*/\2/p' <<< "$s" | head -1)
    rss=$(tui_bytes "${rss:-0}")
    peak=$(tui_bytes "${peak:-0}")
    echo "# RSS shown $rss, /proc $vm; peak shown $peak, /proc $hwm"
    # petrel samples twice a second; at rest the two agree closely
    tui_true "$rss > 0 && $rss >= $vm * 0.9 - 1048576 && $rss <= $vm * 1.1 + 1048576" &&
    tui_true "$peak >= $hwm * 0.9 - 1048576 && $peak <= $hwm * 1.1 + 1048576"
}
sleep 1.2
tui_check "RSS and peak match /proc/$pid/status" rss_check

# --- one reply, timed from outside ----------------------------------------------
# A long prompt and a long reply keep both phases well above the ~0.1 s
# this test can resolve (tmux round trips, polling), on fast and slow engines.
tui_type "/max 128"; tui_keys Enter
tui_wait 'max = 128' 10
filler=""
for _ in $(seq 1 24); do filler="$filler The quick brown fox jumps over the lazy dog."; done
prompt="Read this:$filler Now tell me a long story about that fox."
tui_type "$prompt"
tui_wait 'story about that fox\.$' 10
tui_keys Enter
t_enter=$(tui_now)
t_first=""
t_done=""
end=$(tui_calc "$t_enter + 180 * $TUI_SCALE")
while tui_true "$(tui_now) < $end"; do
    s=$(tui_screen)
    now=$(tui_now)
    if [ -z "$t_first" ] && [ -n "$(tui_last_reply | tr -d ' \n▌')" ]; then t_first=$now; fi
    if grep -qE '(end of reply|length limit \(/max\)): [0-9]+ tokens' <<< "$s"; then t_done=$now; break; fi
    sleep 0.05
done
tui_check "reply seen and finished" [ -n "$t_first" ] && [ -n "$t_done" ]
s=$(tui_screen)
echo "$s" | sed -n '1,7p' | sed 's/^/# /'
dc=$(sed -nE 's/.*Decode +\[[| ]*([0-9.]+) t\/s last\].*/\1/p' <<< "$s" | head -1)
pf=$(sed -nE 's/^Prefill +\[[| ]*([0-9.]+) t\/s\].*/\1/p' <<< "$s" | head -1)
np=$(sed -nE 's/.*Last +([0-9]+)\+([0-9]+) tok .*/\1/p' <<< "$s" | head -1)
ng=$(sed -nE 's/.*Last +([0-9]+)\+([0-9]+) tok .*/\2/p' <<< "$s" | head -1)
ttft=$(sed -nE 's/^TTFT +([0-9.]+)(m?s).*/\1 \2/p' <<< "$s" | head -1 | awk '{ print $2 == "ms" ? $1 / 1000 : $1 }')
used=$(sed -nE 's/.*Context \[[| ]*([0-9]+)\/([0-9]+) tok\].*/\1/p' <<< "$s" | head -1)
cap=$(sed -nE 's/.*Context \[[| ]*([0-9]+)\/([0-9]+) tok\].*/\2/p' <<< "$s" | head -1)
echo "# shown: decode ${dc:-?} t/s, prefill ${pf:-?} t/s, ttft ${ttft:-?} s, prompt ${np:-?}, generated ${ng:-?}, context ${used:-?}/${cap:-?}"
tui_check "token counts shown" [ -n "$np" ] && [ -n "$ng" ]
ng=${ng:-0}; np=${np:-0}
tui_check "a reply of 16..128 tokens (generated $ng)" [ "$ng" -ge 16 ] && [ "$ng" -le 128 ]
tui_check "a long prompt (prompt $np tokens)" [ "$np" -ge 200 ]

# The app's clocks run inside the window this test sees from outside: it
# gets Enter after t_enter, and the first text and the end are on screen
# only after the app timed them. So, whatever the load on the machine (a
# busy machine only widens the outside window):
#   the shown TTFT is at most t_first - t_enter;
#   prefill >= prompt tokens / (t_first - t_enter);
#   decode >= (generated - 1) / (t_done - t_enter).
# The shown numbers must also agree with each other: the prefill is part
# of the time to the first token, so prefill >= prompt tokens / TTFT (to
# the rounding of the display: 3 digits, TTFT to 10 ms). No check here
# depends on how fast the machine is.
slack=0.05   # tmux's screen copy may lag the app's clock by a frame
mttft=$(tui_calc "$t_first - $t_enter + $slack")
echo "# outside: TTFT <= ${mttft}s, reply done by $(tui_calc "$t_done - $t_enter")s"
tui_check "TTFT ${ttft:-?}s within the outside window ${mttft}s" \
    tui_true "${ttft:--1} > 0 && ${ttft:-0} <= $mttft"
tui_check "prefill tok/s ${pf:-?} >= prompt $np / outside TTFT $mttft" \
    tui_true "${pf:-0} > 0 && ${pf:-0} >= $np / $mttft * 0.99"
tui_check "decode tok/s ${dc:-?} >= $((ng - 1)) tokens / outside span" \
    tui_true "${dc:-0} > 0 && ${dc:-0} >= ($ng - 1) / ($t_done - $t_enter + $slack) * 0.99"
tui_check "prefill ${pf:-?} >= prompt $np / shown TTFT ${ttft:-?}" \
    tui_true "${ttft:-0} > 0 && ${pf:-0} >= $np / (${ttft:-1} + 0.01) * 0.99"

# context: what the engine holds is the prompt and the reply
tui_check "context used ${used:-?} = prompt $np + reply $ng (or one less)" \
    tui_true "${used:-0} == $np + $ng || ${used:-0} == $np + $ng - 1"
tui_check "context capacity ${cap:-?} > used" tui_true "${cap:-0} > ${used:-0}"
tui_check "KV cache in RAM > 0" grep -qE 'KV +\[[| ]*[0-9.]+[KMG] ram' <<< "$s"

sleep 1.2
tui_check "RSS and peak match /proc after generating" rss_check

tui_keys C-q
tui_check "^Q quits" tui_wait_dead 60

# --- the KV gauge with a RAM budget: RAM and disk segments, the budget --------
# q8 pages of 256 positions are about 100 KiB a layer for SmolLM2, so one
# turn's cache outgrows a 1 MiB budget: the rest sits in the spill file,
# and RAM stays within the budget plus a layer's pages (kv_cache.h).
tui_start 100 30 "$PETREL -n 24 --kv-type q8 --kv-ram 1" "XDG_CACHE_HOME=$TUI_TMP/cache"
tui_check "app ready (KV budget)" tui_wait_ready 120
tui_type "Tell me about the sea."
tui_keys Enter
tui_check "reply finished (KV budget)" tui_wait '(end of reply|length limit \(/max\)): [0-9]+ tokens' 120
kv_line=$(tui_screen | grep -oE 'KV +\[[| ]*[0-9.]+[KMG]? ram [0-9.]+[KMG]? disk /[0-9.]+[KMG]\]' | head -1)
echo "# $kv_line"
kram=$(sed -nE 's/.*[| []([0-9.]+[KMG]?) ram .*/\1/p' <<< "$kv_line")
kdisk=$(sed -nE 's/.* ram ([0-9.]+[KMG]?) disk .*/\1/p' <<< "$kv_line")
kbud=$(sed -nE 's/.* disk \/([0-9.]+[KMG])\].*/\1/p' <<< "$kv_line")
tui_check "KV gauge shows RAM, disk and the budget (${kv_line:-none})" [ -n "$kram" ] && [ -n "$kdisk" ] && [ -n "$kbud" ]
tui_check "budget shown ${kbud:-?} is 1 MiB" tui_true "$(tui_bytes "${kbud:-0}") == 1048576"
tui_check "pages on disk (${kdisk:-?})" tui_true "$(tui_bytes "${kdisk:-0}") > 0"
tui_check "RAM ${kram:-?} within the budget and one layer's pages" \
    tui_true "$(tui_bytes "${kram:-0}") <= 1048576 + 256 * 1024"
[ -z "$(ls -A "$TUI_TMP/cache/petrel" 2>/dev/null)" ] && tui_ok "the spill file has no name on disk" ||
    tui_bad "files left in the spill directory: $(ls "$TUI_TMP/cache/petrel")"
tui_keys C-q
tui_check "^Q quits (KV budget)" tui_wait_dead 60
tui_done
