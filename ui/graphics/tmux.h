/* tmux.h — asking tmux whether it lets DCS passthrough through. */
#ifndef PETREL_UI_GFX_TMUX_H
#define PETREL_UI_GFX_TMUX_H

#include <stdbool.h>

/* Runs `tmux show-options -gv allow-passthrough` (at most timeout_ms; a
 * slower tmux is killed and counts as no): true for "on" or "all", and
 * for a tmux too old to have the option (before 3.3 everything passed). */
bool pt_gfx_tmux_passthrough(int timeout_ms);

#endif
