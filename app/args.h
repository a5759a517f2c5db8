/*
 * args.h — small helpers for the subcommands' argument parsing: strict
 * number parsing and the one-line error convention ("petrel: ...").
 */
#ifndef PETREL_ARGS_H
#define PETREL_ARGS_H

#include <stdbool.h>
#include <stdint.h>

#include "petrel.h"

/* Whole-string conversions; false on junk, overflow or out of [lo, hi]. */
bool arg_int(const char *s, long lo, long hi, int *out);
bool arg_u64(const char *s, uint64_t *out);
bool arg_float(const char *s, double lo, double hi, float *out);

/* Text from a file (or any string that may hold control bytes) made safe
 * for the terminal with pt_escape_text into buf; returns buf. */
const char *app_escaped(const char *s, char *buf, size_t cap);

/* Print "petrel: <msg>" on stderr (one line). */
void app_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print err's message the same way and return 1. */
int app_fail(const pt_error *err);

/* Fetch the value of option argv[*i] (advancing *i); prints a usage error
 * and returns NULL when it is missing. */
const char *arg_value(int argc, char **argv, int *i);

/* Model load parameters as every subcommand wants them: the CPU kernel
 * variant from the PETREL_CPU environment variable (the engine never reads
 * the environment) and the process's thread pool (NULL: a private one). */
pt_model_params app_model_params(pt_threadpool *pool);

/* Model path from -m (a path, a catalog ID or a pulled file's name), else
 * the default model; NULL (error printed) if none. app_resolve_model
 * (catalog.h) for an LLM. */
const char *app_model_path(const char *given, char *buf, size_t cap);

#endif
