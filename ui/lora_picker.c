/*
 * lora_picker.c — the LoRA adapter picker: an overlay on the chat screen
 * (F7) listing the adapters the worker holds (a->loras, from its last
 * LORA event) with their scales. Space or Enter turns the selected one on
 * or off, + and - change its scale by 0.1 (turning it on), Esc or F7
 * closes. Every change is a /lora command to the worker (pt_worker_lora),
 * so it takes effect from the next reply, as /lora does.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "app.h"
#include "text.h"

#define SCALE_STEP 0.1f

static void send(pt_app *a, pt_lora_op op, const pt_lora_entry *e, float scale) {
    pt_lora_cmd cmd = {.op = op, .scale = scale};
    /* the worker's real path: names may repeat, paths do not */
    snprintf(cmd.target, sizeof cmd.target, "%s", e->path);
    pt_worker_lora(&a->worker, &cmd);
}

void pt_lora_picker_key(pt_app *a, int k, bool is_char) {
    int n = a->loras.n;
    if (a->lora_sel >= n) a->lora_sel = n > 0 ? n - 1 : 0;
    const pt_lora_entry *e = n > 0 ? &a->loras.e[a->lora_sel] : NULL;
    if (is_char) {
        switch (k) {
        case 27: case 'q': a->ov = OV_NONE; return;
        case 'k': if (a->lora_sel > 0) a->lora_sel--; return;
        case 'j': if (a->lora_sel + 1 < n) a->lora_sel++; return;
        case ' ': case '\r': case '\n':
            if (e) send(a, e->active ? PT_LORA_OFF : PT_LORA_ON, e, e->scale);
            return;
        case '+': case '=': case '-': case '_': {
            if (!e) return;
            float s = e->scale + (k == '+' || k == '=' ? SCALE_STEP : -SCALE_STEP);
            s = roundf(s * 10.0f) / 10.0f;   /* no 0.30000001 drift */
            if (s > 100.0f) s = 100.0f;
            if (s < -100.0f) s = -100.0f;
            send(a, PT_LORA_ON, e, s);
            return;
        }
        default: return;
        }
    }
    switch (k) {
    case KEY_UP: if (a->lora_sel > 0) a->lora_sel--; break;
    case KEY_DOWN: if (a->lora_sel + 1 < n) a->lora_sel++; break;
    case KEY_ENTER: if (e) send(a, e->active ? PT_LORA_OFF : PT_LORA_ON, e, e->scale); break;
    default: break;
    }
}

void pt_lora_picker_draw(pt_app *a, int W, int H) {
    int n = a->loras.n;
    int bw = W - 4 < 64 ? W - 4 : 64;
    int bh = (n > 0 ? n : 1) + 4;
    if (bh > H - 2) bh = H - 2;
    if (bw < 24 || bh < 5) return;
    int bx = (W - bw) / 2, by = 2;
    pt_draw_box(by, bx, bh, bw, "LoRA adapters (Esc closes)");
    if (a->lora_sel >= n) a->lora_sel = n > 0 ? n - 1 : 0;
    int rows = bh - 4;
    int top = a->lora_sel >= rows ? a->lora_sel - rows + 1 : 0;
    if (n == 0)
        pt_put_str(by + 1, bx + 2, "none loaded: /lora PATH [SCALE] loads one", pt_attr(S_DIM), bw - 4);
    const char *times = pt_text_utf8() ? "\u00d7" : "x";
    for (int r = 0; r < rows && top + r < n; r++) {
        int i = top + r;
        const pt_lora_entry *e = &a->loras.e[i];
        char num[16], sc[24], by_s[24], line[256];
        pt_app_fmt_scale(e->scale, num, sizeof num);
        snprintf(sc, sizeof sc, "%s%s", times, num);
        pt_fmt_bytes(e->bytes, by_s, sizeof by_s);
        /* names are escaped by the worker */
        snprintf(line, sizeof line, "%s %-24.24s %-8s rank %-3d %s", e->active ? "[on] " : "[off]", e->name,
                 sc, e->rank, by_s);
        attr_t at = i == a->lora_sel ? pt_attr(S_SELECT) : pt_attr(e->active ? S_NORMAL : S_DIM);
        pt_fill(by + 1 + r, bx + 1, bw - 2, at);
        pt_put_str(by + 1 + r, bx + 2, line, at, bw - 4);
    }
    pt_put_str(by + bh - 2, bx + 2, "Space on/off  +/- scale  Up/Down pick", pt_attr(S_CAPTION), bw - 4);
}
