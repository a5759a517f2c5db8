/* ppl_math.c — llama-perplexity's per-position arithmetic (ppl_math.h).
 * Each function names the llama.cpp code it mirrors; the casts and
 * float/double choices are theirs. */
#include "ppl_math.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kld_file.h"

/* perplexity.cpp: log_softmax(n_vocab, logits, tok) -> results_log_softmax */
double ppl_nll(const float *logits, int n_vocab, int tok) {
    float max_logit = logits[0];
    for (int i = 1; i < n_vocab; ++i) max_logit = logits[i] > max_logit ? logits[i] : max_logit;
    double sum_exp = 0.0;
    for (int i = 0; i < n_vocab; ++i) sum_exp += expf(logits[i] - max_logit);
    const double log_softmax = (double)(logits[tok] - max_logit) - log(sum_exp);
    return -log_softmax;
}

/* perplexity.cpp: nearest_int — round to nearest by the 1.5 * 2^23 trick */
static int nearest_int(float fval) {
    float val = fval + 12582912.f;
    int i;
    memcpy(&i, &val, sizeof(int));
    return (i & 0x007fffff) - 0x00400000;
}

/* perplexity.cpp: log_softmax(n_vocab, logits, log_prob, tok) */
double ppl_nll_encode(const float *logits, int n_vocab, int tok, uint16_t *row) {
    float max_logit = logits[0], min_logit = logits[0];
    for (int i = 1; i < n_vocab; ++i) {
        max_logit = logits[i] > max_logit ? logits[i] : max_logit;
        min_logit = logits[i] < min_logit ? logits[i] : min_logit;
    }
    min_logit = max_logit - 16 > min_logit ? max_logit - 16 : min_logit;
    double sum_exp = 0.0;
    for (int i = 0; i < n_vocab; ++i) sum_exp += expf(logits[i] - max_logit);
    const float log_sum_exp = (float)log(sum_exp);
    const float min_log_prob = min_logit - max_logit - log_sum_exp;
    const float scale = (max_logit - min_logit) / 65535.f;
    kld_row_set_floats(row, scale, min_log_prob);
    uint16_t *q = row + 4;
    if (scale != 0) {
        const float inv_scale = 1 / scale;
        for (int i = 0; i < n_vocab; ++i)
            q[i] = logits[i] > min_logit ? (uint16_t)nearest_int(inv_scale * (logits[i] - min_logit)) : 0;
    } else {
        memset(q, 0, (size_t)n_vocab * sizeof *q);
    }
    if (n_vocab & 1) q[n_vocab] = 0; /* llama's buffer starts zeroed */
    return max_logit + log_sum_exp - logits[tok];
}

/* perplexity.cpp: log_softmax(n_vocab, logits, base_log_prob, tok, kld) */
void kld_accumulate(const float *logits, int n_vocab, const uint16_t *row, int tok, kld_sums *s,
                    float *kld, float *p_diff_out) {
    float max_logit = logits[0];
    int imax = 0;
    for (int i = 1; i < n_vocab; ++i) {
        if (logits[i] > max_logit) {
            max_logit = logits[i];
            imax = i;
        }
    }
    double sum_exp = 0.0;
    for (int i = 0; i < n_vocab; ++i) sum_exp += expf(logits[i] - max_logit);
    const float log_sum_exp = (float)log(sum_exp);
    const float scale = kld_row_scale(row);
    const float min_log_prob = kld_row_min_lp(row);
    const uint16_t *base_log_prob = row + 4;

    const float nll = max_logit + log_sum_exp - logits[tok];
    s->sum_nll += nll;
    s->sum_nll2 += nll * nll;

    const float nll_base = -(scale * base_log_prob[tok] + min_log_prob);
    s->sum_nll_base += nll_base;
    s->sum_nll_base2 += nll_base * nll_base;

    s->sum_nll_nll_base += nll * nll_base;

    max_logit += log_sum_exp;
    double sum = 0;
    int imax_base = -1;
    float p_log_base_max = 0;
    for (int i = 0; i < n_vocab; ++i) {
        const float p_log_base = scale * base_log_prob[i] + min_log_prob;
        if (i == 0 || p_log_base > p_log_base_max) {
            p_log_base_max = p_log_base;
            imax_base = i;
        }
        if (p_log_base > -16.f) {
            const float p_base = expf(p_log_base);
            sum += p_base * (p_log_base - logits[i] + max_logit);
        }
    }
    s->sum_kld += sum;
    s->sum_kld2 += sum * sum;
    ++s->count;
    if (imax == imax_base) ++s->n_same_top;

    const float p_base = expf(-nll_base);
    const float p = expf(-nll);
    const float p_diff = p - p_base;
    s->sum_p_diff += p_diff;
    const double p_diff2 = p_diff * p_diff;
    s->sum_p_diff2 += p_diff2;
    s->sum_p_diff4 += p_diff2 * p_diff2;
    const float a = fabsf(p_diff);
    s->max_p_diff = a > s->max_p_diff ? a : s->max_p_diff;

    *kld = (float)sum;
    *p_diff_out = p_diff;
}

void ppl_mean_unc(double sum, double sum2, size_t count, double *mean, double *unc) {
    if (count < 1) {
        *mean = *unc = 0;
        return;
    }
    const double f = sum / (double)count;
    double df = sum2 / (double)count - f * f;
    df = df > 0 && count > 10 ? sqrt(df / (double)(count - 1)) : 0.;
    *mean = f;
    *unc = df;
}

double ppl_covariance(double suma, double sumb, double sumab, size_t count) {
    if (count < 10) return 0.0;
    const double n = (double)count;
    double var = sumab / n - (suma / n) * (sumb / n);
    var /= n - 1;
    return var;
}

float ppl_percentile(const float *v, size_t n, float fraction) {
    if (fraction <= 0) return v[0];
    if (fraction >= 1) return v[n - 1];
    float p = fraction * (float)(n - 1);
    const size_t ip = (size_t)p;
    p -= (float)ip;
    return (1 - p) * v[ip] + p * v[ip + 1 < n ? ip + 1 : n - 1];
}

float ppl_median(const float *v, size_t n) {
    return n % 2 == 0 ? 0.5f * (v[n / 2] + v[n / 2 - 1]) : v[n / 2];
}

static int cmp_float(const void *a, const void *b) {
    const float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

void ppl_sort(float *v, size_t n) {
    qsort(v, n, sizeof *v, cmp_float);
}
