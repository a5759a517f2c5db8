/*
 * test_gemma3.c — the real Gemma 3 270M (Q4_K_M GGUF from PyPI, fetched by
 * tools/fetch_gemma3.py; $PETREL_GEMMA3 or the data directory) against
 * llama.cpp and transformers: fixture tests/data/gemma3.llamacpp, made by
 * tools/gen_gemma3_fixture.py with llama-tokenize, llama-simple and a
 * float32 transformers Gemma3ForCausalLM holding the GGUF's dequantized
 * weights.
 *
 * Checked:
 *   - the model loads as gemma3 with llama.cpp's hyperparameters: 18
 *     layers, a sliding window of 512 on every layer but each sixth
 *     (5, 11, 17), local rope base 10000, global 1e6, embeddings times
 *     sqrt(640), scores times 1/sqrt(256), tied output, Gemma's template;
 *   - tokenizer: the ids of every held-out text equal llama-tokenize's
 *     (BOS added, special tokens parsed);
 *   - greedy decoding on the float path (every matrix on pt_matmul_ref,
 *     what PETREL_CPU=ref selects; 2 threads) of 11 prompts: the prompt's
 *     ids equal llama.cpp's, then up to 32 tokens, each the argmax of the
 *     last logits, stopping at an end-of-generation token:
 *       - the tokens equal transformers' greedy tokens at every step (the
 *         float reference; its smallest top-1/top-2 gap is printed);
 *       - the text (special tokens rendered, as llama-simple prints it)
 *         equals llama-simple's, or follows it up to a step where the
 *         float reference has a near-tie (gap below TIE_GAP, the threshold
 *         of test_logits.c and test_greedy.c): llama.cpp's CPU path
 *         quantizes activations to 8 bits and keeps an F16 KV cache, which
 *         moves logits by that much, so there it may take the other token
 *         (at this version it does on 5 of the 11 prompts, at reference
 *         gaps of 0.012 to 0.19; each flip is printed). At least 5 prompts (6 do), the long one
 *         among them, must give llama.cpp's text exactly.
 *     One prompt (about 580 tokens) is longer than the window of 512, so
 *     its local layers must mask the positions past the window.
 *   - the same long prompt gives the same logits fed in one batch and in
 *     pieces of 100 (the window across chunk boundaries), bitwise.
 *
 * In the ASan+UBSan build (PETREL_SANITIZED=1, set by tests/CMakeLists.txt)
 * the reference kernels run ~30x slower: there every tokenizer case runs
 * but only the first greedy prompt (a short one), as test_demo_model
 * does; the Release stage runs everything.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gguf.h"
#include "llm.h"
#include "tokenizer.h"

#define N_PREDICT 32
#define TIE_GAP 0.75 /* as test_greedy.c */
#define MIN_EXACT 5  /* prompts whose text must equal llama.cpp's exactly */

typedef struct reader {
    const char *p, *end;
} reader;

/* The next record "KIND LEN\nBYTES\n": its kind must be `kind`; returns
 * the payload (heap, NUL-terminated) and its length. Exits on a
 * malformed fixture. */
static char *next_record(reader *r, const char *kind, size_t *len) {
    char want[32];
    snprintf(want, sizeof want, "%s ", kind);
    const size_t wl = strlen(want);
    if ((size_t)(r->end - r->p) < wl || memcmp(r->p, want, wl) != 0) {
        fprintf(stderr, "gemma3.llamacpp: expected a '%s' record\n", kind);
        exit(1);
    }
    char *nl = memchr(r->p, '\n', (size_t)(r->end - r->p));
    if (!nl) exit(1);
    const size_t n = (size_t)strtoull(r->p + wl, NULL, 10);
    const char *data = nl + 1;
    if ((size_t)(r->end - data) < n + 1 || data[n] != '\n') {
        fprintf(stderr, "gemma3.llamacpp: truncated '%s' record\n", kind);
        exit(1);
    }
    char *out = malloc(n + 1);
    memcpy(out, data, n);
    out[n] = 0;
    r->p = data + n + 1;
    *len = n;
    return out;
}

static bool at(const reader *r, const char *kind) {
    const size_t n = strlen(kind);
    return (size_t)(r->end - r->p) > n && memcmp(r->p, kind, n) == 0 && r->p[n] == ' ';
}

static int argmax(const float *x, int n) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

static void check_hparams(const pt_llm *m) {
    const pt_llm_hparams *hp = pt_llm_get_hparams(m);
    CHECK(hp->arch == PT_ARCH_GEMMA3 && strcmp(hp->arch_name, "gemma3") == 0, "arch %s", hp->arch_name);
    CHECK(hp->n_layer == 18 && hp->n_embd == 640 && hp->n_head == 4 && hp->n_head_kv == 1 &&
              hp->head_dim == 256 && hp->n_ff == 2048 && hp->n_vocab == 262144,
          "shape L %d E %d H %d Hkv %d D %d F %d V %d", hp->n_layer, hp->n_embd, hp->n_head,
          hp->n_head_kv, hp->head_dim, hp->n_ff, hp->n_vocab);
    CHECK(hp->n_swa == 512 && hp->rope_base_swa == 10000.0f && hp->rope_base == 1e6f &&
              hp->rope_freq_scale == 1.0f && hp->rope_neox,
          "swa %d rope %g / %g scale %g", hp->n_swa, hp->rope_base_swa, hp->rope_base, hp->rope_freq_scale);
    CHECK(hp->embd_scale == sqrtf(640.0f) && hp->attn_scale == 0.0625f && hp->logit_softcap == 0.0f &&
              hp->ffn_act == PT_FFN_GELU_TANH && hp->post_norms && hp->tied_output,
          "embd scale %g attn scale %g softcap %g", hp->embd_scale, hp->attn_scale, hp->logit_softcap);
}

/* Greedy generation as llama-simple does it: the tokens (the final
 * end-of-generation one included) into ids[0..*n_ids), and the text of
 * the others (special tokens rendered) as the result (heap); off[i] is
 * where token i's piece starts in it. */
static char *greedy(const pt_llm *m, const pt_tokenizer *tok, const pt_token *prompt, int n_prompt,
                    pt_token ids[N_PREDICT], size_t off[N_PREDICT + 1], int *n_ids) {
    const int V = pt_llm_get_hparams(m)->n_vocab;
    pt_llm_state *s = NULL;
    pt_error err = {0};
    pt_status st = pt_llm_state_new(m, n_prompt + N_PREDICT, n_prompt, 2, NULL, &s, &err);
    CHECK(st == PT_OK, "state: %s", err.msg);
    if (st) return strdup("");
    float *logits = malloc((size_t)V * sizeof(float));
    size_t cap = 4096, len = 0;
    char *text = calloc(cap, 1);
    st = pt_llm_forward(m, s, prompt, n_prompt, logits, NULL, &err);
    *n_ids = 0;
    off[0] = 0;
    for (int i = 0; st == PT_OK && i < N_PREDICT; i++) {
        const pt_token t = argmax(logits, V);
        ids[(*n_ids)++] = t;
        off[i + 1] = len;
        if (pt_tokenizer_is_eog(tok, t)) break;
        char piece[256];
        size_t n = pt_tokenizer_decode(tok, t, true, piece, sizeof piece);
        if (n > sizeof piece) n = sizeof piece;
        if (len + n + 1 > cap) text = realloc(text, cap = 2 * (len + n + 1));
        memcpy(text + len, piece, n);
        text[len += n] = 0;
        off[i + 1] = len;
        if (i + 1 < N_PREDICT) st = pt_llm_forward(m, s, &t, 1, logits, NULL, &err);
    }
    CHECK(st == PT_OK, "forward: %s", err.msg);
    free(logits);
    pt_llm_state_free(s);
    return text;
}

/* The long prompt in one batch and in pieces of 100: bitwise the same
 * last logits. */
static void check_pieces(const pt_llm *m, const pt_token *prompt, int n) {
    const int V = pt_llm_get_hparams(m)->n_vocab;
    float *a = malloc((size_t)V * sizeof(float)), *b = malloc((size_t)V * sizeof(float));
    pt_llm_state *s1 = NULL, *s2 = NULL;
    pt_error err = {0};
    bool ok = pt_llm_state_new(m, n, n, 2, NULL, &s1, &err) == PT_OK &&
              pt_llm_state_new(m, n, 100, 2, NULL, &s2, &err) == PT_OK &&
              pt_llm_forward(m, s1, prompt, n, a, NULL, &err) == PT_OK;
    for (int i = 0; ok && i < n; i += 100)
        ok = pt_llm_forward(m, s2, prompt + i, n - i < 100 ? n - i : 100, b, NULL, &err) == PT_OK;
    CHECK(ok, "long prompt: %s", err.msg);
    if (ok) CHECK(memcmp(a, b, (size_t)V * sizeof(float)) == 0, "long prompt: pieces of 100 differ from one batch");
    pt_llm_state_free(s1);
    pt_llm_state_free(s2);
    free(a), free(b);
}

int main(void) {
    size_t flen = 0;
    char *fixture = test_read_file(test_data("gemma3.llamacpp"), &flen);
    reader r = {fixture, fixture + flen};

    pt_gguf *g = NULL;
    pt_llm *m = NULL;
    pt_tokenizer *tok = NULL;
    pt_error err = {0};
    pt_cpu ref;
    pt_status st = pt_llm_cpu_from_name("ref", &ref, &err);
    if (st == PT_OK) st = pt_gguf_open(test_gemma3_path(), &g, &err);
    if (st == PT_OK) st = pt_llm_load_cpu(g, &ref, &m, &err);
    if (st == PT_OK) st = pt_tokenizer_load(g, &tok, &err);
    CHECK(st == PT_OK, "load: %s", err.msg);
    if (st) return check_done("gemma3");
    check_hparams(m);

    /* tokenizer */
    int n_tok_cases = 0;
    while (at(&r, "tokenize")) {
        size_t tl, il;
        char *text = next_record(&r, "tokenize", &tl);
        char *ids = next_record(&r, "ids", &il);
        pt_token want[4096];
        int nw = 0;
        for (char *p = ids, *e; nw < 4096 && (want[nw] = (pt_token)strtol(p, &e, 10), e != p); p = e) nw++;
        pt_token got[4096];
        const int ng = pt_tokenizer_encode(tok, text, tl, true, true, got, 4096);
        bool same = ng == nw && memcmp(got, want, (size_t)nw * sizeof *got) == 0;
        CHECK(same, "tokenize %.60s: %d ids, llama.cpp %d", text, ng, nw);
        if (!same)
            for (int i = 0; i < (ng > nw ? ng : nw); i++)
                fprintf(stderr, "  %d: petrel %d llama.cpp %d\n", i, i < ng ? got[i] : -1, i < nw ? want[i] : -1);
        free(text), free(ids);
        n_tok_cases++;
    }
    CHECK(n_tok_cases >= 8, "only %d tokenizer cases", n_tok_cases);

    /* greedy: transformers' tokens exactly, llama.cpp's text up to a near-tie */
    const char *san = getenv("PETREL_SANITIZED");
    const int max_greedy = san && *san && strcmp(san, "0") != 0 ? 1 : 1 << 30;
    if (max_greedy < 1 << 30) printf("sanitized build: the first %d greedy prompts only\n", max_greedy);
    int n_greedy = 0, longest = 0, n_exact = 0;
    bool long_exact = false;
    while (at(&r, "greedy") && n_greedy < max_greedy) {
        size_t pl, nl, tl;
        char *prompt = next_record(&r, "greedy", &pl);
        char *n_prompt = next_record(&r, "n_prompt", &nl);
        char *want = next_record(&r, "text", &tl);
        size_t hl, gl;
        char *hf_ids = next_record(&r, "hf_ids", &hl);
        char *hf_gaps = next_record(&r, "hf_gaps", &gl);
        pt_token ref[N_PREDICT];
        double gap[N_PREDICT];
        int n_ref = 0, n_gap = 0;
        for (char *p = hf_ids, *e; n_ref < N_PREDICT && (ref[n_ref] = (pt_token)strtol(p, &e, 10), e != p); p = e)
            n_ref++;
        for (char *p = hf_gaps, *e; n_gap < N_PREDICT && (gap[n_gap] = strtod(p, &e), e != p); p = e) n_gap++;
        CHECK(n_ref > 0 && n_gap == n_ref, "fixture: %d reference tokens, %d gaps", n_ref, n_gap);
        pt_token *ids = malloc(8192 * sizeof *ids);
        const int n = pt_tokenizer_encode(tok, prompt, pl, true, true, ids, 8192);
        CHECK(n == atoi(n_prompt), "%.40s: %d prompt tokens, llama.cpp %s", prompt, n, n_prompt);
        if (n > 0 && n_ref == n_gap) {
            pt_token gen[N_PREDICT];
            size_t off[N_PREDICT + 1];
            int n_gen = 0;
            char *got = greedy(m, tok, ids, n, gen, off, &n_gen);
            /* the float reference, token for token */
            int first_diff = -1;
            double min_gap = 1e30;
            for (int i = 0; i < n_ref; i++) min_gap = gap[i] < min_gap ? gap[i] : min_gap;
            for (int i = 0; i < (n_gen > n_ref ? n_gen : n_ref) && first_diff < 0; i++)
                if (i >= n_gen || i >= n_ref || gen[i] != ref[i]) first_diff = i;
            CHECK(first_diff < 0, "%.40s: token %d is %d, transformers' %d (gap %.4f)", prompt, first_diff,
                  first_diff < n_gen ? gen[first_diff] : -1, first_diff < n_ref ? ref[first_diff] : -1,
                  first_diff >= 0 && first_diff < n_gap ? gap[first_diff] : 0.0);
            /* llama.cpp's text: equal, or equal up to a near-tie step */
            const bool same = strcmp(got, want) == 0;
            int flip = -1;
            if (!same)
                for (int i = 0; i < n_gen && flip < 0; i++)
                    if (off[i + 1] > tl || memcmp(got, want, off[i + 1]) != 0) flip = i;
            if (same) {
                n_exact++;
                if (n > pt_llm_get_hparams(m)->n_swa) long_exact = true;
            } else {
                CHECK(flip >= 0 && flip < n_gap && gap[flip] < TIE_GAP,
                      "%.40s: petrel's text leaves llama.cpp's at token %d, where the float reference "
                      "has no near-tie (gap %.4f)\n  petrel:    %s\n  llama.cpp: %s", prompt, flip,
                      flip >= 0 && flip < n_gap ? gap[flip] : 0.0, got, want);
            }
            printf("[%d tokens, smallest reference gap %.4f] %s\n", n, min_gap, got);
            if (!same && flip >= 0 && flip < n_gap)
                printf("  llama.cpp takes the other branch at token %d (reference gap %.4f): %s\n", flip, gap[flip],
                       want);
            if (n > longest) longest = n;
            if (n > pt_llm_get_hparams(m)->n_swa) check_pieces(m, ids, n);
            free(got);
        }
        free(ids), free(prompt), free(n_prompt), free(want), free(hf_ids), free(hf_gaps);
        n_greedy++;
    }
    printf("%d of %d greedy texts equal llama.cpp's exactly\n", n_exact, n_greedy);
    if (max_greedy >= 1 << 30) {
        CHECK(n_greedy >= 8, "only %d greedy cases", n_greedy);
        CHECK(n_exact >= MIN_EXACT && long_exact, "%d texts equal llama.cpp's (want %d, the long one among them: %s)",
              n_exact, MIN_EXACT, long_exact ? "yes" : "no");
        CHECK(longest > pt_llm_get_hparams(m)->n_swa, "no prompt longer than the sliding window (%d tokens)",
              longest);
        CHECK(r.p == r.end, "trailing bytes in the fixture");
    }

    pt_tokenizer_free(tok);
    pt_llm_free(m);
    pt_gguf_close(g);
    free(fixture);
    return check_done("gemma3");
}
