/*
 * test_quantize_api.c — pt_quantize_file through petrel.h: what the CLI
 * test cannot reach.
 *
 * 1. Progress: reports for every tensor in order, done never decreasing,
 *    ending at done == total; the result's sizes and counts.
 * 2. Cancel: a flag set from the progress callback stops the run with
 *    PT_ERR_CANCELLED and leaves neither OUT nor OUT.tmp.
 * 3. A source tensor holding NaN is PT_ERR_FORMAT naming it, nothing left.
 * 4. Bad parameters: no type, an unknown type or override, a params
 *    struct from a newer caller: PT_ERR_ARG, nothing written.
 * 5. The policy's choices that the fixtures do not show: a shared thread
 *    pool gives the same bytes as a private one.
 */
#include "check.h"
#include "petrel.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static bool exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

static bool nothing_at(const char *p) {
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.tmp", p);
    return !exists(p) && !exists(tmp);
}

typedef struct seen {
    int calls, last_tensor, bad_order;
    uint64_t last_done, total;
    atomic_bool *cancel_at_3; /* set when tensor 3 is reported */
    atomic_bool cancel;
} seen;

static void on_progress(void *user, const pt_quantize_progress *p) {
    seen *s = user;
    if (p->tensor < s->last_tensor || p->done < s->last_done || p->done > p->total || !p->name[0]) s->bad_order++;
    s->calls++;
    s->last_tensor = p->tensor;
    s->last_done = p->done;
    s->total = p->total;
    if (s->cancel_at_3 && p->tensor == 3) atomic_store(s->cancel_at_3, true);
}

int main(void) {
    char dir[] = "/tmp/petrel-quantize-api.XXXXXX";
    if (!mkdtemp(dir)) return 1;
    char out[512], out2[512];
    snprintf(out, sizeof out, "%s/a.gguf", dir);
    snprintf(out2, sizeof out2, "%s/b.gguf", dir);
    const char *in = test_data("quantize_tiny.gguf");
    pt_error err = {0};

    /* 1. progress and result */
    seen s = {.last_tensor = -1};
    pt_quantize_params p = pt_quantize_default_params();
    p.type = "q4_0";
    p.n_threads = 2;
    p.progress = on_progress;
    p.progress_user = &s;
    pt_quantize_result r;
    CHECK(pt_quantize_file(in, out, &p, &r, &err) == PT_OK, "quantize: %s", err.msg);
    CHECK(s.calls >= 30 && s.bad_order == 0 && s.last_tensor == 29 && s.last_done == s.total && s.total > 0,
          "progress: %d calls, %d out of order, last %d, %llu of %llu", s.calls, s.bad_order, s.last_tensor,
          (unsigned long long)s.last_done, (unsigned long long)s.total);
    CHECK(r.n_tensors == 30 && r.n_converted == 23 && r.file_type == 2, "result: %d %d %u", r.n_tensors,
          r.n_converted, r.file_type);
    CHECK(r.in_weight_bytes == s.total && r.out_weight_bytes < r.in_weight_bytes / 3 && exists(out) &&
              r.out_file_bytes > r.out_weight_bytes,
          "sizes %llu -> %llu", (unsigned long long)r.in_weight_bytes, (unsigned long long)r.out_weight_bytes);

    /* 5. a shared pool: same bytes */
    pt_threadpool *pool = NULL;
    CHECK(pt_threadpool_new(3, &pool, &err) == PT_OK, "pool");
    pt_quantize_params p2 = pt_quantize_default_params();
    p2.type = "Q4_0";
    p2.threadpool = pool;
    CHECK(pt_quantize_file(in, out2, &p2, NULL, &err) == PT_OK, "shared pool: %s", err.msg);
    size_t na = 0, nb = 0;
    uint8_t *a = (uint8_t *)test_read_file(out, &na), *b = (uint8_t *)test_read_file(out2, &nb);
    CHECK(a && b && na == nb && !memcmp(a, b, na), "pool changes bytes");
    free(a);
    free(b);
    pt_threadpool_free(pool);
    unlink(out2);

    /* 2. cancel */
    seen c = {.last_tensor = -1};
    c.cancel_at_3 = &c.cancel;
    pt_quantize_params pc = pt_quantize_default_params();
    pc.type = "Q8_0";
    pc.progress = on_progress;
    pc.progress_user = &c;
    pc.cancel = &c.cancel;
    CHECK(pt_quantize_file(in, out2, &pc, NULL, &err) == PT_ERR_CANCELLED, "cancel: %s", err.msg);
    CHECK(nothing_at(out2) && c.last_tensor <= 4, "cancel left a file / ran on to tensor %d", c.last_tensor);

    /* 3. NaN in a source tensor: patch the F32 token_embd of a copy */
    size_t n = 0;
    uint8_t *blob = (uint8_t *)test_read_file(in, &n);
    snprintf(out2, sizeof out2, "%s/nan.gguf", dir);
    const float nan_f = NAN;
    {
        /* token_embd.weight (F32, 64 x 320) is the input's first tensor, so
         * its data starts where the data does: the file size less every
         * tensor's data padded to 32 (the last one too) */
        FILE *f = fopen(out2, "wb");
        uint64_t data_bytes = 0;
        pt_model *m = NULL;
        pt_model_params mp = pt_model_default_params();
        mp.metadata_only = true;
        CHECK(pt_model_load(in, &mp, &m, &err) == PT_OK, "load: %s", err.msg);
        pt_tensor_info ti;
        for (int i = 0; m && pt_model_tensor(m, i, &ti); i++) data_bytes += (ti.nbytes + 31) / 32 * 32;
        pt_model_free(m);
        const size_t start = n - (size_t)data_bytes; /* token_embd is first in the input */
        memcpy(blob + start + 100 * 4, &nan_f, 4);
        fwrite(blob, 1, n, f);
        fclose(f);
    }
    free(blob);
    pt_quantize_params pn = pt_quantize_default_params();
    pn.type = "Q4_0";
    snprintf(out, sizeof out, "%s/nan-out.gguf", dir);
    CHECK(pt_quantize_file(out2, out, &pn, NULL, &err) == PT_ERR_FORMAT && strstr(err.msg, "token_embd.weight") &&
              strstr(err.msg, "NaN"),
          "NaN: %s", err.msg);
    CHECK(nothing_at(out), "NaN left a file");
    unlink(out2);

    /* 4. bad parameters */
    pt_quantize_params pb = pt_quantize_default_params();
    CHECK(pt_quantize_file(in, out, &pb, NULL, &err) == PT_ERR_ARG, "no type");
    pb.type = "Q3_K";
    CHECK(pt_quantize_file(in, out, &pb, NULL, &err) == PT_ERR_ARG && strstr(err.msg, "Q3_K"), "unknown: %s",
          err.msg);
    pb.type = "Q4_0";
    pb.output_type = "Q9";
    CHECK(pt_quantize_file(in, out, &pb, NULL, &err) == PT_ERR_ARG && strstr(err.msg, "Q9"), "override: %s",
          err.msg);
    pb.output_type = NULL;
    pb.size = sizeof pb + 8;
    CHECK(pt_quantize_file(in, out, &pb, NULL, &err) == PT_ERR_ARG, "newer params");
    CHECK(nothing_at(out), "bad parameters left a file");

    snprintf(out, sizeof out, "%s/a.gguf", dir);
    unlink(out);
    rmdir(dir);
    return check_done("quantize_api");
}
