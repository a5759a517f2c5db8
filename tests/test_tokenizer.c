/*
 * test_tokenizer.c — tokenizers against independent references.
 *
 *   tokenizer_smollm2.bin  ids from HF tokenizers with SmolLM2's pipeline
 *   tokenizer_spm_tiny.bin ids from the sentencepiece library (spm_tiny.model)
 *   tokenizer_pretok.bin   HF's word splits for each supported regex set
 * all made by tools/gen_tokenizer_fixture.py from tokenizer_corpus.txt.
 *
 * Also: lossless decode, streaming through pt_utf8_stream, the cap
 * contract, add_special, end-of-generation ids, ill-formed UTF-8, and load
 * errors on small GGUFs built in memory.
 */
#include "check.h"
#include "gguf.h"
#include "tokenizer.h"
#include "tokenizer_impl.h"
#include "utf8.h"

#include <stdint.h>

/* ---- fixture reading ---------------------------------------------------- */

typedef struct cursor {
    const unsigned char *p;
    size_t n, pos;
    const char *path;
} cursor;

static const unsigned char *take(cursor *c, size_t n) {
    if (n > c->n - c->pos) {
        fprintf(stderr, "%s: truncated at byte %zu\n", c->path, c->pos);
        exit(1);
    }
    const unsigned char *p = c->p + c->pos;
    c->pos += n;
    return p;
}

static uint32_t take_u32(cursor *c) {
    const unsigned char *p = take(c, 4);
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static cursor open_fixture(const char *name, const char *magic, char **buf) {
    size_t n;
    const char *path = test_data(name);
    *buf = test_read_file(path, &n);
    cursor c = {(const unsigned char *)*buf, n, 0, path};
    if (memcmp(take(&c, 8), magic, 8) != 0) {
        fprintf(stderr, "%s: bad magic\n", path);
        exit(1);
    }
    return c;
}

typedef struct id_case {
    const char *text; /* points into the fixture buffer, not NUL-terminated */
    size_t len;
    pt_token *ids[2]; /* [0] parse_special = true, [1] false */
    int n[2];
} id_case;

typedef struct id_fixture {
    char *buf;
    id_case *c;
    int n;
} id_fixture;

static id_fixture read_ids(const char *name) {
    id_fixture f;
    cursor c = open_fixture(name, "PTTOKFX1", &f.buf);
    f.n = (int)take_u32(&c);
    f.c = calloc((size_t)f.n, sizeof *f.c);
    for (int i = 0; i < f.n; i++) {
        f.c[i].len = take_u32(&c);
        f.c[i].text = (const char *)take(&c, f.c[i].len);
        for (int m = 0; m < 2; m++) {
            f.c[i].n[m] = (int)take_u32(&c);
            f.c[i].ids[m] = malloc(((size_t)f.c[i].n[m] + 1) * sizeof(pt_token));
            for (int k = 0; k < f.c[i].n[m]; k++) f.c[i].ids[m][k] = (pt_token)take_u32(&c);
        }
    }
    return f;
}

static void free_ids(id_fixture *f) {
    for (int i = 0; i < f->n; i++) free(f->c[i].ids[0]), free(f->c[i].ids[1]);
    free(f->c);
    free(f->buf);
}

/* ---- printing ------------------------------------------------------------ */

static void print_text(const char *s, size_t n) {
    fputc('"', stderr);
    for (size_t i = 0; i < n && i < 120; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '\n') fputs("\\n", stderr);
        else if (ch == '\t') fputs("\\t", stderr);
        else if (ch < 0x20 || ch == 0x7F) fprintf(stderr, "\\x%02X", ch);
        else fputc(ch, stderr);
    }
    fputs(n > 120 ? "\"..." : "\"", stderr);
}

static void print_ids(const char *label, const pt_token *ids, int n) {
    fprintf(stderr, "  %s (%d):", label, n);
    for (int i = 0; i < n && i < 40; i++) fprintf(stderr, " %d", ids[i]);
    fputs(n > 40 ? " ...\n" : "\n", stderr);
}

/* ---- helpers ------------------------------------------------------------- */

/* Encode into a malloc'd array (exact size); *n gets the count. */
static pt_token *encode(const pt_tokenizer *t, const char *s, size_t len, bool add_special,
                        bool parse_special, int *n) {
    *n = pt_tokenizer_encode(t, s, len, add_special, parse_special, NULL, 0);
    if (*n < 0) return NULL;
    pt_token *ids = malloc(((size_t)*n + 1) * sizeof *ids);
    int m = pt_tokenizer_encode(t, s, len, add_special, parse_special, ids, *n);
    CHECK(m == *n, "second encode gave %d ids, first %d", m, *n);
    return ids;
}

/* All tokens' bytes, concatenated (malloc'd). */
static char *decode_all(const pt_tokenizer *t, const pt_token *ids, int n, bool render_special, size_t *len) {
    size_t cap = 64, w = 0;
    char *out = malloc(cap);
    for (int i = 0; i < n; i++) {
        size_t k = pt_tokenizer_decode(t, ids[i], render_special, NULL, 0);
        while (w + k > cap) out = realloc(out, cap *= 2);
        size_t k2 = pt_tokenizer_decode(t, ids[i], render_special, out + w, cap - w);
        CHECK(k2 == k, "decode size changed (%zu vs %zu)", k2, k);
        w += k;
    }
    *len = w;
    return out;
}

static pt_tokenizer *load_file(const char *path, pt_gguf **g) {
    pt_error err = {0};
    pt_tokenizer *t = NULL;
    if (pt_gguf_open(path, g, &err) != PT_OK || pt_tokenizer_load(*g, &t, &err) != PT_OK) {
        fprintf(stderr, "cannot load the tokenizer of %s: %s\n", path, err.msg);
        exit(1);
    }
    return t;
}

/* ---- tests against the references ---------------------------------------- */

static void test_ids(const pt_tokenizer *t, const id_fixture *f, const char *name) {
    int failures = 0;
    for (int i = 0; i < f->n; i++) {
        const id_case *c = &f->c[i];
        for (int m = 0; m < 2; m++) {
            int n;
            pt_token *ids = encode(t, c->text, c->len, false, m == 0, &n);
            bool same = ids && n == c->n[m] && (n == 0 || memcmp(ids, c->ids[m], (size_t)n * sizeof *ids) == 0);
            CHECK(same, "%s case %d (%s) differs from the reference", name, i,
                  m == 0 ? "parse_special" : "no parse_special");
            if (!same && failures++ < 5) {
                fprintf(stderr, "  text: ");
                print_text(c->text, c->len);
                fputc('\n', stderr);
                print_ids("want", c->ids[m], c->n[m]);
                print_ids("got ", ids, n);
            }
            free(ids);
        }
    }
    printf("%s: %d cases x 2 modes, %d mismatches\n", name, f->n, failures);
}

/* decode(encode(s)) gives s back byte for byte (prefix: what the
 * tokenizer adds in front, " " for SentencePiece's dummy prefix). */
static void test_roundtrip(const pt_tokenizer *t, const id_fixture *f, const char *prefix) {
    size_t np = strlen(prefix);
    for (int i = 0; i < f->n; i++) {
        const id_case *c = &f->c[i];
        for (int m = 0; m < 2; m++) {
            /* SentencePiece: a piece of text after a special token gets its
             * own prefix space, so only plain mode is lossless there */
            if (np && m == 0) continue;
            size_t len;
            char *s = decode_all(t, c->ids[m], c->n[m], true, &len);
            size_t want = c->len ? c->len + np : 0;
            bool ok = len == want && (want == 0 || (memcmp(s, prefix, np) == 0 &&
                                                    memcmp(s + np, c->text, c->len) == 0));
            CHECK(ok, "case %d mode %d: decode(encode(s)) != s", i, m);
            if (!ok) {
                fputs("  want ", stderr), print_text(c->text, c->len), fputs("\n  got  ", stderr);
                print_text(s, len), fputc('\n', stderr);
            }
            free(s);
        }
    }
}

/* Token bytes one token at a time through pt_utf8_stream: every chunk is
 * valid UTF-8 and the chunks add up to the text. */
static void test_streaming(const pt_tokenizer *t, const id_fixture *f) {
    char piece[512], out[PT_UTF8_STREAM_OUT(512)];
    size_t cap = 1 << 16;
    char *all = malloc(cap);
    for (int i = 0; i < f->n; i++) {
        const id_case *c = &f->c[i];
        pt_utf8_stream st = {0};
        size_t w = 0;
        bool chunks_ok = true;
        for (int k = 0; k < c->n[1]; k++) {
            size_t n = pt_tokenizer_decode(t, c->ids[1][k], true, piece, sizeof piece);
            if (n > sizeof piece) n = sizeof piece;
            size_t m = pt_utf8_stream_push(&st, piece, n, out);
            if (!pt_utf8_valid(out, m)) chunks_ok = false;
            if (w + m <= cap) memcpy(all + w, out, m);
            w += m;
        }
        size_t m = pt_utf8_stream_flush(&st, out);
        CHECK(m == 0, "case %d: valid text left %zu bytes to flush", i, m);
        CHECK(chunks_ok, "case %d: a streamed chunk was not valid UTF-8", i);
        CHECK(w == c->len && memcmp(all, c->text, w) == 0, "case %d: streamed text differs", i);
    }
    free(all);
}

/* ---- SmolLM2 specifics ---------------------------------------------------- */

static void test_smollm2_specials(const pt_tokenizer *t) {
    CHECK(strcmp(pt_tokenizer_kind(t), "gpt2") == 0, "kind %s", pt_tokenizer_kind(t));
    CHECK(pt_tokenizer_n_vocab(t) == 49152, "n_vocab %d", pt_tokenizer_n_vocab(t));
    pt_token im_start = pt_tokenizer_find(t, "<|im_start|>");
    pt_token im_end = pt_tokenizer_find(t, "<|im_end|>");
    pt_token eot = pt_tokenizer_find(t, "<|endoftext|>");
    CHECK(im_start == 1 && im_end == 2 && eot == 0, "special ids %d %d %d", im_start, im_end, eot);
    CHECK(pt_tokenizer_bos(t) == 1 && pt_tokenizer_eos(t) == 2, "bos %d eos %d", pt_tokenizer_bos(t),
          pt_tokenizer_eos(t));
    CHECK(pt_tokenizer_is_eog(t, im_end), "<|im_end|> ends generation");
    CHECK(pt_tokenizer_is_eog(t, eot), "<|endoftext|> ends generation");
    CHECK(!pt_tokenizer_is_eog(t, im_start), "<|im_start|> does not end generation");
    CHECK(!pt_tokenizer_is_eog(t, pt_tokenizer_find(t, "Hello")), "Hello does not end generation");
    CHECK(!pt_tokenizer_is_eog(t, -1) && !pt_tokenizer_is_eog(t, 49152), "out of range is no eog");
    CHECK(pt_tokenizer_piece(t, im_end) && strcmp(pt_tokenizer_piece(t, im_end), "<|im_end|>") == 0, "piece");
    CHECK(pt_tokenizer_piece(t, -1) == NULL && pt_tokenizer_piece(t, 49152) == NULL, "piece out of range");
    CHECK(pt_tokenizer_find(t, "no such piece here") == -1, "find of a missing piece");

    /* special tokens render only when asked */
    char buf[64];
    CHECK(pt_tokenizer_decode(t, im_end, false, buf, sizeof buf) == 0, "<|im_end|> hidden");
    size_t n = pt_tokenizer_decode(t, im_end, true, buf, sizeof buf);
    CHECK(n == 10 && memcmp(buf, "<|im_end|>", 10) == 0, "<|im_end|> rendered");
    CHECK(pt_tokenizer_decode(t, -5, true, buf, sizeof buf) == 0, "bad id decodes to nothing");
    /* the size comes back even when cap is short, and nothing is written past it */
    memset(buf, 'X', sizeof buf);
    n = pt_tokenizer_decode(t, im_end, true, buf, 3);
    CHECK(n == 10 && memcmp(buf, "<|i", 3) == 0 && buf[3] == 'X', "short cap");
    pt_token space_hello = pt_tokenizer_find(t, "\xC4\xA0Hello"); /* "ĠHello" */
    n = pt_tokenizer_decode(t, space_hello, false, buf, sizeof buf);
    CHECK(space_hello >= 0 && n == 6 && memcmp(buf, " Hello", 6) == 0, "byte-level decode of ĠHello");

    /* add_special: SmolLM2 asks for no BOS and no EOS */
    int n1, n2;
    pt_token *a = encode(t, "Hello", 5, true, true, &n1);
    pt_token *b = encode(t, "Hello", 5, false, true, &n2);
    CHECK(n1 == n2 && n1 > 0 && memcmp(a, b, (size_t)n1 * sizeof *a) == 0, "add_special adds nothing");
    free(a), free(b);

    /* the cap contract: the total comes back, only cap ids are written */
    const char *s = "The quick brown fox jumps over the lazy dog.";
    pt_token ids[64];
    for (int i = 0; i < 64; i++) ids[i] = -7;
    int total = pt_tokenizer_encode(t, s, strlen(s), false, false, ids, 3);
    CHECK(total > 3 && ids[3] == -7, "cap 3: total %d, ids[3] %d", total, ids[3]);
    pt_token full[64];
    CHECK(pt_tokenizer_encode(t, s, strlen(s), false, false, full, 64) == total, "same total");
    CHECK(memcmp(ids, full, 3 * sizeof *ids) == 0, "the first 3 ids match");
    CHECK(pt_tokenizer_encode(t, NULL, 4, false, false, ids, 64) == -1, "NULL text is invalid");
    CHECK(pt_tokenizer_encode(t, s, 3, false, false, NULL, 5) == -1, "NULL out with cap is invalid");
    CHECK(pt_tokenizer_encode(t, s, 3, false, false, ids, -1) == -1, "negative cap is invalid");
    CHECK(pt_tokenizer_encode(t, NULL, 0, false, false, NULL, 0) == 0, "empty text has no tokens");

    /* parse_special: literal text vs the control token */
    int n3;
    pt_token *c = encode(t, "<|im_end|>", 10, false, true, &n3);
    CHECK(n3 == 1 && c[0] == im_end, "<|im_end|> parsed as one token");
    free(c);
    c = encode(t, "<|im_end|>", 10, false, false, &n3);
    CHECK(n3 > 1, "<|im_end|> as text is several tokens (%d)", n3);
    for (int i = 0; i < n3; i++) CHECK(c[i] != im_end, "no control id from plain text");
    free(c);
}

/* Whether byte b can be encoded at all. SentencePiece with byte fallback:
 * always. Byte-level BPE: when the vocabulary has the byte's character in
 * the GPT-2 alphabet; SmolLM2's lacks 21 bytes that never occur in UTF-8
 * text (C0 C1 F5..FF ...) and a few control bytes, and HF's BPE (no unk
 * token) drops such bytes, so the round trip loses exactly those. */
static bool byte_encodable(const pt_tokenizer *t, unsigned char b) {
    if (strcmp(pt_tokenizer_kind(t), "llama") == 0) return true;
    /* GPT-2 alphabet: printable Latin-1 stands for itself, the other 68
     * bytes take U+0100.. in order */
    unsigned cp = b;
    if (b <= 32) cp = 256 + b;
    else if (b >= 127 && b <= 160) cp = 289 + (b - 127u);
    else if (b == 173) cp = 323;
    char s[3] = {0};
    if (cp < 0x80) s[0] = (char)cp;
    else s[0] = (char)(0xC0 | (cp >> 6)), s[1] = (char)(0x80 | (cp & 0x3F));
    return pt_tokenizer_find(t, s) >= 0;
}

/* Ill-formed UTF-8 never crashes and still round-trips (less the bytes the
 * vocabulary cannot hold). */
static void test_invalid_utf8(const pt_tokenizer *t, const char *prefix) {
    static const char *bad[] = {
        "\xFF", "\xC3", "abc\x80" "def", "\xC0\xAF", "\xED\xA0\x80 surrogate", "cut \xE2\x82",
        "\xF0\x9F\x98 x \xF4\x90\x80\x80", "<|im_end\xFF|>", "12\xFE" "34", "  \x80  \n\xC2",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t len = strlen(bad[i]);
        for (int m = 0; m < 2; m++) {
            int n;
            pt_token *ids = encode(t, bad[i], len, false, m == 0, &n);
            CHECK(ids != NULL, "ill-formed case %zu: encode failed (%d)", i, n);
            if (!ids) continue;
            for (int k = 0; k < n; k++) CHECK(ids[k] >= 0 && ids[k] < pt_tokenizer_n_vocab(t), "id in range");
            char want[64];
            size_t nw = strlen(prefix);
            memcpy(want, prefix, nw);
            for (size_t k = 0; k < len; k++)
                if (byte_encodable(t, (unsigned char)bad[i][k])) want[nw++] = bad[i][k];
            size_t out_len;
            char *s = decode_all(t, ids, n, true, &out_len);
            CHECK(out_len == nw && memcmp(s, want, nw) == 0, "ill-formed case %zu does not round-trip", i);
            free(s);
            free(ids);
        }
    }
    /* all 256 byte values, one after the other */
    char all[256];
    for (int i = 0; i < 256; i++) all[i] = (char)i;
    int n;
    pt_token *ids = encode(t, all, 256, false, false, &n);
    CHECK(ids && n > 0, "256 bytes encode");
    if (ids) {
        char want[300];
        size_t nw = strlen(prefix);
        memcpy(want, prefix, nw);
        for (int k = 0; k < 256; k++)
            if (byte_encodable(t, (unsigned char)k)) want[nw++] = (char)k;
        size_t out_len;
        char *s = decode_all(t, ids, n, true, &out_len);
        CHECK(out_len == nw && memcmp(s, want, nw) == 0, "256 bytes round-trip (%zu of %zu)", out_len, nw);
        free(s);
    }
    free(ids);
}

/* A long word stresses the merge heap (it would be quadratic without it). */
static void test_long_input(const pt_tokenizer *t) {
    size_t len = 200000;
    char *s = malloc(len);
    for (size_t i = 0; i < len; i++) s[i] = i % 1000 == 999 ? '\n' : (i % 7 == 0 ? ' ' : "abcdefgh"[i % 8]);
    memset(s + 50000, ' ', 20000);   /* a whitespace run */
    memset(s + 100000, 'z', 20000);  /* one long letter word */
    memset(s + 150000, '7', 20000);  /* a digit run */
    int n;
    pt_token *ids = encode(t, s, len, false, false, &n);
    CHECK(ids && n > 0, "long input encodes (%d)", n);
    if (ids) {
        size_t out_len;
        char *d = decode_all(t, ids, n, true, &out_len);
        bool same = out_len == len + (strcmp(pt_tokenizer_kind(t), "llama") == 0);
        if (same) same = memcmp(d + (out_len - len), s, len) == 0;
        CHECK(same, "long input round-trips");
        free(d);
    }
    free(ids);
    free(s);
}

/* ---- SPM specifics -------------------------------------------------------- */

static void test_spm_specials(const pt_tokenizer *t) {
    CHECK(strcmp(pt_tokenizer_kind(t), "llama") == 0, "kind %s", pt_tokenizer_kind(t));
    CHECK(pt_tokenizer_n_vocab(t) == 1000, "n_vocab %d", pt_tokenizer_n_vocab(t));
    CHECK(pt_tokenizer_bos(t) == 1 && pt_tokenizer_eos(t) == 2, "bos/eos");
    CHECK(pt_tokenizer_is_eog(t, 2) && !pt_tokenizer_is_eog(t, 1), "</s> ends generation, <s> does not");
    int n1, n2;
    pt_token *a = encode(t, "Hello world", 11, true, false, &n1);
    pt_token *b = encode(t, "Hello world", 11, false, false, &n2);
    CHECK(n1 == n2 + 1 && a[0] == 1 && memcmp(a + 1, b, (size_t)n2 * sizeof *a) == 0,
          "add_special puts BOS first and nothing at the end");
    free(a), free(b);
    a = encode(t, "", 0, true, false, &n1);
    CHECK(n1 == 1 && a[0] == 1, "empty text with add_special is just BOS");
    free(a);
    char buf[16];
    pt_token byte_a = pt_tokenizer_find(t, "<0x41>");
    CHECK(byte_a >= 0 && pt_tokenizer_decode(t, byte_a, false, buf, sizeof buf) == 1 && buf[0] == 'A',
          "byte piece <0x41> decodes to A");
    CHECK(pt_tokenizer_decode(t, 1, false, buf, sizeof buf) == 0, "<s> hidden");
    CHECK(pt_tokenizer_decode(t, 1, true, buf, sizeof buf) == 3 && memcmp(buf, "<s>", 3) == 0, "<s> rendered");
}

/* ---- pre-tokenizer splits against HF --------------------------------------- */

static void test_pretok(void) {
    char *buf;
    cursor c = open_fixture("tokenizer_pretok.bin", "PTPRETK1", &buf);
    uint32_t n_sets = take_u32(&c), n_cases = take_u32(&c);
    const char **text = calloc(n_cases, sizeof *text);
    size_t *len = calloc(n_cases, sizeof *len);
    for (uint32_t i = 0; i < n_cases; i++) {
        len[i] = take_u32(&c);
        text[i] = (const char *)take(&c, len[i]);
    }
    pt_spanvec words = {0};
    for (uint32_t s = 0; s < n_sets; s++) {
        uint32_t nl = take_u32(&c);
        const char *name = (const char *)take(&c, nl);
        pt_pretok p;
        pt_error err = {0};
        pt_status st = pt_pretok_init(&p, name, nl, &err);
        CHECK(st == PT_OK, "pre-tokenizer %.*s: %s", (int)nl, name, err.msg);
        int failures = 0;
        for (uint32_t i = 0; i < n_cases; i++) {
            uint32_t nw = take_u32(&c);
            const unsigned char *ends = take(&c, 4 * (size_t)nw);
            if (st != PT_OK) continue;
            bool ok = pt_pretok_split(&p, text[i], len[i], &words) && words.n == nw;
            for (uint32_t k = 0; ok && k < nw; k++) {
                uint32_t e = (uint32_t)ends[4 * k] | (uint32_t)ends[4 * k + 1] << 8 |
                             (uint32_t)ends[4 * k + 2] << 16 | (uint32_t)ends[4 * k + 3] << 24;
                ok = words.v[k].off + words.v[k].len == e;
            }
            CHECK(ok, "pre-tokenizer %.*s splits case %u differently from HF", (int)nl, name, i);
            if (!ok && failures++ < 3) {
                fputs("  text: ", stderr);
                print_text(text[i], len[i]);
                fprintf(stderr, "\n  got %zu words:", words.n);
                for (size_t k = 0; k < words.n && k < 30; k++) {
                    fputs(" ", stderr);
                    print_text(text[i] + words.v[k].off, words.v[k].len);
                }
                fputc('\n', stderr);
            }
        }
        if (st == PT_OK) pt_pretok_free(&p);
    }
    free(words.v);
    free(text);
    free(len);
    free(buf);

    /* every documented name compiles; an unknown one is a clear error */
    static const char *names[] = {"gpt2", "gpt-2", "smollm", "starcoder", "llama3", "llama-bpe", "llama-v3",
                                  "falcon3", "smaug-bpe", "dbrx", "qwen2", "stablelm2", "default", "olmo"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        pt_pretok p;
        pt_error err = {0};
        CHECK(pt_pretok_init(&p, names[i], strlen(names[i]), &err) == PT_OK, "%s: %s", names[i], err.msg);
        pt_pretok_free(&p);
    }
    pt_pretok p;
    pt_error err = {0};
    CHECK(pt_pretok_init(&p, "no-such-pre", 11, &err) == PT_ERR_UNSUPPORTED, "unknown pre is unsupported");
    CHECK(strstr(err.msg, "no-such-pre") != NULL, "the message names it: %s", err.msg);
    CHECK(pt_pretok_init(&p, NULL, 0, &err) == PT_OK && strcmp(p.name, "default") == 0, "missing pre");
    pt_pretok_free(&p);
}

/* ---- small GGUFs in memory ------------------------------------------------- */

typedef struct gbuf {
    unsigned char *p;
    size_t n, cap;
    uint64_t n_kv;
} gbuf;

static void gput(gbuf *b, const void *s, size_t n) {
    while (b->n + n > b->cap) b->p = realloc(b->p, b->cap = b->cap ? b->cap * 2 : 256);
    memcpy(b->p + b->n, s, n);
    b->n += n;
}
static void gu32(gbuf *b, uint32_t v) { gput(b, &v, 4); } /* the test hosts are little-endian */
static void gu64(gbuf *b, uint64_t v) { gput(b, &v, 8); }
static void gstr(gbuf *b, const char *s) { gu64(b, strlen(s)), gput(b, s, strlen(s)); }
static void kv_str(gbuf *b, const char *k, const char *v) { gstr(b, k), gu32(b, PT_GGUF_STRING), gstr(b, v), b->n_kv++; }
static void kv_bool(gbuf *b, const char *k, bool v) {
    unsigned char c = v;
    gstr(b, k), gu32(b, PT_GGUF_BOOL), gput(b, &c, 1), b->n_kv++;
}
static void kv_strs(gbuf *b, const char *k, const char *const *v, int n) {
    gstr(b, k), gu32(b, PT_GGUF_ARRAY), gu32(b, PT_GGUF_STRING), gu64(b, (uint64_t)n);
    for (int i = 0; i < n; i++) gstr(b, v[i]);
    b->n_kv++;
}
static void kv_i32s(gbuf *b, const char *k, const int32_t *v, int n) {
    gstr(b, k), gu32(b, PT_GGUF_ARRAY), gu32(b, PT_GGUF_INT32), gu64(b, (uint64_t)n);
    gput(b, v, 4 * (size_t)n);
    b->n_kv++;
}

static void kv_u32(gbuf *b, const char *k, uint32_t v) { gstr(b, k), gu32(b, PT_GGUF_UINT32), gu32(b, v), b->n_kv++; }

/* Header + the kvs in body; the caller frees the result. */
static unsigned char *gguf_file(const gbuf *body, size_t *n) {
    gbuf f = {0};
    gput(&f, "GGUF", 4), gu32(&f, 3), gu64(&f, 0), gu64(&f, body->n_kv);
    gput(&f, body->p, body->n);
    *n = f.n;
    return f.p;
}

static pt_status load_mem(const gbuf *body, pt_tokenizer **t, pt_error *err) {
    size_t n;
    unsigned char *file = gguf_file(body, &n);
    pt_gguf *g = NULL;
    *t = NULL;
    pt_status st = pt_gguf_open_memory(file, n, &g, err);
    if (st == PT_OK) st = pt_tokenizer_load(g, t, err);
    pt_gguf_close(g);  /* the tokenizer keeps its own copies */
    memset(file, 0, n); /* ... so scribbling over the file must not matter */
    free(file);
    return st;
}

static void test_load_errors(void) {
    /* a tiny byte-level vocabulary: "a" "b" "ab" "Ġ" "Ġab" "<|x|>" "<u>" */
    static const char *toks[] = {"a", "b", "ab", "\xC4\xA0", "\xC4\xA0" "ab", "<|x|>", "<u>"};
    static const int32_t types[] = {1, 1, 1, 1, 1, 3, 4};
    static const char *merges[] = {"a b", "\xC4\xA0 ab"};
    const char *pre[] = {"gpt2", "no-such-pre"};
    for (int i = 0; i < 2; i++) {
        gbuf b = {0};
        kv_str(&b, "tokenizer.ggml.model", "gpt2");
        kv_str(&b, "tokenizer.ggml.pre", pre[i]);
        kv_strs(&b, "tokenizer.ggml.tokens", toks, 7);
        kv_i32s(&b, "tokenizer.ggml.token_type", types, 7);
        kv_strs(&b, "tokenizer.ggml.merges", merges, 2);
        kv_bool(&b, "tokenizer.ggml.add_eos_token", true);
        pt_tokenizer *t;
        pt_error err = {0};
        pt_status st = load_mem(&b, &t, &err);
        if (i == 0) {
            CHECK(st == PT_OK, "tiny vocab loads: %s", err.msg);
            if (t) {
                /* " ab<|x|>ab<u>b": merges, a control token, a user-defined one */
                const char *s = " ab<|x|>ab<u>b";
                pt_token want_special[] = {4, 5, 2, 6, 1};
                int n;
                pt_token *ids = encode(t, s, strlen(s), false, true, &n);
                CHECK(n == 5 && memcmp(ids, want_special, sizeof want_special) == 0, "tiny encode (special)");
                free(ids);
                /* without parse_special "<|x|>" is text; "<" is not in this
                 * vocabulary, so its bytes are dropped, but <u> stays whole */
                ids = encode(t, "ab<u>", 5, false, false, &n);
                CHECK(n == 2 && ids[0] == 2 && ids[1] == 6, "user-defined tokens always match");
                free(ids);
                ids = encode(t, "ab", 2, true, false, &n);
                CHECK(n == 1 && ids[0] == 2, "add_eos without an eos id adds nothing (%d)", n);
                free(ids);
                char buf[8];
                CHECK(pt_tokenizer_decode(t, 6, false, buf, sizeof buf) == 3, "user-defined text always shows");
                CHECK(pt_tokenizer_decode(t, 5, false, buf, sizeof buf) == 0, "control text hidden");
            }
        } else {
            CHECK(st == PT_ERR_UNSUPPORTED && t == NULL, "unknown pre: %s", err.msg);
            CHECK(strstr(err.msg, "no-such-pre") != NULL, "message names the pre: %s", err.msg);
        }
        pt_tokenizer_free(t);
        free(b.p);
    }
    /* unsupported model, missing pieces */
    struct { const char *model; bool tokens, merges; pt_status want; } cases[] = {
        {"bert", true, true, PT_ERR_UNSUPPORTED},
        {"gpt2", false, true, PT_ERR_FORMAT},
        {"gpt2", true, false, PT_ERR_FORMAT},
        {NULL, true, true, PT_ERR_FORMAT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gbuf b = {0};
        if (cases[i].model) kv_str(&b, "tokenizer.ggml.model", cases[i].model);
        if (cases[i].tokens) kv_strs(&b, "tokenizer.ggml.tokens", toks, 7);
        if (cases[i].merges) kv_strs(&b, "tokenizer.ggml.merges", merges, 2);
        pt_tokenizer *t;
        pt_error err = {0};
        pt_status st = load_mem(&b, &t, &err);
        CHECK(st == cases[i].want && t == NULL, "load error case %zu: %s (%s)", i, pt_status_name(st), err.msg);
        CHECK(err.msg[0] != 0, "error case %zu has a message", i);
        pt_tokenizer_free(t);
        free(b.p);
    }
}

/* Llama 3's ignore_merges: a word that is itself a token skips BPE, and
 * BOS is added by default; "smaug-bpe" has the same regex without either. */
static void test_ignore_merges(void) {
    static const char *toks[] = {"a", "b", "c", "ab", "abc", "<|begin_of_text|>"};
    static const int32_t types[] = {1, 1, 1, 1, 1, 3};
    static const char *merges[] = {"a b"};
    const char *pre[] = {"llama-bpe", "smaug-bpe"};
    for (int i = 0; i < 2; i++) {
        gbuf b = {0};
        kv_str(&b, "tokenizer.ggml.model", "gpt2");
        kv_str(&b, "tokenizer.ggml.pre", pre[i]);
        kv_strs(&b, "tokenizer.ggml.tokens", toks, 6);
        kv_i32s(&b, "tokenizer.ggml.token_type", types, 6);
        kv_strs(&b, "tokenizer.ggml.merges", merges, 1);
        kv_u32(&b, "tokenizer.ggml.bos_token_id", 5);
        pt_tokenizer *t;
        pt_error err = {0};
        CHECK(load_mem(&b, &t, &err) == PT_OK, "%s: %s", pre[i], err.msg);
        if (t) {
            int n;
            pt_token *ids = encode(t, "abc", 3, true, true, &n);
            if (i == 0)
                CHECK(n == 2 && ids[0] == 5 && ids[1] == 4, "llama-bpe: BOS + whole word \"abc\" (%d ids)", n);
            else
                CHECK(n == 2 && ids[0] == 3 && ids[1] == 2, "smaug-bpe: no BOS, merges give ab c (%d ids)", n);
            free(ids);
        }
        pt_tokenizer_free(t);
        free(b.p);
    }
}

int main(void) {
    test_pretok();
    test_load_errors();
    test_ignore_merges();

    pt_gguf *g = NULL;
    pt_tokenizer *t = load_file(test_smollm2_path(), &g);
    id_fixture f = read_ids("tokenizer_smollm2.bin");
    CHECK(f.n >= 300, "fixture has %d cases", f.n);
    test_ids(t, &f, "smollm2");
    test_roundtrip(t, &f, "");
    test_streaming(t, &f);
    test_smollm2_specials(t);
    test_invalid_utf8(t, "");
    test_long_input(t);
    free_ids(&f);
    pt_tokenizer_free(t);
    pt_gguf_close(g);

    t = load_file(test_data("spm_tiny.gguf"), &g);
    f = read_ids("tokenizer_spm_tiny.bin");
    test_ids(t, &f, "spm_tiny");
    test_roundtrip(t, &f, " ");
    test_spm_specials(t);
    test_invalid_utf8(t, " ");
    test_long_input(t);
    free_ids(&f);
    pt_tokenizer_free(t);
    pt_gguf_close(g);
    return check_done("tokenizer");
}
