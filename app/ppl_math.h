/*
 * ppl_math.h — the per-position arithmetic of `petrel perplexity`, written
 * as llama-perplexity does it (tools/perplexity/perplexity.cpp of the
 * llama.cpp in the llama-cpp-python 0.3.36 sdist), operation for
 * operation, float where it uses float and double where it uses double,
 * so the same logits give the same numbers. Logits are one position's
 * n_vocab floats; tok is the token that followed.
 */
#ifndef PETREL_PPL_MATH_H
#define PETREL_PPL_MATH_H

#include <stddef.h>
#include <stdint.h>

/* -log p(tok) from the logits (llama's log_softmax of plain perplexity:
 * max, sum of expf in double, log in double). */
double ppl_nll(const float *logits, int n_vocab, int tok);

/* The same, float as llama computes it when it writes a base file, and the
 * row of that file (kld_file.h: row[0..KLD_ROW_U16(n_vocab)); the pad word
 * of an odd vocabulary is set to 0) encoding the log-probabilities. */
double ppl_nll_encode(const float *logits, int n_vocab, int tok, uint16_t *row);

/* Sums over the positions compared so far (llama's kl_divergence_result). */
typedef struct kld_sums {
    double sum_nll, sum_nll2;           /* -log p(tok) of the model under test */
    double sum_nll_base, sum_nll_base2; /* of the base, from its rows */
    double sum_nll_nll_base;
    double sum_kld, sum_kld2;           /* KL(base || model) per position */
    double sum_p_diff, sum_p_diff2, sum_p_diff4; /* p(tok) - p_base(tok) */
    float max_p_diff;
    size_t n_same_top;                  /* positions where both argmaxes agree */
    size_t count;
} kld_sums;

/* Compare one position against the base's row for it: adds to s and gives
 * this position's KLD and p(tok) - p_base(tok). */
void kld_accumulate(const float *logits, int n_vocab, const uint16_t *row, int tok, kld_sums *s,
                    float *kld, float *p_diff);

/* llama's mean_and_uncertainty: the mean of count values from their sum
 * and sum of squares, and the standard error of that mean (0 for count <=
 * 10 or a non-positive variance). */
void ppl_mean_unc(double sum, double sum2, size_t count, double *mean, double *unc);
/* llama's covariance of two means (0 for count < 10). */
double ppl_covariance(double suma, double sumb, double sumab, size_t count);
/* Linear interpolation between sorted values (llama's `percentile`). */
float ppl_percentile(const float *sorted, size_t n, float fraction);
/* The median of sorted values (mean of the two middle ones for even n). */
float ppl_median(const float *sorted, size_t n);
/* Sort floats ascending. */
void ppl_sort(float *v, size_t n);

#endif
