/*
 * ocl_sd.c — the host side of the image graphs' kernels (conv.cl,
 * sd_ops.cl): argument checks, grid sizes and the enqueueing (ocl.h).
 * Element-wise kernels run one item per output value on groups of OPS_WG;
 * LayerNorm one group of OPS_WG per row; GroupNorm three kernels (slices'
 * statistics, their combination, one item per value; sd_ops.cl);
 * attention the tiled kernels (groups of MHA_TQ * MHA_TP items per MHA_TQ
 * queries of a head and sequence) or, for heads too large for them, one
 * group of ATT_WG per (head, query, sequence).
 */

#include "ocl_impl.h"

/* An element-wise grid of `total` items. */
#define EW_GRID(total) const size_t global = round_up((size_t)(total), OPS_WG), local = OPS_WG

int pt_ocl_im2col(pt_ocl *o, pt_ocl_mem *cols, int ld, pt_ocl_mem *x, int h, int w, int c, int k,
                  int stride, int pad, int64_t p0, int64_t n_px) {
    const int h_out = (h + 2 * pad - k) / stride + 1, w_out = (w + 2 * pad - k) / stride + 1;
    if (ld < k * k * c) {
        pt_ocl_set_error(o, "OpenCL im2col: rows of %d for %d columns", ld, k * k * c);
        return -1;
    }
    if (n_px <= 0 || h_out <= 0 || w_out <= 0) return 0;
    const cl_mem cm = (cl_mem)cols, xm = (cl_mem)x;
    const cl_long first = p0, total = (cl_long)n_px * ld;
    EW_GRID(total);
    return pt_ocl_launch(o, K_IM2COL, 1, &global, &local, 13, ARG(cm), ARG(xm), ARG(h), ARG(w), ARG(c),
                         ARG(k), ARG(stride), ARG(pad), ARG(h_out), ARG(w_out), ARG(first), ARG(total),
                         ARG(ld));
}

int pt_ocl_upsample2x(pt_ocl *o, pt_ocl_mem *y, pt_ocl_mem *x, int n, int h, int w, int c) {
    if (n <= 0 || h <= 0 || w <= 0 || c <= 0) return 0;
    const cl_mem ym = (cl_mem)y, xm = (cl_mem)x;
    const cl_long total = (cl_long)n * 4 * h * w * c;
    EW_GRID(total);
    return pt_ocl_launch(o, K_UPSAMPLE, 1, &global, &local, 6, ARG(ym), ARG(xm), ARG(h), ARG(w), ARG(c),
                         ARG(total));
}

int pt_ocl_concat(pt_ocl *o, pt_ocl_mem *y, pt_ocl_mem *a, int ca, pt_ocl_mem *b, int cb,
                  int64_t n_pix) {
    if (n_pix <= 0 || ca + cb <= 0) return 0;
    const cl_mem ym = (cl_mem)y, am = (cl_mem)a, bm = (cl_mem)b;
    const cl_long total = (cl_long)n_pix * (ca + cb);
    EW_GRID(total);
    return pt_ocl_launch(o, K_CONCAT, 1, &global, &local, 6, ARG(ym), ARG(am), ARG(ca), ARG(bm), ARG(cb),
                         ARG(total));
}

int pt_ocl_groupnorm(pt_ocl *o, pt_ocl_mem *y, pt_ocl_mem *x, pt_ocl_mem *gamma, pt_ocl_mem *beta,
                     int n, int64_t n_pix, int c, int groups, float eps, bool silu) {
    if (groups <= 0 || c % groups) {
        pt_ocl_set_error(o, "OpenCL groupnorm: %d channels in %d groups", c, groups);
        return -1;
    }
    if (n <= 0 || n_pix <= 0 || c <= 0) return 0;
    /* slices of whole pixels, about GN_SLICE_VALUES values of a group each */
    const int cg = c / groups;
    const cl_long slice = cg >= GN_SLICE_VALUES ? 1 : GN_SLICE_VALUES / cg;
    const cl_int n_slices = (cl_int)((n_pix + slice - 1) / slice);
    const size_t n_ig = (size_t)n * groups; /* (image, group) pairs */
    /* scratch: part [n_ig][n_slices] then stat [n_ig], (float, float) each */
    pt_ocl_mem *sc = pt_ocl_scratch(o, (n_ig * n_slices + n_ig) * 2 * sizeof(float));
    if (!sc) return -1;
    const cl_mem ym = (cl_mem)y, xm = (cl_mem)x, gm = (cl_mem)gamma, bm = (cl_mem)beta, pm = (cl_mem)sc;
    const cl_long np = n_pix, st_at = (cl_long)n_ig * n_slices;
    const cl_int si = silu;
    const size_t pg[2] = {(size_t)n_slices * OPS_WG, n_ig}, pl[2] = {OPS_WG, 1};
    int st = pt_ocl_launch(o, K_GN_PART, 2, pg, pl, 6, ARG(pm), ARG(xm), ARG(np), ARG(c), ARG(groups),
                           ARG(slice));
    const size_t sg = n_ig * OPS_WG, sl = OPS_WG;
    if (!st)
        st = pt_ocl_launch(o, K_GN_STATS, 1, &sg, &sl, 8, ARG(pm), ARG(np), ARG(c), ARG(groups),
                           ARG(slice), ARG(n_slices), ARG(st_at), ARG(eps));
    const size_t ag[2] = {round_up((size_t)n_pix * c, OPS_WG), (size_t)n}, al[2] = {OPS_WG, 1};
    if (!st)
        st = pt_ocl_launch(o, K_GROUPNORM, 2, ag, al, 10, ARG(ym), ARG(xm), ARG(pm), ARG(st_at), ARG(gm),
                           ARG(bm), ARG(np), ARG(c), ARG(groups), ARG(si));
    return st;
}

int pt_ocl_layernorm(pt_ocl *o, pt_ocl_mem *y, pt_ocl_mem *x, pt_ocl_mem *gamma, pt_ocl_mem *beta,
                     int64_t rows, int c, float eps) {
    if (rows <= 0 || c <= 0) return 0;
    const cl_mem ym = (cl_mem)y, xm = (cl_mem)x, gm = (cl_mem)gamma, bm = (cl_mem)beta;
    const size_t global = (size_t)rows * OPS_WG, local = OPS_WG;
    return pt_ocl_launch(o, K_LAYERNORM, 1, &global, &local, 6, ARG(ym), ARG(xm), ARG(gm), ARG(bm),
                         ARG(c), ARG(eps));
}

int pt_ocl_geglu(pt_ocl *o, pt_ocl_mem *out, pt_ocl_mem *x, int64_t rows, int inner) {
    if (rows <= 0 || inner <= 0) return 0;
    const cl_mem om = (cl_mem)out, xm = (cl_mem)x;
    const cl_long total = (cl_long)rows * inner;
    EW_GRID(total);
    return pt_ocl_launch(o, K_GEGLU, 1, &global, &local, 4, ARG(om), ARG(xm), ARG(inner), ARG(total));
}

int pt_ocl_act(pt_ocl *o, pt_ocl_mem *x, int64_t count, bool gelu) {
    if (count <= 0) return 0;
    const cl_mem xm = (cl_mem)x;
    const cl_int which = gelu;
    const cl_long total = count;
    EW_GRID(total);
    return pt_ocl_launch(o, K_ACT, 1, &global, &local, 3, ARG(xm), ARG(which), ARG(total));
}

int pt_ocl_add_image(pt_ocl *o, pt_ocl_mem *y, pt_ocl_mem *t, int n, int64_t n_pix, int c) {
    if (n <= 0 || n_pix <= 0 || c <= 0) return 0;
    const cl_mem ym = (cl_mem)y, tm = (cl_mem)t;
    const cl_long np = n_pix, total = (cl_long)n * n_pix * c;
    EW_GRID(total);
    return pt_ocl_launch(o, K_ADD_IMAGE, 1, &global, &local, 5, ARG(ym), ARG(tm), ARG(np), ARG(c),
                         ARG(total));
}

int pt_ocl_mha(pt_ocl *o, pt_ocl_mem *out, pt_ocl_mem *q, pt_ocl_mem *k, pt_ocl_mem *v, int n_seq,
               int n_q, int n_kv, int H, int D, float scale) {
    if (D < 1 || D > PT_OCL_MHA_MAX_D || H < 1) {
        pt_ocl_set_error(o, "OpenCL attention: %d heads of %d (most %d)", H, D, PT_OCL_MHA_MAX_D);
        return -1;
    }
    if (n_seq <= 0 || n_q <= 0 || n_kv <= 0) return 0;
    const cl_mem om = (cl_mem)out, qm = (cl_mem)q, km = (cl_mem)k, vm = (cl_mem)v;
    /* the tiled kernel with the fewest dimensions per item that cover D
     * (MHA_TP * dpi >= D), when its local buffers fit and the device runs
     * its groups (o->mha_tiled: CPU devices only for now) */
    static const int dpis[4] = {12, 16, 20, 40};
    for (int t = 0; t < 4 && o->mha_tiled; t++) {
        if (MHA_TP * dpis[t] < D) continue;
        const size_t ld = 4 * (size_t)((MHA_TP * dpis[t] / 4) | 1), wg = MHA_TQ * MHA_TP;
        const size_t qs = MHA_TQ * ld * sizeof(float), kvs = MHA_TK * ld * sizeof(float);
        const size_t scs = MHA_TQ * (MHA_TK + MHA_TP + 1) * sizeof(float);
        if (qs + kvs + scs > pt_ocl_info(o)->local_mem || pt_ocl_kernel_wg(o, K_MHA_T12 + t) < wg) break;
        const size_t global[3] = {(size_t)(n_q + MHA_TQ - 1) / MHA_TQ * wg, (size_t)H, (size_t)n_seq};
        const size_t local[3] = {wg, 1, 1};
        return pt_ocl_launch(o, K_MHA_T12 + t, 3, global, local, 12, ARG(om), ARG(qm), ARG(km), ARG(vm),
                             ARG(n_q), ARG(n_kv), ARG(H), ARG(D), ARG(scale), qs, (const void *)NULL, kvs,
                             (const void *)NULL, scs, (const void *)NULL);
    }
    const size_t global[3] = {(size_t)H * ATT_WG, (size_t)n_q, (size_t)n_seq};
    const size_t local[3] = {ATT_WG, 1, 1};
    return pt_ocl_launch(o, K_MHA, 3, global, local, 9, ARG(om), ARG(qm), ARG(km), ARG(vm), ARG(n_q),
                         ARG(n_kv), ARG(H), ARG(D), ARG(scale));
}
