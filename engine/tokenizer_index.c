/* tokenizer_index.c — the tokenizer's hash tables, bigram heap and id vector. */
#include "tokenizer_impl.h"

#include <stdlib.h>
#include <string.h>

/* ---- id vector ---------------------------------------------------------- */

bool pt_tokvec_push(pt_tokvec *vec, pt_token id) {
    if (vec->n == vec->cap) {
        size_t cap = vec->cap ? vec->cap * 2 : 64;
        pt_token *v = realloc(vec->v, cap * sizeof *v);
        if (!v) return false;
        vec->v = v;
        vec->cap = cap;
    }
    vec->v[vec->n++] = id;
    return true;
}

/* ---- vocabulary index --------------------------------------------------- */

/* FNV-1a over the concatenation a + b. */
static uint32_t hash2(const char *a, size_t na, const char *b, size_t nb) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < na; i++) h = (h ^ (unsigned char)a[i]) * 16777619u;
    for (size_t i = 0; i < nb; i++) h = (h ^ (unsigned char)b[i]) * 16777619u;
    return h;
}

static bool text_eq2(const pt_vocab_entry *e, const char *a, size_t na, const char *b, size_t nb) {
    return e->len == na + nb && (na == 0 || memcmp(e->text, a, na) == 0) &&
           (nb == 0 || memcmp(e->text + na, b, nb) == 0);
}

bool pt_vocab_index_build(pt_tokenizer *t) {
    uint32_t cap = 16;
    while (cap < 2u * (uint32_t)t->n_vocab) cap *= 2;
    t->index.slots = calloc(cap, sizeof *t->index.slots);
    if (!t->index.slots) return false;
    t->index.mask = cap - 1;
    for (int id = 0; id < t->n_vocab; id++) {
        const pt_vocab_entry *e = &t->vocab[id];
        uint32_t i = hash2(e->text, e->len, NULL, 0) & t->index.mask;
        for (;;) {
            uint32_t s = t->index.slots[i];
            if (s == 0) {
                t->index.slots[i] = (uint32_t)id + 1;
                break;
            }
            /* A duplicate text maps to the later id, as in llama.cpp. */
            if (text_eq2(&t->vocab[s - 1], e->text, e->len, NULL, 0)) {
                t->index.slots[i] = (uint32_t)id + 1;
                break;
            }
            i = (i + 1) & t->index.mask;
        }
    }
    return true;
}

pt_token pt_vocab_lookup2(const pt_tokenizer *t, const char *a, size_t na, const char *b, size_t nb) {
    uint32_t i = hash2(a, na, b, nb) & t->index.mask;
    for (;;) {
        uint32_t s = t->index.slots[i];
        if (s == 0) return -1;
        if (text_eq2(&t->vocab[s - 1], a, na, b, nb)) return (pt_token)(s - 1);
        i = (i + 1) & t->index.mask;
    }
}

/* ---- merge index -------------------------------------------------------- */

static uint64_t mix64(uint64_t x) {
    /* splitmix64 finaliser: spreads the two ids over all bits */
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

bool pt_merge_index_init(pt_merge_index *m, uint64_t n_merges) {
    uint64_t cap = 16;
    while (cap < 2 * n_merges) cap *= 2;
    m->slots = malloc(cap * sizeof *m->slots);
    if (!m->slots) return false;
    for (uint64_t i = 0; i < cap; i++) m->slots[i].rank = -1;
    m->mask = cap - 1;
    return true;
}

void pt_merge_index_add(pt_merge_index *m, pt_token left, pt_token right, int32_t rank, pt_token merged) {
    uint64_t key = (uint64_t)(uint32_t)left << 32 | (uint32_t)right;
    uint64_t i = mix64(key) & m->mask;
    while (m->slots[i].rank >= 0) {
        if (m->slots[i].key == key) return;
        i = (i + 1) & m->mask;
    }
    m->slots[i] = (pt_merge_slot){key, rank, merged};
}

int32_t pt_merge_index_find(const pt_merge_index *m, pt_token left, pt_token right, pt_token *merged) {
    if (left < 0 || right < 0) return -1;
    uint64_t key = (uint64_t)(uint32_t)left << 32 | (uint32_t)right;
    uint64_t i = mix64(key) & m->mask;
    while (m->slots[i].rank >= 0) {
        if (m->slots[i].key == key) {
            *merged = m->slots[i].id;
            return m->slots[i].rank;
        }
        i = (i + 1) & m->mask;
    }
    return -1;
}

/* ---- bigram heap -------------------------------------------------------- */

/* a pops before b */
static bool before(const pt_bigram *a, const pt_bigram *b) {
    return a->prio < b->prio || (a->prio == b->prio && a->left < b->left);
}

bool pt_bigram_push(pt_bigram_heap *h, pt_bigram b) {
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 64;
        pt_bigram *v = realloc(h->v, cap * sizeof *v);
        if (!v) return false;
        h->v = v;
        h->cap = cap;
    }
    size_t i = h->n++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!before(&b, &h->v[parent])) break;
        h->v[i] = h->v[parent];
        i = parent;
    }
    h->v[i] = b;
    return true;
}

bool pt_bigram_pop(pt_bigram_heap *h, pt_bigram *out) {
    if (h->n == 0) return false;
    *out = h->v[0];
    pt_bigram last = h->v[--h->n];
    size_t i = 0, n = h->n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && before(&h->v[c + 1], &h->v[c])) c++;
        if (!before(&h->v[c], &last)) break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (n > 0) h->v[i] = last;
    return true;
}
