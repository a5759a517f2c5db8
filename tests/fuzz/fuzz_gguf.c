/*
 * fuzz_gguf.c — the GGUF reader from memory (pt_gguf_open_memory, the same
 * parser pt_gguf_open runs over its mapping), then the same bytes as a
 * model through the public API: written to a memfd and loaded from
 * /proc/self/fd/N, its metadata and tensor info read and, when it loads,
 * a couple of tokens decoded in a tiny context.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gguf.h"
#include "petrel.h"

static void walk_metadata(const pt_gguf *g) {
    char text[256];
    for (uint64_t i = 0; i < g->n_kv; i++)
        pt_gguf_value_format(&g->kv[i].value, text, sizeof text, 8);
    uint32_t u32;
    int64_t i64;
    float f32;
    bool b;
    pt_gguf_str s;
    pt_gguf_get_u32(g, "llama.context_length", &u32);
    pt_gguf_get_i64(g, "general.alignment", &i64);
    pt_gguf_get_f32(g, "llama.rope.freq_base", &f32);
    pt_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &b);
    pt_gguf_get_str(g, "general.architecture", &s);
    const pt_gguf_value *scores = pt_gguf_get_arr(g, "tokenizer.ggml.scores", PT_GGUF_FLOAT32);
    for (uint64_t i = 0; scores && i < scores->v.arr.n && i < 16; i++) pt_gguf_arr_f64(scores, i);
    const pt_gguf_value *types = pt_gguf_get_arr(g, "tokenizer.ggml.token_type", PT_GGUF_INT32);
    for (uint64_t i = 0; types && i < types->v.arr.n && i < 16; i++) pt_gguf_arr_i64(types, i);
}

static void parse_from_memory(const uint8_t *data, size_t size) {
    pt_gguf *g = NULL;
    pt_error err;
    if (pt_gguf_open_memory(data, size, &g, &err) != PT_OK) return;
    walk_metadata(g);
    pt_gguf_find_tensor(g, "token_embd.weight");
    pt_gguf_close(g);
}

static void use_model(pt_model *model) {
    pt_model_info info;
    pt_model_get_info(model, &info);
    char key[128], value[256];
    for (int i = 0; pt_model_meta(model, i, key, sizeof key, value, sizeof value, 4); i++) {
    }
    pt_tensor_info t;
    for (int i = 0; pt_model_tensor(model, i, &t); i++) {
    }
    pt_context_params cp = pt_context_default_params();
    cp.n_ctx = 8;
    cp.n_threads = 1;
    cp.n_batch = 2;
    pt_context *ctx = NULL;
    pt_error err;
    if (pt_context_new(model, &cp, &ctx, &err) != PT_OK) return;
    pt_token toks[2] = {0, info.n_vocab > 1 ? 1 : 0};
    if (pt_decode(ctx, toks, 2, NULL, &err) == PT_OK) pt_context_logits(ctx);
    pt_context_free(ctx);
}

static void load_through_memfd(const uint8_t *data, size_t size) {
    int fd = memfd_create("fuzz.gguf", MFD_CLOEXEC);
    if (fd < 0) return;
    if (size == 0 || write(fd, data, size) == (ssize_t)size) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        pt_model *model = NULL;
        pt_error err;
        if (pt_model_load(path, NULL, &model, &err) == PT_OK) {
            use_model(model);
            pt_model_free(model);
        }
    }
    close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    parse_from_memory(data, size);
    load_through_memfd(data, size);
    return 0;
}
