/*
 * convert_special.c — the part of a converted vocabulary that gguf-py's
 * SpecialVocab (vocab.py) writes: merges from tokenizer.json, the special
 * token ids (bos, eos, unk, sep, pad, cls, mask; eot / eom when a
 * TemplateProcessing's trailing token replaces the eos), the add_bos /
 * add_eos / add_sep flags, and the chat template. Ids come from
 * tokenizer_config.json's "{typ}_token" looked up in tokenizer.json's
 * added_tokens, else config.json's "{typ}_token_id"; the flags from
 * tokenizer.json's post_processor (its crude reading of simple
 * TemplateProcessing templates), else tokenizer_config.json's
 * "add_{typ}_token". Entries are added in the order gguf-py adds them.
 */
#include "convert_internal.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "status.h"

/* model.merges: "a b" strings, or [a, b] pairs (transformers >= 4.45). */
static pt_status merges_to_kv(cv_kv *kv, const char *dir, const cJSON *tj, pt_error *err) {
    const cJSON *m = cv_json_arr(cv_json_obj(tj, "model"), "merges");
    const int n = m ? cJSON_GetArraySize(m) : 0;
    if (!n) return PT_OK;
    pt_gguf_value *items = cv_kv_str_arr(kv, "tokenizer.ggml.merges", (uint64_t)n);
    if (!items) return pt_fail(err, PT_ERR_NOMEM, "out of memory");
    int i = 0;
    const cJSON *e;
    char *buf = NULL;
    size_t cap = 0;
    cJSON_ArrayForEach(e, m) {
        if (cJSON_IsString(e)) {
            cv_kv_arr_set(kv, &items[i++], e->valuestring, strlen(e->valuestring));
            continue;
        }
        const cJSON *a = cJSON_GetArrayItem(e, 0), *b = cJSON_GetArrayItem(e, 1);
        if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) != 2 || !cJSON_IsString(a) || !cJSON_IsString(b)) {
            free(buf);
            return pt_fail(err, PT_ERR_FORMAT, "%s/tokenizer.json: merge %d is not a string or a pair", dir, i);
        }
        /* worst case: every byte a space (1 -> 2 bytes), plus the separator */
        const size_t need = 2 * (strlen(a->valuestring) + strlen(b->valuestring)) + 2;
        if (need > cap) {
            char *nb = realloc(buf, need);
            if (!nb) {
                free(buf);
                return pt_fail(err, PT_ERR_NOMEM, "out of memory");
            }
            buf = nb;
            cap = need;
        }
        size_t o = 0;
        for (int part = 0; part < 2; part++) {
            if (part) buf[o++] = ' ';
            for (const char *p = part ? b->valuestring : a->valuestring; *p; p++)
                if (*p == ' ') { /* chr(ord(' ') + 256) = U+0120 */
                    buf[o++] = (char)0xc4;
                    buf[o++] = (char)0xa0;
                } else {
                    buf[o++] = *p;
                }
        }
        cv_kv_arr_set(kv, &items[i++], buf, o);
    }
    free(buf);
    return PT_OK;
}

/* ---- SpecialVocab ------------------------------------------------------------ */

static const char *const SPECIAL[] = {"bos", "eos", "unk", "sep", "pad", "cls", "mask", "eot", "eom"};
static const char *const ID_KEY[] = {
    "tokenizer.ggml.bos_token_id",     "tokenizer.ggml.eos_token_id",  "tokenizer.ggml.unknown_token_id",
    "tokenizer.ggml.seperator_token_id", "tokenizer.ggml.padding_token_id", "tokenizer.ggml.cls_token_id",
    "tokenizer.ggml.mask_token_id",    "tokenizer.ggml.eot_token_id",  "tokenizer.ggml.eom_token_id"};
enum { N_SPECIAL = 9, N_BASE_SPECIAL = 7 };

typedef struct special {
    int64_t id[N_SPECIAL];     /* -1: unset */
    int add[N_SPECIAL];        /* -1: unset, else 0/1 */
    int order_id[N_SPECIAL], n_id;   /* the order ids were set in */
    int order_add[N_SPECIAL], n_add;
    bool extra_eot, extra_eom; /* special_token_types grown by a TemplateProcessing */
    char *token[N_SPECIAL];    /* tokenizer_config's {typ}_token content (owned) */
} special;

static void set_id(special *s, int t, int64_t id, int64_t n_vocab) {
    if (id < 0 || (n_vocab > 0 && id >= n_vocab) || s->id[t] >= 0) return;
    s->id[t] = id;
    s->order_id[s->n_id++] = t;
}

static void set_add(special *s, int t, bool v, bool overwrite) {
    if (s->add[t] < 0) s->order_add[s->n_add++] = t;
    else if (!overwrite) return;
    s->add[t] = v;
}

static void set_token(special *s, int t, const char *content) {
    free(s->token[t]);
    s->token[t] = content ? strdup(content) : NULL;
}

/* The content of a TemplateProcessing entry's SpecialToken, or NULL. */
static const char *tmpl_special(const cJSON *entry) {
    return cv_json_str(cv_json_obj(entry, "SpecialToken"), "id");
}

static bool is_sep_or_eos(const special *s, const char *t) {
    return t && ((s->token[3] && !strcmp(t, s->token[3])) || (s->token[1] && !strcmp(t, s->token[1])));
}

/* The pair template "[first] A [sep] [eos] B [last]": add_sep when a
 * separator that is the sep or eos token stands between A and B. */
static void pair_template(special *s, const cJSON *pair, const char *first, const char *last) {
    int lo = 0, hi = pair ? cJSON_GetArraySize(pair) : 0; /* [lo, hi) */
    if (hi == 0) return;
    const char *p0 = tmpl_special(cJSON_GetArrayItem(pair, 0));
    const char *pn = tmpl_special(cJSON_GetArrayItem(pair, hi - 1));
    if (first && p0 && !strcmp(p0, first)) lo++;
    if (last && pn && !strcmp(pn, last)) hi--;
    if (hi - lo < 3) return;
    const char *a = cv_json_str(cv_json_obj(cJSON_GetArrayItem(pair, lo), "Sequence"), "id");
    const char *b = cv_json_str(cv_json_obj(cJSON_GetArrayItem(pair, hi - 1), "Sequence"), "id");
    if (!a || !b || strcmp(a, "A") != 0 || strcmp(b, "B") != 0) return;
    bool add_sep = false;
    const char *m0 = tmpl_special(cJSON_GetArrayItem(pair, lo + 1));
    if (m0 && is_sep_or_eos(s, m0) && !last) add_sep = true;
    if (hi - lo - 2 == 2 && is_sep_or_eos(s, tmpl_special(cJSON_GetArrayItem(pair, lo + 2)))) add_sep = true;
    set_add(s, 3, add_sep, true);
}

static void post_processor(special *s, const cJSON *pp) {
    const cJSON *list = cv_json_arr(pp, "processors");
    const cJSON *one = pp;
    int n = list ? cJSON_GetArraySize(list) : 1;
    for (int k = 0; k < n; k++) {
        const cJSON *p = list ? cJSON_GetArrayItem(list, k) : one;
        if (cv_json_is_type(p, "ByteLevel")) {
            if (s->add[0] < 0) set_add(s, 0, false, false);
            if (s->add[1] < 0) set_add(s, 1, false, false);
        } else if (cv_json_is_type(p, "RobertaProcessing")) {
            set_add(s, 0, true, true);
            set_add(s, 1, true, true);
            set_add(s, 3, true, true);
        } else if (cv_json_is_type(p, "TemplateProcessing")) {
            /* the converter's crude reading of simple templates: a leading
             * special token that is the bos (or cls) means add_bos; a
             * trailing one that is the eos means add_eos */
            const cJSON *single = cv_json_arr(p, "single");
            if (!single || cJSON_GetArraySize(single) <= 1) continue;
            const char *first = tmpl_special(cJSON_GetArrayItem(single, 0));
            const char *last = tmpl_special(cJSON_GetArrayItem(single, cJSON_GetArraySize(single) - 1));
            if (first) {
                if (!s->token[0]) set_token(s, 0, first);
                const bool is_bos = (s->token[0] && !strcmp(first, s->token[0])) ||
                                    (s->token[5] && !strcmp(first, s->token[5]));
                set_add(s, 0, is_bos, true);
            }
            if (last) {
                if (s->token[1] && strcmp(last, s->token[1]) != 0) {
                    if (!s->extra_eot) {
                        s->extra_eot = true;
                        set_token(s, 7, s->token[1]);
                    } else if (!s->extra_eom) {
                        s->extra_eom = true;
                        set_token(s, 8, s->token[1]);
                    }
                }
                set_token(s, 1, last);
                set_add(s, 1, true, true);
            }
            pair_template(s, cv_json_arr(p, "pair"), first, last);
        }
    }
}

pt_status cv_special_vocab(cv_kv *kv, const cJSON *tj, const cJSON *tcfg, const cJSON *config, const char *dir,
                               int64_t n_vocab, bool merges, pt_error *err) {
    special s;
    memset(&s, 0, sizeof s);
    for (int i = 0; i < N_SPECIAL; i++) s.id[i] = -1, s.add[i] = -1;
    pt_status st = PT_OK;
    if (tj && merges) st = merges_to_kv(kv, dir, tj, err);
    if (!st && tj && tcfg) {
        for (int t = 0; t < N_BASE_SPECIAL; t++) {
            char key[32];
            snprintf(key, sizeof key, "%s_token", SPECIAL[t]);
            const cJSON *e = cJSON_GetObjectItemCaseSensitive(tcfg, key);
            const char *c = cJSON_IsString(e) ? e->valuestring : cv_json_str(e, "content");
            if (c) set_token(&s, t, c);
        }
        if (!s.token[0] && s.token[5]) set_token(&s, 0, s.token[5]);
        if (!s.token[1] && s.token[3]) set_token(&s, 1, s.token[3]);
        const cJSON *pp = cv_json_obj(tj, "post_processor");
        if (pp) post_processor(&s, pp);
    }
    if (!st && tcfg) {
        const int n_types = N_BASE_SPECIAL + (s.extra_eot ? 1 : 0) + (s.extra_eom ? 1 : 0);
        const cJSON *added = cv_json_arr(tj, "added_tokens");
        for (int k = 0; k < n_types; k++) {
            const int t = k < N_BASE_SPECIAL ? k : (k == N_BASE_SPECIAL && s.extra_eot ? 7 : 8);
            char key[32];
            bool b;
            snprintf(key, sizeof key, "add_%s_token", SPECIAL[t]);
            if (cv_json_bool(tcfg, key, &b) && s.add[t] < 0) set_add(&s, t, b, false);
            const char *c = s.token[t];
            if (!c) continue;
            const cJSON *e;
            cJSON_ArrayForEach(e, added) {
                int64_t id;
                const char *ac = cv_json_str(e, "content");
                if (ac && !strcmp(ac, c)) {
                    if (cv_json_int(e, "id", &id)) set_id(&s, t, id, n_vocab);
                    break;
                }
            }
        }
    }
    for (int t = 0; !st && t < N_BASE_SPECIAL; t++) {
        char key[32];
        int64_t id;
        snprintf(key, sizeof key, "%s_token_id", SPECIAL[t]);
        if (cv_json_int(config, key, &id) || cv_json_int(cv_json_obj(config, "text_config"), key, &id))
            set_id(&s, t, id, n_vocab);
    }
    for (int i = 0; !st && i < s.n_id; i++) cv_kv_u32(kv, ID_KEY[s.order_id[i]], (uint32_t)s.id[s.order_id[i]]);
    for (int i = 0; !st && i < s.n_add; i++) {
        const int t = s.order_add[i];
        /* gguf-py has writers only for add_bos / add_eos / add_sep */
        if (t != 0 && t != 1 && t != 3) continue;
        char key[48];
        snprintf(key, sizeof key, "tokenizer.ggml.add_%s_token", SPECIAL[t]);
        cv_kv_bool(kv, key, s.add[t] == 1);
    }
    for (int t = 0; t < N_SPECIAL; t++) free(s.token[t]);
    return st;
}

/* chat_template: tokenizer_config.json's, else chat_template.jinja, else
 * chat_template.json's. */
pt_status cv_chat_template(cv_kv *kv, const cJSON *tcfg, const char *dir, pt_error *err) {
    if (!tcfg) return PT_OK;
    const char *t = cv_json_str(tcfg, "chat_template");
    if (t) {
        cv_kv_cstr(kv, "tokenizer.chat_template", t);
        return PT_OK;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/chat_template.jinja", dir);
    FILE *f = fopen(path, "rb");
    if (f) {
        struct stat sb;
        if (fstat(fileno(f), &sb) != 0 || sb.st_size < 0 || (uint64_t)sb.st_size > CV_MAX_JSON) {
            fclose(f);
            return pt_fail(err, PT_ERR_FORMAT, "%s: too large", path);
        }
        char *buf = malloc((size_t)sb.st_size + 1);
        const size_t got = buf ? fread(buf, 1, (size_t)sb.st_size, f) : 0;
        fclose(f);
        if (!buf) return pt_fail(err, PT_ERR_NOMEM, "out of memory");
        cv_kv_str(kv, "tokenizer.chat_template", buf, got);
        free(buf);
        return PT_OK;
    }
    cJSON *cj = NULL;
    pt_status st = cv_json_load(dir, "chat_template.json", false, &cj, err);
    if (st) return st;
    if ((t = cv_json_str(cj, "chat_template"))) cv_kv_cstr(kv, "tokenizer.chat_template", t);
    cJSON_Delete(cj);
    return PT_OK;
}
