/*
 * toml.h — a reader for the subset of TOML 1.0 that models.toml uses.
 * Internal to the engine (the catalog is its one user; the fuzz target
 * drives it directly). No C TOML library is packaged in Debian, so this is
 * ours: small, strict, and every error is one line "NAME:LINE:COL: what".
 *
 * The subset (anything else is an error, never silently skipped):
 *
 *   document  = { line }
 *   line      = ws [ table | keyval ] ws [ comment ] newline
 *   table     = "[" ws key { ws "." ws key } ws "]"       (no [[arrays]])
 *   keyval    = key ws "=" ws value                         (no dotted keys)
 *   key       = bare | basic-string | literal-string
 *   bare      = 1*( A-Z / a-z / 0-9 / "-" / "_" )
 *   value     = basic-string | literal-string | integer | float | boolean
 *             | array
 *   array     = "[" { ws/newline/comment } [ string { sep string } [ "," ] ]
 *               { ws/newline/comment } "]"   (strings only; multi-line ok)
 *   basic-string   = '"' { char | escape } '"'   one line; escapes
 *                    \b \t \n \f \r \" \\ \uXXXX \UXXXXXXXX (a Unicode
 *                    scalar value: no surrogates, <= U+10FFFF)
 *   literal-string = "'" { char } "'"           one line, no escapes
 *   integer   = [+-] digits, "_" only between digits, no leading zero;
 *               must fit int64 (no 0x/0o/0b)
 *   float     = integer part, then "." digits and/or [eE] [+-] digits
 *               (no inf/nan)
 *   boolean   = "true" | "false"
 *   ws        = { " " | "\t" };  newline = "\n" | "\r\n"
 *   comment   = "#" { any char but control characters other than tab }
 *
 * Not supported: multi-line strings, inline tables, arrays of tables,
 * dotted keys, dates and times, arrays of non-strings. The input must be
 * UTF-8 (checked everywhere, comments included); control characters other
 * than tab are refused in strings and comments. Keys are unique in their
 * table; a table is defined at most once and never also as a key.
 */
#ifndef PETREL_TOML_H
#define PETREL_TOML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "petrel.h"

typedef enum pt_toml_type {
    PT_TOML_STRING,
    PT_TOML_INT,
    PT_TOML_FLOAT,
    PT_TOML_BOOL,
    PT_TOML_ARRAY, /* of strings */
} pt_toml_type;

/* A table header, [a."b.c"] -> parts {"a", "b.c"}. Index 0 of a document's
 * tables is the root (n_parts 0, line 0). */
typedef struct pt_toml_table {
    char **parts;
    int n_parts;
    int line, col;      /* of the "[" */
} pt_toml_table;

/* One key = value, in document order. Strings are NUL-terminated UTF-8
 * (a \u0000 escape is refused, so they hold no NUL). */
typedef struct pt_toml_item {
    int table;          /* index into pt_toml_doc.tables */
    char *key;
    int line, col;      /* of the key */
    pt_toml_type type;
    char *str;          /* PT_TOML_STRING */
    int64_t i;          /* PT_TOML_INT */
    double f;           /* PT_TOML_FLOAT */
    bool b;             /* PT_TOML_BOOL */
    char **items;       /* PT_TOML_ARRAY: n_items strings */
    int n_items;
} pt_toml_item;

typedef struct pt_toml_doc {
    pt_toml_table *tables;
    int n_tables;
    pt_toml_item *items;
    int n_items;
} pt_toml_doc;

/* Bounds on one document (a catalog has tens of entries): beyond them the
 * input is refused, which also keeps the uniqueness checks' quadratic scans
 * cheap on hostile input. */
#define PT_TOML_MAX_ITEMS 4096
#define PT_TOML_MAX_TABLES 1024
#define PT_TOML_MAX_ARRAY 256

/* Parse text[0..len) (need not be NUL-terminated). name labels error
 * messages ("models.toml:3:7: ..."). On failure *doc is left empty. */
pt_status pt_toml_parse(const char *text, size_t len, const char *name, pt_toml_doc *doc,
                        pt_error *err);
void pt_toml_free(pt_toml_doc *doc);

/* The type's name for messages ("string", "integer", ...). */
const char *pt_toml_type_name(pt_toml_type t);

#endif
