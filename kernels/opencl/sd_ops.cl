/*
 * sd_ops.cl — the image graphs' normalizations, activations and
 * non-causal attention (engine/diffusion/sd_nn.h's ops on HWC float32).
 * Uses group_sum of ops.cl (the sources are one program). Statistics are
 * float sums in two passes (mean, then the centred squares; GroupNorm's per
 * slice of pixels, then combined): the CPU's are double sums of x and x^2,
 * so the two differ by rounding only.
 */

inline float sd_silu(float v) { return v / (1.0f + exp(-v)); }
inline float sd_gelu(float v) { return 0.5f * v * (1.0f + erf(v * 0.70710678118654752f)); }

/* GroupNorm in three kernels (pt_ocl_groupnorm): x, y [n][n_pix][c],
 * group g is channels [g * cg, (g + 1) * cg); statistics over each
 * image's n_pix * cg values of a group (biased variance). The pixels are
 * cut into n_slices slices of slice_pix (the last one shorter), so that
 * many work-groups share one (image, group):
 *   groupnorm_part: one work-group of OPS_WG per (slice, image * groups + g)
 *     writes part[ig * n_slices + slice] = (mean, sum of squares about
 *     that mean) of the slice's values (two passes; the second reads what
 *     the first brought into the cache);
 *   groupnorm_stats: one work-group per image * groups + g combines its
 *     slices (Chan et al.: M2 = sum M2_i + n_i (mean_i - mean)^2) into
 *     part[st_at + ig] = (mean, rstd) (after every (image, group)'s slices);
 *   groupnorm: one item per value,
 *     y = (x - mean) * (rstd * gamma[ch]) + beta[ch]   (silu of it when silu).
 * y may be x: every item writes only the value it read. */
kernel void groupnorm_part(global float2 *part, global const float *x, long n_pix, int c,
                           int groups, long slice_pix) {
    local float red[OPS_WG];
    const int lid = get_local_id(0), ig = get_group_id(1), g = ig % groups;
    const long img = ig / groups, s = get_group_id(0);
    const int cg = c / groups;
    const long p0 = s * slice_pix;
    /* a slice holds at most GN_SLICE_VALUES values: int indices */
    const int cnt = (int)(min(slice_pix, n_pix - p0) * cg);
    global const float *xs = x + (img * n_pix + p0) * c + (long)g * cg;
    float sum = 0.0f;
    for (int e = lid; e < cnt; e += OPS_WG) sum += xs[(long)(e / cg) * c + e % cg];
    const float mean = group_sum(red, sum, lid) / (float)cnt;
    float q = 0.0f;
    for (int e = lid; e < cnt; e += OPS_WG) {
        const float d = xs[(long)(e / cg) * c + e % cg] - mean;
        q += d * d;
    }
    const float m2 = group_sum(red, q, lid);
    if (lid == 0) part[(long)ig * get_num_groups(0) + s] = (float2)(mean, m2);
}

kernel void groupnorm_stats(global float2 *part, long n_pix, int c, int groups, long slice_pix,
                            int n_slices, long st_at, float eps) {
    local float red[OPS_WG];
    const int lid = get_local_id(0);
    const long ig = get_group_id(0);
    const int cg = c / groups;
    global const float2 *ps = part + ig * n_slices;
    float s = 0.0f;
    for (int i = lid; i < n_slices; i += OPS_WG)
        s += ps[i].x * (float)(min(slice_pix, n_pix - i * slice_pix) * cg);
    const float total = (float)(n_pix * cg);
    const float mean = group_sum(red, s, lid) / total;
    float q = 0.0f;
    for (int i = lid; i < n_slices; i += OPS_WG) {
        const float d = ps[i].x - mean;
        q += ps[i].y + (float)(min(slice_pix, n_pix - i * slice_pix) * cg) * d * d;
    }
    const float var = group_sum(red, q, lid) / total;
    if (lid == 0) part[st_at + ig] = (float2)(mean, 1.0f / sqrt(var + eps));
}

/* 2-D grid: dimension 0 the image's n_pix * c values, 1 the image. */
kernel void groupnorm(global float *y, global const float *x, global const float2 *part,
                      long st_at, global const float *gamma, global const float *beta, long n_pix,
                      int c, int groups, int silu) {
    const long i = get_global_id(0), img = get_global_id(1);
    if (i >= n_pix * c) return;
    /* 32-bit remainders where the image's values fit (64-bit ones are slow on GPUs) */
    const int ch = n_pix * c <= UINT_MAX ? (int)((uint)i % (uint)c) : (int)(i % c);
    const float2 st = part[st_at + img * groups + ch / (c / groups)];
    const long at = img * n_pix * c + i;
    const float v = (x[at] - st.x) * (st.y * gamma[ch]) + beta[ch];
    y[at] = silu ? sd_silu(v) : v;
}

/* LayerNorm of each row of c values (one work-group per row):
 * y = (x - mean) / sqrt(var + eps) * gamma + beta; y may be x. */
kernel void layernorm(global float *y, global const float *x, global const float *gamma,
                      global const float *beta, int c, float eps) {
    local float red[OPS_WG];
    const int lid = get_local_id(0);
    const long off = (long)get_group_id(0) * c;
    float s = 0.0f;
    for (int i = lid; i < c; i += OPS_WG) s += x[off + i];
    const float mean = group_sum(red, s, lid) / (float)c;
    float q = 0.0f;
    for (int i = lid; i < c; i += OPS_WG) {
        const float d = x[off + i] - mean;
        q += d * d;
    }
    const float rstd = 1.0f / sqrt(group_sum(red, q, lid) / (float)c + eps);
    for (int i = lid; i < c; i += OPS_WG) y[off + i] = (x[off + i] - mean) * rstd * gamma[i] + beta[i];
}

/* GEGLU: out [rows][inner] = a * gelu(b) of x [rows][2 * inner] = [a | b]. */
kernel void geglu(global float *out, global const float *x, int inner, long total) {
    const long i = get_global_id(0);
    if (i >= total) return;
    const long r = i / inner;
    const int j = (int)(i % inner);
    out[i] = x[r * 2 * inner + j] * sd_gelu(x[r * 2 * inner + inner + j]);
}

/* x = act(x) in place: act 0 SiLU, 1 GELU (erf). */
kernel void act(global float *x, int which, long total) {
    const long i = get_global_id(0);
    if (i >= total) return;
    x[i] = which ? sd_gelu(x[i]) : sd_silu(x[i]);
}

/* y [n][n_pix][c] += t [n][c]: one row of t per image (a ResNet's time
 * embedding on every pixel). */
kernel void add_image(global float *y, global const float *t, long n_pix, int c, long total) {
    const long i = get_global_id(0);
    if (i >= total) return;
    y[i] += t[i / (n_pix * c) * c + i % c];
}

/* Non-causal multi-head attention, attention.cl's online softmax:
 * out, q [n_seq][n_q][H * D], k, v [n_seq][n_kv][H * D] (head h at
 * column h * D); out = softmax(q k^T * scale) v per (sequence, head).
 * Two forms: mha_t* (tiled, below) for D <= MHA_TP * 40 when the device's
 * local memory holds its tiles, mha otherwise (the VAE's head of 512).
 *
 * mha: one work-group of ATT_WG items per (head, query, sequence); keys are
 * taken ATT_WG at a time, item i scoring key base + i and accumulating
 * output dimensions i, i + ATT_WG, ... (D <= ATT_WG * MHA_DPI: 512, the
 * VAE's one head). */
#define MHA_DPI 8
kernel void mha(global float *out, global const float *q, global const float *k,
                global const float *v, int n_q, int n_kv, int H, int D, float scale) {
    local float qv[ATT_WG * MHA_DPI];
    local float sc[ATT_WG];
    local float red[ATT_WG];
    const int lid = get_local_id(0);
    const int h = get_group_id(0), i = get_group_id(1), s = get_group_id(2);
    const int HD = H * D;
    global const float *qh = q + ((long)s * n_q + i) * HD + (long)h * D;
    global const float *ks = k + (long)s * n_kv * HD + (long)h * D;
    global const float *vs = v + (long)s * n_kv * HD + (long)h * D;
    for (int d = lid; d < D; d += ATT_WG) qv[d] = qh[d];
    barrier(CLK_LOCAL_MEM_FENCE);
    float acc[MHA_DPI];
    for (int e = 0; e < MHA_DPI; e++) acc[e] = 0.0f;
    float m = -INFINITY, l = 0.0f;
    for (int base = 0; base < n_kv; base += ATT_WG) {
        const int p = base + lid;
        float sv = -INFINITY;
        if (p < n_kv) {
            global const float *kp = ks + (long)p * HD;
            float dot = 0.0f;
            for (int d = 0; d < D; d++) dot += qv[d] * kp[d];
            sv = dot * scale;
        }
        red[lid] = sv;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int w = ATT_WG / 2; w > 0; w >>= 1) {
            if (lid < w) red[lid] = fmax(red[lid], red[lid + w]);
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        const float nm = fmax(m, red[0]);
        sc[lid] = p < n_kv ? exp(sv - nm) : 0.0f;
        barrier(CLK_LOCAL_MEM_FENCE);
        const float corr = exp(m - nm); /* 0 on the first chunk (m = -inf) */
        l *= corr;
        for (int e = 0; e < MHA_DPI; e++) acc[e] *= corr;
        const int cnt = min(ATT_WG, n_kv - base);
        for (int j = 0; j < cnt; j++) {
            const float pj = sc[j];
            l += pj;
            global const float *vp = vs + (long)(base + j) * HD;
            for (int e = 0; e < MHA_DPI; e++) {
                const int d = lid + e * ATT_WG;
                if (d < D) acc[e] += pj * vp[d];
            }
        }
        m = nm;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    global float *o = out + ((long)s * n_q + i) * HD + (long)h * D;
    for (int e = 0; e < MHA_DPI; e++) {
        const int d = lid + e * ATT_WG;
        if (d < D) o[d] = acc[e] / l;
    }
}

/* Tiled attention (flash attention's order): a work-group of
 * MHA_TQ * MHA_TP items per (tile of MHA_TQ queries, head, sequence);
 * item t owns query row r = t / MHA_TP of the tile and p = t % MHA_TP its
 * part: keys p, p + MHA_TP, ... of each key tile, and the output's
 * float4 chunks p, p + MHA_TP, ... (dimensions 4 * chunk .. + 3; dpi / 4
 * chunks, dpi a constant of each kernel, a multiple of 4 with
 * MHA_TP * dpi >= D). Per tile of MHA_TK keys:
 *   1. K's rows into kv; item (r, p) scores its keys of row r, s_j =
 *      q_r . k_j * scale (-inf past n_kv), and puts their maximum in
 *      row r's slot p of sc (columns MHA_TK .. + MHA_TP);
 *   2. each item takes the row's maximum m' (with the running m), writes
 *      its keys' exp(s_j - m') to sc[r][j], adds them to its share of the
 *      row's sum l (rescaled by exp(m - m') like acc: the shares add up at
 *      the end), and V's rows go into kv;
 *   3. acc = acc * exp(m - m') + sum_j sc[r][j] v_j over the tile.
 * Local buffers (kernel arguments, sized by pt_ocl_mha): qs [MHA_TQ][ld],
 * kv [MHA_TK][ld], sc [MHA_TQ][MHA_TK + MHA_TP + 1], ld = 4 * ((MHA_TP *
 * dpi / 4) | 1) >= MHA_TP * dpi (ld / 4 odd: the float4 rows items read
 * at once fall on distinct banks).
 * Columns D .. ld of qs and kv and rows past n_q / n_kv are zeros, so the
 * inner loops need no bounds. */
#define MHA_SC (MHA_TK + MHA_TP + 1)

/* dst [rows][ld4] float4 (local) = rows of D values of src (row stride
 * HD), zeros past n_rows rows and D values: the group's items take
 * consecutive float4 of a row (coalesced), the next row after ld4. */
inline void mha_load(local float *dst, global const float *src, int n_rows, int rows, int ld4,
                     int D, int HD) {
    const int nw = MHA_TQ * MHA_TP, lid = get_local_id(0), js = nw / ld4, cs = nw % ld4;
    local float4 *d4 = (local float4 *)dst;
    for (int j = lid / ld4, c = lid % ld4; j < rows;) {
        const int d = 4 * c;
        float4 val = (float4)(0.0f);
        if (j < n_rows && d < D) {
            global const float *sp = src + (long)j * HD + d;
            if (d + 4 <= D) {
                val = vload4(0, sp);
            } else {
                val.x = sp[0];
                if (d + 1 < D) val.y = sp[1];
                if (d + 2 < D) val.z = sp[2];
            }
        }
        d4[j * ld4 + c] = val;
        j += js;
        c += cs;
        if (c >= ld4) c -= ld4, j++;
    }
}
inline void mha_tile(global float *out, global const float *q, global const float *k,
                     global const float *v, int n_q, int n_kv, int H, int D, float scale,
                     local float *qs, local float *kv, local float *sc, const int dpi) {
    const int lid = get_local_id(0), r = lid / MHA_TP, p = lid % MHA_TP;
    const int q0 = get_group_id(0) * MHA_TQ, h = get_group_id(1), s = get_group_id(2);
    const int HD = H * D, ld4 = (MHA_TP * dpi / 4) | 1, ld = 4 * ld4, D4 = (D + 3) / 4;
    global const float *qb = q + ((long)s * n_q + q0) * HD + (long)h * D;
    global const float *ks = k + (long)s * n_kv * HD + (long)h * D;
    global const float *vs = v + (long)s * n_kv * HD + (long)h * D;
    mha_load(qs, qb, n_q - q0, MHA_TQ, ld4, D, HD);
    float4 acc[10];
    for (int e = 0; e < dpi / 4; e++) acc[e] = (float4)(0.0f);
    float m = -INFINITY, l = 0.0f;
    local const float4 *qr = (local const float4 *)(qs + r * ld);
    local float *sr = sc + r * MHA_SC;
    local const float4 *kv4 = (local const float4 *)kv;
    for (int base = 0; base < n_kv; base += MHA_TK) {
        const int cnt = min(MHA_TK, n_kv - base);
        barrier(CLK_LOCAL_MEM_FENCE); /* qs written; the last tile's kv and sc read */
        mha_load(kv, ks + (long)base * HD, cnt, MHA_TK, ld4, D, HD);
        barrier(CLK_LOCAL_MEM_FENCE);
        float dot_[MHA_TK / MHA_TP];
        for (int a = 0; a < MHA_TK / MHA_TP; a++) dot_[a] = 0.0f;
        for (int d4 = 0; d4 < D4; d4++) {
            const float4 qd = qr[d4];
            for (int a = 0; a < MHA_TK / MHA_TP; a++) dot_[a] += dot(qd, kv4[(p + a * MHA_TP) * ld4 + d4]);
        }
        float pm = -INFINITY;
        for (int a = 0; a < MHA_TK / MHA_TP; a++) {
            dot_[a] = p + a * MHA_TP < cnt ? dot_[a] * scale : -INFINITY;
            pm = fmax(pm, dot_[a]);
        }
        sr[MHA_TK + p] = pm;
        barrier(CLK_LOCAL_MEM_FENCE); /* K read, the partial maxima written */
        float mx = m;
        for (int i = 0; i < MHA_TP; i++) mx = fmax(mx, sr[MHA_TK + i]);
        const float corr = exp(m - mx); /* 0 on the first tile (m = -inf) */
        l *= corr;
        for (int a = 0; a < MHA_TK / MHA_TP; a++) {
            const float pj = exp(dot_[a] - mx);
            sr[p + a * MHA_TP] = pj;
            l += pj;
        }
        mha_load(kv, vs + (long)base * HD, cnt, MHA_TK, ld4, D, HD);
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int e = 0; e < dpi / 4; e++) acc[e] *= corr;
        for (int j = 0; j < MHA_TK; j++) {
            const float pj = sr[j];
            local const float4 *vj = kv4 + j * ld4 + p;
            for (int e = 0; e < dpi / 4; e++) acc[e] += pj * vj[e * MHA_TP];
        }
        m = mx;
    }
    /* the row's sum: the shares of its MHA_TP items (every item is past
     * its last reads of the partial maxima) */
    sr[MHA_TK + p] = l;
    barrier(CLK_LOCAL_MEM_FENCE);
    l = 0.0f;
    for (int i = 0; i < MHA_TP; i++) l += sr[MHA_TK + i];
    if (q0 + r >= n_q) return;
    global float *o = out + ((long)s * n_q + q0 + r) * HD + (long)h * D;
    for (int e = 0; e < dpi / 4; e++) {
        const int d = 4 * (p + e * MHA_TP);
        const float4 y = acc[e] / l;
        if (d < D) o[d] = y.x;
        if (d + 1 < D) o[d + 1] = y.y;
        if (d + 2 < D) o[d + 2] = y.z;
        if (d + 3 < D) o[d + 3] = y.w;
    }
}

/* mha_tile for D <= MHA_TP * 12, 16, 20, 40 (SD's heads of 40, 64, 80, 160). */
#define MHA_TILE_KERNEL(dpi)                                                                       \
    kernel __attribute__((reqd_work_group_size(MHA_TQ * MHA_TP, 1, 1))) void mha_t##dpi(          \
        global float *out, global const float *q, global const float *k, global const float *v,   \
        int n_q, int n_kv, int H, int D, float scale, local float *qs, local float *kv,            \
        local float *sc) {                                                                         \
        mha_tile(out, q, k, v, n_q, n_kv, H, D, scale, qs, kv, sc, dpi);                           \
    }
MHA_TILE_KERNEL(12)
MHA_TILE_KERNEL(16)
MHA_TILE_KERNEL(20)
MHA_TILE_KERNEL(40)
