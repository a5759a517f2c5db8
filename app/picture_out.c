/*
 * picture_out.c — drawing a picture in the scrolling terminal, below the
 * cursor (the CLI's way; the TUI places pictures among curses' cells).
 *
 * The rows are made first: N newlines scroll the screen if the picture
 * would run off its bottom, then CSI N A goes back up to the first of
 * them. The picture is drawn there (every encoder leaves the cursor where
 * it was, graphics.h), and CSI N B moves below it. So the picture never
 * scrolls the screen while it is drawn, which would leave a sixel's or
 * iTerm2's restored cursor on the wrong row.
 */
#include <fcntl.h>
#include <unistd.h>

#include "picture_out.h"

void picture_probe(pt_gfx_proto want, bool any_stdout, pt_term_caps *caps) {
    int fd = -1;
    const bool tty_out = isatty(STDOUT_FILENO);
    if (tty_out || any_stdout) {
        fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (fd < 0 && tty_out) fd = dup(STDOUT_FILENO); /* no controlling terminal: stdout's own */
    }
    pt_gfx_probe(fd, want, pt_gfx_probe_timeout_ms(), caps);
    if (fd >= 0) close(fd);
}

bool picture_print(const pt_term_caps *caps, const pt_gfx_image *img, FILE *out) {
    const int rows = caps->rows > 3 ? caps->rows - 2 : 1;
    pt_gfx_buf b = {0};
    int used_cols = 0, used_rows = 0;
    /* id 0: no kitty image id. A picture in the scrollback is never redrawn,
     * and kitty replaces the image of an id sent again, placements and all:
     * with a fixed id, `show A B` (or the next command's picture) would
     * turn the first picture into the second */
    if (!pt_gfx_encode(caps, img, caps->cols, rows, 0, &b, &used_cols, &used_rows)) {
        pt_gfx_buf_free(&b);
        return false;
    }
    if (caps->proto == PT_GFX_NONE) {
        fwrite(b.data, 1, b.len, out); /* the one-line text in its place */
        fputc('\n', out);
    } else {
        for (int r = 0; r < used_rows; r++) fputc('\n', out);
        fprintf(out, "\r\033[%dA", used_rows);
        fwrite(b.data, 1, b.len, out);
        fprintf(out, "\033[%dB\r", used_rows);
    }
    fflush(out);
    pt_gfx_buf_free(&b);
    return true;
}
