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

/* The prompt form (n > 1, GPUs): one work-group of ATT_WG items per (head,
 * ATT_TQ consecutive tokens). Item i takes position base + i for all the
 * tile's queries, so each key and value row is read once per ATT_TQ
 * queries instead of once per query; the queries' running max, sum and
 * outputs are kept side by side (the maxima of a chunk meet in one tree).
 * A query masks the positions outside its own causal window; a query with
 * no visible position in a chunk yet keeps m = -inf and adds nothing.
 * Grid: H groups x ceil(n / ATT_TQ) (ATT_TQ from the program's options). */
kernel void attention_tq(global float *out, global const float *q, global const float *kc,
                         global const float *vc, int H, int Hkv, int D, int p0, int window,
                         float scale, int n) {
    local float qv[ATT_TQ][ATT_WG * ATT_DPI];
    local float sc[ATT_TQ][ATT_WG];
    local float red[ATT_TQ][ATT_WG];
    const int lid = get_local_id(0);
    const int h = get_group_id(0), t0 = get_group_id(1) * ATT_TQ;
    const int nq = min(ATT_TQ, n - t0);
    const int kvh = h / (H / Hkv), KD = Hkv * D;
    const int end_max = p0 + t0 + nq; /* the last query's end */
    int start[ATT_TQ], end[ATT_TQ];
    for (int i = 0; i < ATT_TQ; i++) {
        end[i] = p0 + t0 + i + 1;
        start[i] = window > 0 && end[i] > window ? end[i] - window : 0;
    }
    for (int e = lid; e < ATT_TQ * D; e += ATT_WG) {
        const int i = e / D, d = e % D;
        qv[i][d] = i < nq ? q[((long)(t0 + i) * H + h) * D + d] : 0.0f;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    float acc[ATT_TQ][ATT_DPI], m[ATT_TQ], l[ATT_TQ];
    for (int i = 0; i < ATT_TQ; i++) {
        m[i] = -INFINITY;
        l[i] = 0.0f;
        for (int k = 0; k < ATT_DPI; k++) acc[i][k] = 0.0f;
    }
    for (int base = start[0]; base < end_max; base += ATT_WG) {
        const int p = base + lid;
        float dot[ATT_TQ];
        for (int i = 0; i < ATT_TQ; i++) dot[i] = 0.0f;
        if (p < end_max) {
            global const float *k = kc + (long)p * KD + kvh * D;
#pragma unroll 8
            for (int d = 0; d < D; d++) {
                const float kv = k[d];
                for (int i = 0; i < ATT_TQ; i++) dot[i] += qv[i][d] * kv;
            }
        }
        float s[ATT_TQ];
        for (int i = 0; i < ATT_TQ; i++) {
            s[i] = i < nq && p >= start[i] && p < end[i] ? dot[i] * scale : -INFINITY;
            red[i][lid] = s[i];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int w = ATT_WG / 2; w > 0; w >>= 1) {
            if (lid < w)
                for (int i = 0; i < ATT_TQ; i++) red[i][lid] = fmax(red[i][lid], red[i][lid + w]);
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        float nm[ATT_TQ];
        for (int i = 0; i < ATT_TQ; i++) {
            nm[i] = fmax(m[i], red[i][0]);
            sc[i][lid] = s[i] > -INFINITY ? exp(s[i] - nm[i]) : 0.0f;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int i = 0; i < ATT_TQ; i++) {
            const float corr = m[i] > -INFINITY ? exp(m[i] - nm[i]) : 0.0f;
            l[i] *= corr;
            for (int k = 0; k < ATT_DPI; k++) acc[i][k] *= corr;
            m[i] = nm[i];
        }
        const int cnt = min(ATT_WG, end_max - base);
#pragma unroll 4
        for (int j = 0; j < cnt; j++) {
            global const float *v = vc + (long)(base + j) * KD + kvh * D;
            float vd[ATT_DPI];
            for (int k = 0; k < ATT_DPI; k++) {
                const int d = lid + k * ATT_WG;
                vd[k] = d < D ? v[d] : 0.0f;
            }
            for (int i = 0; i < ATT_TQ; i++) {
                const float pj = sc[i][j];
                l[i] += pj;
                for (int k = 0; k < ATT_DPI; k++) acc[i][k] += pj * vd[k];
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int i = 0; i < nq; i++) {
        global float *o = out + ((long)(t0 + i) * H + h) * D;
        for (int k = 0; k < ATT_DPI; k++) {
            const int d = lid + k * ATT_WG;
            if (d < D) o[d] = acc[i][k] / l[i];
        }
    }
}
