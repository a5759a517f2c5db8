/*
 * fuzz_convert_json.c — a hostile Hugging Face folder through
 * pt_convert_file: the input is
 *     one byte (the weights: 'g' gemma3's tiny checkpoint, else qwen2's)
 *     config.json SEP tokenizer.json SEP tokenizer_config.json SEP tokenizer.model
 * (SEP = "\n====\n"; missing parts are missing files), written into a
 * private temporary folder beside a copy of tests/data/hf-tiny/<family>/
 * model.safetensors, then converted to f32 there (the output removed).
 * Every reader of the folder's outside input runs: the config and
 * tokenizer JSON readers (cJSON underneath), the SentencePiece protobuf
 * reader, the pre-tokenizer recogniser, the special-token logic, the
 * shape checks. The raw bytes also go to cv_spm_parse directly.
 * Seeds: tests/fuzz/corpus/fuzz_convert_json (the hf-tiny folders so
 * packed).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "convert_internal.h"
#include "petrel.h"

static const char SEP[] = "\n====\n";
static const char *const FILES[] = {"config.json", "tokenizer.json", "tokenizer_config.json", "tokenizer.model"};

static char g_dir[256]; /* made once per process (a fuzz target's own state) */

static void put(const char *name, const uint8_t *p, size_t n) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) return;
    if (n) fwrite(p, 1, n, f);
    fclose(f);
}

static void copy_weights(const char *family) {
    char src[1024];
    snprintf(src, sizeof src, "%s/hf-tiny/%s/model.safetensors", PETREL_TEST_DATA_DIR, family);
    FILE *f = fopen(src, "rb");
    if (!f) return;
    static uint8_t buf[1 << 21];
    const size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    put("model.safetensors", buf, n);
}

static void cleanup(void) {
    static const char *const all[] = {"config.json", "tokenizer.json", "tokenizer_config.json", "tokenizer.model",
                                      "model.safetensors", "out.gguf", "out.gguf.tmp"};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", g_dir, all[i]);
        unlink(path);
    }
    rmdir(g_dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!g_dir[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(g_dir, sizeof g_dir, "%s/petrel-fuzz-convert-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(g_dir)) return 0;
        atexit(cleanup);
    }
    if (size < 1) return 0;
    cv_spm sp;
    pt_error err;
    if (cv_spm_parse(data, size, "fuzz", &sp, &err) == PT_OK) cv_spm_free(&sp);

    copy_weights(data[0] == 'g' ? "gemma3" : "qwen2");
    const uint8_t *p = data + 1, *end = data + size;
    for (int i = 0; i < 4; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", g_dir, FILES[i]);
        unlink(path);
        if (p > end) continue;
        const uint8_t *s = p;
        while (s + sizeof SEP - 1 <= end && memcmp(s, SEP, sizeof SEP - 1) != 0) s++;
        if (s + sizeof SEP - 1 > end) s = end;
        put(FILES[i], p, (size_t)(s - p));
        p = s + sizeof SEP - 1;
    }
    char out[512];
    snprintf(out, sizeof out, "%s/out.gguf", g_dir);
    pt_convert_params cp = pt_convert_default_params();
    cp.outtype = "f32";
    pt_convert_file(g_dir, out, &cp, NULL, &err);
    unlink(out);
    return 0;
}
