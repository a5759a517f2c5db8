/*
 * models_rows.h — what the Models screen lists, without drawing: the rows
 * (local files, then the catalog's entries, each section under a
 * heading), a catalog entry's state on disk, the fits-in-RAM hint, the
 * quantize form's default output name and its checks. No curses here:
 * tests/test_ui_models_rows.c checks all of it.
 */
#ifndef PETREL_UI_MODELS_ROWS_H
#define PETREL_UI_MODELS_ROWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "models.h"
#include "petrel.h"

/* ---- fits in RAM ---- */

typedef enum pt_fit {
    PT_FIT_UNKNOWN = 0,  /* the size or the free memory is not known */
    PT_FIT_YES,          /* weights plus a quarter for the KV cache and scratch fit */
    PT_FIT_TIGHT,        /* the weights fit, the quarter more does not */
    PT_FIT_NO,           /* the weights alone are more than the free memory */
} pt_fit;

/* The hint for a model of `bytes` (its file) given `avail` bytes of free
 * memory (MemAvailable, plus what the open model holds when the model
 * would replace it): the weights are mapped or repacked whole, and the
 * KV cache and scratch of a default context add about a quarter of the
 * weights for the small models petrel's catalog lists. */
pt_fit pt_fit_hint(uint64_t bytes, uint64_t avail);
const char *pt_fit_name(pt_fit f);   /* "fits", "tight", "too big", "?" */

/* MemAvailable (bytes) from the text of /proc/meminfo; 0 when absent. */
uint64_t pt_meminfo_available(const char *text, size_t len);
/* ... read from /proc/meminfo now; 0 when it cannot be read. */
uint64_t pt_mem_available(void);

/* ---- a catalog entry on disk ---- */

typedef enum pt_cat_state {
    PT_CAT_ABSENT = 0,   /* not downloaded */
    PT_CAT_PARTIAL,      /* a .part of an earlier download: fetching resumes it */
    PT_CAT_INSTALLED,    /* DIR/local_name is there */
    PT_CAT_BUNDLED,      /* ships with petrel (source "bundled") */
} pt_cat_state;

/* The state of e in models_dir; *part_bytes (may be NULL) gets the size
 * of its .part (0 when none). */
pt_cat_state pt_cat_state_of(const pt_catalog_entry *e, const char *models_dir, uint64_t *part_bytes);
/* Bytes of the entry's file: its exact size, else approx_mb (MB, 10^6),
 * else 0. *approx tells which. */
uint64_t pt_cat_bytes(const pt_catalog_entry *e, bool *approx);

/* ---- rows ---- */

typedef enum pt_mrow_kind { PT_MROW_HEADER, PT_MROW_LOCAL, PT_MROW_CATALOG } pt_mrow_kind;

typedef struct pt_mrow {
    pt_mrow_kind kind;
    int index;             /* LOCAL: into the model list; CATALOG: the catalog's
                              index; HEADER: 0 local section, 1 catalog */
    int catalog;           /* LOCAL: the catalog entry whose local name the file
                              has, -1 when none */
    pt_cat_state state;    /* CATALOG */
    uint64_t part_bytes;   /* CATALOG, PARTIAL: bytes of its .part */
} pt_mrow;

typedef struct pt_mrows {
    pt_mrow *items;
    int n, cap;
} pt_mrows;

/* Rebuild r: a LOCAL heading and every file of l, then (when c is not
 * NULL) a CATALOG heading and every entry of c in the catalog's order,
 * with its state in models_dir. Returns false when out of memory (r then
 * holds what fitted). */
bool pt_mrows_build(pt_mrows *r, const pt_model_list *l, const pt_catalog *c, const char *models_dir);
void pt_mrows_free(pt_mrows *r);
/* The nearest selectable (not a heading) row from i in direction dir
 * (+1 / -1), i itself when it is selectable and dir is 0; -1 when there is
 * none that way (then try the other way). */
int pt_mrows_select(const pt_mrows *r, int i, int dir);

/* ---- the quantize form ---- */

/* The types the form offers, in llama-quantize's names, best first. */
extern const char *const pt_quant_types[];
extern const int pt_n_quant_types;

/* A name for name (a .gguf file name) quantized to type: its quantization
 * tag (".Q4_1", "-q4_k_m", ...: the last one in the name, matched without
 * case) replaced by type in the tag's case, else ".TYPE" put before
 * ".gguf" (or at the end). */
void pt_quant_out_name(const char *name, const char *type, char *out, size_t cap);
/* Why name cannot be an output file in the models folder (empty, a path,
 * hidden, control characters, not *.gguf, longer than 200 bytes); NULL
 * when it can. */
const char *pt_out_name_problem(const char *name);

/* "0:07", "12:34", "1:02:03"; "?" when s < 0 or absurd. */
void pt_fmt_eta(double s, char *buf, size_t cap);

#endif
