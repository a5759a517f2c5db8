/*
 * kv_spill.c — the KV cache's spill file and its reader thread
 * (kv_cache.h).
 *
 * The file is private: opened with O_TMPFILE (no name ever exists), or
 * where the file system lacks it made by mkstemp and unlinked at once;
 * mode 0600 either way, so nothing is left behind on any exit. Page
 * (l, i) lives at byte (l * n_pages + i) * page_bytes. The whole file's
 * span (n_layer * n_pages slots) is mapped once, PROT_READ and
 * MAP_SHARED (address space only: a slot takes memory while its pages are
 * populated); only slots written out (their blocks reserved first) are
 * ever read through it, so no access falls past the end of the file.
 *
 * The reader thread works on the layer the forward pass will need next
 * (pt_kv_spill_want), page by page: a DISK page the layer will write is
 * marked LOADING (its bytes counted as held), read without the lock into
 * a buffer, then made RAM; a DISK page it only reads is populated in the
 * mapping (MADV_POPULATE_READ, which reads it from the disk where the
 * page cache lacks it) and marked mapped. Before any of that it drops
 * the mapping of the layers before the one in use (so at most that layer
 * and the next are mapped). It never touches a RAM page,
 * and pt_kv_begin_layer waits for it to be idle (pt_kv_spill_idle) before
 * it changes anything, so every state change happens under the lock.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* O_TMPFILE */
#endif
#include "kv_cache.h"

#include "status.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 /* Linux 5.14 */
#endif

struct pt_kv_spill {
    int fd;
    char *dir;              /* for messages */
    pthread_t thread;
    bool started;
    pthread_mutex_t lock;
    pthread_cond_t changed; /* a page left LOADING */
    pthread_cond_t wake;    /* a new request, or quit */
    int want_layer, want_pages, want_write; /* the reader's request (layer < 0: none) */
    pt_kv_page *busy;       /* the page the reader is working on without the lock */
    bool quit;
    bool failed;            /* a write failed: spilling stopped */
    atomic_bool no_populate; /* MADV_POPULATE_READ refused (before Linux 5.14): touch instead */
    uint8_t *map;           /* the file's span, read-only shared: map_len bytes */
    size_t map_len;
};

static size_t sys_page(void) {
    const long n = sysconf(_SC_PAGESIZE);
    return n > 0 ? (size_t)n : 4096;
}

static void *reader_main(void *arg) {
    pt_kv_cache *kv = arg;
    struct pt_kv_spill *s = kv->spill;
    pthread_mutex_lock(&s->lock);
    while (!s->quit) {
        /* the wanted layer's DISK pages in order: those it will write
         * (from want_write on) read back into RAM, the others mapped;
         * whatever the budget (the stated bound counts the next layer) */
        pt_kv_page *p = NULL;
        const int l = s->want_layer;
        /* first drop the mapping of the layers before the one in use
         * (l - 1): at most it and l are mapped once l is (kv_cache.h) */
        int drop = -1;
        for (int d = 2; l >= 0 && d <= kv->n_layer && drop < 0; d++) {
            const int x = (l - d % kv->n_layer + kv->n_layer) % kv->n_layer;
            if (x != l && kv->n_mapped[x]) drop = x;
        }
        if (drop >= 0) {
            pt_kv_page *first = &kv->pages[(size_t)drop * kv->n_pages];
            s->busy = first;
            pthread_mutex_unlock(&s->lock);
            pt_kv_spill_unmap(kv, (uint64_t)drop * kv->n_pages * kv->page_bytes, (size_t)kv->n_pages * kv->page_bytes);
            pthread_mutex_lock(&s->lock);
            for (int i = 0; i < kv->n_pages; i++) first[i].mapped = false;
            kv->map_bytes -= (uint64_t)kv->n_mapped[drop] * kv->page_bytes;
            kv->n_mapped[drop] = 0;
            s->busy = NULL;
            pthread_cond_broadcast(&s->changed);
            continue;
        }
        for (int i = 0; l >= 0 && i < s->want_pages && i < kv->n_pages && !p; i++) {
            pt_kv_page *c = &kv->pages[(size_t)l * kv->n_pages + i];
            if (c->state == PT_KV_PG_DISK && (i >= s->want_write || !c->mapped)) p = c;
        }
        if (!p) {
            s->want_layer = -1;
            pthread_cond_wait(&s->wake, &s->lock);
            continue;
        }
        const uint64_t off = (uint64_t)(p - kv->pages) * kv->page_bytes;
        s->busy = p;
        if ((int)(p - kv->pages) % kv->n_pages < s->want_write) { /* read in place: map it */
            pthread_mutex_unlock(&s->lock);
            const int e = pt_kv_spill_populate(kv, off, kv->page_bytes);
            pthread_mutex_lock(&s->lock);
            if (e) { /* left to the forward pass, which maps it itself and reports */
                s->want_layer = -1;
            } else {
                p->mapped = true;
                p->prefetched = true;
                kv->map_bytes += kv->page_bytes;
                kv->n_mapped[l]++;
                kv->read_ahead++;
            }
        } else {
            p->state = PT_KV_PG_LOADING;
            kv->ram_bytes += kv->page_bytes;
            uint8_t *buf = pt_kv_buf_take(kv);
            pthread_mutex_unlock(&s->lock);
            const int e = buf ? pt_kv_spill_read(kv, buf, kv->page_bytes, off) : ENOMEM;
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
                kv->read_backs++;
            }
        }
        s->busy = NULL;
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
    /* the whole span of slots: address space only until populated */
    const uint64_t span = (uint64_t)kv->n_layer * (uint64_t)kv->n_pages * kv->page_bytes;
    s->map_len = (size_t)span;
    void *map = span == (uint64_t)s->map_len ? mmap(NULL, s->map_len, PROT_READ, MAP_SHARED, s->fd, 0) : MAP_FAILED;
    if (map == MAP_FAILED) {
        e = span == (uint64_t)s->map_len ? errno : EFBIG;
        close(s->fd);
        free(s->dir);
        free(s);
        return pt_fail(err, PT_ERR_IO, "kv spill: cannot map a spill file of %llu bytes in %s: %s",
                       (unsigned long long)span, dir, strerror(e));
    }
    s->map = map;
    kv->map = s->map;
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
    if (s->map) munmap(s->map, s->map_len);
    if (s->fd >= 0) close(s->fd);
    free(s->dir);
    free(s);
    kv->spill = NULL;
    kv->map = NULL;
}

void pt_kv_spill_lock(const pt_kv_cache *kv) { pthread_mutex_lock(&kv->spill->lock); }
void pt_kv_spill_unlock(const pt_kv_cache *kv) { pthread_mutex_unlock(&kv->spill->lock); }
void pt_kv_spill_wait(const pt_kv_cache *kv) { pthread_cond_wait(&kv->spill->changed, &kv->spill->lock); }

void pt_kv_spill_want(pt_kv_cache *kv, int layer, int n, int write) {
    kv->spill->want_layer = layer;
    kv->spill->want_pages = n;
    kv->spill->want_write = write;
    if (layer >= 0) pthread_cond_signal(&kv->spill->wake);
}

pt_kv_page *pt_kv_spill_idle(const pt_kv_cache *kv) {
    struct pt_kv_spill *s = kv->spill;
    pt_kv_page *p = s->busy;
    while (s->busy) pthread_cond_wait(&s->changed, &s->lock);
    return p;
}

int pt_kv_spill_reserve(pt_kv_cache *kv, uint64_t off, size_t n) {
    int e;
    do e = posix_fallocate(kv->spill->fd, (off_t)off, (off_t)n); /* returns the errno */
    while (e == EINTR);
    return e;
}

int pt_kv_spill_populate(const pt_kv_cache *kv, uint64_t off, size_t n) {
    struct pt_kv_spill *s = kv->spill;
    const size_t pg = sys_page();
    const uint64_t a = off / pg * pg;
    uint8_t *p = s->map + a;
    const size_t len = (size_t)(off + n - a);
    if (!s->no_populate) {
        if (madvise(p, len, MADV_POPULATE_READ) == 0) return 0;
        if (errno != EINVAL) return errno;
        s->no_populate = true; /* an older kernel: fault the pages in by reading them */
    }
    unsigned sum = 0;
    for (size_t i = 0; i < len; i += pg) sum += ((volatile const uint8_t *)p)[i];
    (void)sum;
    return 0;
}

void pt_kv_spill_unmap(const pt_kv_cache *kv, uint64_t off, size_t n) {
    struct pt_kv_spill *s = kv->spill;
    const size_t pg = sys_page();
    const uint64_t a = off / pg * pg;
    uint64_t b = (off + n + pg - 1) / pg * pg;
    if (b > s->map_len) b = s->map_len;
    /* on a shared file mapping this only drops our page tables: the
     * data stays in the file and the page cache */
    (void)madvise(s->map + a, (size_t)(b - a), MADV_DONTNEED);
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
