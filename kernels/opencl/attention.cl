/*
 * attention.cl — causal grouped-query attention over the KV cache.
 *
 * Shapes: q and out [n][H][D] (token t at position p0 + t); the cache
 * kc, vc [n_ctx][Hkv][D] (position-major; positions [0, p0 + n) hold the
 * keys and values). Query head h reads KV head h / (H / Hkv). A query at
 * position p sees positions max(0, p + 1 - window) .. p (window 0: all).
 *
 * One work-group of ATT_WG items per (head, token). The positions are
 * taken ATT_WG at a time: item i scores position base + i (dot of D
 * floats), the chunk's softmax terms are rescaled online (running max m
 * and sum l), and item i accumulates output dimensions i, i + ATT_WG, ...
 * (D <= ATT_WG * ATT_DPI).
 */
#define ATT_DPI 4

kernel void attention(global float *out, global const float *q, global const float *kc,
                      global const float *vc, int H, int Hkv, int D, int p0, int window,
                      float scale) {
    local float qv[ATT_WG * ATT_DPI];
    local float sc[ATT_WG];
    local float red[ATT_WG];
    const int lid = get_local_id(0);
    const int h = get_group_id(0), t = get_group_id(1);
    const int kvh = h / (H / Hkv), KD = Hkv * D;
    const int pos = p0 + t, end = pos + 1;
    const int start = window > 0 && end > window ? end - window : 0;
    global const float *qh = q + ((long)t * H + h) * D;
    for (int d = lid; d < D; d += ATT_WG) qv[d] = qh[d];
    barrier(CLK_LOCAL_MEM_FENCE);
    float acc[ATT_DPI] = {0.0f, 0.0f, 0.0f, 0.0f};
    float m = -INFINITY, l = 0.0f;
    for (int base = start; base < end; base += ATT_WG) {
        const int p = base + lid;
        float s = -INFINITY;
        if (p < end) {
            global const float *k = kc + (long)p * KD + kvh * D;
            float dot = 0.0f;
#pragma unroll 8
            for (int d = 0; d < D; d++) dot += qv[d] * k[d];
            s = dot * scale;
        }
        /* chunk max, shared */
        red[lid] = s;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int w = ATT_WG / 2; w > 0; w >>= 1) {
            if (lid < w) red[lid] = fmax(red[lid], red[lid + w]);
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        const float nm = fmax(m, red[0]);
        sc[lid] = p < end ? exp(s - nm) : 0.0f;
        barrier(CLK_LOCAL_MEM_FENCE);
        const float corr = exp(m - nm); /* 0 on the first chunk (m = -inf) */
        l *= corr;
        for (int k = 0; k < ATT_DPI; k++) acc[k] *= corr;
        const int cnt = min(ATT_WG, end - base);
        /* unrolled so that several rows' loads are in flight at once */
#pragma unroll 8
        for (int j = 0; j < cnt; j++) {
            const float pj = sc[j];
            l += pj;
            global const float *v = vc + (long)(base + j) * KD + kvh * D;
            for (int k = 0; k < ATT_DPI; k++) {
                const int d = lid + k * ATT_WG;
                if (d < D) acc[k] += pj * v[d];
            }
        }
        m = nm;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    global float *o = out + ((long)t * H + h) * D;
    for (int k = 0; k < ATT_DPI; k++) {
        const int d = lid + k * ATT_WG;
        if (d < D) o[d] = acc[k] / l;
    }
}
