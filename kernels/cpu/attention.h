/*
 * attention.h — fused causal attention with online softmax ("flash
 * attention" order): one pass over the keys and values of a KV head for a
 * whole tile of queries, with no n_kv-sized score buffer. Used for
 * prefill (a tile of tokens x the query heads of one KV head) and decode
 * (one token x those heads). No engine types cross this header.
 *
 * Key layout ("blocked, transposed"): the keys of one KV head are stored
 * in blocks of PT_ATTN_BK positions; block b holds positions
 * b*BK .. b*BK+BK-1 with dimension d of position j at
 *     kt[(j / BK) * kt_block_stride + d * BK + j % BK]
 * (kt_block_stride >= BK * head_dim), so the scores of one query against
 * a block are one vector of BK lanes built from head_dim broadcasts, with
 * no transposition at run time. pt_attn_store_key writes one position.
 * Values are plain rows: position j at v + j * v_stride.
 *
 * Computation of query q (head_dim values) at position p, attending to
 * positions 0..p (causal), over the blocks b = 0, 1, ... in order:
 *     s[i]  = (sum_even_d q[d] k[j][d] + sum_odd_d q[d] k[j][d]) * scale
 *             (each partial sum over d in order)   j = b*BK + i, j <= p
 *     m'    = max(m, max_i s[i]);  c = exp(m - m')   (m starts at -inf)
 *     e[i]  = exp(s[i] - m')                       (0 for masked lanes)
 *     l[i]  = l[i] * c + e[i]                      (per lane)
 *     acc   = acc * c + sum_i e[i] * v[j]          (i in order)
 *     out   = acc * (1 / sum_i l[i])               (lanes in order)
 * exp is petrel's own (a Cody-Waite reduction and Cephes' polynomial,
 * about 1 ulp on [-87, 0]; 0 below). The AVX2 and AVX-512 variants fuse
 * each a * b + c above into one FMA and give bitwise-equal results; the
 * plain variant (PETREL_CPU=ref, NEON, no AVX2) rounds twice and agrees
 * with them to float rounding. In every variant a query's result does not
 * depend on the tile it is computed in (batch, pieces, one by one, any
 * thread split). Against the two-pass softmax (ops.h pt_attend_one) only
 * rounding differs.
 */
#ifndef PETREL_ATTENTION_H
#define PETREL_ATTENTION_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cpu_features.h"

#define PT_ATTN_BK 16 /* positions per key block */

/* Floats of scratch pt_attn_causal needs for a tile of n_query queries
 * (tokens x heads) of head_dim values. */
size_t pt_attn_scratch_floats(int n_query, int head_dim);

/* Write the key of position pos (head_dim floats) into the blocked layout. */
static inline void pt_attn_store_key(float *kt, int64_t kt_block_stride, int pos, const float *k,
                                     int head_dim) {
    float *dst = kt + (int64_t)(pos / PT_ATTN_BK) * kt_block_stride + pos % PT_ATTN_BK;
    for (int d = 0; d < head_dim; d++) dst[(int64_t)d * PT_ATTN_BK] = k[d];
}

/* Causal attention of a tile: n_tok tokens at positions p0 .. p0+n_tok-1,
 * each with n_head query heads that share one KV head.
 *   query (t, h): q   + t * q_stride   + h * head_dim   (head_dim floats)
 *   output (t, h): out + t * out_stride + h * head_dim
 * Token t attends to positions 0 .. p0 + t, whose keys (kt, layout above)
 * and values (v) must be stored; nothing past p0 + n_tok - 1 is read
 * except the unused lanes of the last key block, which are masked (they
 * must hold finite values, e.g. zeros). out must not overlap q, kt or v.
 * scratch: pt_attn_scratch_floats(n_tok * n_head, head_dim) floats.
 * The variant comes from cpu->variant (NULL: plain C). */
void pt_attn_causal(const pt_cpu *cpu, float *out, int64_t out_stride, const float *q,
                    int64_t q_stride, int n_tok, int n_head, const float *kt,
                    int64_t kt_block_stride, const float *v, int64_t v_stride, int p0,
                    int head_dim, float scale, float *scratch);

/* pt_attn_causal with a sliding window (Gemma 2/3 local layers,
 * llama.cpp's LLAMA_SWA_TYPE_STANDARD): the token at position p attends
 * only to positions j with p - window < j <= p, i.e. the last `window`
 * positions including its own. Lanes before the window are masked as the
 * causal kernel masks lanes past p (their keys and values must be finite,
 * as stored positions are); blocks wholly before it are not read (their
 * keys and values need not be stored). window <= 0: no window
 * (pt_attn_causal). For a query whose window reaches position 0 the
 * result is bitwise pt_attn_causal's. */
void pt_attn_causal_window(const pt_cpu *cpu, float *out, int64_t out_stride, const float *q,
                           int64_t q_stride, int n_tok, int n_head, const float *kt,
                           int64_t kt_block_stride, const float *v, int64_t v_stride, int p0,
                           int window, int head_dim, float scale, float *scratch);

/* pt_attn_causal_window over the positions [span_lo, span_hi) only, for a
 * KV cache kept in pages: kt and v point at position span_lo's key block
 * and value row (span_lo a multiple of PT_ATTN_BK), and the online
 * softmax's running state (max, lane sums, weighted sums) is carried in
 * scratch from one call to the next. The first call of a query tile has
 * PT_ATTN_BEGIN in flags, the last PT_ATTN_END (which writes out); calls
 * in between must take the spans in increasing order, with the same
 * tile, window and scratch. The result is bitwise pt_attn_causal_window's
 * however the positions are split into spans. */
enum { PT_ATTN_BEGIN = 1, PT_ATTN_END = 2 };
void pt_attn_causal_span(const pt_cpu *cpu, float *out, int64_t out_stride, const float *q,
                         int64_t q_stride, int n_tok, int n_head, const float *kt,
                         int64_t kt_block_stride, const float *v, int64_t v_stride, int p0,
                         int window, int head_dim, float scale, float *scratch, int span_lo,
                         int span_hi, int flags);

/* pt_attn_causal_span with the scores given instead of q and kt (an
 * int8 Q.K kernel made them: kv_qk.h): the score of query (t, h) at
 * position j, scale already applied, is
 *     scores[(t * n_head + h) * scores_stride + (j - span_lo)]
 * for the positions the span reads: whole blocks of PT_ATTN_BK from the
 * first block a token's window reaches (or span_lo) to the block holding
 * min(span_hi, p0 + n_tok) - 1. Lanes past the last position and before
 * a window are masked as the key lanes are, but must hold finite values.
 * The rest of the computation (online softmax, values) is
 * pt_attn_causal_span's, so given the float kernel's own scores the
 * result would be bitwise its result. */
void pt_attn_causal_span_scores(const pt_cpu *cpu, float *out, int64_t out_stride, const float *scores,
                                int64_t scores_stride, int n_tok, int n_head, const float *v,
                                int64_t v_stride, int p0, int window, int head_dim, float *scratch,
                                int span_lo, int span_hi, int flags);

/* exp(x) for x <= 0 as the kernels compute the running-max correction c
 * (and the plain variant every exp); for the tests. */
float pt_attn_exp(float x);

#endif
