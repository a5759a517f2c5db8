/*
 * meter.h — the gauges, htop style: each meter is a row of a const table
 * (caption, update function, the draw modes it supports), and rendering a
 * meter in a mode is a pure function that fills a styled line of exactly
 * `width` cells. The drawing code (draw.c) only copies styled lines to the
 * screen, so everything here is testable without a terminal.
 *
 * Units: bytes are shown in binary units (K = KiB, M = MiB, G = GiB);
 * rates in tokens per second ("t/s").
 */
#ifndef PETREL_UI_METER_H
#define PETREL_UI_METER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "petrel.h"

#define PT_SPARK_MAX 256

/* Everything the meters read; filled by the UI from worker events and
 * /proc. Rates and times < 0 mean "not measured yet". */
typedef struct pt_ui_stats {
    bool generating;         /* a turn is running */
    bool prefilling;         /* ... and no text has come back yet */
    /* the turn in progress (or the last one, once it ended) */
    double live_prefill_tps, live_decode_tps, live_ttft;
    int live_tokens;         /* text chunks streamed this turn */
    /* the last finished turn, from the engine's own stats */
    bool have_last;
    double last_prefill_tps, last_decode_tps, last_ttft;
    int last_n_prompt, last_n_gen, last_n_cached;
    /* process memory, from /proc/self/status */
    uint64_t rss, rss_peak, ram_total;
    /* engine memory (pt_context_memory) */
    bool have_mem;
    pt_memory_stats mem;
    pt_kv_stats kv;          /* pt_context_kv_stats, with mem */
    /* decode throughput history, oldest first */
    float spark[PT_SPARK_MAX];
    int n_spark;
    double prefill_scale;    /* full scale of the rate bars (auto-ranging: */
    double decode_scale;     /*  the highest rate seen, see pt_stats_scale) */
} pt_ui_stats;

typedef struct pt_meter_value {
    double v[2];             /* bar segments (v[1] may be 0) */
    int n_seg;
    double total;            /* bar full scale; <= 0: nothing to show */
    char text[64];           /* e.g. "41.2 t/s" */
    char brief[32];          /* shorter text for compact mode */
    bool dim;                /* no data yet */
} pt_meter_value;

typedef enum pt_meter_mode {
    PT_MM_BAR = 1,      /* Caption[|||||||     text] */
    PT_MM_TEXT = 2,     /* Caption text */
    PT_MM_GRAPH = 4,    /* Caption ▁▂▃▅▇ (history) */
    PT_MM_BIG = 8,      /* large digits, 3 x scale rows (demo mode) */
} pt_meter_mode;

typedef enum pt_meter_id {
    PT_METER_PREFILL, PT_METER_DECODE, PT_METER_TTFT, PT_METER_LAST,
    PT_METER_RSS, PT_METER_MODEL, PT_METER_KV, PT_METER_CTX, PT_METER_SPARK,
    PT_METER_COUNT
} pt_meter_id;

typedef struct pt_meter_class {
    const char *caption;     /* normal layout, at most 7 cells */
    const char *brief;       /* compact layout, at most 4 cells */
    void (*update)(const pt_ui_stats *st, pt_meter_value *v);
    unsigned modes;          /* PT_MM_* the meter can be drawn in */
} pt_meter_class;

extern const pt_meter_class pt_meters[PT_METER_COUNT];

/* Styles of the cells of a rendered line (draw.c maps them to colours). */
typedef enum pt_cell_style {
    PT_CS_BLANK = 0, PT_CS_CAPTION, PT_CS_BRACKET, PT_CS_BAR1, PT_CS_BAR2,
    PT_CS_TEXT, PT_CS_DIM, PT_CS_GRAPH, PT_CS_BIG,
} pt_cell_style;

/* A line of text where every byte carries a style. */
#define PT_STYLED_CAP 2048
typedef struct pt_styled {
    char text[PT_STYLED_CAP];
    unsigned char style[PT_STYLED_CAP];
    size_t len;
    int cells;
} pt_styled;

void pt_styled_clear(pt_styled *s);
/* Append at most max_cells cells of text in a style; returns cells added. */
int pt_styled_add(pt_styled *s, const char *text, int style, int max_cells);
void pt_styled_pad(pt_styled *s, int width);

/* Render meter m (already updated into v) in one mode, exactly width cells
 * (caption_cells: width given to the caption column, 0 = none). BIG draws
 * row `row` (0 .. 3 * big_scale - 1) of the large digits. */
void pt_meter_render(const pt_meter_class *m, const pt_meter_value *v, const pt_ui_stats *st,
                     pt_meter_mode mode, int caption_cells, int width, int row, pt_styled *out);
extern int pt_big_scale;   /* 1 or 2; set by the drawing code before rendering */

/* The compact one-line summary for narrow terminals: brief captions and
 * texts of the most important meters, as many as fit in width. */
void pt_meter_compact(const pt_ui_stats *st, int width, pt_styled *out);

/* Formatting shared with the rest of the UI. */
void pt_fmt_bytes(uint64_t bytes, char *buf, size_t cap);   /* "145M", "1.21G" */
void pt_fmt_rate(double tps, char *buf, size_t cap);        /* "612", "41.2", "4.12" */
void pt_fmt_secs(double s, char *buf, size_t cap);          /* "340ms", "2.41s" */

/* Large digits: row 0 .. 3 * scale - 1 of text s, scale 1 or 2 (digits,
 * '.' and '-' large; other characters small on the bottom row). Returns
 * the cells written into out. */
int pt_big_text(const char *s, int row, int scale, bool utf8, char *out, size_t cap);

/* Process memory from /proc/self/status (VmRSS, VmHWM) and total RAM. */
bool pt_proc_mem(uint64_t *rss, uint64_t *peak);
uint64_t pt_ram_total(void);

/* Push a decode rate sample into the history. */
void pt_spark_push(pt_ui_stats *st, float v);
/* Grow the bar scales to cover the current rates. */
void pt_stats_scale(pt_ui_stats *st);

#endif
