/*
 * fuzz_safetensors.c — the safetensors reader from memory
 * (st_open_memory, the parser st_open runs over its mapping), touching
 * the first and last byte of every tensor it accepts (ASan sees any
 * range that lies outside the buffer), then the same bytes as an image
 * model through sd_weights_open: written to a memfd and opened as
 * /proc/self/fd/N (the single-file LDM path: config inference, name
 * mapping), its tensors looked up and released when it loads.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "safetensors.h"
#include "sd_weights.h"

static unsigned parse_from_memory(const uint8_t *data, size_t size) {
    st_file *f = NULL;
    pt_error err;
    unsigned sum = 0;
    if (st_open_memory(data, size, "fuzz", &f, &err) != PT_OK) return 0;
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const st_tensor *t = &f->tensors[i];
        if (t->nbytes) {
            const uint8_t *p = t->data;
            sum += p[0] + p[t->nbytes - 1];
        }
        sum += st_find(f, t->name) == t;
        sum += (unsigned)st_dtype_size(t->dtype);
    }
    for (uint64_t i = 0; i < f->n_meta; i++) sum += st_meta(f, f->meta_keys[i]) != NULL;
    st_close(f);
    return sum;
}

static void use_model(const sd_weights *w) {
    const sd_model_config *c = sd_weights_config(w);
    sd_tensor t;
    pt_error err;
    int64_t want[4] = {c->unet.channels[0], c->unet.in_channels, 3, 3};
    sd_weights_need(w, "unet.conv_in.weight", 4, want, &t, &err);
    if (sd_weights_get(w, "vae.decoder.conv_in.weight", &t) && t.nbytes) {
        volatile uint8_t x = ((const uint8_t *)t.data)[t.nbytes - 1];
        (void)x;
    }
    sd_weights_bytes(w, "unet.");
    sd_weights_release(w, "text_encoder.");
}

static void load_through_memfd(const uint8_t *data, size_t size) {
    int fd = memfd_create("fuzz.safetensors", MFD_CLOEXEC);
    if (fd < 0) return;
    if (size == 0 || write(fd, data, size) == (ssize_t)size) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        sd_weights *w = NULL;
        pt_error err;
        if (sd_weights_open(path, NULL, NULL, &w, &err) == PT_OK) {
            use_model(w);
            sd_weights_close(w);
        }
    }
    close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    volatile unsigned sink = parse_from_memory(data, size);
    (void)sink;
    load_through_memfd(data, size);
    return 0;
}
