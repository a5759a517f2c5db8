/*
 * cmd_show.c — `petrel show FILE...`: pictures in the terminal, each
 * scaled to the terminal's width and at most its height minus 2 rows, by
 * the best protocol the terminal answers to (or the one --graphics /
 * PETREL_GRAPHICS names).
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "commands.h"
#include "picture_file.h"
#include "picture_out.h"

static void usage(FILE *f) {
    fputs("usage: petrel show [--graphics MODE] FILE...\n"
          "Draw PNG or JPEG files (also BMP, GIF, TGA, PNM) in the terminal, one below the other,\n"
          "each fitted to the terminal's width and height.\n"
          "  --graphics MODE  auto (default: ask the terminal), kitty, iterm2, sixel,\n"
          "                   symbols (character cells) or none (a one-line note per picture);\n"
          "                   PETREL_GRAPHICS sets it too (the option wins)\n"
          "  -h, --help       this help\n"
          "When standard output is not a terminal, auto draws nothing (no escape codes in\n"
          "pipes and files): the files are still checked, a note goes to stderr and the exit\n"
          "status is 0 when they all read. Name a protocol with --graphics to write it anyway.\n"
          "PETREL_PROBE_TIMEOUT_MS: how long to wait for the terminal's answers (default 250).\n", f);
}

int cmd_show(int argc, char **argv) {
    const char *flag = NULL;
    int n_files = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--graphics")) {
            if (!(flag = arg_value(argc, argv, &i))) return 2;
        } else if (!strcmp(a, "--")) {
            n_files += argc - i - 1;
            break;
        } else if (a[0] == '-' && a[1]) {
            char safe[256];
            app_error("show: unknown option '%s' (see petrel show --help)", app_escaped(a, safe, sizeof safe));
            return 2;
        } else {
            n_files++;
        }
    }
    pt_gfx_proto want;
    char why[512];
    if (!pt_gfx_requested(flag, &want, why, sizeof why)) {
        app_error("show: %s", why);
        return 2;
    }
    if (!n_files) {
        app_error("show: no file given (petrel show FILE...)");
        return 2;
    }
    pt_term_caps caps;
    picture_probe(want, false, &caps);
    const bool silent = want == PT_GFX_AUTO && !isatty(STDOUT_FILENO);
    int rc = 0;
    bool after_dashes = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!after_dashes) {
            if (!strcmp(a, "--graphics")) {
                i++;
                continue;
            }
            if (!strcmp(a, "--")) {
                after_dashes = true;
                continue;
            }
        }
        char safe[1024];
        pt_picture pic;
        if (!pt_picture_load(a, &pic, why, sizeof why)) {
            app_error("show: %s: %s", app_escaped(a, safe, sizeof safe), why);
            rc = 1;
            continue;
        }
        const pt_gfx_image img = {.rgb = pic.rgb, .w = pic.w, .h = pic.h, .stride = pic.w * 3};
        if (!silent && !picture_print(&caps, &img, stdout)) {
            app_error("show: %s: out of memory drawing the picture", app_escaped(a, safe, sizeof safe));
            rc = 1;
        }
        pt_picture_free(&pic);
    }
    if (silent && rc == 0)
        app_error("show: standard output is not a terminal: nothing drawn (--graphics MODE draws anyway)");
    return rc;
}
