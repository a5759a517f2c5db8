/*
 * fuzz_models_names.c — the Models screen's readers of outside text
 * (ui/models_rows.c): /proc/meminfo's MemAvailable, the quantize form's
 * default output name from a file name found in the models folder, and
 * the check of a name the user typed. The input is the meminfo text, and
 * its first line (up to 300 bytes) a file name. Output names stay within
 * their buffer, NUL-terminated; a name that passes the check has no '/',
 * no control character and ends in ".gguf".
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "models_rows.h"

static void must(int cond) {
    if (!cond) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    (void)pt_meminfo_available((const char *)data, size);
    char name[301];
    size_t n = 0;
    while (n < size && n < 300 && data[n] != '\n' && data[n] != 0) n++;
    memcpy(name, data, n);
    name[n] = 0;
    for (int t = 0; t < pt_n_quant_types; t++) {
        char out[64];
        memset(out, 'x', sizeof out);
        pt_quant_out_name(name, pt_quant_types[t], out, sizeof out);
        must(memchr(out, 0, sizeof out) != NULL);
        char big[512];
        pt_quant_out_name(name, pt_quant_types[t], big, sizeof big);
        must(strlen(big) < sizeof big);
    }
    const char *why = pt_out_name_problem(name);
    if (!why) {
        size_t k = strlen(name);
        must(k >= 6 && !strcmp(name + k - 5, ".gguf") && !strchr(name, '/') && name[0] != '.');
        for (size_t i = 0; i < k; i++) must((unsigned char)name[i] >= 0x20 && name[i] != 0x7f);
    } else {
        must(strchr(why, '\n') == NULL);
    }
    return 0;
}
