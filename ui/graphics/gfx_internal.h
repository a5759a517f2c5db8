/*
 * gfx_internal.h — what the files of ui/graphics share and the tests
 * call directly: the geometry of a picture in cells, the scaler, the
 * tmux wrapper, base64 and the four encoders. Not for the app or the TUI
 * (they use graphics.h).
 */
#ifndef PETREL_UI_GFX_INTERNAL_H
#define PETREL_UI_GFX_INTERNAL_H

#include "graphics.h"

/* Cell size assumed when the probe found none (pixels). */
#define PT_GFX_DEFAULT_CELL_W 10
#define PT_GFX_DEFAULT_CELL_H 20
/* Bounds on what any reply or caller may ask for, so that a lying
 * terminal cannot make us allocate gigabytes: cells per side, pixels per
 * cell side, pixels per picture side. */
#define PT_GFX_MAX_CELLS 4096
#define PT_GFX_MAX_CELL_PX 512
#define PT_GFX_MAX_SIDE 8192

/* Where a picture of img_w x img_h goes in a box of cols x rows cells of
 * cell_w x cell_h pixels (0: the default 10x20), at most max_w x max_h
 * pixels (0: no limit beyond PT_GFX_MAX_SIDE): the largest size with the
 * image's aspect that fits (scaled up or down; each side at least 1), and
 * the cells that size covers (ceil). */
typedef struct pt_gfx_fit {
    int px_w, px_h;   /* the picture's size in pixels */
    int cols, rows;   /* the cells it covers, <= the box */
    int cell_w, cell_h; /* the cell size used */
    bool width_bound; /* the box's width limits it (else its height) */
} pt_gfx_fit;
bool pt_gfx_fit_box(int img_w, int img_h, int cols, int rows, int cell_w, int cell_h, int max_w,
                    int max_h, pt_gfx_fit *fit);

/* img resampled to w x h (stb_image_resize, sRGB-aware filtering):
 * malloc'd RGB8 with stride w * 3; NULL on no memory. */
uint8_t *pt_gfx_scale(const pt_gfx_image *img, int w, int h);

/* Append data wrapped in tmux's passthrough: ESC P tmux; DATA ESC \ with
 * every ESC of DATA doubled (tmux(1), allow-passthrough: "the sequence
 * is \ePtmux; followed by the escaped sequence and \e\\"), so that
 * tmux hands DATA to the outer terminal unchanged. */
void pt_gfx_tmux_wrap(const char *data, size_t n, pt_gfx_buf *out);

/* data in base64 (RFC 4648, padded, no line breaks): malloc'd, NUL
 * ended, *out_len characters; NULL on no memory. */
char *pt_gfx_base64(const void *data, size_t n, size_t *out_len);

/* Append printf-formatted text. */
void pt_gfx_buf_printf(pt_gfx_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The encoders. Each appends the escape sequences for the picture fit
 * says, from pixels already scaled to fit->px_w x fit->px_h (RGB8, stride
 * px_w * 3), except cells, which lets libchafa sample the original image
 * itself. False on no memory or a library failure. */
bool pt_gfx_encode_sixel(const uint8_t *rgb, const pt_gfx_fit *fit, int colors, pt_gfx_buf *out);
bool pt_gfx_encode_kitty(const uint8_t *rgb, const pt_gfx_fit *fit, uint32_t id, pt_gfx_buf *out);
bool pt_gfx_encode_iterm2(const uint8_t *rgb, const pt_gfx_fit *fit, pt_gfx_buf *out);
bool pt_gfx_encode_cells(const pt_gfx_image *img, const pt_gfx_fit *fit, int color_depth,
                         pt_gfx_buf *out);

/* The largest base64 payload of one kitty escape code (kitty graphics
 * protocol, "Remote client": chunks of at most 4096 bytes, each but the
 * last a multiple of 4). */
#define PT_GFX_KITTY_CHUNK 4096

#endif
