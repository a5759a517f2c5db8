/*
 * llamacpp_lora_greedy.c — the peer's side of test_lora_llamacpp.sh:
 * greedy text from llama.cpp (its C API, linked from the build that
 * bench/build_llamacpp.sh makes) for a prompt, with a GGUF LoRA adapter
 * at a scale. Built by the test itself against that build; not part of
 * petrel.
 *   usage: llamacpp_lora_greedy MODEL ADAPTER|- SCALE N_GEN PROMPT
 * Writes the generated tokens' bytes (llama_token_to_piece, special
 * tokens not rendered) to stdout; exit 1 on any failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama.h"

static void quiet(enum ggml_log_level level, const char *text, void *user) {
    (void)user;
    if (level >= GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: %s MODEL ADAPTER|- SCALE N_GEN PROMPT\n", argv[0]);
        return 1;
    }
    llama_log_set(quiet, NULL);
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    struct llama_model *model = llama_model_load_from_file(argv[1], mp);
    if (!model) return 1;
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 256;
    cp.n_batch = 256;
    cp.n_threads = cp.n_threads_batch = 1;
    cp.type_k = cp.type_v = GGML_TYPE_F32; /* the float path: no F16 rounding of K and V */
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) return 1;
    struct llama_adapter_lora *lora = NULL;
    float scale = (float)atof(argv[3]);
    if (strcmp(argv[2], "-") != 0) {
        lora = llama_adapter_lora_init(model, argv[2]);
        if (!lora || llama_set_adapters_lora(ctx, &lora, 1, &scale) != 0) {
            fprintf(stderr, "llama.cpp could not load or set the adapter %s\n", argv[2]);
            return 1;
        }
    }
    const char *prompt = argv[5];
    llama_token toks[256];
    const int n = llama_tokenize(vocab, prompt, (int32_t)strlen(prompt), toks, 256, true, true);
    if (n <= 0) return 1;
    const int n_vocab = llama_vocab_n_tokens(vocab), n_gen = atoi(argv[4]);
    llama_token next = 0;
    struct llama_batch batch = llama_batch_get_one(toks, n);
    for (int i = 0; i < n_gen; i++) {
        if (llama_decode(ctx, batch) != 0) return 1;
        const float *logits = llama_get_logits_ith(ctx, -1);
        int best = 0;
        for (int v = 1; v < n_vocab; v++)
            if (logits[v] > logits[best]) best = v;
        next = best;
        if (llama_vocab_is_eog(vocab, next)) break;
        char piece[256];
        const int len = llama_token_to_piece(vocab, next, piece, sizeof piece, 0, false);
        if (len < 0) return 1;
        fwrite(piece, 1, (size_t)len, stdout);
        batch = llama_batch_get_one(&next, 1);
    }
    if (lora) llama_adapter_lora_free(lora);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
