/* models.c — local model listing (see models.h). */
#include "models.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void pt_models_free(pt_model_list *l) {
    free(l->items);
    memset(l, 0, sizeof *l);
}

pt_model_entry *pt_models_find(pt_model_list *l, const char *path) {
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->items[i].path, path) == 0) return &l->items[i];
    return NULL;
}

static void add(pt_model_list *l, const pt_model_list *old, const char *path) {
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return;
    if (pt_models_find(l, path)) return;
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 16;
        pt_model_entry *it = realloc(l->items, sizeof *it * (size_t)cap);
        if (!it) return;
        l->items = it;
        l->cap = cap;
    }
    pt_model_entry *e = &l->items[l->n++];
    memset(e, 0, sizeof *e);
    snprintf(e->path, sizeof e->path, "%s", path);
    const char *slash = strrchr(path, '/');
    snprintf(e->name, sizeof e->name, "%s", slash ? slash + 1 : path);
    e->bytes = (uint64_t)st.st_size;
    for (int i = 0; old && i < old->n; i++) {
        const pt_model_entry *o = &old->items[i];
        if (strcmp(o->path, path) == 0 && o->bytes == e->bytes) {
            e->probed = o->probed; e->probe_sent = o->probe_sent; e->bad = o->bad;
            memcpy(e->error, o->error, sizeof e->error);
            e->card = o->card;
        }
    }
}

static bool has_gguf_ext(const char *name) {
    size_t n = strlen(name);
    return n > 5 && strcmp(name + n - 5, ".gguf") == 0;
}

static int by_name(const void *a, const void *b) {
    return strcmp(((const pt_model_entry *)a)->name, ((const pt_model_entry *)b)->name);
}

void pt_models_scan(pt_model_list *l, const char *data_dir, const char *extra) {
    pt_model_list old = *l;
    memset(l, 0, sizeof *l);
    char dir[4200];
    snprintf(dir, sizeof dir, "%.4000s/models", data_dir);
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d))) {
            if (de->d_name[0] == '.' || !has_gguf_ext(de->d_name)) continue;
            char path[4600];
            snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
            add(l, &old, path);
        }
        closedir(d);
    }
    if (l->n > 1) qsort(l->items, (size_t)l->n, sizeof *l->items, by_name);
    if (extra && *extra) add(l, &old, extra);
    free(old.items);
}

const char *pt_models_resolve(pt_model_list *l, const char *arg, char *buf, size_t cap) {
    if (!arg || !*arg) return NULL;
    char *end;
    long idx = strtol(arg, &end, 10);
    if (*end == 0 && idx >= 1 && idx <= l->n) {
        snprintf(buf, cap, "%s", l->items[idx - 1].path);
        return buf;
    }
    for (int i = 0; i < l->n; i++) {
        const char *nm = l->items[i].name;
        size_t an = strlen(arg);
        if (strcmp(nm, arg) == 0 || (strncmp(nm, arg, an) == 0 && strcmp(nm + an, ".gguf") == 0)) {
            snprintf(buf, cap, "%s", l->items[i].path);
            return buf;
        }
    }
    int hit = -1, hits = 0;
    for (int i = 0; i < l->n; i++)
        if (strncmp(l->items[i].name, arg, strlen(arg)) == 0) { hit = i; hits++; }
    if (hits == 1) {
        snprintf(buf, cap, "%s", l->items[hit].path);
        return buf;
    }
    if (strchr(arg, '/') && access(arg, R_OK) == 0) {
        snprintf(buf, cap, "%s", arg);
        return buf;
    }
    return NULL;
}
