/*
 * fuzz_lora.c — the LoRA adapter readers from memory, and binding what
 * they accept to the tiny llama model (tests/data/tiny_llama.gguf, loaded
 * once on the reference CPU path and kept for the whole run).
 *
 * Input: "GGUF..." is a GGUF adapter file (pt_lora_read_gguf_memory);
 * anything else is a PEFT adapter: adapter_config.json's text up to the
 * first NUL byte, then the adapter_model.safetensors bytes
 * (pt_lora_read_peft_memory). An accepted adapter is bound; every factor
 * value is read (ASan sees a factor that lies outside its allocation) and,
 * when it binds, it is made active and one token decoded through it.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "lora.h"

static pt_model *tiny_model(void) {
    static pt_model *m; /* the one model every input binds to */
    static int tried;
    if (!tried) {
        tried = 1;
        pt_model_params mp = pt_model_default_params();
        mp.cpu = "ref";
        pt_error err;
        if (pt_model_load(PETREL_TEST_DATA_DIR "/tiny_llama.gguf", &mp, &m, &err) != PT_OK)
            fprintf(stderr, "fuzz_lora: %s\n", err.msg);
    }
    return m;
}

static void use(pt_lora *l) {
    volatile float sink = 0;
    for (int i = 0; i < l->n_pairs; i++) {
        const pt_lora_raw *r = &l->raw[i];
        sink += r->a[0] + r->a[(size_t)r->rank * (size_t)r->cols - 1];
        sink += r->b[0] + r->b[(size_t)r->rows * (size_t)r->rank - 1];
    }
    pt_lora_info info;
    pt_lora_get_info(l, &info);
    sink += (float)info.bytes;
    (void)sink;
    pt_model *m = tiny_model();
    pt_error err;
    if (!m || pt_lora_bind_model(l, m, &err) != PT_OK) return;
    pt_context_params cp = pt_context_default_params();
    cp.n_ctx = 4;
    cp.n_threads = 1;
    pt_context *c = NULL;
    if (pt_context_new(m, &cp, &c, &err) != PT_OK) return;
    if (pt_context_set_loras(c, &l, NULL, 1, &err) == PT_OK) {
        const pt_token t = 1;
        pt_decode(c, &t, 1, NULL, &err);
    }
    pt_context_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    pt_lora *l = NULL;
    pt_error err;
    pt_status st;
    if (size >= 4 && memcmp(data, "GGUF", 4) == 0) {
        st = pt_lora_read_gguf_memory(data, size, "fuzz", &l, &err);
    } else {
        const uint8_t *nul = memchr(data, 0, size);
        const size_t cfg = nul ? (size_t)(nul - data) : size;
        const size_t off = nul ? cfg + 1 : size;
        st = pt_lora_read_peft_memory((const char *)data, cfg, data + off, size - off, "fuzz", &l, &err);
    }
    if (st == PT_OK) use(l);
    pt_lora_free(l);
    return 0;
}
