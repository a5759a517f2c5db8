/*
 * sampler.c — picking the next token from logits (chain and semantics in
 * sampler.h).
 *
 * Everything a sample needs is allocated by pt_sampler_new: an n_vocab copy
 * of the logits for the penalties, an n_vocab candidate array, the penalty
 * window. pt_sampler_sample allocates nothing.
 */
#include "sampler.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct pt_sampler {
    pt_sampler_params p;
    int n_vocab;
    bool greedy;              /* !(temperature > 0) */
    bool penalize;            /* a penalty is set and the window is not empty-sized */
    uint64_t rng[4];          /* xoshiro256** state */

    /* Penalty window: the last `cap` accepted tokens. Until it is full they
     * sit in ring[0..n_ring) in order; once full, ring[head] is the oldest.
     * count[id] is how often id occurs in the window (invariant: the sum of
     * count[] equals n_ring). */
    pt_token *ring;           /* [cap] */
    int cap, n_ring, head;
    int32_t *count;           /* [n_vocab] */

    float *logits;            /* [n_vocab] penalised copy of the caller's logits */
    pt_sampler_candidate *cand; /* [n_vocab] */
    double bucket_mass[1024]; /* top-p histogram (PT_TOPP_BUCKETS) */
};

pt_sampler_params pt_sampler_default_params(void) {
    return (pt_sampler_params){
        .temperature = 0.8f,
        .top_k = 40,
        .top_p = 0.95f,
        .min_p = 0.05f,
        .repeat_penalty = 1.0f,
        .presence_penalty = 0.0f,
        .frequency_penalty = 0.0f,
        .penalty_last_n = 64,
        .seed = 42,
    };
}

/* ---- random numbers ---------------------------------------------------- */

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t rotl64(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t xoshiro_next(uint64_t s[4]) {
    uint64_t result = rotl64(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl64(s[3], 45);
    return result;
}

/* Uniform double in [0, 1) from the top 53 bits. */
static double rng_uniform(uint64_t s[4]) { return (double)(xoshiro_next(s) >> 11) * 0x1.0p-53; }

static void rng_seed(pt_sampler *s) {
    uint64_t x = s->p.seed;
    for (int i = 0; i < 4; i++) s->rng[i] = splitmix64(&x);
}

/* ---- lifetime ---------------------------------------------------------- */

pt_sampler *pt_sampler_new(const pt_sampler_params *params, int n_vocab) {
    if (n_vocab < 1) return NULL;
    pt_sampler *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->p = params ? *params : pt_sampler_default_params();
    s->n_vocab = n_vocab;
    /* Out-of-range settings mean "off" (NaN included, hence the negated
     * comparisons). */
    s->greedy = !(s->p.temperature > 0);
    if (!(s->p.repeat_penalty > 0)) s->p.repeat_penalty = 1.0f;
    if (isnan(s->p.presence_penalty)) s->p.presence_penalty = 0;
    if (isnan(s->p.frequency_penalty)) s->p.frequency_penalty = 0;
    s->cap = s->p.penalty_last_n > 0 ? s->p.penalty_last_n : 0;
    s->penalize = s->cap > 0 && (s->p.repeat_penalty != 1.0f || s->p.presence_penalty != 0 ||
                                 s->p.frequency_penalty != 0);

    s->count = calloc((size_t)n_vocab, sizeof *s->count);
    s->logits = malloc((size_t)n_vocab * sizeof *s->logits);
    s->cand = malloc((size_t)n_vocab * sizeof *s->cand);
    s->ring = s->cap ? malloc((size_t)s->cap * sizeof *s->ring) : NULL;
    if (!s->count || !s->logits || !s->cand || (s->cap && !s->ring)) {
        pt_sampler_free(s);
        return NULL;
    }
    rng_seed(s);
    return s;
}

void pt_sampler_free(pt_sampler *s) {
    if (!s) return;
    free(s->count);
    free(s->logits);
    free(s->cand);
    free(s->ring);
    free(s);
}

void pt_sampler_reset(pt_sampler *s) {
    for (int i = 0; i < s->n_ring; i++) s->count[s->ring[i]] = 0;
    s->n_ring = s->head = 0;
    rng_seed(s);
}

/* Ids outside the vocabulary are ignored. */
void pt_sampler_accept(pt_sampler *s, pt_token tok) {
    if (tok < 0 || tok >= s->n_vocab || s->cap == 0) return;
    if (s->n_ring == s->cap) {
        s->count[s->ring[s->head]]--;
        s->ring[s->head] = tok;
        s->head = (s->head + 1) % s->cap;
    } else {
        s->ring[s->n_ring++] = tok;
    }
    s->count[tok]++;
}

/* ---- the chain --------------------------------------------------------- */

/* The logits after penalties: the caller's array itself when no penalty
 * applies, else s->logits. Each penalised entry is computed from the
 * caller's value, so a token that appears several times in the window is
 * simply written several times with the same result. */
static const float *penalized(pt_sampler *s, const float *logits) {
    if (!s->penalize || s->n_ring == 0) return logits;
    memcpy(s->logits, logits, (size_t)s->n_vocab * sizeof *logits);
    const float rp = s->p.repeat_penalty, freq = s->p.frequency_penalty,
                pres = s->p.presence_penalty;
    for (int i = 0; i < s->n_ring; i++) {
        pt_token t = s->ring[i];
        float l = logits[t];
        l = l > 0 ? l / rp : l * rp;
        l -= (float)s->count[t] * freq + pres;
        s->logits[t] = l;
    }
    return s->logits;
}

/* Greedy pick: highest logit, lowest id among ties, NaN skipped; all NaN
 * gives 0. */
static pt_token argmax(const float *l, int n) {
    int best = -1;
    for (int i = 0; i < n; i++) {
        if (isnan(l[i])) continue;
        if (best < 0 || l[i] > l[best]) best = i;
    }
    return best < 0 ? 0 : best;
}

/* a ranks before b: higher logit, then lower id. */
static bool before(const pt_sampler_candidate *a, const pt_sampler_candidate *b) {
    return a->logit > b->logit || (a->logit == b->logit && a->id < b->id);
}

static int cmp_cand(const void *x, const void *y) {
    const pt_sampler_candidate *a = x, *b = y;
    return before(a, b) ? -1 : before(b, a) ? 1 : 0;
}

/* Restore the heap order below i in c[0..n): a min-heap under `before`, so
 * c[0] is the candidate that ranks last among those kept. */
static void sift_down(pt_sampler_candidate *c, int n, int i) {
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && before(&c[m], &c[l])) m = l;
        if (r < n && before(&c[m], &c[r])) m = r;
        if (m == i) return;
        pt_sampler_candidate t = c[i];
        c[i] = c[m];
        c[m] = t;
        i = m;
    }
}

/* Move the k best of c[0..n) into c[0..k) (in no particular order), in
 * place: the prefix is a heap of the best seen so far, the rest is scanned
 * once, and an evicted candidate swaps places with its replacement, so
 * c[0..n) stays a permutation. O(n log k). */
static void select_top_k(pt_sampler_candidate *c, int n, int k) {
    for (int i = k / 2 - 1; i >= 0; i--) sift_down(c, k, i);
    for (int i = k; i < n; i++) {
        if (before(&c[i], &c[0])) {
            pt_sampler_candidate t = c[0];
            c[0] = c[i];
            c[i] = t;
            sift_down(c, k, 0);
        }
    }
}

/* Top-p's cut: the length of the shortest prefix, in sorted order, whose
 * weights exp(logit - max) sum to >= target; that prefix ends up sorted at
 * the front. Sorting all n (150k for Qwen) would dominate a decode step, so
 * first a histogram of the weights over logit buckets (bucket b holds
 * logits in (max - (b+1)/S, max - b/S], the last one everything lower)
 * finds the bucket where the running mass crosses target; only the
 * candidates down to that bucket are moved to the front and sorted. Lower
 * buckets hold only lower logits, so sorting the rest afterwards (needed
 * only if rounding puts the crossing a little later) continues the same
 * order. */
#define PT_TOPP_BUCKETS 1024
#define PT_TOPP_RANGE 32.0 /* logits this far below max share the last bucket */

static int top_p_cut(pt_sampler *s, pt_sampler_candidate *c, int n, float max, double target) {
    int front = n;
    if (n > 512) {
        double *mass = s->bucket_mass;
        const double scale = PT_TOPP_BUCKETS / PT_TOPP_RANGE;
        memset(mass, 0, PT_TOPP_BUCKETS * sizeof *mass);
        for (int i = 0; i < n; i++) {
            double d = ((double)max - c[i].logit) * scale;
            int b = d >= PT_TOPP_BUCKETS - 1 ? PT_TOPP_BUCKETS - 1 : (int)d;
            mass[b] += exp((double)c[i].logit - max);
        }
        double acc = 0;
        int last = PT_TOPP_BUCKETS - 1;
        for (int b = 0; b < PT_TOPP_BUCKETS; b++) {
            acc += mass[b];
            if (acc >= target) {
                last = b;
                break;
            }
        }
        front = 0;
        for (int i = 0; i < n; i++) {
            double d = ((double)max - c[i].logit) * scale;
            if (d < last + 1) {
                pt_sampler_candidate t = c[front];
                c[front++] = c[i];
                c[i] = t;
            }
        }
    }
    qsort(c, (size_t)front, sizeof *c, cmp_cand);
    double cum = 0;
    for (int i = 0; i < n; i++) {
        if (i == front) qsort(c + front, (size_t)(n - front), sizeof *c, cmp_cand);
        cum += exp((double)c[i].logit - max);
        if (cum >= target) return i + 1;
    }
    return n;
}

int pt_sampler_candidates(pt_sampler *s, const float *logits, const pt_sampler_candidate **out) {
    const float *l = penalized(s, logits);
    pt_sampler_candidate *c = s->cand;
    *out = c;
    if (s->greedy) {
        pt_token t = argmax(l, s->n_vocab);
        c[0] = (pt_sampler_candidate){t, l[t], 1.0f};
        return 1;
    }

    /* usable logits only: NaN is ignored, -inf can never be drawn, and +inf
     * becomes the largest float so the softmax below stays finite */
    int n = 0;
    for (int i = 0; i < s->n_vocab; i++) {
        float v = l[i];
        if (isnan(v) || v == -INFINITY) continue;
        c[n++] = (pt_sampler_candidate){i, v == INFINITY ? FLT_MAX : v, 0};
    }
    if (n == 0) {
        pt_token t = argmax(l, s->n_vocab);
        c[0] = (pt_sampler_candidate){t, l[t], 1.0f};
        return 1;
    }

    /* With no filter set nothing needs the order, and the candidates stay in
     * id order (as llama.cpp's draw sees them when no sampler sorted). */
    bool top_p = s->p.top_p < 1.0f;
    bool sorted = s->p.top_k > 0 || top_p || s->p.min_p > 0;

    /* top-k */
    if (s->p.top_k > 0 && s->p.top_k < n) {
        select_top_k(c, n, s->p.top_k);
        n = s->p.top_k;
    }

    float max = c[0].logit;
    for (int i = 1; i < n; i++)
        if (c[i].logit > max) max = c[i].logit;

    /* top-p normalises over every candidate left by top-k */
    double z = 0;
    if (top_p)
        for (int i = 0; i < n; i++) z += exp((double)c[i].logit - max);

    /* min-p runs last in the chain, but its cut (logit >= max + log(min_p);
     * the top token, which top-p always keeps, sets max) does not depend on
     * what top-p removed. So it may run first: top-p then sees fewer tokens
     * but the same normaliser z, and keeps the same prefix of the survivors.
     * This usually leaves only a few tokens to sort. */
    if (s->p.min_p > 0) {
        double cut = (double)max + log((double)s->p.min_p);
        int m = 0;
        for (int i = 0; i < n; i++)
            if ((double)c[i].logit >= cut) c[m++] = c[i];
        if (m == 0) {
            /* min_p > 1 cuts even the top token, which stays regardless;
             * nothing was moved, so c[0..n) is intact */
            int best = 0;
            for (int i = 1; i < n; i++)
                if (before(&c[i], &c[best])) best = i;
            c[0] = c[best];
            m = 1;
        }
        n = m;
    }

    if (top_p)
        n = top_p_cut(s, c, n, max, (double)s->p.top_p * z);
    else if (sorted)
        qsort(c, (size_t)n, sizeof *c, cmp_cand);

    /* temperature and softmax */
    double inv_t = 1.0 / s->p.temperature, sum = 0;
    for (int i = 0; i < n; i++) sum += exp(((double)c[i].logit - max) * inv_t);
    for (int i = 0; i < n; i++) c[i].p = (float)(exp(((double)c[i].logit - max) * inv_t) / sum);
    return n;
}

pt_token pt_sampler_sample(pt_sampler *s, const float *logits) {
    if (s->greedy) return argmax(penalized(s, logits), s->n_vocab);
    const pt_sampler_candidate *c;
    int n = pt_sampler_candidates(s, logits, &c);
    /* One draw per sample whatever n is, so the random stream advances the
     * same way for a given history. */
    double r = rng_uniform(s->rng), acc = 0;
    for (int i = 0; i < n; i++) {
        acc += c[i].p;
        if (r < acc) return c[i].id;
    }
    return c[n - 1].id; /* r within rounding of 1 */
}
