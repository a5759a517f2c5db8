/*
 * kv_spill.c — the KV cache's spill file and its reader thread
 * (kv_cache.h).
 *
 * The file is private: opened with O_TMPFILE (no name ever exists), or
 * where the file system lacks it made by mkstemp and unlinked at once;
 * mode 0600 either way, so nothing is left behind on any exit. Page
 * (l, i) lives at byte (l * n_pages + i) * page_bytes.
 *
 * The reader thread reads ahead the pages of the layer the forward pass
 * will need next (pt_kv_spill_want), then of the layers after it while
 * the budget has room: it takes a DISK page of such a layer,
 * marks it LOADING (counting its bytes as held), reads it without the
 * lock, then makes it RAM and wakes whoever waits. It never touches a RAM
 * page, so the forward pass's thread may write back, free and read RAM
 * pages without the lock; every state change happens under the lock.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* O_TMPFILE */
#endif
#include "kv_cache.h"

#include "status.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct pt_kv_spill {
    int fd;
    char *dir;              /* for messages */
    pthread_t thread;
    bool started;
    pthread_mutex_t lock;
    pthread_cond_t changed; /* a page left LOADING */
    pthread_cond_t wake;    /* a new request, or quit */
    int want_layer, want_pages; /* the reader's request (layer < 0: none) */
    bool quit;
    bool failed;            /* a write failed: spilling stopped */
};

static void *reader_main(void *arg) {
    pt_kv_cache *kv = arg;
    struct pt_kv_spill *s = kv->spill;
    pthread_mutex_lock(&s->lock);
    while (!s->quit) {
        /* the wanted layer first, whatever the budget; then the layers
         * after it while the RAM held stays within max(budget, a layer)
         * + a layer (the stated bound: kv_cache.h), never the layer in
         * use (want_layer - 1). pt_kv_begin_layer brings the RAM back to
         * the budget by evicting the layer just used, which makes room
         * for the next layer at the far end: a sliding window. */
        const uint64_t layer = (uint64_t)s->want_pages * kv->page_bytes;
        const uint64_t limit = (kv->budget > layer ? kv->budget : layer) + layer;
        pt_kv_page *p = NULL;
        bool full = false;
        for (int dl = 0; s->want_layer >= 0 && dl < kv->n_layer - 1 && !p && !full; dl++) {
            const int l = (s->want_layer + dl) % kv->n_layer;
            for (int i = 0; i < s->want_pages && i < kv->n_pages && !p; i++) {
                pt_kv_page *c = &kv->pages[(size_t)l * kv->n_pages + i];
                if (c->state != PT_KV_PG_DISK) continue;
                if (dl > 0 && kv->ram_bytes + kv->page_bytes > limit) {
                    full = true;
                    break;
                }
                p = c;
            }
        }
        if (!p) {
            s->want_layer = -1;
            pthread_cond_wait(&s->wake, &s->lock);
            continue;
        }
        p->state = PT_KV_PG_LOADING;
        kv->ram_bytes += kv->page_bytes;
        uint8_t *buf = pt_kv_buf_take(kv);
        pthread_mutex_unlock(&s->lock);
        const int e = buf ? pt_kv_spill_read(kv, buf, kv->page_bytes, (uint64_t)(p - kv->pages) * kv->page_bytes)
                          : ENOMEM;
        pthread_mutex_lock(&s->lock);
        if (e) { /* left to the forward pass, which reads it itself and reports */
            pt_kv_buf_give(kv, buf);
            p->state = PT_KV_PG_DISK;
            kv->ram_bytes -= kv->page_bytes;
            s->want_layer = -1;
        } else {
            p->ram = buf;
            p->state = PT_KV_PG_RAM;
            p->prefetched = true;
            kv->read_ahead++;
        }
        pthread_cond_broadcast(&s->changed);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

/* mkdir -p of dir (mode 0700 for what it makes); 0 or an errno. */
static int make_dirs(const char *dir) {
    char buf[4096];
    const size_t n = strlen(dir);
    if (n == 0 || n >= sizeof buf) return ENAMETOOLONG;
    memcpy(buf, dir, n + 1);
    for (size_t i = 1; i <= n; i++)
        if (buf[i] == '/' || buf[i] == '\0') {
            const char c = buf[i];
            buf[i] = '\0';
            if (mkdir(buf, 0700) != 0 && errno != EEXIST) return errno;
            buf[i] = c;
        }
    return 0;
}

static int open_private(const char *dir) {
    int fd = -1;
#ifdef O_TMPFILE
    fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0) return fd;
    if (errno != EOPNOTSUPP && errno != EISDIR && errno != ENOENT && errno != EINVAL) return -1;
#endif
    char path[4200];
    if (snprintf(path, sizeof path, "%s/petrel-kv-XXXXXX", dir) >= (int)sizeof path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    fd = mkstemp(path); /* 0600 */
    if (fd < 0) return -1;
    unlink(path);
    (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
    return fd;
}

pt_status pt_kv_spill_open(pt_kv_cache *kv, const char *dir, pt_error *err) {
    if (!dir || !*dir) dir = P_tmpdir;
    struct pt_kv_spill *s = calloc(1, sizeof *s);
    if (!s || !(s->dir = strdup(dir))) {
        free(s);
        return pt_fail(err, PT_ERR_NOMEM, "kv spill: out of memory");
    }
    s->fd = -1;
    s->want_layer = -1;
    int e = make_dirs(dir);
    if (!e) {
        s->fd = open_private(dir);
        if (s->fd < 0) e = errno;
    }
    if (e) {
        free(s->dir);
        free(s);
        return pt_fail(err, PT_ERR_IO, "kv spill: cannot create a spill file in %s: %s", dir, strerror(e));
    }
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->changed, NULL);
    pthread_cond_init(&s->wake, NULL);
    kv->spill = s;
    if ((e = pthread_create(&s->thread, NULL, reader_main, kv)) != 0) {
        pt_kv_spill_close(kv);
        return pt_fail(err, PT_ERR_NOMEM, "kv spill: cannot start the reader thread: %s", strerror(e));
    }
    s->started = true;
    return PT_OK;
}

void pt_kv_spill_close(pt_kv_cache *kv) {
    struct pt_kv_spill *s = kv->spill;
    if (!s) return;
    if (s->started) {
        pthread_mutex_lock(&s->lock);
        s->quit = true;
        pthread_cond_broadcast(&s->wake);
        pthread_mutex_unlock(&s->lock);
        pthread_join(s->thread, NULL);
    }
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->changed);
    pthread_cond_destroy(&s->wake);
    if (s->fd >= 0) close(s->fd);
    free(s->dir);
    free(s);
    kv->spill = NULL;
}

void pt_kv_spill_lock(const pt_kv_cache *kv) { pthread_mutex_lock(&kv->spill->lock); }
void pt_kv_spill_unlock(const pt_kv_cache *kv) { pthread_mutex_unlock(&kv->spill->lock); }
void pt_kv_spill_wait(const pt_kv_cache *kv) { pthread_cond_wait(&kv->spill->changed, &kv->spill->lock); }

void pt_kv_spill_want(pt_kv_cache *kv, int layer, int n) {
    kv->spill->want_layer = layer;
    kv->spill->want_pages = n;
    if (layer >= 0) pthread_cond_signal(&kv->spill->wake);
}

int pt_kv_spill_read(const pt_kv_cache *kv, void *buf, size_t n, uint64_t off) {
    uint8_t *p = buf;
    while (n) {
        const ssize_t r = pread(kv->spill->fd, p, n, (off_t)off);
        if (r < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        if (r == 0) return EIO; /* past the end: a slot never written */
        p += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

int pt_kv_spill_write(pt_kv_cache *kv, const void *buf, size_t n, uint64_t off) {
    const uint8_t *p = buf;
    while (n) {
        const ssize_t r = pwrite(kv->spill->fd, p, n, (off_t)off);
        if (r < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        if (r == 0) return ENOSPC;
        p += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

const char *pt_kv_spill_dir(const pt_kv_cache *kv) { return kv->spill ? kv->spill->dir : "?"; }
bool pt_kv_spill_failed(const pt_kv_cache *kv) { return kv->spill && kv->spill->failed; }
void pt_kv_spill_set_failed(pt_kv_cache *kv) {
    if (kv->spill) kv->spill->failed = true;
}
