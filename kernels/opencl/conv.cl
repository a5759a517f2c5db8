/*
 * conv.cl — the data movement of the image graphs (HWC float32, as
 * engine/diffusion/sd_nn.h): im2col for a convolution, nearest 2x
 * up-sampling and channel concatenation. One work-item per output value.
 */

/* cols [n_px][ld]: row r, output pixel p = p0 + r (pixel (oy, ox) of
 * image img, pixels counted over the batch), holds x[img][iy][ix][ch] at
 * column (ky * k + kx) * c + ch, with iy = oy * stride - pad + ky,
 * ix = ox * stride - pad + kx, and 0 outside the image (kernels/cpu/
 * image_ops.h pt_im2col_hwc); columns k * k * c .. ld - 1 hold 0 (the
 * zero padding of a quantized matrix's rows to whole blocks). x
 * [n][h][w][c]; total = n_px * ld. */
kernel void im2col_hwc(global float *cols, global const float *x, int h, int w, int c, int k,
                       int stride, int pad, int h_out, int w_out, long p0, long total, int ld) {
    const long i = get_global_id(0);
    if (i >= total) return;
    const int kin = k * k * c;
    const long p = p0 + i / ld;
    const int kk = (int)(i % ld);
    if (kk >= kin) {
        cols[i] = 0.0f;
        return;
    }
    const int ch = kk % c, kx = kk / c % k, ky = kk / (c * k);
    const long hw = (long)h_out * w_out, img = p / hw;
    const int q = (int)(p % hw), oy = q / w_out, ox = q % w_out;
    const int iy = oy * stride - pad + ky, ix = ox * stride - pad + kx;
    cols[i] = iy >= 0 && iy < h && ix >= 0 && ix < w ? x[((img * h + iy) * w + ix) * c + ch] : 0.0f;
}

/* y [n][2h][2w][c] = x [n][h][w][c] at (oy / 2, ox / 2). */
kernel void upsample2x(global float *y, global const float *x, int h, int w, int c, long total) {
    const long i = get_global_id(0);
    if (i >= total) return;
    const int ch = (int)(i % c);
    const long pix = i / c;
    const int ox = (int)(pix % (2 * w));
    const long rest = pix / (2 * w);
    const int oy = (int)(rest % (2 * h));
    const long img = rest / (2 * h);
    y[i] = x[((img * h + oy / 2) * w + ox / 2) * c + ch];
}

/* y [n_pix][ca + cb] = [a | b], a [n_pix][ca], b [n_pix][cb]. */
kernel void concat(global float *y, global const float *a, int ca, global const float *b, int cb,
                   long total) {
    const long i = get_global_id(0);
    if (i >= total) return;
    const long p = i / (ca + cb);
    const int j = (int)(i % (ca + cb));
    y[i] = j < ca ? a[p * ca + j] : b[p * cb + j - ca];
}
