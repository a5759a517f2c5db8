/*
 * kv_qk_x86_body.h — the x86-64 int8 Q·K kernel (kv_qk.h), written once
 * over 256-bit vectors and included by kv_qk_x86.c once per variant:
 *   QN(x)   the name x with the variant's suffix
 *   QT      the variant's target attribute
 *   QVNNI   1: vpdpbusd (QDOT, unsigned by signed bytes, four products a
 *           lane): the key codes go in offset by 128 (k ^ 0x80) and the
 *           block's sum is corrected by -128 * qs[b]; 0: vpmaddubsw with
 *           |k| against q carrying k's sign (|k| <= 128 and |q| <= 127,
 *           so the pairs' int16 sums, at most 32512, never saturate),
 *           then vpmaddwd by ones.
 * Eight key rows at a time: per query and block, the eight rows' int32
 * vectors are reduced together (vphaddd) into one vector whose lane p is
 * row p's isum_b, and the float steps of kv_qk.h run lane-wise, each
 * rounded on its own, so the scores are bitwise the reference's. No
 * include guard: included several times on purpose.
 */

QT static inline __attribute__((always_inline)) __m256i QN(dot)(__m256i acc, __m256i k, __m256i q) {
#if QVNNI
    return QDOT(acc, _mm256_xor_si256(k, _mm256_set1_epi8((char)0x80)), q);
#else
    const __m256i p = _mm256_maddubs_epi16(_mm256_abs_epi8(k), _mm256_sign_epi8(q, k));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(p, _mm256_set1_epi16(1)));
#endif
}

QT void QN(pt_kv_qk)(const int8_t *q, const float *qd, const int32_t *qs, int nq, int D, int blk,
                     const uint8_t *k, size_t krow, int n, float scale, float *s, int64_t s_stride) {
    (void)qs;
    const int nb = (D + blk - 1) / blk, cpb = (blk + 31) / 32; /* chunks of 32 per block */
    const int nfull = D / 32, qstride = PT_KV_QK_QSTRIDE(D);
    const size_t code0 = 2 * (size_t)nb; /* the codes follow the scales */
    _Alignas(32) uint8_t tail[8][32];    /* the rows' last, partial chunk, zero-padded */
    _Alignas(32) float kd[PT_KV_QK_MAXB][8];
    memset(tail, 0, sizeof tail);
    for (int j0 = 0; j0 < n; j0 += 8) {
        const int nv = n - j0 < 8 ? n - j0 : 8;
        const uint8_t *row[8];
        /* past the last row, the last row again (its scores are not stored) */
        for (int p = 0; p < 8; p++) row[p] = k + (size_t)(j0 + (p < nv ? p : nv - 1)) * krow;
        for (int b = 0; b < nb; b++) {
            uint16_t h[8];
            for (int p = 0; p < 8; p++) memcpy(&h[p], row[p] + 2 * b, 2);
            __m128i hv;
            memcpy(&hv, h, sizeof hv);
            _mm256_store_ps(kd[b], _mm256_cvtph_ps(hv));
        }
        if (D % 32)
            for (int p = 0; p < 8; p++) memcpy(tail[p], row[p] + code0 + 32 * (size_t)nfull, (size_t)(D % 32));
        for (int i = 0; i < nq; i++) {
            const int8_t *qi = q + (size_t)i * qstride;
            __m256 acc = _mm256_setzero_ps();
            for (int b = 0; b < nb; b++) {
                const int c0 = b * cpb, c1 = c0 + cpb < (D + 31) / 32 ? c0 + cpb : (D + 31) / 32;
                __m256i v[8];
                for (int p = 0; p < 8; p++) v[p] = _mm256_setzero_si256();
                for (int c = c0; c < c1; c++) {
                    const __m256i qv = _mm256_loadu_si256((const __m256i *)(qi + 32 * c));
                    if (c < nfull) {
                        PT_QK_UNROLL
                        for (int p = 0; p < 8; p++)
                            v[p] = QN(dot)(v[p], _mm256_loadu_si256((const __m256i *)(row[p] + code0 + 32 * (size_t)c)), qv);
                    } else {
                        PT_QK_UNROLL
                        for (int p = 0; p < 8; p++) v[p] = QN(dot)(v[p], _mm256_load_si256((const __m256i *)tail[p]), qv);
                    }
                }
                /* lane p of r: the sum of v[p]'s lanes */
                const __m256i a01 = _mm256_hadd_epi32(v[0], v[1]), a23 = _mm256_hadd_epi32(v[2], v[3]);
                const __m256i a45 = _mm256_hadd_epi32(v[4], v[5]), a67 = _mm256_hadd_epi32(v[6], v[7]);
                const __m256i a03 = _mm256_hadd_epi32(a01, a23), a47 = _mm256_hadd_epi32(a45, a67);
                __m256i r = _mm256_add_epi32(_mm256_permute2x128_si256(a03, a47, 0x20),
                                             _mm256_permute2x128_si256(a03, a47, 0x31));
#if QVNNI
                r = _mm256_sub_epi32(r, _mm256_set1_epi32(128 * qs[(size_t)i * nb + b]));
#endif
                const __m256 t = _mm256_mul_ps(_mm256_set1_ps(qd[(size_t)i * nb + b]), _mm256_load_ps(kd[b]));
                acc = _mm256_add_ps(acc, _mm256_mul_ps(t, _mm256_cvtepi32_ps(r)));
            }
            _Alignas(32) float out[8];
            _mm256_store_ps(out, _mm256_mul_ps(acc, _mm256_set1_ps(scale)));
            memcpy(s + i * s_stride + j0, out, (size_t)nv * sizeof(float));
        }
    }
}
