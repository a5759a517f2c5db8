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

# decode: the tokens after the first arrive over [t_first, t_done]; each
# end is known to ~0.1 s (polling every 50 ms, frames at most every 33 ms,
# a tmux round trip), so the tolerance is 25% plus what 0.2 s is of the span
wall=$(tui_calc "$t_done - $t_first")
meas=$(tui_calc "($ng - 1) / $wall")
tol=$(tui_calc "0.25 + 0.2 / $wall")
echo "# measured: $((ng - 1)) tokens in ${wall}s = $meas t/s (tolerance $tol)"
tui_check "decode tok/s ${dc:-?} matches measured $meas" \
    tui_true "${dc:-0} >= $meas * (1 - $tol) && ${dc:-0} <= $meas * (1 + $tol)"

# TTFT: Enter to first text, as seen from outside
mttft=$(tui_calc "$t_first - $t_enter")
echo "# measured TTFT ${mttft}s"
tui_check "TTFT ${ttft:-?}s matches measured ${mttft}s (0.15 s + 25%)" \
    tui_true "${ttft:--1} >= 0 && ${ttft:-0} <= $mttft * 1.25 + 0.15 && ${ttft:-0} >= $mttft * 0.75 - 0.15"
# prefill: the prompt tokens over (about) the time to first token
mpf=$(tui_calc "$np / $mttft")
tol=$(tui_calc "0.3 + 0.15 / $mttft")
tui_check "prefill tok/s ${pf:-?} matches measured $mpf (prompt tokens / TTFT, tolerance $tol)" \
    tui_true "${pf:-0} >= $mpf * (1 - $tol) && ${pf:-0} <= $mpf * (1 + $tol)"

# context: what the engine holds is the prompt and the reply
tui_check "context used ${used:-?} = prompt $np + reply $ng (or one less)" \
    tui_true "${used:-0} == $np + $ng || ${used:-0} == $np + $ng - 1"
tui_check "context capacity ${cap:-?} > used" tui_true "${cap:-0} > ${used:-0}"
tui_check "KV cache in RAM > 0" grep -qE 'KV +\[[| ]*[0-9.]+[KMG] ram' <<< "$s"

sleep 1.2
tui_check "RSS and peak match /proc after generating" rss_check

tui_keys C-q
tui_check "^Q quits" tui_wait_dead 60
tui_done
