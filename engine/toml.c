/* toml.c — the TOML subset reader (the grammar is in toml.h). */
#include "toml.h"

#include <errno.h>
#include <locale.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "status.h"
#include "utf8.h"

/* The reader's state: a cursor over the text with its line and column
 * (1-based; the column counts characters, not bytes). */
typedef struct parser {
    const char *s;
    size_t n, pos;
    int line, col;
    const char *name;
    pt_error *err;
    pt_toml_doc *doc;
    int table;          /* the table keys go into */
    int cap_tables, cap_items; /* allocated lengths of doc's arrays */
    bool failed;        /* an error has been recorded: keep the first */
} parser;

typedef struct sbuf {
    char *p;
    size_t n, cap;
} sbuf;

const char *pt_toml_type_name(pt_toml_type t) {
    switch (t) {
    case PT_TOML_STRING: return "string";
    case PT_TOML_INT: return "integer";
    case PT_TOML_FLOAT: return "float";
    case PT_TOML_BOOL: return "boolean";
    case PT_TOML_ARRAY: return "array";
    }
    return "value";
}

/* ---- errors ------------------------------------------------------------ */

static pt_status fail_at(parser *p, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static pt_status fail_at(parser *p, int line, int col, const char *fmt, ...) {
    if (p->failed) return PT_ERR_FORMAT;
    p->failed = true;
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return pt_fail(p->err, PT_ERR_FORMAT, "%.60s:%d:%d: %s", p->name, line, col, msg);
}
#define fail(p, ...) fail_at((p), (p)->line, (p)->col, __VA_ARGS__)

/* What is at the cursor, for "expected X, found Y". */
static const char *found(const parser *p, char *buf, size_t cap) {
    if (p->pos >= p->n) return "the end of the file";
    unsigned char c = (unsigned char)p->s[p->pos];
    if (c == '\n' || c == '\r') return "the end of the line";
    if (c > 0x20 && c < 0x7f) snprintf(buf, cap, "'%c'", c);
    else snprintf(buf, cap, "byte 0x%02X", c);
    return buf;
}

/* A string from the file made safe for a one-line message. */
static const char *shown(const char *s, char *buf, size_t cap) {
    pt_escape_text(s, strlen(s), buf, cap);
    return buf;
}

/* ---- the cursor -------------------------------------------------------- */

static int peek(const parser *p, size_t ahead) {
    return p->pos + ahead < p->n ? (unsigned char)p->s[p->pos + ahead] : -1;
}

static void advance(parser *p, size_t k) {
    for (; k && p->pos < p->n; k--) {
        unsigned char c = (unsigned char)p->s[p->pos++];
        if (c == '\n') {
            p->line++;
            p->col = 1;
        } else if ((c & 0xC0) != 0x80) {
            p->col++;
        }
    }
}

static bool at_eol(const parser *p) {
    int c = peek(p, 0);
    return c < 0 || c == '\n' || c == '\r';
}

static void skip_ws(parser *p) {
    while (peek(p, 0) == ' ' || peek(p, 0) == '\t') advance(p, 1);
}

/* One well-formed UTF-8 character at the cursor into *cp (the cursor does
 * not move); its length, or 0 after recording the error. */
static size_t char_at(parser *p, uint32_t *cp) {
    size_t len;
    if (pt_utf8_scan((const unsigned char *)p->s + p->pos, p->n - p->pos, &len, cp) != PT_UTF8_VALID) {
        fail(p, "invalid UTF-8 (byte 0x%02X)", (unsigned char)p->s[p->pos]);
        return 0;
    }
    return len;
}

static bool is_control(uint32_t cp) {
    return (cp < 0x20 && cp != '\t') || cp == 0x7f;
}

/* "\n" or "\r\n"; a lone "\r" is an error. At the end of the file: ok. */
static pt_status newline(parser *p) {
    int c = peek(p, 0);
    if (c < 0) return PT_OK;
    if (c == '\r') {
        if (peek(p, 1) != '\n') return fail(p, "a carriage return must be followed by a line feed");
        advance(p, 1);
    }
    advance(p, 1);
    return PT_OK;
}

/* "#" to the end of the line (the newline itself is left). */
static pt_status comment(parser *p) {
    advance(p, 1);
    while (!at_eol(p)) {
        uint32_t cp;
        size_t len = char_at(p, &cp);
        if (!len) return PT_ERR_FORMAT;
        if (is_control(cp)) return fail(p, "control character U+%04X in a comment", (unsigned)cp);
        advance(p, len);
    }
    return PT_OK;
}

/* Whitespace, newlines and comments (inside arrays). */
static pt_status skip_blank(parser *p) {
    for (;;) {
        skip_ws(p);
        int c = peek(p, 0);
        if (c == '#') {
            if (comment(p)) return PT_ERR_FORMAT;
        } else if (c == '\n' || c == '\r') {
            if (newline(p)) return PT_ERR_FORMAT;
        } else {
            return PT_OK;
        }
    }
}

/* ---- strings ----------------------------------------------------------- */

static bool sbuf_add(sbuf *b, const char *s, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 32;
        while (cap < b->n + n + 1) cap *= 2;
        char *q = realloc(b->p, cap);
        if (!q) return false;
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
    return true;
}

/* The string so far, or "" when empty (b->p is NULL then). */
static char *sbuf_take(sbuf *b) {
    if (!b->p) return calloc(1, 1);
    char *s = b->p;
    b->p = NULL;
    return s;
}

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* The escape at the cursor (a backslash) appended to b. */
static pt_status escape(parser *p, sbuf *b) {
    int line = p->line, col = p->col;
    int c = peek(p, 1);
    const char *simple = NULL;
    switch (c) {
    case 'b': simple = "\b"; break;
    case 't': simple = "\t"; break;
    case 'n': simple = "\n"; break;
    case 'f': simple = "\f"; break;
    case 'r': simple = "\r"; break;
    case '"': simple = "\""; break;
    case '\\': simple = "\\"; break;
    case 'u': case 'U': break;
    default:
        if (c > 0x20 && c < 0x7f) return fail_at(p, line, col, "unknown escape '\\%c'", c);
        return fail_at(p, line, col, "a backslash must start an escape");
    }
    if (simple) {
        advance(p, 2);
        return sbuf_add(b, simple, 1) ? PT_OK : pt_fail(p->err, PT_ERR_NOMEM, "out of memory");
    }
    int digits = c == 'u' ? 4 : 8;
    uint32_t cp = 0;
    for (int i = 0; i < digits; i++) {
        int h = hexval(peek(p, 2 + (size_t)i));
        if (h < 0) return fail_at(p, line, col, "'\\%c' wants %d hexadecimal digits", c, digits);
        cp = cp << 4 | (uint32_t)h;
    }
    if (cp == 0) return fail_at(p, line, col, "\\u0000 is not allowed in a string");
    if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
        return fail_at(p, line, col, "U+%04X is not a Unicode scalar value", (unsigned)cp);
    char out[4];
    size_t len = pt_utf8_encode(cp, out);
    advance(p, 2 + (size_t)digits);
    return sbuf_add(b, out, len) ? PT_OK : pt_fail(p->err, PT_ERR_NOMEM, "out of memory");
}

/* A basic ("...") or literal ('...') string at the cursor into *out. */
static pt_status string(parser *p, char **out) {
    int quote = peek(p, 0);
    int line = p->line, col = p->col;
    if (peek(p, 1) == quote && peek(p, 2) == quote)
        return fail(p, "multi-line strings are not supported");
    advance(p, 1);
    sbuf b = {0};
    pt_status st = PT_OK;
    for (;;) {
        int c = peek(p, 0);
        if (at_eol(p)) {
            st = fail_at(p, line, col, "unterminated string");
            break;
        }
        if (c == quote) {
            advance(p, 1);
            break;
        }
        if (c == '\\' && quote == '"') {
            if ((st = escape(p, &b))) break;
            continue;
        }
        uint32_t cp;
        size_t len = char_at(p, &cp);
        if (!len) {
            st = PT_ERR_FORMAT;
            break;
        }
        if (is_control(cp)) {
            st = fail(p, "control character U+%04X in a string%s", (unsigned)cp,
                      quote == '"' ? " (write it as an escape)" : "");
            break;
        }
        if (!sbuf_add(&b, p->s + p->pos, len)) {
            st = pt_fail(p->err, PT_ERR_NOMEM, "out of memory");
            break;
        }
        advance(p, len);
    }
    if (st == PT_OK && !(*out = sbuf_take(&b))) st = pt_fail(p->err, PT_ERR_NOMEM, "out of memory");
    free(b.p);
    return st;
}

static bool is_bare(int c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
}

static pt_status key(parser *p, char **out) {
    int c = peek(p, 0);
    if (c == '"' || c == '\'') return string(p, out);
    if (!is_bare(c)) {
        char buf[16];
        return fail(p, "expected a key, found %s", found(p, buf, sizeof buf));
    }
    size_t start = p->pos;
    while (is_bare(peek(p, 0))) advance(p, 1);
    size_t n = p->pos - start;
    if (!(*out = malloc(n + 1))) return pt_fail(p->err, PT_ERR_NOMEM, "out of memory");
    memcpy(*out, p->s + start, n);
    (*out)[n] = 0;
    return PT_OK;
}

/* ---- numbers ----------------------------------------------------------- */

/* strtod in the C locale, whatever the program's (the app sets the
 * user's locale for ncursesw, and "1.5" must not depend on it). */
static double c_strtod(const char *s, char **end) {
    locale_t c = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    if (!c) return strtod(s, end);
    locale_t old = uselocale(c);
    double v = strtod(s, end);
    uselocale(old);
    freelocale(c);
    return v;
}

/* Digits with "_" only between two digits, appended to clean; false after
 * recording the error. */
static bool digits(parser *p, char *clean, size_t *n, size_t cap) {
    int c = peek(p, 0);
    if (c < '0' || c > '9') {
        char buf[16];
        fail(p, "expected a digit, found %s", found(p, buf, sizeof buf));
        return false;
    }
    for (;;) {
        c = peek(p, 0);
        if (c >= '0' && c <= '9') {
            if (*n + 1 >= cap) {
                fail(p, "number too long");
                return false;
            }
            clean[(*n)++] = (char)c;
            advance(p, 1);
        } else if (c == '_') {
            int next = peek(p, 1);
            if (next < '0' || next > '9') {
                fail(p, "'_' in a number must sit between two digits");
                return false;
            }
            advance(p, 1);
        } else {
            return true;
        }
    }
}

static pt_status number(parser *p, pt_toml_item *it) {
    int line = p->line, col = p->col;
    char clean[128];
    size_t n = 0;
    int c = peek(p, 0);
    if (c == '+' || c == '-') {
        clean[n++] = (char)c;
        advance(p, 1);
        c = peek(p, 0);
    }
    if (c == 'i' || c == 'n') return fail(p, "inf and nan are not supported");
    if (c == '0') {
        int next = peek(p, 1);
        if (next == 'x' || next == 'o' || next == 'b')
            return fail(p, "hexadecimal, octal and binary numbers are not supported");
        if ((next >= '0' && next <= '9') || next == '_') return fail(p, "leading zeros are not allowed");
    }
    /* room for ".", "e" and a sign after any digits, and the NUL */
    const size_t cap = sizeof clean - 4;
    if (!digits(p, clean, &n, cap)) return PT_ERR_FORMAT;
    bool is_float = false;
    if (peek(p, 0) == '.') {
        is_float = true;
        clean[n++] = '.';
        advance(p, 1);
        if (!digits(p, clean, &n, cap)) return PT_ERR_FORMAT;
    }
    c = peek(p, 0);
    if (c == 'e' || c == 'E') {
        is_float = true;
        clean[n++] = 'e';
        advance(p, 1);
        c = peek(p, 0);
        if (c == '+' || c == '-') {
            clean[n++] = (char)c;
            advance(p, 1);
        }
        if (!digits(p, clean, &n, cap)) return PT_ERR_FORMAT;
    }
    c = peek(p, 0);
    if (c == '-' || c == ':' || c == 'T') return fail(p, "dates and times are not supported");
    clean[n] = 0;
    char *end;
    errno = 0;
    if (is_float) {
        it->type = PT_TOML_FLOAT;
        it->f = c_strtod(clean, &end);
        if (errno == ERANGE && (it->f > 1.0 || it->f < -1.0))
            return fail_at(p, line, col, "float out of range");
    } else {
        it->type = PT_TOML_INT;
        long long v = strtoll(clean, &end, 10);
        if (errno == ERANGE) return fail_at(p, line, col, "integer out of range (64-bit)");
        it->i = v;
    }
    return PT_OK;
}

/* ---- values ------------------------------------------------------------ */

static pt_status array(parser *p, pt_toml_item *it) {
    advance(p, 1); /* [ */
    it->type = PT_TOML_ARRAY;
    for (;;) {
        if (skip_blank(p)) return PT_ERR_FORMAT;
        if (peek(p, 0) == ']') break;
        int c = peek(p, 0);
        if (c != '"' && c != '\'') {
            char buf[16];
            if (c < 0) return fail(p, "unterminated array");
            return fail(p, "arrays may hold only strings, found %s", found(p, buf, sizeof buf));
        }
        if (it->n_items == PT_TOML_MAX_ARRAY) return fail(p, "more than %d items in an array", PT_TOML_MAX_ARRAY);
        char **items = realloc(it->items, sizeof *items * (size_t)(it->n_items + 1));
        if (!items) return pt_fail(p->err, PT_ERR_NOMEM, "out of memory");
        it->items = items;
        if (string(p, &it->items[it->n_items])) return PT_ERR_FORMAT;
        it->n_items++;
        if (skip_blank(p)) return PT_ERR_FORMAT;
        c = peek(p, 0);
        if (c == ',') {
            advance(p, 1);
            continue;
        }
        if (c == ']') break;
        char buf[16];
        if (c < 0) return fail(p, "unterminated array");
        return fail(p, "expected ',' or ']' in the array, found %s", found(p, buf, sizeof buf));
    }
    advance(p, 1); /* ] */
    return PT_OK;
}

static bool match_word(parser *p, const char *w) {
    size_t n = strlen(w);
    if (p->n - p->pos < n || memcmp(p->s + p->pos, w, n) != 0) return false;
    if (is_bare(peek(p, n))) return false;
    advance(p, n);
    return true;
}

static pt_status value(parser *p, pt_toml_item *it) {
    int c = peek(p, 0);
    if (c == '"' || c == '\'') {
        it->type = PT_TOML_STRING;
        return string(p, &it->str);
    }
    if (c == '[') return array(p, it);
    if (c == '{') return fail(p, "inline tables are not supported");
    if (c == '+' || c == '-' || (c >= '0' && c <= '9')) return number(p, it);
    if (match_word(p, "true") || match_word(p, "false")) {
        it->type = PT_TOML_BOOL;
        it->b = p->s[p->pos - 2] == 'u'; /* tr(u)e, fal(s)e */
        return PT_OK;
    }
    if ((p->n - p->pos >= 3 && !memcmp(p->s + p->pos, "inf", 3)) ||
        (p->n - p->pos >= 3 && !memcmp(p->s + p->pos, "nan", 3)))
        return fail(p, "inf and nan are not supported");
    char buf[16];
    return fail(p, "expected a value (string, number, true/false or array), found %s",
                found(p, buf, sizeof buf));
}

/* ---- tables and keys --------------------------------------------------- */

/* Room for one more element in *arr (n used of *cap, doubling); the new
 * element is zeroed. False when out of memory. */
static bool grow(void **arr, int *cap, int n, size_t elem) {
    if (n < *cap) return true;
    int c = *cap ? *cap * 2 : 16;
    void *q = realloc(*arr, elem * (size_t)c);
    if (!q) return false;
    memset((char *)q + elem * (size_t)n, 0, elem * (size_t)(c - n));
    *arr = q;
    *cap = c;
    return true;
}

/* "a.\"b.c\"" for messages (parts that are not bare are quoted). */
static void table_name(const pt_toml_table *t, int n_parts, char *buf, size_t cap) {
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; i < n_parts && used + 1 < cap; i++) {
        const char *s = t->parts[i];
        bool bare = *s != 0;
        for (const char *q = s; *q; q++)
            if (!is_bare((unsigned char)*q)) bare = false;
        char esc[96];
        pt_escape_text(s, strlen(s), esc, sizeof esc);
        int w = snprintf(buf + used, cap - used, bare ? "%s%s" : "%s\"%s\"", i ? "." : "", esc);
        if (w < 0) break;
        used += (size_t)w;
        if (used >= cap) used = cap - 1;
    }
}

/* Do the first n parts of table a equal all of table b's parts? */
static bool same_path(const pt_toml_table *a, int n, const pt_toml_table *b) {
    if (b->n_parts != n) return false;
    for (int i = 0; i < n; i++)
        if (strcmp(a->parts[i], b->parts[i]) != 0) return false;
    return true;
}

/* The header at the cursor ("["): a new table, checked against earlier
 * tables and keys. */
static pt_status table(parser *p) {
    pt_toml_doc *d = p->doc;
    int line = p->line, col = p->col;
    if (peek(p, 1) == '[') return fail(p, "arrays of tables ([[...]]) are not supported");
    if (d->n_tables == PT_TOML_MAX_TABLES) return fail(p, "more than %d tables", PT_TOML_MAX_TABLES);
    if (!grow((void **)&d->tables, &p->cap_tables, d->n_tables, sizeof *d->tables))
        return pt_fail(p->err, PT_ERR_NOMEM, "out of memory");
    pt_toml_table *t = &d->tables[d->n_tables];
    memset(t, 0, sizeof *t);
    t->line = line;
    t->col = col;
    d->n_tables++; /* owned by the document from here on (freed with it) */
    advance(p, 1);
    for (;;) {
        skip_ws(p);
        if (t->n_parts == 64) return fail(p, "table name has more than 64 parts");
        char **parts = realloc(t->parts, sizeof *parts * (size_t)(t->n_parts + 1));
        if (!parts) return pt_fail(p->err, PT_ERR_NOMEM, "out of memory");
        t->parts = parts;
        if (key(p, &t->parts[t->n_parts])) return PT_ERR_FORMAT;
        t->n_parts++;
        skip_ws(p);
        int c = peek(p, 0);
        if (c == '.') {
            advance(p, 1);
            continue;
        }
        if (c == ']') break;
        char buf[16];
        return fail(p, "expected '.' or ']' in the table name, found %s", found(p, buf, sizeof buf));
    }
    advance(p, 1);
    char name[160];
    for (int i = 1; i < d->n_tables - 1; i++)
        if (same_path(t, t->n_parts, &d->tables[i])) {
            table_name(t, t->n_parts, name, sizeof name);
            return fail_at(p, line, col, "table [%s] is defined twice (first at line %d)", name,
                           d->tables[i].line);
        }
    /* [a.b.c] must not name a key: a = ..., or b = ... in [a], ... */
    for (int k = 1; k <= t->n_parts; k++)
        for (int i = 0; i < d->n_items; i++) {
            const pt_toml_item *it = &d->items[i];
            if (same_path(t, k - 1, &d->tables[it->table]) && strcmp(it->key, t->parts[k - 1]) == 0) {
                table_name(t, t->n_parts, name, sizeof name);
                return fail_at(p, line, col, "table [%s] clashes with the key at line %d", name, it->line);
            }
        }
    p->table = d->n_tables - 1;
    return PT_OK;
}

static pt_status keyval(parser *p) {
    pt_toml_doc *d = p->doc;
    int line = p->line, col = p->col;
    if (d->n_items == PT_TOML_MAX_ITEMS) return fail(p, "more than %d keys", PT_TOML_MAX_ITEMS);
    if (!grow((void **)&d->items, &p->cap_items, d->n_items, sizeof *d->items))
        return pt_fail(p->err, PT_ERR_NOMEM, "out of memory");
    pt_toml_item *it = &d->items[d->n_items];
    memset(it, 0, sizeof *it);
    it->table = p->table;
    it->line = line;
    it->col = col;
    if (key(p, &it->key)) return PT_ERR_FORMAT;
    d->n_items++; /* owned by the document from here on */
    skip_ws(p);
    if (peek(p, 0) == '.') return fail(p, "dotted keys are not supported (use a [table])");
    if (peek(p, 0) != '=') {
        char buf[16];
        return fail(p, "expected '=' after the key, found %s", found(p, buf, sizeof buf));
    }
    advance(p, 1);
    skip_ws(p);
    if (value(p, it)) return PT_ERR_FORMAT;
    char esc[96];
    const pt_toml_table *cur = &d->tables[p->table];
    for (int i = 0; i < d->n_items - 1; i++)
        if (d->items[i].table == p->table && strcmp(d->items[i].key, it->key) == 0)
            return fail_at(p, line, col, "duplicate key '%s' (first at line %d)",
                           shown(it->key, esc, sizeof esc), d->items[i].line);
    /* the key must not name a table already defined: [T.key] or [T.key.x] */
    for (int i = 1; i < d->n_tables; i++) {
        const pt_toml_table *t = &d->tables[i];
        if (t->n_parts > cur->n_parts && same_path(t, cur->n_parts, cur) &&
            strcmp(t->parts[cur->n_parts], it->key) == 0)
            return fail_at(p, line, col, "key '%s' clashes with the table at line %d",
                           shown(it->key, esc, sizeof esc), t->line);
    }
    return PT_OK;
}

/* ---- the document ------------------------------------------------------ */

pt_status pt_toml_parse(const char *text, size_t len, const char *name, pt_toml_doc *doc,
                        pt_error *err) {
    memset(doc, 0, sizeof *doc);
    parser p = {.s = text, .n = len, .line = 1, .col = 1, .name = name ? name : "toml", .err = err,
                .doc = doc};
    if (!grow((void **)&doc->tables, &p.cap_tables, 0, sizeof *doc->tables))
        return pt_fail(err, PT_ERR_NOMEM, "out of memory reading %s", p.name);
    doc->n_tables = 1; /* the root */
    pt_status st = PT_OK;
    /* a UTF-8 byte order mark is allowed at the very start */
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) p.pos = 3;
    while (p.pos < p.n) {
        skip_ws(&p);
        int c = peek(&p, 0);
        if (c == '[') st = table(&p);
        else if (c >= 0 && c != '#' && c != '\n' && c != '\r') st = keyval(&p);
        if (st) break;
        skip_ws(&p);
        if (peek(&p, 0) == '#' && (st = comment(&p))) break;
        if (!at_eol(&p)) {
            char buf[16];
            st = fail(&p, "expected the end of the line, found %s", found(&p, buf, sizeof buf));
            break;
        }
        if ((st = newline(&p))) break;
    }
    if (st) pt_toml_free(doc);
    return st;
}

void pt_toml_free(pt_toml_doc *doc) {
    for (int i = 0; doc->tables && i < doc->n_tables; i++) {
        for (int k = 0; k < doc->tables[i].n_parts; k++) free(doc->tables[i].parts[k]);
        free(doc->tables[i].parts);
    }
    for (int i = 0; doc->items && i < doc->n_items; i++) {
        pt_toml_item *it = &doc->items[i];
        free(it->key);
        free(it->str);
        for (int k = 0; k < it->n_items; k++) free(it->items[k]);
        free(it->items);
    }
    free(doc->tables);
    free(doc->items);
    memset(doc, 0, sizeof *doc);
}
