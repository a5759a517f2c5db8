/*
 * sd_nn_impl.h — helpers shared by the sd_nn*.c files (the runtime's
 * shared buffers, tensor look-ups, splitting work). Internal to them.
 */
#ifndef PETREL_SD_NN_IMPL_H
#define PETREL_SD_NN_IMPL_H

#include "sd_nn.h"

#include <stdint.h>

/* Grow a shared buffer of the runtime (*buf, *have_elems elements of elem
 * bytes) to want_elems elements, counted as activations; its contents
 * are not kept. */
pt_status sd_rt_reserve_shared(sd_runtime *rt, void **buf, size_t *have_elems, size_t elem,
                               size_t want_elems, const char *what, pt_error *err);

/* Values [*i0, *i1) of task `task` of n_tasks over n. */
static inline void sd_split(int64_t n, int task, int n_tasks, int64_t *i0, int64_t *i1) {
    *i0 = n * task / n_tasks;
    *i1 = n * (task + 1) / n_tasks;
}

/* Tasks for n elements of element-wise work: about one per 16 Ki
 * values, at most 4 per thread (results never depend on the split). */
static inline int sd_tasks_for(const sd_runtime *rt, int64_t n) {
    int64_t t = n / 16384 + 1;
    if (t > 4 * (int64_t)rt->n_threads) t = 4 * (int64_t)rt->n_threads;
    return (int)t;
}

/* A vector tensor prefix + suffix of c values (F32, F16 or BF16) copied
 * into an owned float array counted as weights. */
pt_status sd_load_vector(sd_runtime *rt, const sd_weights *w, const char *prefix,
                         const char *suffix, int c, bool required, float **out, pt_error *err);
/* The same from a tensor in hand, named `name` in messages. */
pt_status sd_vector_from_tensor(sd_runtime *rt, const sd_tensor *t, const char *name, int c,
                                float **out, pt_error *err);
void sd_free_vector(sd_runtime *rt, float *v, int c);

/* Prepare l->w (and l->k_pad, l->own) from tensor t, named `name`, of
 * logical torch shape [c_out][c_in][k][k] (sd_weight_prep.c); l->in and
 * l->out are the caller's. sd_release_matrix undoes it. */
pt_status sd_prepare_matrix(sd_runtime *rt, const sd_tensor *t, const char *name, int c_out,
                            int c_in, int k, sd_linear *l, pt_error *err);
void sd_release_matrix(sd_runtime *rt, sd_linear *l);

/* buf = prefix followed by the printf-style rest (tensor names; a name too
 * long for SD_NAME_MAX bytes is cut, and then found in no file). */
#define SD_NAME_MAX 256
const char *sd_name(char buf[SD_NAME_MAX], const char *prefix, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Whether products with w read the int8 quantization of their input: a
 * packed matrix, or an int8 type the CPU variant does not pack (cpu
 * "ref"), which matmul.c then multiplies with pt_qmatmul_ref so that every
 * variant gives bitwise the same result (qmatmul.h). */
static inline bool sd_int8_input(const pt_weight *w) {
    return w->packed != NULL || pt_qmatmul_ref_type(w->type, w->cols);
}

#endif
