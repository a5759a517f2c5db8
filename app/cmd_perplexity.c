/*
 * cmd_perplexity.c — `petrel perplexity`: llama-perplexity's measurement
 * of a model on a text, with its method and its output.
 *
 * The whole text is tokenized once (BOS/EOS as the model asks, special
 * tokens as plain text; one trailing newline of the file dropped, as
 * llama.cpp's -f does) and cut into n_chunk = min(--chunks, tokens / n_ctx)
 * chunks of n_ctx tokens. Each chunk is evaluated alone from an empty
 * cache with its first token replaced by BOS (ppl_eval.h), and only its
 * second half is scored: the logits at positions n_ctx/2 .. n_ctx-2
 * against the tokens after them. stdout gets the running perplexity
 * "[1]x,[2]y,..." and "Final estimate: PPL = P +/- U" (U the standard error
 * of the mean negative log-likelihood times P); stderr the progress.
 *
 * --kl-divergence-base FILE saves the reference model's log-probabilities
 * of every scored position in llama.cpp's format (kld_file.h) while
 * measuring; --kl-divergence (with --kl-divergence-base FILE) reads such a
 * file instead of a text and compares the model against it (ppl_kld.h).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "args.h"
#include "kv_args.h"
#include "commands.h"
#include "kld_file.h"
#include "ppl_eval.h"
#include "ppl_kld.h"
#include "ppl_math.h"
#include "sigbus.h"

/* The text file's size limit: far beyond any evaluation text, small enough
 * to tokenize in memory. */
#define PPL_MAX_TEXT (1u << 30)

static void usage(FILE *f) {
    fputs("usage: petrel perplexity -m MODEL -f TEXT [options]\n"
          "       petrel perplexity -m MODEL --kl-divergence-base FILE --kl-divergence [options]\n"
          "llama-perplexity's method: the text is cut into chunks of N_CTX tokens, each evaluated\n"
          "from an empty context with BOS first, and the second half of each is scored.\n"
          "  -m, --model PATH|NAME       the model (default: the SmolLM2 model)\n"
          "  -f, --file TEXT             the text to measure on\n"
          "  -c, --ctx-size N            tokens per chunk (default 512)\n"
          "  -b, --batch-size N          tokens per forward pass (default 2048, at most N_CTX)\n"
          "      --chunks N              at most N chunks (default: all)\n"
          "  -t, --threads N             threads (default: all cores)\n"
          "      --kl-divergence-base F  save the model's log-probabilities to F (llama.cpp's format)\n"
          "      --kl-divergence         compare the model with the base file F instead (no -f needed;\n"
          "                              N_CTX and the tokens come from F)\n", f);
    kv_args_usage(f);
}

typedef struct ppl_opts {
    const char *model, *text_file, *base_file;
    bool kld;
    int n_ctx, n_batch, n_chunks, n_threads;
    pt_context_params kvp;  /* its KV fields only: --kv-type, --kv-ram, --kv-spill-dir */
    kv_args kv;
} ppl_opts;

static int parse(ppl_opts *o, int argc, char **argv) {
    *o = (ppl_opts){.n_ctx = 512, .n_batch = 2048, .n_chunks = -1};
    o->kvp = pt_context_default_params();
    kv_args_init(&o->kv);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        int *num = NULL;
        long lo = 1;
        const int kr = kv_args_parse(&o->kv, &o->kvp, argc, argv, &i, false);
        if (kr < 0) return 2;
        if (kr > 0) continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return -1;
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            if (!(o->model = arg_value(argc, argv, &i))) return 2;
        } else if (!strcmp(a, "-f") || !strcmp(a, "--file")) {
            if (!(o->text_file = arg_value(argc, argv, &i))) return 2;
        } else if (!strcmp(a, "--kl-divergence-base")) {
            if (!(o->base_file = arg_value(argc, argv, &i))) return 2;
        } else if (!strcmp(a, "--kl-divergence")) {
            o->kld = true;
        } else if (!strcmp(a, "-c") || !strcmp(a, "--ctx-size")) {
            num = &o->n_ctx;
            lo = 4;
        } else if (!strcmp(a, "-b") || !strcmp(a, "--batch-size")) {
            num = &o->n_batch;
        } else if (!strcmp(a, "--chunks")) {
            num = &o->n_chunks;
        } else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
            num = &o->n_threads;
        } else {
            app_error("perplexity: unknown option '%s' (see petrel perplexity --help)", a);
            return 2;
        }
        if (num) {
            const long hi = num == &o->n_ctx ? KLD_MAX_CTX : num == &o->n_threads ? 1024 : 1 << 30;
            if (!(v = arg_value(argc, argv, &i))) return 2;
            if (!arg_int(v, lo, hi, num)) {
                app_error("perplexity: %s wants a whole number in [%ld, %ld], not '%s'", a, lo, hi, v);
                return 2;
            }
        }
    }
    if (o->kld && !o->base_file) {
        app_error("perplexity: --kl-divergence needs --kl-divergence-base FILE (the reference's log-probabilities)");
        return 2;
    }
    if (!o->kld && !o->text_file) {
        app_error("perplexity: no text: give one with -f FILE");
        return 2;
    }
    return 0;
}

/* The whole file, one trailing newline dropped (llama.cpp's -f). */
static char *read_text(const char *path, size_t *len) {
    char safe[1024];
    app_escaped(path, safe, sizeof safe);
    FILE *f = fopen(path, "rb");
    if (!f) {
        app_error("perplexity: cannot read %s: %s", safe, strerror(errno));
        return NULL;
    }
    struct stat st;
    const char *bad = NULL;
    if (fstat(fileno(f), &st) != 0) bad = strerror(errno);
    else if (!S_ISREG(st.st_mode)) bad = "not a regular file";
    else if ((uint64_t)st.st_size > PPL_MAX_TEXT) bad = "larger than 1 GiB";
    const size_t n = bad ? 0 : (size_t)st.st_size;
    char *text = bad ? NULL : malloc(n + 1);
    if (!bad && !text) bad = "out of memory";
    if (!bad && fread(text, 1, n, f) != n) bad = ferror(f) ? strerror(errno) : "it shrank while being read";
    fclose(f);
    if (bad) {
        app_error("perplexity: cannot read %s: %s", safe, bad);
        free(text);
        return NULL;
    }
    text[n] = 0;
    *len = n > 0 && text[n - 1] == '\n' ? n - 1 : n;
    return text;
}

/* The text's tokens as llama-perplexity makes them: add_special (BOS as
 * the model asks), special-token text left as text. */
static pt_token *tokenize(const pt_model *model, const char *text, size_t len, int *n_out) {
    int cap = (int)(len < (size_t)1 << 28 ? len : (size_t)1 << 28) + 8;
    for (;;) {
        pt_token *buf = malloc((size_t)cap * sizeof *buf);
        if (!buf) {
            app_error("perplexity: out of memory tokenizing the text");
            return NULL;
        }
        const int n = pt_tokenize(model, text, len, true, false, buf, cap);
        if (n < 0) {
            free(buf);
            app_error("perplexity: the text could not be tokenized");
            return NULL;
        }
        if (n <= cap) {
            *n_out = n;
            return buf;
        }
        free(buf);
        cap = n;
    }
}

/* ---- perplexity of a text (and the base file written alongside) ---------- */

typedef struct text_state {
    const pt_token *tokens;  /* the current chunk, as tokenized */
    int n_vocab;
    double nll, nll2;        /* sums of -log p and its square */
    int count;
    FILE *out;               /* the base file being written, or NULL */
    uint16_t *row;           /* [KLD_ROW_U16(n_vocab)] when out */
    size_t row_u16;
} text_state;

static bool on_text_row(void *user, int pos, const float *logits) {
    text_state *s = user;
    const int tok = s->tokens[pos + 1];
    double v;
    if (s->out) {
        v = ppl_nll_encode(logits, s->n_vocab, tok, s->row);
        if (!kld_write_row(s->out, s->row, s->row_u16)) {
            app_error("perplexity: writing the base file failed: %s", strerror(errno));
            return false;
        }
    } else {
        v = ppl_nll(logits, s->n_vocab, tok);
    }
    s->nll += v;
    s->nll2 += v * v;
    s->count++;
    return true;
}

static int measure_text(ppl_eval *e, const pt_token *tokens, int n_chunk, FILE *out) {
    text_state s = {.n_vocab = e->n_vocab, .out = out, .row_u16 = KLD_ROW_U16(e->n_vocab)};
    if (out && !(s.row = malloc(s.row_u16 * sizeof *s.row))) {
        app_error("perplexity: out of memory");
        return 1;
    }
    int rc = 0;
    fprintf(stderr, "perplexity: calculating perplexity over %d chunks, n_ctx=%d, batch_size=%d\n", n_chunk,
            e->n_ctx, e->n_batch);
    if (out && !kld_write_header(out, e->n_ctx, e->n_vocab, n_chunk, tokens)) {
        app_error("perplexity: writing the base file failed: %s", strerror(errno));
        rc = 1;
    }
    for (int i = 0; i < n_chunk && rc == 0; i++) {
        const double t0 = ppl_now();
        s.tokens = tokens + (size_t)i * (size_t)e->n_ctx;
        if (!ppl_eval_chunk(e, s.tokens, on_text_row, &s)) {
            rc = 1;
            break;
        }
        if (i == 0) ppl_print_eta(ppl_now() - t0, n_chunk);
        printf("[%d]%.4lf,", i + 1, exp(s.nll / s.count));
        fflush(stdout);
    }
    free(s.row);
    if (rc) return rc;
    printf("\n");
    double nll = s.nll / s.count, nll2 = s.nll2 / s.count;
    const double ppl = exp(nll);
    nll2 -= nll * nll;
    if (nll2 > 0) {
        nll2 = sqrt(nll2 / (s.count - 1));
        printf("Final estimate: PPL = %.4lf +/- %.5lf\n", ppl, nll2 * ppl);
    } else {
        app_error("perplexity: unexpected negative standard deviation of log(prob)");
        return 1;
    }
    return 0;
}

/* ---- the command ------------------------------------------------------------ */

typedef struct ppl_session {
    pt_threadpool *pool;
    pt_model *model;
    pt_context *ctx;
    ppl_eval eval;
    char *text;
    pt_token *tokens;
    FILE *base_in, *base_out;
    kld_reader base;
    char out_tmp[4200];     /* the base file is written here, renamed when complete */
    char model_path[4096];
} ppl_session;

static void session_close(ppl_session *s) {
    ppl_eval_free(&s->eval);
    pt_context_free(s->ctx);
    pt_model_free(s->model);
    pt_threadpool_free(s->pool);
    kld_reader_free(&s->base);
    if (s->base_in) fclose(s->base_in);
    if (s->base_out) {
        fclose(s->base_out);
        remove(s->out_tmp);
    }
    free(s->text);
    free(s->tokens);
}

static int open_base(ppl_session *s, const char *path) {
    char safe[1024], why[320];
    app_escaped(path, safe, sizeof safe);
    struct stat st;
    if (!(s->base_in = fopen(path, "rb")) || fstat(fileno(s->base_in), &st) != 0) {
        app_error("perplexity: cannot read %s: %s", safe, strerror(errno));
        return 1;
    }
    if (!S_ISREG(st.st_mode)) {
        app_error("perplexity: cannot read %s: not a regular file", safe);
        return 1;
    }
    if (!kld_reader_open(&s->base, s->base_in, (uint64_t)st.st_size, why, sizeof why)) {
        app_error("perplexity: %s: %s", safe, why);
        return 1;
    }
    return 0;
}

static int open_model(ppl_session *s, const ppl_opts *o, int n_ctx) {
    const char *path = app_model_path(o->model, s->model_path, sizeof s->model_path);
    if (!path) return 1;
    if (path != s->model_path) snprintf(s->model_path, sizeof s->model_path, "%s", path);
    pt_error err = {0};
    app_catch_sigbus(s->model_path);
    if (pt_threadpool_new(o->n_threads, &s->pool, &err) != PT_OK) return app_fail(&err);
    const pt_model_params mp = app_model_params(s->pool);
    if (pt_model_load(s->model_path, &mp, &s->model, &err) != PT_OK) return app_fail(&err);
    pt_context_params cp = pt_context_default_params();
    cp.n_ctx = n_ctx;
    cp.n_batch = o->n_batch < n_ctx ? o->n_batch : n_ctx;
    cp.threadpool = s->pool;
    cp.kv_type = o->kvp.kv_type;
    cp.kv_ram_mb = o->kvp.kv_ram_mb;
    cp.kv_qk = o->kvp.kv_qk;
    cp.kv_spill_dir = o->kvp.kv_spill_dir;
    if (pt_context_new(s->model, &cp, &s->ctx, &err) != PT_OK) return app_fail(&err);
    return ppl_eval_init(&s->eval, s->model, s->ctx, n_ctx, cp.n_batch);
}

static int run_kld(ppl_session *s, const ppl_opts *o) {
    const kld_reader *b = &s->base;
    if (b->n_vocab != s->eval.n_vocab) {
        app_error("perplexity: the base file is for a vocabulary of %d tokens, the model has %d", b->n_vocab,
                  s->eval.n_vocab);
        return 1;
    }
    const int n_chunk = o->n_chunks > 0 && o->n_chunks < b->n_chunk ? o->n_chunks : b->n_chunk;
    return ppl_kld_run(&s->eval, &s->base, n_chunk);
}

static int run_text(ppl_session *s, const ppl_opts *o, size_t text_len) {
    int n_tokens = 0;
    if (!(s->tokens = tokenize(s->model, s->text, text_len, &n_tokens))) return 1;
    const int n_ctx = o->n_ctx;
    if (n_tokens < 2 * n_ctx) {
        app_error("perplexity: the text has %d tokens; a context of %d needs at least %d (use a longer text "
                  "or a smaller -c)", n_tokens, n_ctx, 2 * n_ctx);
        return 1;
    }
    const int n_max = n_tokens / n_ctx;
    const int n_chunk = o->n_chunks > 0 && o->n_chunks < n_max ? o->n_chunks : n_max;
    if (o->base_file) {
        char safe[1024];
        snprintf(s->out_tmp, sizeof s->out_tmp, "%s.tmp", o->base_file);
        if (!(s->base_out = fopen(s->out_tmp, "wb"))) {
            app_error("perplexity: cannot write %s: %s", app_escaped(s->out_tmp, safe, sizeof safe),
                      strerror(errno));
            return 1;
        }
        fprintf(stderr, "perplexity: saving the log-probabilities to %s\n",
                app_escaped(o->base_file, safe, sizeof safe));
    }
    int rc = measure_text(&s->eval, s->tokens, n_chunk, s->base_out);
    if (rc == 0 && s->base_out) {
        FILE *f = s->base_out;
        s->base_out = NULL;
        char safe[1024];
        if (fclose(f) != 0 || rename(s->out_tmp, o->base_file) != 0) {
            app_error("perplexity: writing %s failed: %s", app_escaped(o->base_file, safe, sizeof safe),
                      strerror(errno));
            remove(s->out_tmp);
            rc = 1;
        }
    }
    return rc;
}

int cmd_perplexity(int argc, char **argv) {
    ppl_opts o;
    int rc = parse(&o, argc, argv);
    if (rc) return rc < 0 ? 0 : rc;
    ppl_session s;
    memset(&s, 0, sizeof s);
    size_t text_len = 0;
    /* Outside input first (a missing text, a bad base file): one line
     * before the model is loaded. */
    if (o.kld) rc = open_base(&s, o.base_file);
    else if (!(s.text = read_text(o.text_file, &text_len))) rc = 1;
    if (rc == 0) rc = open_model(&s, &o, o.kld ? s.base.n_ctx : o.n_ctx);
    if (rc == 0) rc = o.kld ? run_kld(&s, &o) : run_text(&s, &o, text_len);
    session_close(&s);
    return rc;
}
