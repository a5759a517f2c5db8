/*
 * sd_weights.c — opening an image model from whichever source `path` is
 * (sd_weights.h), the canonical tensor table, lookups, and giving pages
 * back. The loaders fill the table in any order; sd_weights_open sorts
 * it once and rejects duplicate names, so lookups are binary searches.
 */
#include "sd_weights_impl.h"

#include "mapfile.h"
#include "quant.h"
#include "status.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

bool sd_is_dir(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

bool sd_is_file(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

pt_status sd_join(char *buf, size_t cap, const char *dir, const char *name, pt_error *err) {
    int n = snprintf(buf, cap, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= cap)
        return pt_fail(err, PT_ERR_ARG, "path too long: '%s/%s'", dir, name);
    return PT_OK;
}

pt_status sd_read_text(const char *path, char **out, size_t *len, pt_error *err) {
    const uint8_t *map;
    uint64_t size;
    *out = NULL;
    pt_status st = pt_map_file(path, "text", &map, &size, err);
    if (st) return st;
    char *buf = malloc((size_t)size + 1);
    if (!buf) {
        munmap((void *)map, (size_t)size);
        return pt_fail(err, PT_ERR_NOMEM, "%s: out of memory (%" PRIu64 " bytes)", path, size);
    }
    memcpy(buf, map, (size_t)size);
    buf[size] = 0;
    munmap((void *)map, (size_t)size);
    *out = buf;
    if (len) *len = (size_t)size;
    return PT_OK;
}

pt_status sd_w_keep(sd_weights *w, st_file *f, pt_error *err) {
    if (w->n_files == SD_MAX_FILES) {
        pt_status st = pt_fail(err, PT_ERR_UNSUPPORTED, "%s: more than %d weight files", f->name,
                               SD_MAX_FILES);
        st_close(f);
        return st;
    }
    w->files[w->n_files++] = f;
    return PT_OK;
}

pt_status sd_w_add(sd_weights *w, const char *name, const sd_tensor *t, pt_error *err) {
    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 256;
        sd_entry *e = realloc(w->e, cap * sizeof *e);
        if (!e) return pt_fail(err, PT_ERR_NOMEM, "out of memory for the tensor table");
        w->e = e;
        w->cap = cap;
    }
    char *copy = strdup(name);
    if (!copy) return pt_fail(err, PT_ERR_NOMEM, "out of memory for the tensor table");
    w->e[w->n].name = copy;
    w->e[w->n].t = *t;
    w->n++;
    return PT_OK;
}

void sd_tensor_from_st(const st_tensor *t, sd_tensor *out) {
    memset(out, 0, sizeof *out);
    out->type = st_dtype_pt_type(t->dtype);
    out->n_dims = t->n_dims;
    for (int i = 0; i < 4; i++) out->shape[i] = t->shape[i];
    out->layout = SD_LAYOUT_TORCH;
    out->data = t->data;
    out->nbytes = t->nbytes;
}

pt_status sd_w_add_st(sd_weights *w, const char *name, const st_file *f, const st_tensor *t,
                      pt_error *err) {
    if (st_dtype_pt_type(t->dtype) == UINT32_MAX)
        return pt_fail(err, PT_ERR_UNSUPPORTED,
                       "%s: tensor '%s' has dtype %s (image weights are F32, F16 or BF16)", f->name,
                       t->name, st_dtype_name(t->dtype));
    if (t->n_dims == 0)
        return pt_fail(err, PT_ERR_FORMAT, "%s: tensor '%s' is a scalar, not a weight", f->name,
                       t->name);
    sd_tensor s;
    sd_tensor_from_st(t, &s);
    return sd_w_add(w, name, &s, err);
}

static int entry_cmp(const void *a, const void *b) {
    return strcmp(((const sd_entry *)a)->name, ((const sd_entry *)b)->name);
}

const sd_entry *sd_w_find(const sd_weights *w, const char *name) {
    size_t lo = 0, hi = w->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int r = strcmp(w->e[mid].name, name);
        if (r == 0) return &w->e[mid];
        if (r < 0) lo = mid + 1; else hi = mid;
    }
    return NULL;
}

pt_status sd_load_tokenizer(sd_weights *w, const char *dir, pt_error *err) {
    char p[4096];
    char *vocab = NULL, *merges = NULL;
    size_t vl = 0, ml = 0;
    pt_status st;
    if ((st = sd_join(p, sizeof p, dir, "vocab.json", err)) ||
        (st = sd_read_text(p, &vocab, &vl, err)))
        return st;
    if ((st = sd_join(p, sizeof p, dir, "merges.txt", err)) ||
        (st = sd_read_text(p, &merges, &ml, err))) {
        free(vocab);
        return st;
    }
    free(w->vocab);
    free(w->merges);
    w->vocab = vocab;
    w->vocab_len = vl;
    w->merges = merges;
    w->merges_len = ml;
    return PT_OK;
}

/* Which source a non-directory path is: the first bytes decide. */
static bool is_gguf_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    char magic[4] = {0};
    size_t got = fread(magic, 1, 4, f);
    fclose(f);
    return got == 4 && memcmp(magic, "GGUF", 4) == 0;
}

pt_status sd_weights_open(const char *path, const char *taesd_path, const char *tokenizer_path,
                          sd_weights **out, pt_error *err) {
    if (!out || !path) return pt_fail(err, PT_ERR_ARG, "image model: no path given");
    *out = NULL;
    sd_weights *w = calloc(1, sizeof *w);
    if (!w) return pt_fail(err, PT_ERR_NOMEM, "out of memory");
    sd_config_defaults(&w->cfg);
    pt_status st;
    /* A FIFO or a device is refused by the readers' own open (mapfile.c)
     * before anything is read; is_gguf_file only peeks at regular files. */
    if (sd_is_dir(path)) st = sd_load_diffusers(w, path, err);
    else if (sd_is_file(path) && is_gguf_file(path)) st = sd_load_gguf(w, path, err);
    else st = sd_load_ldm(w, path, err);
    if (!st && taesd_path) {
        /* a TAESD given explicitly replaces one inside the model (GGUF) */
        size_t k = 0;
        for (size_t i = 0; i < w->n; i++) {
            if (strncmp(w->e[i].name, "taesd.", 6) == 0) free(w->e[i].name);
            else w->e[k++] = w->e[i];
        }
        w->n = k;
        st = sd_load_taesd(w, taesd_path, err);
    }
    if (!st && tokenizer_path) st = sd_load_tokenizer(w, tokenizer_path, err);
    /* a tokenizer given for a file that has none: its special ids */
    if (!st && tokenizer_path) sd_clip_ids_from_vocab(w->vocab, NULL, &w->cfg.clip);
    if (!st) {
        if (w->n) qsort(w->e, w->n, sizeof *w->e, entry_cmp);
        for (size_t i = 1; i < w->n && !st; i++)
            if (strcmp(w->e[i - 1].name, w->e[i].name) == 0)
                st = pt_fail(err, PT_ERR_FORMAT, "%s: tensor '%s' is given twice", path,
                             w->e[i].name);
    }
    if (!st) st = sd_config_validate(&w->cfg, path, err);
    if (!st) {
        /* levels past n_levels hold zeros, whatever the source's defaults */
        sd_unet_config *u = &w->cfg.unet;
        for (int i = u->n_levels; i < SD_MAX_LEVELS; i++) {
            u->channels[i] = u->heads[i] = u->transformer_depth[i] = 0;
            u->cross_attn[i] = false;
        }
        for (int i = w->cfg.vae.n_levels; i < SD_MAX_LEVELS; i++) w->cfg.vae.channels[i] = 0;
    }
    if (st) {
        sd_weights_close(w);
        return st;
    }
    *out = w;
    return PT_OK;
}

void sd_weights_close(sd_weights *w) {
    if (!w) return;
    for (size_t i = 0; i < w->n; i++) free(w->e[i].name);
    free(w->e);
    for (int i = 0; i < w->n_files; i++) st_close(w->files[i]);
    pt_gguf_close(w->gguf);
    free(w->vocab);
    free(w->merges);
    free(w);
}

const sd_model_config *sd_weights_config(const sd_weights *w) { return &w->cfg; }

bool sd_weights_get(const sd_weights *w, const char *name, sd_tensor *out) {
    const sd_entry *e = sd_w_find(w, name);
    if (!e) return false;
    if (out) *out = e->t;
    return true;
}

/* "[a, b, c]" into buf. */
static void fmt_shape(char *buf, size_t cap, int n, const int64_t *s) {
    size_t o = 0;
    o += (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < n && o < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%" PRId64, i ? ", " : "", s[i]);
    if (o < cap) snprintf(buf + o, cap - o, "]");
}

pt_status sd_weights_need(const sd_weights *w, const char *name, int n_dims, const int64_t *want,
                          sd_tensor *out, pt_error *err) {
    const sd_entry *e = sd_w_find(w, name);
    if (!e) return pt_fail(err, PT_ERR_FORMAT, "image model: missing tensor '%s'", name);
    if (want) {
        bool ok = e->t.n_dims == n_dims;
        for (int i = 0; ok && i < n_dims; i++) ok = e->t.shape[i] == want[i];
        if (!ok) {
            char have[96], exp[96];
            fmt_shape(have, sizeof have, e->t.n_dims, e->t.shape);
            fmt_shape(exp, sizeof exp, n_dims, want);
            return pt_fail(err, PT_ERR_FORMAT, "image model: tensor '%s' has shape %s, expected %s",
                           name, have, exp);
        }
    }
    if (out) *out = e->t;
    return PT_OK;
}

const char *sd_weights_vocab_json(const sd_weights *w, size_t *len) {
    if (len) *len = w->vocab ? w->vocab_len : 0;
    return w->vocab;
}

const char *sd_weights_merges(const sd_weights *w, size_t *len) {
    if (len) *len = w->merges ? w->merges_len : 0;
    return w->merges;
}

void sd_weights_release(const sd_weights *w, const char *prefix) {
    size_t plen = strlen(prefix);
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    for (size_t i = 0; i < w->n; i++) {
        const sd_entry *e = &w->e[i];
        if (strncmp(e->name, prefix, plen) != 0 || !e->t.nbytes) continue;
        /* Rounded out to whole pages: every source is a read-only private
         * file mapping whose start is page-aligned and whose last page is
         * mapped whole, so the range stays inside it; a neighbour's pages
         * dropped with it simply fault back in from the file. */
        uintptr_t a = (uintptr_t)e->t.data & ~(page - 1);
        uintptr_t b = ((uintptr_t)e->t.data + (uintptr_t)e->t.nbytes + page - 1) & ~(page - 1);
        madvise((void *)a, (size_t)(b - a), MADV_DONTNEED);
    }
}

uint64_t sd_weights_bytes(const sd_weights *w, const char *prefix) {
    size_t plen = strlen(prefix);
    uint64_t sum = 0;
    for (size_t i = 0; i < w->n; i++)
        if (strncmp(w->e[i].name, prefix, plen) == 0) sum += w->e[i].t.nbytes;
    return sum;
}
