/*
 * test_utf8.c — the streaming UTF-8 detokenizer (pt_utf8_stream) and the
 * strict decoder behind it. The expected outputs for ill-formed input are
 * Python's bytes.decode("utf-8", "replace") (one U+FFFD per maximal
 * subpart), written out by hand below.
 */
#include "check.h"
#include "petrel.h"
#include "utf8.h"

#include <stdint.h>

#define FFFD "\xEF\xBF\xBD"

/* Push s in chunks of the given sizes (the last chunk takes the rest),
 * then flush. Every chunk's output must be well-formed on its own. Returns
 * the concatenated output (static buffer) and its length in *n. */
static const char *stream(const char *s, size_t len, const size_t *sizes, int n_sizes, size_t *n) {
    static char out[8192];
    char chunk[PT_UTF8_STREAM_OUT(2048)];
    pt_utf8_stream st = {0};
    size_t pos = 0, w = 0;
    for (int i = 0; i <= n_sizes && pos <= len; i++) {
        size_t k = i < n_sizes ? sizes[i] : len - pos;
        if (k > len - pos) k = len - pos;
        size_t m = pt_utf8_stream_push(&st, s + pos, k, chunk);
        CHECK(m <= PT_UTF8_STREAM_OUT(k), "push of %zu bytes wrote %zu", k, m);
        CHECK(pt_utf8_valid(chunk, m), "chunk %d of \"%.*s\" is not valid UTF-8", i, (int)len, s);
        memcpy(out + w, chunk, m);
        w += m;
        pos += k;
        if (i == n_sizes) break;
    }
    size_t m = pt_utf8_stream_flush(&st, chunk);
    CHECK(m <= 4 && pt_utf8_valid(chunk, m), "flush wrote %zu bytes", m);
    memcpy(out + w, chunk, m);
    w += m;
    CHECK(st.n_pending == 0, "flush leaves %d pending bytes", st.n_pending);
    *n = w;
    return out;
}

static void expect(const char *in, size_t in_len, const char *want, const size_t *sizes, int n_sizes) {
    size_t n;
    const char *got = stream(in, in_len, sizes, n_sizes, &n);
    CHECK(n == strlen(want) && memcmp(got, want, n) == 0, "stream(\"%.*s\") gave \"%.*s\", want \"%s\"",
          (int)in_len, in, (int)n, got, want);
}

#define EXPECT1(in, want) expect(in, sizeof(in) - 1, want, NULL, 0)

static void test_split_sequences(void) {
    /* a 2-, 3- and 4-byte character split across 1..4 calls at every point */
    const char *chars[] = {"\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80", "a\xE4\xBD\xA0" "b"};
    for (size_t c = 0; c < 4; c++) {
        const char *s = chars[c];
        size_t len = strlen(s);
        for (size_t a = 0; a <= len; a++)
            for (size_t b = 0; a + b <= len; b++)
                for (size_t d = 0; a + b + d <= len; d++) {
                    size_t sizes[3] = {a, b, d};
                    expect(s, len, s, sizes, 3);
                }
    }
    /* one byte at a time: nothing comes out until the character is whole */
    pt_utf8_stream st = {0};
    char out[PT_UTF8_STREAM_OUT(1)];
    const char *smile = "\xF0\x9F\x98\x80";
    for (int i = 0; i < 3; i++) CHECK(pt_utf8_stream_push(&st, smile + i, 1, out) == 0, "byte %d emitted early", i);
    CHECK(st.n_pending == 3, "3 bytes pending, got %d", st.n_pending);
    size_t n = pt_utf8_stream_push(&st, smile + 3, 1, out);
    CHECK(n == 4 && memcmp(out, smile, 4) == 0, "whole emoji after the 4th byte (%zu)", n);
    CHECK(pt_utf8_stream_push(&st, NULL, 0, out) == 0, "empty push writes nothing");
}

static void test_mixed_text_every_split(void) {
    const char *s = "héllo €uro 😀 日本 ok";
    size_t len = strlen(s);
    for (size_t a = 0; a <= len; a++)
        for (size_t b = 0; a + b <= len; b += 3) {
            size_t sizes[2] = {a, b};
            expect(s, len, s, sizes, 2);
        }
}

static void test_invalid(void) {
    EXPECT1("\xFF", FFFD);
    EXPECT1("a\x80" "b", "a" FFFD "b");
    EXPECT1("\x80\x80\x80\x80", FFFD FFFD FFFD FFFD);
    /* overlong forms */
    EXPECT1("\xC0\xAF", FFFD FFFD);
    EXPECT1("\xC1\xBF", FFFD FFFD);
    EXPECT1("\xE0\x80\xAF", FFFD FFFD FFFD);
    EXPECT1("\xF0\x80\x80\xAF", FFFD FFFD FFFD FFFD);
    /* surrogates U+D800 and U+DFFF */
    EXPECT1("\xED\xA0\x80", FFFD FFFD FFFD);
    EXPECT1("\xED\xBF\xBF", FFFD FFFD FFFD);
    /* beyond U+10FFFF, and lead bytes that can never start a sequence */
    EXPECT1("\xF4\x90\x80\x80", FFFD FFFD FFFD FFFD);
    EXPECT1("\xF5\x80", FFFD FFFD);
    EXPECT1("\xF8\x88\x80\x80\x80", FFFD FFFD FFFD FFFD FFFD);
    /* a truncated sequence followed by something else: one U+FFFD for it */
    EXPECT1("\xE2\x82" "A", FFFD "A");
    EXPECT1("\xF0\x9F\x98" "x", FFFD "x");
    EXPECT1("\xF0\x9F\x98\xF0\x9F\x98\x80", FFFD "\xF0\x9F\x98\x80");
    /* the largest and smallest of each length pass */
    EXPECT1("\x7F\xC2\x80\xDF\xBF\xE0\xA0\x80\xEF\xBF\xBF\xF0\x90\x80\x80\xF4\x8F\xBF\xBF",
            "\x7F\xC2\x80\xDF\xBF\xE0\xA0\x80\xEF\xBF\xBF\xF0\x90\x80\x80\xF4\x8F\xBF\xBF");
    /* NUL is a character like any other */
    size_t n;
    const char *o = stream("a\0b", 3, NULL, 0, &n);
    CHECK(n == 3 && memcmp(o, "a\0b", 3) == 0, "NUL passes through");
}

static void test_invalid_across_calls(void) {
    size_t one[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    /* held-back lead byte turns out invalid: U+FFFD, then the next byte */
    expect("\xE2(", 2, FFFD "(", one, 1);
    expect("\xE2\x82(", 3, FFFD "(", one, 2);
    expect("\xF0\x9F\x98\xF0\x9F\x98\x80", 7, FFFD "\xF0\x9F\x98\x80", one, 7);
    expect("\xED\xA0\x80", 3, FFFD FFFD FFFD, one, 3);
    expect("\xC3\xC3\xA9", 3, FFFD "\xC3\xA9", one, 3);
    /* an incomplete tail at the end is flushed as one U+FFFD */
    expect("ok\xE2\x82", 4, "ok" FFFD, NULL, 0);
    expect("\xF0\x9F", 2, FFFD, one, 2);
    size_t n;
    stream("", 0, NULL, 0, &n);
    CHECK(n == 0, "empty stream gives nothing");
}

/* Chunked decoding must equal one-shot decoding for arbitrary bytes (a
 * seeded generator biased towards UTF-8 lead and continuation bytes). */
static void test_random_consistency(void) {
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (int iter = 0; iter < 2000; iter++) {
        unsigned char buf[64];
        size_t len = 0;
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t want_len = x % sizeof buf;
        while (len < want_len) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            static const unsigned char pick[] = {'a', ' ', 0x80, 0x9F, 0xBF, 0xC2, 0xC3, 0xDF, 0xE0, 0xE2,
                                                 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF, 0xA0, 0x8F, 0x90};
            buf[len++] = pick[x % sizeof pick];
        }
        size_t n1, n2;
        static char whole[8192];
        const char *o = stream((const char *)buf, len, NULL, 0, &n1);
        memcpy(whole, o, n1);
        size_t sizes[64];
        int k = 0;
        for (size_t used = 0; used < len && k < 64; k++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            sizes[k] = 1 + x % 4;
            used += sizes[k];
        }
        o = stream((const char *)buf, len, sizes, k, &n2);
        CHECK(n1 == n2 && memcmp(whole, o, n1) == 0, "iteration %d: chunked output differs", iter);
        CHECK(pt_utf8_valid(o, n2), "iteration %d: output not valid", iter);
    }
}

static void test_helpers(void) {
    char out[4];
    CHECK(pt_utf8_encode(0x41, out) == 1 && out[0] == 'A', "encode A");
    CHECK(pt_utf8_encode(0x20AC, out) == 3 && memcmp(out, "\xE2\x82\xAC", 3) == 0, "encode euro");
    CHECK(pt_utf8_encode(0x1F600, out) == 4 && memcmp(out, "\xF0\x9F\x98\x80", 4) == 0, "encode emoji");
    CHECK(pt_utf8_encode(0xD800, out) == 3 && memcmp(out, FFFD, 3) == 0, "surrogate encodes as U+FFFD");
    CHECK(pt_utf8_char_len("\xE2\x82\xAC", 3) == 3, "char_len euro");
    CHECK(pt_utf8_char_len("\xE2\x82", 2) == 2, "char_len of a cut sequence covers it");
    CHECK(pt_utf8_char_len("\xE2" "A", 2) == 1, "char_len of a bad sequence");
    CHECK(pt_utf8_valid("h\xC3\xA9", 3) && !pt_utf8_valid("\xC3", 1), "valid");
}

/* pt_escape_text: what a crafted model name would send to the terminal. */
static void check_escape(const char *in, size_t len, size_t cap, const char *want) {
    char out[256];
    size_t n = pt_escape_text(in, len, out, cap);
    CHECK(n == strlen(want) && strcmp(out, want) == 0, "escape of %zu bytes (cap %zu): got \"%s\", want \"%s\"",
          len, cap, out, want);
    for (size_t i = 0; i < n; i++)
        CHECK((unsigned char)out[i] >= 0x20 && out[i] != 0x7F, "byte %zu of the escape is a control", i);
    CHECK(pt_utf8_valid(out, n), "escape output is valid UTF-8");
}

static void test_escape(void) {
    check_escape("plain name", 10, 64, "plain name");
    check_escape("caf\xC3\xA9 \xE6\x97\xA5", 9, 64, "caf\xC3\xA9 \xE6\x97\xA5");
    /* clear screen, then an OSC window title ending in BEL */
    check_escape("\x1b[2J\x1b]0;pwned\x07", 14, 64, "\\e[2J\\e]0;pwned\\x07");
    check_escape("a\nb\tc\rd\x7f", 8, 64, "a\\nb\\tc\\rd\\x7F");
    check_escape("\xC2\x9B" "31m", 5, 64, "\\u{9B}31m"); /* C1 CSI as UTF-8 */
    check_escape("\x9B" "31m\xFF", 5, 64, "\\x9B31m\\xFF"); /* raw C1 byte, invalid byte */
    check_escape("x\0y", 3, 64, "x\\x00y");
    check_escape("\x1b[2J", 4, 4, "\\e["); /* cut between escapes, never inside one */
    check_escape("\x1b", 1, 2, "");
    check_escape("\xE6\x97\xA5\xE6\x97\xA5", 6, 6, "\xE6\x97\xA5"); /* never half a character */
    char one[1] = {'z'};
    CHECK(pt_escape_text("abc", 3, one, 1) == 0 && one[0] == 0, "cap 1 gives an empty string");
}

int main(void) {
    test_split_sequences();
    test_mixed_text_every_split();
    test_invalid();
    test_invalid_across_calls();
    test_random_consistency();
    test_helpers();
    test_escape();
    return check_done("utf8");
}
