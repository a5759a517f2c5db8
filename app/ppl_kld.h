/*
 * ppl_kld.h — `petrel perplexity --kl-divergence`: a model compared,
 * position by position, with the log-probabilities of a reference model
 * saved in a base file (kld_file.h), printing what llama-perplexity
 * prints: a line per chunk (PPL, ln(PPL(Q)/PPL(base)), KL divergence, RMS
 * of the change in p(token), top-token agreement), then the perplexity,
 * KLD and token-probability statistics.
 */
#ifndef PETREL_PPL_KLD_H
#define PETREL_PPL_KLD_H

#include "kld_file.h"
#include "ppl_eval.h"

/* Run the comparison over the first n_chunk chunks of base (whose n_ctx
 * and n_vocab the caller has checked against e and the model). Returns 0
 * or an exit status (error printed). */
int ppl_kld_run(ppl_eval *e, kld_reader *base, int n_chunk);

#endif
