/*
 * fuzz_args.c — the command-line option parser: the shared run/chat
 * options (app/run_options.c) and the strict number parsers (app/args.c).
 * The input is split at NUL bytes into argv; run_options_parse consumes
 * what it knows, the rest goes to arg_int/arg_u64/arg_float.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "run_options.h"

enum { MAX_ARGS = 32 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *buf = malloc(size + 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    char *argv[MAX_ARGS + 1];
    int argc = 0;
    argv[argc++] = "petrel";
    for (size_t i = 0; i <= size && argc < MAX_ARGS; i += strlen(buf + i) + 1)
        argv[argc++] = buf + i;
    argv[argc] = NULL;
    run_options o;
    run_options_init(&o);
    for (int i = 1; i < argc; i++) {
        int r = run_options_parse(&o, argc, argv, &i);
        if (r > 0) continue;
        int iv;
        uint64_t u;
        float f;
        arg_int(argv[i], -1000, 1000, &iv);
        arg_u64(argv[i], &u);
        arg_float(argv[i], -1, 1, &f);
    }
    free(buf);
    return 0;
}
