/* gallery.c — pictures of the session (see gallery.h). */
#include "gallery.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "graphics/png_out.h"

void pt_gallery_init(pt_gallery *g) { memset(g, 0, sizeof *g); g->next_id = 1; }

void pt_gallery_free(pt_gallery *g) {
    for (int i = 0; i < g->n; i++) free(g->items[i].rgb);
    free(g->items);
    memset(g, 0, sizeof *g);
}

int pt_gallery_add(pt_gallery *g, uint8_t *rgb, int w, int h, const pt_img_settings *s,
                   double seconds, uint64_t gen) {
    if (!rgb) return -1;
    if (g->n == PT_GALLERY_MAX) {
        free(g->items[0].rgb);
        memmove(g->items, g->items + 1, sizeof *g->items * (size_t)(g->n - 1));
        g->n--;
    }
    if (g->n == g->cap) {
        int cap = g->cap ? g->cap * 2 : 8;
        pt_picture *p = realloc(g->items, sizeof *p * (size_t)cap);
        if (!p) { free(rgb); return -1; }
        g->items = p;
        g->cap = cap;
    }
    pt_picture *p = &g->items[g->n];
    memset(p, 0, sizeof *p);
    if (g->next_id == 0) g->next_id = 1;
    p->id = g->next_id++;
    p->gen = gen;
    p->rgb = rgb;
    p->w = w;
    p->h = h;
    p->set = *s;
    p->seconds = seconds;
    return g->n++;
}

pt_picture *pt_gallery_find(pt_gallery *g, uint32_t id) {
    for (int i = 0; i < g->n; i++)
        if (g->items[i].id == id) return &g->items[i];
    return NULL;
}

bool pt_gallery_save(pt_picture *p, const char *dir, const char *model_name, char *why, size_t cap) {
    char folder[4096], path[4200];
    snprintf(folder, sizeof folder, "%s/images", dir);
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        snprintf(why, cap, "cannot create %s: %s", dir, strerror(errno));
        return false;
    }
    if (mkdir(folder, 0700) != 0 && errno != EEXIST) {
        snprintf(why, cap, "cannot create %s: %s", folder, strerror(errno));
        return false;
    }
    snprintf(path, sizeof path, "%s/petrel-%u-%llu.png", folder, p->id, (unsigned long long)p->set.seed);
    size_t tcap = PT_IMG_PROMPT_CAP + PT_IMG_NEGATIVE_CAP + 1024;
    char *text = malloc(tcap);
    if (!text) { snprintf(why, cap, "out of memory"); return false; }
    pt_img_parameters(&p->set, model_name, text, tcap);
    pt_image img = {.width = p->w, .height = p->h, .stride = (size_t)p->w * 3, .pixels = p->rgb};
    unsigned char *png = NULL;
    size_t len = 0;
    bool ok = png_encode(&img, "parameters", text, &png, &len);
    free(text);
    if (!ok) { snprintf(why, cap, "out of memory encoding the PNG"); return false; }
    bool cancelled = false;
    ok = write_file_atomic(path, png, len, NULL, &cancelled, why, cap);
    free(png);
    if (ok) snprintf(p->saved, sizeof p->saved, "%s", path);
    return ok;
}
