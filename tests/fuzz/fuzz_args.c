/*
 * fuzz_args.c — the command-line option parsers. The input is split at NUL
 * bytes into argv. When the first field names a subcommand (run, chat,
 * tokenize, info, bench, imagine) that command runs as main() would call it, with
 * its own option loop; whatever it parses, loading a model fails at once,
 * because HOME and XDG_DATA_HOME point at a directory that does not exist
 * and stdin is /dev/null (and OpenCL finds no platform). Otherwise the fields go through the shared
 * run/chat option parser (app/run_options.c) and the strict number
 * parsers (app/args.c). Every command must end with status 0, 1 or 2.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "commands.h"
#include "run_options.h"

enum { MAX_ARGS = 32 };

/* No model can be found, nothing is read from a terminal (once per process). */
static void isolate(void) {
    static int done;
    if (done) return;
    done = 1;
    setenv("HOME", "/nonexistent/petrel-fuzz-home", 1);
    setenv("XDG_DATA_HOME", "/nonexistent/petrel-fuzz-data", 1);
    /* no OpenCL platform: `info --devices` or `--device opencl` must not
     * load a real driver here (PoCL keeps memory to the end, which the
     * fuzzer's leak check would report; the opencl tests cover that path) */
    setenv("OCL_ICD_VENDORS", "/nonexistent/petrel-fuzz-icd", 1);
    unsetenv("OCL_ICD_FILENAMES");
    unsetenv("PETREL_CPU");
    int fd = open("/dev/null", O_RDONLY);
    if (fd < 0 || dup2(fd, STDIN_FILENO) < 0) abort();
    close(fd);
}

static void shared_options(int argc, char **argv) {
    run_options o;
    run_options_init(&o);
    for (int i = 1; i < argc; i++) {
        int r = run_options_parse(&o, argc, argv, &i);
        if (r > 0) continue;
        int iv;
        uint64_t u;
        float f;
        if (arg_int(argv[i], -1000, 1000, &iv) && (iv < -1000 || iv > 1000)) abort();
        arg_u64(argv[i], &u);
        if (arg_float(argv[i], -1, 1, &f) && !(f >= -1 && f <= 1)) abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    isolate();
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
    static const struct { const char *name; int (*run)(int, char **); } cmds[] = {
        {"run", cmd_run}, {"chat", cmd_chat}, {"tokenize", cmd_tokenize}, {"info", cmd_info}, {"bench", cmd_bench},
        {"imagine", cmd_imagine},
    };
    int which = -1;
    for (int c = 0; argc > 1 && c < (int)(sizeof cmds / sizeof cmds[0]); c++)
        if (strcmp(argv[1], cmds[c].name) == 0) which = c;
    if (which >= 0) {
        /* as main() calls it: argv[0] is the subcommand */
        int rc = cmds[which].run(argc - 1, argv + 1);
        if (rc < 0 || rc > 2) abort();
    } else {
        shared_options(argc, argv);
    }
    free(buf);
    return 0;
}
