/* ppl_kld.c — the KL-divergence comparison and its report (ppl_kld.h),
 * formatted as llama-perplexity's kl_divergence() prints it. */
#include "ppl_kld.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "args.h"
#include "ppl_math.h"

typedef struct kld_state {
    kld_reader *base;
    const pt_token *tokens;   /* the chunk's tokens as stored in the file */
    uint16_t *row;            /* [base->row_u16] */
    kld_sums sums;
    float *kld_values, *p_diff_values; /* one per scored position, in order */
    size_t n_values;
    int n_vocab;
} kld_state;

static bool on_row(void *user, int pos, const float *logits) {
    kld_state *s = user;
    char why[320];
    if (!kld_reader_row(s->base, s->row, why, sizeof why)) {
        app_error("perplexity: %s", why);
        return false;
    }
    kld_accumulate(logits, s->n_vocab, s->row, s->tokens[pos + 1], &s->sums, &s->kld_values[s->n_values],
                   &s->p_diff_values[s->n_values]);
    s->n_values++;
    return true;
}

static void print_chunk_line(int chunk, const kld_sums *k) {
    double lp, lp_unc, lb, lb_unc;
    printf("%4d", chunk);
    ppl_mean_unc(k->sum_nll, k->sum_nll2, k->count, &lp, &lp_unc);
    const double ppl_val = exp(lp);
    printf("    %9.4lf ± %9.4lf", ppl_val, ppl_val * lp_unc);
    ppl_mean_unc(k->sum_nll_base, k->sum_nll_base2, k->count, &lb, &lb_unc);
    const double cov = ppl_covariance(k->sum_nll, k->sum_nll_base, k->sum_nll_nll_base, k->count);
    printf("    %10.5lf ± %10.5lf", lp - lb, sqrt(lp_unc * lp_unc + lb_unc * lb_unc - 2.0 * cov));
    double kl, kl_unc;
    ppl_mean_unc(k->sum_kld, k->sum_kld2, k->count, &kl, &kl_unc);
    printf("    %10.5lf ± %10.5lf", kl, kl_unc);
    double mse, mse_unc;
    ppl_mean_unc(k->sum_p_diff2, k->sum_p_diff4, k->count, &mse, &mse_unc);
    const double rms = sqrt(mse);
    printf("    %6.3lf ± %6.3lf %%", 100.0 * rms, 100.0 * 0.5 / rms * mse_unc);
    const double top = 1. * (double)k->n_same_top / (double)k->count;
    printf("    %6.3lf ± %6.3lf %%", 100.0 * top, 100.0 * sqrt(top * (1 - top) / (double)(k->count - 1)));
    printf("\n");
    fflush(stdout);
}

static void print_summary(const kld_sums *k, float *kv, float *pv, size_t n) {
    ppl_sort(kv, n);
    ppl_sort(pv, n);
    printf("====== Perplexity statistics ======\n");
    double lp, lp_unc, lb, lb_unc;
    ppl_mean_unc(k->sum_nll, k->sum_nll2, k->count, &lp, &lp_unc);
    const double ppl_val = exp(lp), ppl_unc = ppl_val * lp_unc;
    printf("Mean PPL(Q)                   : %10.6lf ± %10.6lf\n", ppl_val, ppl_unc);
    ppl_mean_unc(k->sum_nll_base, k->sum_nll_base2, k->count, &lb, &lb_unc);
    const double ppl_base_val = exp(lb), ppl_base_unc = ppl_base_val * lb_unc;
    printf("Mean PPL(base)                : %10.6lf ± %10.6lf\n", ppl_base_val, ppl_base_unc);
    const double cov = ppl_covariance(k->sum_nll, k->sum_nll_base, k->sum_nll_nll_base, k->count);
    printf("Cor(ln(PPL(Q)), ln(PPL(base))): %6.2lf%%\n", 100.0 * cov / (lp_unc * lb_unc));
    const double ratio = lp - lb, ratio_unc = sqrt(lp_unc * lp_unc + lb_unc * lb_unc - 2.0 * cov);
    printf("Mean ln(PPL(Q)/PPL(base))     : %10.6lf ± %10.6lf\n", ratio, ratio_unc);
    printf("Mean PPL(Q)/PPL(base)         : %10.6lf ± %10.6lf\n", exp(ratio), exp(ratio) * ratio_unc);
    const double ppl_cov = ppl_val * ppl_base_val * cov;
    printf("Mean PPL(Q)-PPL(base)         : %10.6lf ± %10.6lf\n", ppl_val - ppl_base_val,
           sqrt(ppl_unc * ppl_unc + ppl_base_unc * ppl_base_unc - 2.0 * ppl_cov));
    printf("\n");

    printf("====== KL divergence statistics ======\n");
    double kl, kl_unc;
    ppl_mean_unc(k->sum_kld, k->sum_kld2, k->count, &kl, &kl_unc);
    printf("Mean    KLD: %10.6lf ± %10.6lf\n", kl, kl_unc);
    printf("Maximum KLD: %10.6f\n", (double)kv[n - 1]);
    printf("99.9%%   KLD: %10.6f\n", (double)ppl_percentile(kv, n, 0.999f));
    printf("99.0%%   KLD: %10.6f\n", (double)ppl_percentile(kv, n, 0.990f));
    printf("95.0%%   KLD: %10.6f\n", (double)ppl_percentile(kv, n, 0.950f));
    printf("90.0%%   KLD: %10.6f\n", (double)ppl_percentile(kv, n, 0.900f));
    printf("Median  KLD: %10.6f\n", (double)ppl_median(kv, n));
    printf("10.0%%   KLD: %10.6f\n", (double)ppl_percentile(kv, n, 0.100f));
    printf(" 5.0%%   KLD: %10.6f\n", (double)ppl_percentile(kv, n, 0.050f));
    printf(" 1.0%%   KLD: %10.6f\n", (double)ppl_percentile(kv, n, 0.010f));
    printf(" 0.1%%   KLD: %10.6f\n", (double)ppl_percentile(kv, n, 0.001f));
    printf("Minimum KLD: %10.6f\n", (double)kv[0]);
    printf("\n");

    printf("====== Token probability statistics ======\n");
    double pd, pd_unc;
    ppl_mean_unc(k->sum_p_diff, k->sum_p_diff2, k->count, &pd, &pd_unc);
    printf("Mean    Δp: %6.3lf ± %5.3lf %%\n", 100.0 * pd, 100.0 * pd_unc);
    printf("Maximum Δp: %6.3lf%%\n", 100.0 * pv[n - 1]);
    static const struct { const char *label; float f; } P[] = {
        {"99.9%", 0.999f}, {"99.0%", 0.990f}, {"95.0%", 0.950f}, {"90.0%", 0.900f}, {"75.0%", 0.750f},
    };
    for (size_t i = 0; i < sizeof P / sizeof P[0]; i++)
        printf("%s   Δp: %6.3lf%%\n", P[i].label, 100.0 * ppl_percentile(pv, n, P[i].f));
    printf("Median  Δp: %6.3lf%%\n", 100.0 * ppl_median(pv, n));
    static const struct { const char *label; float f; } L[] = {
        {"25.0%", 0.250f}, {"10.0%", 0.100f}, {" 5.0%", 0.050f}, {" 1.0%", 0.010f}, {" 0.1%", 0.001f},
    };
    for (size_t i = 0; i < sizeof L / sizeof L[0]; i++)
        printf("%s   Δp: %6.3lf%%\n", L[i].label, 100.0 * ppl_percentile(pv, n, L[i].f));
    printf("Minimum Δp: %6.3lf%%\n", 100.0 * pv[0]);
    double mse, mse_unc;
    ppl_mean_unc(k->sum_p_diff2, k->sum_p_diff4, k->count, &mse, &mse_unc);
    const double rms = sqrt(mse);
    printf("RMS Δp    : %6.3lf ± %5.3lf %%\n", 100.0 * rms, 100.0 * 0.5 / rms * mse_unc);
    const double same = 1.0 * (double)k->n_same_top / (double)k->count;
    printf("Same top p: %6.3lf ± %5.3lf %%\n", 100.0 * same,
           100.0 * sqrt(same * (1.0 - same) / (double)(k->count - 1)));
}

int ppl_kld_run(ppl_eval *e, kld_reader *base, int n_chunk) {
    const size_t n_pos = (size_t)n_chunk * (size_t)base->n_rows;
    kld_state s = {.base = base, .n_vocab = e->n_vocab};
    s.row = malloc(base->row_u16 * sizeof *s.row);
    s.kld_values = malloc(n_pos * sizeof *s.kld_values);
    s.p_diff_values = malloc(n_pos * sizeof *s.p_diff_values);
    int rc = 0;
    if (!s.row || !s.kld_values || !s.p_diff_values) {
        app_error("perplexity: out of memory for %zu positions", n_pos);
        rc = 1;
        goto done;
    }
    fprintf(stderr, "perplexity: computing over %d chunks, n_ctx=%d, batch_size=%d\n", n_chunk, e->n_ctx,
            e->n_batch);
    for (int i = 0; i < n_chunk; i++) {
        const double t0 = ppl_now();
        s.tokens = base->tokens + (size_t)i * (size_t)e->n_ctx;
        if (!ppl_eval_chunk(e, s.tokens, on_row, &s)) {
            rc = 1;
            goto done;
        }
        if (i == 0) {
            ppl_print_eta(ppl_now() - t0, n_chunk);
            printf("\n");
            printf("chunk             PPL               ln(PPL(Q)/PPL(base))          KL Divergence              "
                   "Δp RMS            Same top p\n");
        }
        print_chunk_line(i + 1, &s.sums);
    }
    printf("\n");
    /* llama-perplexity: "we do not wish to do statistics on so few values" */
    if (s.sums.count >= 100) print_summary(&s.sums, s.kld_values, s.p_diff_values, s.n_values);
done:
    free(s.row);
    free(s.kld_values);
    free(s.p_diff_values);
    return rc;
}
