/* models_rows.c — the Models screen's rows and hints (see models_rows.h). */
#include "models_rows.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

/* ---- fits in RAM ---- */

pt_fit pt_fit_hint(uint64_t bytes, uint64_t avail) {
    if (bytes == 0 || avail == 0) return PT_FIT_UNKNOWN;
    if (bytes > avail) return PT_FIT_NO;
    if (bytes + bytes / 4 > avail) return PT_FIT_TIGHT;
    return PT_FIT_YES;
}

const char *pt_fit_name(pt_fit f) {
    switch (f) {
    case PT_FIT_YES: return "fits";
    case PT_FIT_TIGHT: return "tight";
    case PT_FIT_NO: return "too big";
    case PT_FIT_UNKNOWN: break;
    }
    return "?";
}

uint64_t pt_meminfo_available(const char *text, size_t len) {
    static const char key[] = "MemAvailable:";
    const size_t klen = sizeof key - 1;
    size_t i = 0;
    while (i < len) {
        size_t e = i;
        while (e < len && text[e] != '\n') e++;
        if (e - i > klen && memcmp(text + i, key, klen) == 0) {
            /* "MemAvailable:    1234567 kB" */
            size_t p = i + klen;
            while (p < e && text[p] == ' ') p++;
            uint64_t v = 0;
            int digits = 0;
            while (p < e && isdigit((unsigned char)text[p]) && digits < 19) v = v * 10 + (uint64_t)(text[p++] - '0'), digits++;
            if (!digits) return 0;
            while (p < e && text[p] == ' ') p++;
            if (e - p >= 2 && (text[p] == 'k' || text[p] == 'K') && text[p + 1] == 'B')
                return v <= UINT64_MAX / 1024 ? v * 1024 : 0;
            return v;   /* no unit: bytes */
        }
        i = e + 1;
    }
    return 0;
}

uint64_t pt_mem_available(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    return pt_meminfo_available(buf, n);
}

/* ---- catalog entries on disk ---- */

static bool file_size(const char *path, uint64_t *bytes) {
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return false;
    if (bytes) *bytes = (uint64_t)st.st_size;
    return true;
}

pt_cat_state pt_cat_state_of(const pt_catalog_entry *e, const char *models_dir, uint64_t *part_bytes) {
    if (part_bytes) *part_bytes = 0;
    if (e->source && strcmp(e->source, "bundled") == 0) return PT_CAT_BUNDLED;
    char path[4600];
    int n = snprintf(path, sizeof path, "%s/%s", models_dir, e->local_name);
    if (n < 0 || (size_t)n >= sizeof path - 8) return PT_CAT_ABSENT;
    if (file_size(path, NULL)) return PT_CAT_INSTALLED;
    strcat(path, ".part");
    if (file_size(path, part_bytes)) return PT_CAT_PARTIAL;
    return PT_CAT_ABSENT;
}

uint64_t pt_cat_bytes(const pt_catalog_entry *e, bool *approx) {
    *approx = false;
    if (e->size) return e->size;
    *approx = e->approx_mb > 0;
    return e->approx_mb * 1000000ull;
}

/* ---- rows ---- */

static bool push(pt_mrows *r, pt_mrow row) {
    if (r->n == r->cap) {
        int cap = r->cap ? r->cap * 2 : 32;
        pt_mrow *it = realloc(r->items, sizeof *it * (size_t)cap);
        if (!it) return false;
        r->items = it;
        r->cap = cap;
    }
    r->items[r->n++] = row;
    return true;
}

bool pt_mrows_build(pt_mrows *r, const pt_model_list *l, const pt_catalog *c, const char *models_dir) {
    r->n = 0;
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/", models_dir);
    size_t dlen = strlen(dir);
    bool ok = push(r, (pt_mrow){.kind = PT_MROW_HEADER, .index = 0, .catalog = -1});
    for (int i = 0; ok && i < l->n; i++) {
        pt_mrow row = {.kind = PT_MROW_LOCAL, .index = i, .catalog = -1};
        const pt_model_entry *m = &l->items[i];
        /* only a file in the models folder is a catalog entry's download */
        if (c && strncmp(m->path, dir, dlen) == 0 && !strchr(m->path + dlen, '/')) {
            const pt_catalog_entry *e = pt_catalog_find_local(c, m->name);
            for (int k = 0; e && k < pt_catalog_count(c); k++)
                if (pt_catalog_get(c, k) == e) row.catalog = k;
        }
        ok = push(r, row);
    }
    if (!c) return ok;
    ok = ok && push(r, (pt_mrow){.kind = PT_MROW_HEADER, .index = 1, .catalog = -1});
    for (int i = 0; ok && i < pt_catalog_count(c); i++) {
        pt_mrow row = {.kind = PT_MROW_CATALOG, .index = i, .catalog = i};
        row.state = pt_cat_state_of(pt_catalog_get(c, i), models_dir, &row.part_bytes);
        ok = push(r, row);
    }
    return ok;
}

void pt_mrows_free(pt_mrows *r) {
    free(r->items);
    memset(r, 0, sizeof *r);
}

int pt_mrows_select(const pt_mrows *r, int i, int dir) {
    if (r->n == 0) return -1;
    if (i < 0) i = 0;
    if (i >= r->n) i = r->n - 1;
    if (dir == 0) {
        if (r->items[i].kind != PT_MROW_HEADER) return i;
        dir = 1;
    } else {
        i += dir;
    }
    for (; i >= 0 && i < r->n; i += dir)
        if (r->items[i].kind != PT_MROW_HEADER) return i;
    return -1;
}

/* ---- the quantize form ---- */

const char *const pt_quant_types[] = {"Q4_K_M", "Q4_0", "Q4_1", "Q5_K_M", "Q5_0", "Q5_1",
                                      "Q6_K",   "Q8_0", "F16",  "BF16",   "Q4_K_S", "Q5_K_S"};
const int pt_n_quant_types = (int)(sizeof pt_quant_types / sizeof pt_quant_types[0]);

/* Quantization tags as they appear in file names, longest first so that
 * "Q4_K_M" wins over "Q4_K". */
static const char *const name_tags[] = {
    "Q4_K_M", "Q4_K_S", "Q5_K_M", "Q5_K_S", "Q3_K_M", "Q3_K_S", "Q3_K_L", "Q2_K_S",
    "BF16", "Q8_0", "Q6_K", "Q5_K", "Q5_1", "Q5_0", "Q4_K", "Q4_1", "Q4_0", "Q3_K", "Q2_K", "F32", "F16",
};

static bool is_sep(char c) { return c == '.' || c == '-' || c == '_'; }

void pt_quant_out_name(const char *name, const char *type, char *out, size_t cap) {
    size_t n = strlen(name);
    size_t stem = n;
    if (n > 5 && strcasecmp(name + n - 5, ".gguf") == 0) stem = n - 5;
    /* the last tag that stands on its own: after a separator (or at the
     * start), before a separator other than '_' (or the end of the stem) */
    size_t best_at = 0, best_len = 0;
    bool found = false;
    for (size_t p = 0; p < stem; p++) {
        if (p > 0 && !is_sep(name[p - 1])) continue;
        for (size_t t = 0; t < sizeof name_tags / sizeof name_tags[0]; t++) {
            size_t tl = strlen(name_tags[t]);
            if (p + tl > stem || strncasecmp(name + p, name_tags[t], tl) != 0) continue;
            char after = p + tl < stem ? name[p + tl] : 0;
            if (after && (!is_sep(after) || after == '_')) continue;
            best_at = p;
            best_len = tl;
            found = true;
            break;
        }
    }
    if (!found) {
        snprintf(out, cap, "%.*s.%s.gguf", (int)stem, name, type);
        return;
    }
    /* the tag's case: lower when its first letter was */
    char t[32];
    snprintf(t, sizeof t, "%s", type);
    if (islower((unsigned char)name[best_at]))
        for (char *q = t; *q; q++) *q = (char)tolower((unsigned char)*q);
    snprintf(out, cap, "%.*s%s%s", (int)best_at, name, t, name + best_at + best_len);
    if (stem == n) {   /* no .gguf at the end: add it */
        size_t k = strlen(out);
        if (k + 6 <= cap) memcpy(out + k, ".gguf", 6);
    }
}

const char *pt_out_name_problem(const char *name) {
    size_t n = strlen(name);
    if (n == 0) return "give the new file a name";
    if (strchr(name, '/')) return "a file name, not a path: it goes into the models folder";
    if (name[0] == '.') return "a name may not start with '.'";
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f) return "a name may not hold control characters";
    if (n > 200) return "the name is longer than 200 bytes";
    if (n < 6 || strcmp(name + n - 5, ".gguf") != 0) return "the name must end in .gguf";
    return NULL;
}

void pt_fmt_eta(double s, char *buf, size_t cap) {
    if (!(s >= 0) || s > 99.0 * 3600) {
        snprintf(buf, cap, "?");
        return;
    }
    long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(buf, cap, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else snprintf(buf, cap, "%ld:%02ld", t / 60, t % 60);
}
