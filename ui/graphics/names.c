/*
 * names.c — protocol names, and what the user asked for: --graphics,
 * $PETREL_GRAPHICS, $PETREL_PROBE_TIMEOUT_MS.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graphics.h"

static const char *const NAMES[] = {
    [PT_GFX_AUTO] = "auto",   [PT_GFX_NONE] = "none",   [PT_GFX_SYMBOLS] = "symbols",
    [PT_GFX_SIXEL] = "sixel", [PT_GFX_KITTY] = "kitty", [PT_GFX_ITERM2] = "iterm2",
};

bool pt_gfx_parse(const char *name, pt_gfx_proto *out) {
    if (!name) return false;
    for (size_t i = 0; i < sizeof NAMES / sizeof NAMES[0]; i++)
        if (!strcmp(name, NAMES[i])) {
            *out = (pt_gfx_proto)i;
            return true;
        }
    return false;
}

const char *pt_gfx_name(pt_gfx_proto p) {
    return (unsigned)p < sizeof NAMES / sizeof NAMES[0] ? NAMES[p] : "?";
}

bool pt_gfx_requested(const char *flag, pt_gfx_proto *want, char *why, size_t why_cap) {
    const char *env = getenv("PETREL_GRAPHICS");
    const char *name = flag ? flag : env && *env ? env : "auto";
    if (pt_gfx_parse(name, want)) return true;
    /* the value is the user's, maybe with control bytes: shown as printable ASCII */
    char shown[48];
    size_t o = 0;
    for (const char *c = name; *c && o + 1 < sizeof shown; c++)
        shown[o++] = *c >= 0x20 && *c < 0x7f ? *c : '?';
    shown[o] = '\0';
    snprintf(why, why_cap, "%s wants auto, sixel, kitty, iterm2, symbols or none, not '%s'",
             flag ? "--graphics" : "PETREL_GRAPHICS", shown);
    return false;
}

int pt_gfx_probe_timeout_ms(void) {
    const char *s = getenv("PETREL_PROBE_TIMEOUT_MS");
    if (!s || !*s) return PT_GFX_PROBE_TIMEOUT_MS;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < 0 || v > PT_GFX_PROBE_TIMEOUT_MAX_MS) return PT_GFX_PROBE_TIMEOUT_MS;
    return (int)v;
}
