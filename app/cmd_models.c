/*
 * cmd_models.c — petrel list (the models in DATA_DIR/models) and petrel rm
 * NAME (delete one, with its partial download and its last-used stamp).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "catalog.h"
#include "commands.h"
#include "paths.h"

static bool ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), k = strlen(tail);
    return n >= k && !strcmp(s + n - k, tail);
}

static void human(double bytes, char *buf, size_t cap) {
    if (bytes >= 1024.0 * 1048576.0) snprintf(buf, cap, "%.2f GiB", bytes / (1024.0 * 1048576.0));
    else snprintf(buf, cap, "%.1f MiB", bytes / 1048576.0);
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The file names in dir worth listing (not hidden, not a .part's sidecar),
 * sorted; *n of them, malloc'd. */
static char **scan(const char *dir, int *n) {
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) return NULL;
    char **names = NULL;
    int cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.' || ends_with(de->d_name, ".part.meta")) continue;
        char path[8300];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            char **more = realloc(names, sizeof *names * (size_t)cap);
            if (!more) break;
            names = more;
        }
        if (!(names[*n] = strdup(de->d_name))) break;
        (*n)++;
    }
    closedir(d);
    if (*n > 1) qsort(names, (size_t)*n, sizeof *names, by_name);
    return names;
}

/* petrel list --catalog: what petrel pull NAME can fetch. */
static int list_catalog(const pt_catalog *c, const char *dir) {
    printf("%-28s %-6s %9s  %-8s %-10s %s\n", "NAME", "TYPE", "SIZE", "QUANT", "HERE", "TITLE (LICENSE)");
    for (int i = 0; i < pt_catalog_count(c); i++) {
        const pt_catalog_entry *e = pt_catalog_get(c, i);
        char id[120], title[200], license[120], size[32] = "?", path[8300];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, e->local_name);
        const char *here = !strcmp(e->source, "bundled") ? "bundled"
                         : stat(path, &st) == 0          ? "pulled"
                         : (strcat(path, ".part"), stat(path, &st) == 0) ? "partial"
                                                                           : "-";
        if (e->size) human((double)e->size, size, sizeof size);
        else if (e->approx_mb) snprintf(size, sizeof size, "~%llu MB", (unsigned long long)e->approx_mb);
        printf("%-28s %-6s %9s  %-8s %-10s %s (%s)\n", app_escaped(e->id, id, sizeof id),
               e->kind == PT_MODEL_KIND_IMAGE ? "image" : "LLM", size, e->quant ? e->quant : "-", here,
               app_escaped(e->title ? e->title : e->id, title, sizeof title),
               app_escaped(e->license ? e->license : "license not given", license, sizeof license));
    }
    return 0;
}

int cmd_list(int argc, char **argv) {
    bool catalog = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            puts("usage: petrel list [--catalog]\n"
                 "  the models in the data directory's models/ folder: catalog name, file, size,\n"
                 "  type (LLM or image), quantization (from the GGUF header) and last use;\n"
                 "  unfinished downloads show as partial (petrel pull NAME resumes them)\n"
                 "  --catalog  the models petrel pull NAME can fetch instead");
            return 0;
        }
        if (!strcmp(argv[i], "--catalog")) {
            catalog = true;
            continue;
        }
        app_error("list: unknown argument '%s'", argv[i]);
        return 2;
    }
    char dir[4096], why[512];
    if (!pt_app_models_dir(dir, sizeof dir, why, sizeof why)) {
        app_error("%s", why);
        return 1;
    }
    pt_catalog *c = app_catalog_load();
    if (!c) return 1;
    if (catalog) {
        int rc = list_catalog(c, dir);
        pt_catalog_free(c);
        return rc;
    }
    int n = 0;
    char **names = scan(dir, &n);
    if (n == 0) {
        printf("no models in %s (petrel pull NAME fetches one)\n", dir);
        pt_catalog_free(c);
        free(names);
        return 0;
    }
    printf("%-28s %-44s %10s  %-7s %-8s %s\n", "NAME", "FILE", "SIZE", "TYPE", "QUANT", "LAST USED");
    for (int i = 0; i < n; i++) {
        char path[8300], size[32], file[200], id[120] = "-", used[32] = "never";
        const char *type = "?", *quant = "-";
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        struct stat st;
        if (stat(path, &st) != 0) continue;
        human((double)st.st_size, size, sizeof size);
        bool partial = ends_with(names[i], ".part");
        char base[512];
        snprintf(base, sizeof base, "%s", names[i]);
        if (partial) base[strlen(base) - 5] = 0;
        const pt_catalog_entry *e = pt_catalog_find_local(c, base);
        if (e) app_escaped(e->id, id, sizeof id);
        pt_file_probe probe;
        pt_error err = {0};
        if (partial) {
            type = "partial";
        } else if (ends_with(names[i], ".gguf") && pt_file_probe_gguf(path, &probe, &err) == PT_OK) {
            type = probe.kind == PT_MODEL_KIND_IMAGE ? "image" : "LLM";
            quant = probe.ftype;
        } else if (ends_with(names[i], ".gguf")) {
            type = "bad";   /* not a readable GGUF: err says why */
        } else if (e) {
            type = e->kind == PT_MODEL_KIND_IMAGE ? "image" : "LLM";
        }
        long long t = partial ? 0 : app_last_used(dir, names[i]);
        if (t) {
            time_t tt = (time_t)t;
            struct tm tm;
            localtime_r(&tt, &tm);
            strftime(used, sizeof used, "%Y-%m-%d %H:%M", &tm);
        } else if (partial) {
            snprintf(used, sizeof used, "-");
        }
        printf("%-28s %-44s %10s  %-7s %-8s %s\n", id, app_escaped(names[i], file, sizeof file), size, type, quant,
               used);
        free(names[i]);
    }
    free(names);
    pt_catalog_free(c);
    return 0;
}

/* Remove path when it exists; adds its size to *bytes; false on a real error. */
static bool remove_file(const char *path, uint64_t *bytes, bool *any) {
    struct stat st;
    if (lstat(path, &st) != 0) return true;
    if (unlink(path) != 0) {
        app_error("rm: cannot remove %s: %s", path, strerror(errno));
        return false;
    }
    *bytes += (uint64_t)st.st_size;
    *any = true;
    return true;
}

int cmd_rm(int argc, char **argv) {
    const char *what = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            puts("usage: petrel rm NAME\n"
                 "  delete a model from the data directory's models/ folder: NAME is a catalog\n"
                 "  name or a file name there (as petrel list shows); its partial download too.\n"
                 "  It asks nothing. Files elsewhere are not petrel's to delete.");
            return 0;
        }
        if (argv[i][0] == '-' || what) {
            app_error("rm: one model name, no options (see petrel rm --help)");
            return 2;
        }
        what = argv[i];
    }
    if (!what) {
        app_error("rm: which model? (petrel list shows them)");
        return 2;
    }
    char shown[300];
    app_escaped(what, shown, sizeof shown);
    char dir[4096], why[512];
    if (!pt_app_models_dir(dir, sizeof dir, why, sizeof why)) {
        app_error("%s", why);
        return 1;
    }
    if (strchr(what, '/') || what[0] == '.' || !*what) {
        app_error("rm: '%s' is not a model name: petrel rm deletes only from %s", shown, dir);
        return 1;
    }
    /* a catalog name, else a file name (with or without .gguf) */
    char file[512] = "";
    pt_catalog *c = app_catalog_load();
    if (!c) return 1;
    const pt_catalog_entry *e = pt_catalog_find(c, what);
    if (e && strcmp(e->source, "bundled") != 0) snprintf(file, sizeof file, "%s", e->local_name);
    pt_catalog_free(c);
    if (e && !file[0]) {
        app_error("rm: %s is bundled with petrel, not in %s", shown, dir);
        return 1;
    }
    char path[8300];
    struct stat st;
    if (!file[0]) {
        snprintf(file, sizeof file, "%s", what);
        snprintf(path, sizeof path, "%s/%s", dir, file);
        char part[8400];
        snprintf(part, sizeof part, "%s.part", path);
        if (stat(path, &st) != 0 && stat(part, &st) != 0 && strlen(what) < sizeof file - 5)
            snprintf(file, sizeof file, "%s.gguf", what);
    }
    snprintf(path, sizeof path, "%s/%s", dir, file);
    char part[8400], meta[8400], stamp[8400];
    snprintf(part, sizeof part, "%s.part", path);
    snprintf(meta, sizeof meta, "%s.part.meta", path);
    snprintf(stamp, sizeof stamp, "%s/.used/%s", dir, file);
    uint64_t bytes = 0, part_bytes = 0;
    bool whole = false, partial = false, ignored = false;
    if (!remove_file(path, &bytes, &whole) || !remove_file(part, &part_bytes, &partial) ||
        !remove_file(meta, &part_bytes, &ignored))
        return 1;
    remove_file(stamp, &part_bytes, &ignored);
    if (!whole && !partial) {
        app_error("rm: no model '%s' in %s (petrel list shows them)", shown, dir);
        return 1;
    }
    char size[32], esc[8400];
    human((double)(bytes + part_bytes), size, sizeof size);
    app_escaped(whole ? path : part, esc, sizeof esc);
    printf("removed %s%s (%s)\n", whole ? "" : "the partial download ", esc, size);
    return 0;
}
