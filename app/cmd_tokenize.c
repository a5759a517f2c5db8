/*
 * cmd_tokenize.c — `petrel tokenize`: print the token ids of a text, as
 * llama.cpp's llama-tokenize does: one "id -> 'piece'" line per token, or
 * with --ids a single line "[id, id, ...]".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "paths.h"

static void usage(FILE *f) {
    fputs("usage: petrel tokenize [-m MODEL] [options] TEXT\n"
          "  -m, --model PATH       GGUF model (default: the SmolLM2 model)\n"
          "      --ids              print only the ids, as [1, 2, 3]\n"
          "      --no-bos           do not add BOS/EOS even if the model asks for them\n"
          "      --no-parse-special treat special-token text as plain text\n", f);
}

/* Print a piece (vocabulary text, from the file) with control characters
 * and quotes escaped; runs of non-ASCII bytes go through pt_escape_text, so
 * C1 controls and bytes that are not well-formed UTF-8 (a byte-level token
 * holds one byte of a character) show as escapes too. */
static void print_piece(const char *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c >= 0x80) {
            size_t end = i;
            while (end < n && (unsigned char)p[end] >= 0x80) end++;
            char safe[1024];
            for (size_t at = i; at < end;) { /* in chunks that fit safe[] whole */
                size_t take = end - at < 64 ? end - at : 64;
                /* never cut a character: end the chunk before a continuation byte */
                while (at + take < end && take > 1 && ((unsigned char)p[at + take] & 0xC0) == 0x80) take--;
                pt_escape_text(p + at, take, safe, sizeof safe);
                fputs(safe, stdout);
                at += take;
            }
            i = end - 1;
        } else if (c == '\n') fputs("\\n", stdout);
        else if (c == '\t') fputs("\\t", stdout);
        else if (c == '\'') fputs("\\'", stdout);
        else if (c == '\\') fputs("\\\\", stdout);
        else if (c < 0x20 || c == 0x7f) printf("\\x%02x", c);
        else putchar(c);
    }
}

int cmd_tokenize(int argc, char **argv) {
    const char *model = NULL, *text = NULL;
    bool ids_only = false, add_special = true, parse_special = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            if (!(model = arg_value(argc, argv, &i))) return 2;
        } else if (!strcmp(a, "--ids")) {
            ids_only = true;
        } else if (!strcmp(a, "--no-bos")) {
            add_special = false;
        } else if (!strcmp(a, "--no-parse-special")) {
            parse_special = false;
        } else if (!strcmp(a, "-p") || !strcmp(a, "--prompt")) {
            if (!(text = arg_value(argc, argv, &i))) return 2;
        } else if (a[0] == '-' && a[1] && !text) {
            app_error("tokenize: unknown option '%s'", a);
            return 2;
        } else if (!text) {
            text = a;
        } else {
            app_error("tokenize: give the text as one argument (quote it)");
            return 2;
        }
    }
    if (!text) {
        usage(stderr);
        return 2;
    }
    char buf[4096];
    const char *path = app_model_path(model, buf, sizeof buf);
    if (!path) return 1;
    pt_model *m = NULL;
    pt_error err = {0};
    pt_model_params mp = app_model_params(NULL);
    mp.metadata_only = true; /* the tokenizer is all it needs */
    if (pt_model_load(path, &mp, &m, &err) != PT_OK) return app_fail(&err);
    size_t len = strlen(text);
    int cap = (int)len + 8;
    pt_token *ids = malloc((size_t)cap * sizeof *ids);
    int n = ids ? pt_tokenize(m, text, len, add_special, parse_special, ids, cap) : -1;
    if (n > cap) { /* cannot happen for BPE (at most one token per byte + specials), but be safe */
        free(ids);
        cap = n;
        ids = malloc((size_t)cap * sizeof *ids);
        n = ids ? pt_tokenize(m, text, len, add_special, parse_special, ids, cap) : -1;
    }
    if (n < 0) {
        free(ids);
        pt_model_free(m);
        app_error("could not tokenize the text");
        return 1;
    }
    if (ids_only) {
        putchar('[');
        for (int i = 0; i < n; i++) printf(i ? ", %d" : "%d", ids[i]);
        puts("]");
    } else {
        char piece[512];
        for (int i = 0; i < n; i++) {
            size_t pn = pt_token_to_bytes(m, ids[i], true, piece, sizeof piece);
            printf("%6d -> '", ids[i]);
            print_piece(piece, pn < sizeof piece ? pn : sizeof piece);
            puts("'");
        }
    }
    free(ids);
    pt_model_free(m);
    return 0;
}
