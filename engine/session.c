/*
 * session.c — a context's state in a file: pt_context_save_session and
 * pt_context_load_session (petrel.h).
 *
 * File format, version 1. All integers little-endian (the byte order of
 * every CPU petrel runs on), offsets in bytes:
 *
 *   offset  size              field
 *   0       8                 magic "PTSESS\r\n" (the CR LF catches a text-mode copy)
 *   8       4   u32           version: 1
 *   12      4   u32           KV type (enum pt_kv_type: 0 = f32, ...)
 *   16      32                model identity: SHA-256 of the GGUF's size
 *                             (u64), its bytes before the tensor data
 *                             (header, metadata, tensor table) and 16 spans
 *                             of 4 KiB spread evenly over the tensor data
 *                             (model_identity below)
 *   48      4   u32           n_layer of the model
 *   52      4   u32           n_vocab of the model
 *   56      4   u32           n_tokens: tokens in the cache (n_past)
 *   60      4   u32           flags: bit 0 = last logits present (no other bit set)
 *   64      8   u64           layer_bytes: bytes of one layer's KV for n_tokens
 *                             positions (pt_kv_layer_bytes)
 *   72      4 * n_tokens      tokens, i32 each, each < n_vocab
 *   ...     4 * n_vocab       last logits, f32 (only when flags bit 0)
 *   ...     n_layer * layer_bytes
 *                             the KV cache, layer 0 first, each layer in the
 *                             serialized form of kv_cache.h (the cache's
 *                             own element type and rows: q8f8 keys in
 *                             their rotated basis)
 *   end-4   4   u32           CRC-32 (zlib crc32) of every byte before it
 *
 * The file is exactly this long: anything shorter is truncated, anything
 * longer refused. A reader checks the whole file (its header against the
 * context first, so an absurd count allocates nothing) before it changes
 * the context. Active LoRA adapters are not recorded: a session saved with
 * adapters on must be loaded with the same ones on.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <zlib.h>

#include "kv_cache.h"
#include "model_internal.h"
#include "session.h"
#include "status.h"

#define SESSION_MAGIC "PTSESS\r\n"
#define SESSION_VERSION 1u
#define HEADER_BYTES 72
#define ID_SPANS 16
#define ID_SPAN_BYTES 4096

static const char *kv_type_name(uint32_t t) {
    const char *name = t <= INT32_MAX ? pt_kv_type_name((int)t) : NULL;
    return name ? name : "unknown";
}

static void put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t get64(const uint8_t *p) { return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32; }

pt_status pt_session_model_identity(const pt_model *m, uint8_t out[32], pt_error *err) {
    const pt_gguf *g = m->gguf;
    EVP_MD_CTX *sha = EVP_MD_CTX_new();
    unsigned len = 0;
    uint8_t size_le[8];
    put64(size_le, g->size);
    bool ok = sha && EVP_DigestInit_ex(sha, EVP_sha256(), NULL) && EVP_DigestUpdate(sha, size_le, 8);
    uint64_t head = g->data_offset < g->size ? g->data_offset : g->size;
    ok = ok && EVP_DigestUpdate(sha, g->map, head);
    const uint64_t data = g->size - head;
    for (int i = 0; ok && i < ID_SPANS && data > 0; i++) {
        uint64_t at = data / ID_SPANS * (uint64_t)i;
        uint64_t n = data - at < ID_SPAN_BYTES ? data - at : ID_SPAN_BYTES;
        ok = EVP_DigestUpdate(sha, g->map + head + at, n);
    }
    ok = ok && EVP_DigestFinal_ex(sha, out, &len) && len == 32;
    EVP_MD_CTX_free(sha);
    return ok ? PT_OK : pt_fail(err, PT_ERR_NOMEM, "cannot hash the model for its session identity");
}

/* The layout a valid header describes (sizes in bytes). */
typedef struct layout {
    uint32_t n_tokens;
    bool has_logits;
    uint64_t layer_bytes, total;
} layout;

/* Check a header (HEADER_BYTES at h) of a file of file_size bytes against
 * ctx: everything but the CRC and the tokens' range. Allocates nothing. */
static pt_status check_header(const pt_context *ctx, const uint8_t *h, uint64_t file_size, layout *lo,
                              pt_error *err) {
    if (file_size < 8 ? memcmp(h, SESSION_MAGIC, (size_t)file_size) != 0 : memcmp(h, SESSION_MAGIC, 8) != 0)
        return pt_fail(err, PT_ERR_FORMAT, "not a petrel session file (bad magic)");
    if (file_size < HEADER_BYTES + 4)
        return pt_fail(err, PT_ERR_FORMAT, "truncated session file: %llu bytes, the header alone is %d",
                       (unsigned long long)file_size, HEADER_BYTES + 4);
    uint32_t version = get32(h + 8);
    if (version != SESSION_VERSION)
        return pt_fail(err, PT_ERR_UNSUPPORTED, "session file version %u: this petrel reads version %u",
                       version, SESSION_VERSION);
    const pt_llm_hparams *hp = pt_llm_get_hparams(ctx->model->llm);
    uint8_t id[32];
    pt_status st = pt_session_model_identity(ctx->model, id, err);
    if (st != PT_OK) return st;
    if (memcmp(id, h + 16, 32) != 0 || get32(h + 48) != (uint32_t)hp->n_layer ||
        get32(h + 52) != (uint32_t)hp->n_vocab)
        return pt_fail(err, PT_ERR_ARG, "the session file was saved with another model");
    pt_kv_cache *kv = pt_llm_state_kv(ctx->state);
    if (!kv) return pt_fail(err, PT_ERR_UNSUPPORTED, "sessions are not kept for a model on a GPU device yet");
    uint32_t type = get32(h + 12);
    if (type != (uint32_t)pt_kv_type_of(kv))
        return pt_fail(err, PT_ERR_ARG, "the session file holds a %s KV cache, this context's is %s",
                       kv_type_name(type), kv_type_name((uint32_t)pt_kv_type_of(kv)));
    lo->n_tokens = get32(h + 56);
    uint32_t flags = get32(h + 60);
    lo->has_logits = flags & 1;
    lo->layer_bytes = get64(h + 64);
    if (lo->n_tokens > (uint32_t)ctx->n_ctx)
        return pt_fail(err, PT_ERR_ARG, "the session file holds %u tokens, more than this context's %d",
                       lo->n_tokens, ctx->n_ctx);
    if ((flags & ~1u) || (lo->has_logits && lo->n_tokens == 0))
        return pt_fail(err, PT_ERR_FORMAT, "corrupt session file (flags 0x%x)", flags);
    if (lo->layer_bytes != pt_kv_layer_bytes(kv, (int)lo->n_tokens))
        return pt_fail(err, PT_ERR_FORMAT, "corrupt session file: %llu bytes per layer for %u tokens",
                       (unsigned long long)lo->layer_bytes, lo->n_tokens);
    /* no overflow: n_tokens <= n_ctx, and the layer bytes are those of a
     * cache that exists in memory */
    lo->total = HEADER_BYTES + 4ull * lo->n_tokens + (lo->has_logits ? 4ull * (uint64_t)hp->n_vocab : 0) +
                (uint64_t)hp->n_layer * lo->layer_bytes + 4;
    if (file_size < lo->total)
        return pt_fail(err, PT_ERR_FORMAT, "truncated session file: %llu bytes of %llu",
                       (unsigned long long)file_size, (unsigned long long)lo->total);
    if (file_size > lo->total)
        return pt_fail(err, PT_ERR_FORMAT, "corrupt session file: %llu bytes where %llu were expected",
                       (unsigned long long)file_size, (unsigned long long)lo->total);
    return PT_OK;
}

pt_status pt_session_load_memory(pt_context *ctx, const uint8_t *buf, size_t size, pt_error *err) {
    uint8_t h[HEADER_BYTES] = {0};
    memcpy(h, buf, size < HEADER_BYTES ? size : HEADER_BYTES);
    layout lo;
    pt_status st = check_header(ctx, h, size, &lo, err);
    if (st != PT_OK) return st;
    uint32_t crc = (uint32_t)crc32(0L, Z_NULL, 0);
    for (size_t at = 0; at < size - 4;) { /* crc32 takes a uInt length */
        size_t n = size - 4 - at < (1u << 30) ? size - 4 - at : (1u << 30);
        crc = (uint32_t)crc32(crc, buf + at, (uInt)n);
        at += n;
    }
    if (crc != get32(buf + size - 4))
        return pt_fail(err, PT_ERR_FORMAT, "corrupt session file (CRC mismatch)");
    const pt_llm_hparams *hp = pt_llm_get_hparams(ctx->model->llm);
    const uint8_t *p = buf + HEADER_BYTES;
    for (uint32_t i = 0; i < lo.n_tokens; i++) {
        int32_t t = (int32_t)get32(p + 4 * (size_t)i);
        if (t < 0 || t >= hp->n_vocab)
            return pt_fail(err, PT_ERR_FORMAT, "corrupt session file: token %d at %u is outside the vocabulary",
                           t, i);
    }
    /* Valid: now change the context. */
    pt_kv_cache *kv = pt_llm_state_kv(ctx->state);
    const uint8_t *layers = p + 4 * (size_t)lo.n_tokens + (lo.has_logits ? 4 * (size_t)hp->n_vocab : 0);
    for (int l = 0; l < hp->n_layer; l++) {
        st = pt_kv_import_layer(kv, l, (int)lo.n_tokens, layers + (size_t)l * lo.layer_bytes, err);
        if (st != PT_OK) { /* a layer half in: the cache no longer matches any tokens */
            pt_context_reset(ctx);
            return st;
        }
    }
    for (uint32_t i = 0; i < lo.n_tokens; i++) ctx->toks[i] = (pt_token)(int32_t)get32(p + 4 * (size_t)i);
    if (lo.has_logits) memcpy(ctx->logits, p + 4 * (size_t)lo.n_tokens, 4 * (size_t)hp->n_vocab);
    ctx->have_logits = lo.has_logits;
    pt_llm_state_set_n_past(ctx->state, (int)lo.n_tokens);
    ctx->counters.n_restored += lo.n_tokens;
    return PT_OK;
}

pt_status pt_context_load_session(pt_context *ctx, const char *path, pt_error *err) {
    FILE *f = fopen(path, "rb");
    if (!f) return pt_fail(err, PT_ERR_IO, "cannot open session %s: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fclose(f);
        return pt_fail(err, PT_ERR_IO, "session %s is not a regular file", path);
    }
    /* the header first: the size it implies is checked before allocating */
    uint8_t h[HEADER_BYTES] = {0};
    size_t got = fread(h, 1, HEADER_BYTES, f);
    layout lo;
    pt_status st = check_header(ctx, h, (uint64_t)sb.st_size, &lo, err);
    if (st == PT_OK && got != HEADER_BYTES) st = pt_fail(err, PT_ERR_IO, "cannot read session %s", path);
    if (st != PT_OK) {
        fclose(f);
        return st;
    }
    uint8_t *buf = malloc((size_t)lo.total);
    if (!buf) {
        fclose(f);
        return pt_fail(err, PT_ERR_NOMEM, "out of memory reading session %s (%llu bytes)", path,
                       (unsigned long long)lo.total);
    }
    memcpy(buf, h, HEADER_BYTES);
    size_t rest = (size_t)lo.total - HEADER_BYTES;
    bool ok = fread(buf + HEADER_BYTES, 1, rest, f) == rest && fgetc(f) == EOF;
    fclose(f);
    st = ok ? pt_session_load_memory(ctx, buf, (size_t)lo.total, err)
            : pt_fail(err, PT_ERR_FORMAT, "session %s changed while it was read", path);
    free(buf);
    return st;
}

/* write(2) with a running CRC; ok false (errno in err_no) once a write
 * failed. Plain write(2), not stdio: a full disk shows at the call that
 * hits it. */
typedef struct sink {
    int fd;
    uint32_t crc;
    bool ok;
    int err_no;
} sink;

static void put(sink *s, const void *p, size_t n) {
    if (!s->ok || n == 0) return;
    for (size_t at = 0; at < n;) {
        size_t k = n - at < (1u << 30) ? n - at : (1u << 30);
        s->crc = (uint32_t)crc32(s->crc, (const Bytef *)p + at, (uInt)k);
        at += k;
    }
    for (const uint8_t *b = p; n > 0;) {
        ssize_t w = write(s->fd, b, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            s->ok = false;
            s->err_no = w < 0 ? errno : EIO;
            return;
        }
        b += w;
        n -= (size_t)w;
    }
}

pt_status pt_context_save_session(const pt_context *ctx, const char *path, pt_error *err) {
    const pt_llm_hparams *hp = pt_llm_get_hparams(ctx->model->llm);
    pt_kv_cache *kv = pt_llm_state_kv(ctx->state);
    if (!kv) return pt_fail(err, PT_ERR_UNSUPPORTED, "sessions are not kept for a model on a GPU device yet");
    const int n = pt_llm_state_n_past(ctx->state);
    uint8_t h[HEADER_BYTES] = {0};
    memcpy(h, SESSION_MAGIC, 8);
    put32(h + 8, SESSION_VERSION);
    put32(h + 12, (uint32_t)pt_kv_type_of(kv));
    pt_status st = pt_session_model_identity(ctx->model, h + 16, err);
    if (st != PT_OK) return st;
    put32(h + 48, (uint32_t)hp->n_layer);
    put32(h + 52, (uint32_t)hp->n_vocab);
    put32(h + 56, (uint32_t)n);
    const bool logits = ctx->have_logits && n > 0;
    put32(h + 60, logits ? 1u : 0u);
    const size_t layer_bytes = pt_kv_layer_bytes(kv, n);
    put64(h + 64, layer_bytes);

    size_t plen = strlen(path);
    char *tmp = malloc(plen + 5);
    /* one buffer for the tokens, then each layer in turn */
    size_t buf_bytes = layer_bytes > 4 * (size_t)n ? layer_bytes : 4 * (size_t)n;
    uint8_t *layer = malloc(buf_bytes ? buf_bytes : 1);
    if (!tmp || !layer) {
        free(tmp);
        free(layer);
        return pt_fail(err, PT_ERR_NOMEM, "out of memory saving session %s", path);
    }
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp", 5);
    sink s = {.fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644),
              .crc = (uint32_t)crc32(0L, Z_NULL, 0), .ok = true};
    if (s.fd < 0) {
        st = pt_fail(err, PT_ERR_IO, "cannot create %s: %s", tmp, strerror(errno));
        goto out;
    }
    put(&s, h, HEADER_BYTES);
    for (int i = 0; i < n; i++) put32(layer + 4 * (size_t)i, (uint32_t)ctx->toks[i]);
    put(&s, layer, 4 * (size_t)n); /* the layer buffer holds n tokens too (see its size) */
    if (logits) put(&s, ctx->logits, 4 * (size_t)hp->n_vocab);
    for (int l = 0; l < hp->n_layer && s.ok && st == PT_OK; l++) {
        st = pt_kv_export_layer(kv, l, n, layer, err);
        if (st == PT_OK) put(&s, layer, layer_bytes);
    }
    uint8_t crc[4];
    put32(crc, s.crc);
    put(&s, crc, 4);
    if (s.ok && fsync(s.fd) != 0) {
        s.ok = false;
        s.err_no = errno;
    }
    if (close(s.fd) != 0 && s.ok) {
        s.ok = false;
        s.err_no = errno;
    }
    if (st == PT_OK && !s.ok)
        st = pt_fail(err, PT_ERR_IO, "cannot write session %s: %s", path, strerror(s.err_no));
    if (st == PT_OK && rename(tmp, path) != 0)
        st = pt_fail(err, PT_ERR_IO, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
    if (st != PT_OK) unlink(tmp);
out:
    free(tmp);
    free(layer);
    return st;
}
