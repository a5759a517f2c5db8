/*
 * convert_name.c — general.name / basename / finetune / version /
 * size_label / organization of a converted model, as gguf-py's metadata.py
 * derives them (Metadata.get_model_id_components and id_to_title) from
 * config.json's "_name_or_path" (when it is "org/name" or "name", not a
 * file path) and then from the folder's name, e.g. "Qwen2.5-0.5B-Instruct"
 * -> name "Qwen2.5 0.5B Instruct", basename "Qwen2.5", size_label "0.5B",
 * finetune "Instruct". The name is split at '-' and each part annotated:
 *   version     (v|iter)?\d+(\.\d+)*
 *   type        i?q\d(_\w)* | b?fp?(16|32)        (upper-cased)
 *   size label  (not the first part) ((A|\d+x)?\d+([._]\d+)?[KMBT]\d? |
 *               small|mini|medium|large|x?xl); a label far from the real
 *               parameter count (off by more than 7/8 of it) is a finetune
 *               (a context length, say), written in lower case
 *   finetune    (not the first part) chat|instruct|vision|lora
 * then the leading unannotated parts (and versions) are the basename, the
 * other unannotated parts finetune. README model cards, which the Python
 * converter also reads, are not.
 */
#include "convert_internal.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { T_VERSION = 1, T_TYPE = 2, T_SIZE = 4, T_FINETUNE = 8, T_BASENAME = 16 };
#define MAX_PARTS 32
#define PART_LEN 64

static bool digits(const char **p) {
    const char *s = *p;
    while (isdigit((unsigned char)**p)) (*p)++;
    return *p > s;
}

static bool is_version(const char *s) {
    if (!strncasecmp(s, "iter", 4)) s += 4;
    else if (*s == 'v' || *s == 'V') s++;
    if (!digits(&s)) return false;
    while (*s == '.') {
        s++;
        if (!digits(&s)) return false;
    }
    return !*s;
}

static bool is_qtype(const char *s) {
    const char *p = s;
    if (*p == 'i' || *p == 'I') p++;
    if ((*p == 'q' || *p == 'Q') && isdigit((unsigned char)p[1])) {
        p += 2;
        while (p[0] == '_' && (isalnum((unsigned char)p[1]) || p[1] == '_')) p += 2;
        if (!*p) return true;
    }
    p = s;
    if (*p == 'b' || *p == 'B') p++;
    if (*p != 'f' && *p != 'F') return false;
    p++;
    if (*p == 'p' || *p == 'P') p++;
    return !strcmp(p, "16") || !strcmp(p, "32");
}

/* \d+([._]\d+)?[KMBT]\d? to the end */
static bool size_core(const char *p) {
    if (!digits(&p)) return false;
    if ((*p == '.' || *p == '_') && isdigit((unsigned char)p[1])) {
        p++;
        digits(&p);
    }
    if (!*p || !strchr("KMBTkmbt", *p)) return false;
    p++;
    if (isdigit((unsigned char)*p)) p++;
    return !*p;
}

static bool is_size(const char *s) {
    static const char *const WORDS[] = {"small", "mini", "medium", "large", "xl", "xxl"};
    for (size_t i = 0; i < sizeof WORDS / sizeof WORDS[0]; i++)
        if (!strcasecmp(s, WORDS[i])) return true;
    if (size_core(s)) return true;
    if ((*s == 'a' || *s == 'A') && size_core(s + 1)) return true;
    const char *p = s;
    return digits(&p) && (*p == 'x' || *p == 'X') && size_core(p + 1);
}

static bool is_finetune_word(const char *s) {
    return !strcasecmp(s, "chat") || !strcasecmp(s, "instruct") || !strcasecmp(s, "vision") ||
           !strcasecmp(s, "lora");
}

void cv_general_name(const char *id, char *out, size_t cap) {
    size_t o = 0;
    for (const char *p = id; *p && o + 2 < cap;) {
        while (*p == '-' || *p == ' ') p++;
        const char *w = p;
        while (*p && *p != '-' && *p != ' ') p++;
        if (p == w) break;
        bool lower = false, upper = false;
        for (const char *q = w; q < p; q++) lower |= islower((unsigned char)*q), upper |= isupper((unsigned char)*q);
        /* str.islower(): some cased letter, none upper; versions and
         * words starting with a digit are kept */
        const bool version = (*w == 'v' && p - w > 1 && isdigit((unsigned char)w[1]));
        const bool tc = lower && !upper && !isdigit((unsigned char)*w) && !version;
        if (o) out[o++] = ' ';
        bool start = true;
        for (const char *q = w; q < p && o + 1 < cap; q++) {
            char ch = *q;
            const bool alpha = isalpha((unsigned char)ch);
            if (tc && alpha) ch = (char)(start ? toupper((unsigned char)ch) : tolower((unsigned char)ch));
            start = !alpha; /* str.title(): a letter after a non-letter starts a word */
            out[o++] = ch;
        }
    }
    out[o] = 0;
}

static void join(char *out, size_t cap, char parts[][PART_LEN], const int *types, int n, int want, int without,
                 bool dedup) {
    size_t o = 0;
    out[0] = 0;
    for (int i = 0; i < n; i++) {
        if (!(types[i] & want) || (types[i] & without)) continue;
        bool seen = false;
        for (int j = 0; dedup && j < i && !seen; j++)
            seen = (types[j] & want) && !(types[j] & without) && !strcmp(parts[j], parts[i]);
        if (seen) continue;
        o += (size_t)snprintf(out + o, o < cap ? cap - o : 0, "%s%s", o ? "-" : "", parts[i]);
        if (o >= cap) o = cap - 1;
    }
}

void cv_name_parts(const char *model_id, int64_t total, cv_name *out) {
    memset(out, 0, sizeof *out);
    if (!model_id || !*model_id) return;
    if (strchr(model_id, ' ')) { /* a human sentence: a name only */
        snprintf(out->name, sizeof out->name, "%s", model_id);
        out->has_name = true;
        return;
    }
    const char *full = model_id, *slash = strchr(model_id, '/');
    if (slash) {
        full = slash + 1;
        if (model_id[0] != '.' && slash > model_id) {
            char org[sizeof out->organization];
            snprintf(org, sizeof org, "%.*s", (int)(slash - model_id), model_id);
            cv_general_name(org, out->organization, sizeof out->organization);
            out->has_organization = true;
        }
    }
    cv_general_name(full, out->name, sizeof out->name);
    out->has_name = true;

    char parts[MAX_PARTS][PART_LEN];
    int types[MAX_PARTS] = {0}, n = 0;
    for (const char *p = full; *p && n < MAX_PARTS;) {
        const char *w = p;
        while (*p && *p != '-') p++;
        if (p > w) snprintf(parts[n++], PART_LEN, "%.*s", (int)(p - w), w);
        if (*p) p++;
    }
    for (int i = 0; i < n; i++) {
        char *part = parts[i];
        const size_t len = strlen(part);
        if (is_version(part)) {
            types[i] |= T_VERSION;
        } else if (is_qtype(part)) {
            types[i] |= T_TYPE;
            for (char *q = part; *q; q++) *q = (char)toupper((unsigned char)*q);
        } else if (i > 0 && is_size(part)) {
            for (char *q = part; *q; q++)
                if (*q == '_') *q = '.';
            if (len >= 2 && isdigit((unsigned char)part[len - 1])) { /* bloom's 7b1 -> 7.1b */
                char a = part[len - 2], b = part[len - 1];
                if (len + 1 < PART_LEN) {
                    part[len - 2] = '.';
                    part[len - 1] = b;
                    part[len] = a;
                    part[len + 1] = 0;
                }
            }
            const size_t l2 = strlen(part);
            if (l2 > 1 && isdigit((unsigned char)part[l2 - 2]) && strchr("kmbt", part[l2 - 1]))
                part[l2 - 1] = (char)toupper((unsigned char)part[l2 - 1]);
            if (total > 0 && l2 > 1) {
                char num[PART_LEN], *end;
                snprintf(num, sizeof num, "%.*s", (int)(l2 - 1), part);
                const double v = strtod(num, &end);
                const char *sfx = strchr(" KMBT", part[l2 - 1]);
                if (*num && !*end && !isspace((unsigned char)num[0])) {
                    const double label = v * (sfx && part[l2 - 1] ? pow(1000, (double)(sfx - " KMBT")) : 0.001);
                    if (fabs(label - (double)total) > (double)(7 * total / 8)) {
                        types[i] |= T_FINETUNE; /* likely a context length */
                        part[l2 - 1] = (char)tolower((unsigned char)part[l2 - 1]);
                    }
                }
            }
            if (!types[i]) types[i] |= T_SIZE;
        } else if (i > 0 && is_finetune_word(part)) {
            types[i] |= T_FINETUNE;
        }
    }
    bool numeric_size = false;
    for (int i = 0; i < n; i++)
        if (types[i] & T_SIZE)
            for (const char *q = parts[i]; *q; q++) numeric_size |= isdigit((unsigned char)*q);
    if (numeric_size)
        for (int i = 0; i < n; i++) {
            bool alpha = true;
            for (const char *q = parts[i]; *q; q++) alpha &= isalpha((unsigned char)*q) != 0;
            if ((types[i] & T_SIZE) && alpha) types[i] &= ~T_SIZE;
        }
    bool at_start = true;
    for (int i = 0; i < n; i++) {
        if (at_start && ((!types[i] && isalpha((unsigned char)parts[i][0])) || (types[i] & T_VERSION))) {
            types[i] |= T_BASENAME;
        } else {
            at_start = false;
            if (!types[i]) types[i] |= T_FINETUNE;
        }
    }
    for (int i = n - 1; i >= 0; i--) {
        if ((types[i] & T_BASENAME) && types[i] != T_BASENAME) types[i] &= ~T_BASENAME;
        else break;
    }
    join(out->basename, sizeof out->basename, parts, types, n, T_BASENAME, 0, false);
    join(out->size_label, sizeof out->size_label, parts, types, n, T_SIZE, 0, true);
    join(out->finetune, sizeof out->finetune, parts, types, n, T_FINETUNE, 0, false);
    join(out->version, sizeof out->version, parts, types, n, T_VERSION, T_BASENAME, false);
    out->has_size_label = out->size_label[0] != 0;
    out->has_finetune = out->finetune[0] != 0;
    out->has_version = out->version[0] != 0;
    out->has_basename = out->basename[0] && (out->has_size_label || out->has_finetune || out->has_version);
}
