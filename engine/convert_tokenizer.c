/*
 * convert_tokenizer.c — the tokenizer.* metadata of a converted model, as
 * llama.cpp's convert_hf_to_gguf.py writes it (conversion/base.py:
 * _set_vocab_sentencepiece / _create_vocab_sentencepiece, _set_vocab_gpt2 /
 * get_vocab_base; gguf-py vocab.py: SpecialVocab).
 *
 * SentencePiece ("llama"): tokens, scores and types from tokenizer.model
 * (SentencePiece's USER_DEFINED pieces become NORMAL, as the converter's
 * IsUnknown/IsControl/IsUnused/IsByte tests leave them), then
 * added_tokens.json and tokenizer_config.json's added_tokens_decoder
 * override entries (score -1000; CONTROL when marked special or looking
 * special, else USER_DEFINED with U+2581 turned into spaces); the list is
 * padded to config's vocab_size with "[PADi]" (score -10000, UNUSED).
 *
 * Byte-level BPE ("gpt2"): tokenizer.json's model.vocab plus its
 * added_tokens; ids missing below vocab_size become "[PADi]" UNUSED;
 * added tokens are CONTROL (special, or looking special) or USER_DEFINED,
 * the rest NORMAL; merges from model.merges (the pair form joined by a
 * space, spaces inside a part written as U+0120 + 256, as gguf-py does).
 *
 * tokenizer.ggml.pre: llama.cpp hashes the ids its tokenizer gives for a
 * fixed text and looks the hash up in a table of known models. petrel has
 * no Python tokenizer to run, so it recognises the pre-tokenizer itself
 * (cv_pre_name): the exact Split regexes of Llama 3 ("llama-bpe") and
 * Qwen2 ("qwen2"); SmolLM's Digits(individual) + ByteLevel ("smollm"); a
 * lone ByteLevel with its GPT-2 regex ("gpt-2"). Any other pre-tokenizer
 * is refused with an error naming it, as llama.cpp refuses an unknown
 * hash: writing a guess would tokenize text differently from the model's
 * training without a word of warning.
 */
#include "convert_internal.h"

#include "status.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "mapfile.h"

enum { TT_NORMAL = 1, TT_UNKNOWN = 2, TT_CONTROL = 3, TT_USER_DEFINED = 4, TT_UNUSED = 5, TT_BYTE = 6 };

static const char RE_LLAMA3[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
    "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char RE_QWEN2[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
    "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

static bool is_type(const cJSON *o, const char *type) {
    const char *t = cv_json_str(o, "type");
    return t && !strcmp(t, type);
}

static bool byte_level_with_regex(const cJSON *o) {
    bool use_regex = true; /* the library's default */
    cv_json_bool(o, "use_regex", &use_regex);
    return is_type(o, "ByteLevel") && use_regex;
}

const char *cv_pre_name(const cJSON *tj) {
    const cJSON *pre = cv_json_obj(tj, "pre_tokenizer");
    if (!pre) return NULL;
    if (byte_level_with_regex(pre)) return "gpt-2";
    const cJSON *seq = is_type(pre, "Sequence") ? cv_json_arr(pre, "pretokenizers") : NULL;
    const int n = seq ? cJSON_GetArraySize(seq) : 0;
    if (n != 2) return NULL;
    const cJSON *a = cJSON_GetArrayItem(seq, 0), *b = cJSON_GetArrayItem(seq, 1);
    if (is_type(a, "Split") && is_type(b, "ByteLevel") && !byte_level_with_regex(b)) {
        const char *re = cv_json_str(cv_json_obj(a, "pattern"), "Regex");
        if (re && !strcmp(re, RE_LLAMA3)) return "llama-bpe";
        if (re && !strcmp(re, RE_QWEN2)) return "qwen2";
        return NULL;
    }
    bool individual = false;
    if (is_type(a, "Digits") && cv_json_bool(a, "individual_digits", &individual) && individual &&
        byte_level_with_regex(b))
        return "smollm";
    return NULL;
}

/* does_token_look_special of the converter */
static bool looks_special(const char *t) {
    const size_t n = strlen(t);
    if (!strcmp(t, "<pad>") || !strcmp(t, "<mask>") || !strcmp(t, "<2mass>") || !strcmp(t, "[@BOS@]")) return true;
    if (n >= 4 && !strncmp(t, "<|", 2) && !strcmp(t + n - 2, "|>")) return true;
    static const char fw_open[] = "<\xef\xbd\x9c", fw_close[] = "\xef\xbd\x9c>"; /* <｜ ｜> */
    if (n >= 8 && !strncmp(t, fw_open, 4) && !strcmp(t + n - 4, fw_close)) return true;
    if (n >= 8 && !strncmp(t, "<unused", 7) && t[n - 1] == '>') return true;
    return false;
}

/* s with every U+2581 replaced by a space, into a new string. */
static char *spaces_for_2581(const char *s) {
    const size_t n = strlen(s);
    char *o = malloc(n + 1), *q = o;
    if (!o) return NULL;
    for (const char *p = s; *p;)
        if (!strncmp(p, "\xe2\x96\x81", 3)) {
            *q++ = ' ';
            p += 3;
        } else {
            *q++ = *p++;
        }
    *q = 0;
    return o;
}

/* The token table being built: text (owned) and type per id, score for
 * SentencePiece. */
typedef struct vocab {
    int64_t n;
    char **text;
    float *score;
    int32_t *type;
} vocab;

static void vocab_free(vocab *v) {
    for (int64_t i = 0; v->text && i < v->n; i++) free(v->text[i]);
    free(v->text);
    free(v->score);
    free(v->type);
}

static bool vocab_init(vocab *v, int64_t n, float pad_score) {
    v->n = n;
    v->text = calloc((size_t)n, sizeof *v->text);
    v->score = calloc((size_t)n, sizeof *v->score);
    v->type = calloc((size_t)n, sizeof *v->type);
    if (!v->text || !v->score || !v->type) return false;
    for (int64_t i = 0; i < n; i++) {
        char pad[32];
        snprintf(pad, sizeof pad, "[PAD%lld]", (long long)i);
        if (!(v->text[i] = strdup(pad))) return false;
        v->score[i] = pad_score;
        v->type[i] = TT_UNUSED;
    }
    return true;
}

static bool vocab_set(vocab *v, int64_t id, const char *text, float score, int32_t type) {
    char *c = strdup(text);
    if (!c) return false;
    free(v->text[id]);
    v->text[id] = c;
    v->score[id] = score;
    v->type[id] = type;
    return true;
}

static void vocab_to_kv(cv_kv *kv, const vocab *v, bool scores) {
    pt_gguf_value *items = cv_kv_str_arr(kv, "tokenizer.ggml.tokens", (uint64_t)v->n);
    for (int64_t i = 0; items && i < v->n; i++) cv_kv_arr_set(kv, &items[i], v->text[i], strlen(v->text[i]));
    if (scores) cv_kv_arr(kv, "tokenizer.ggml.scores", PT_GGUF_FLOAT32, v->score, (uint64_t)v->n);
    cv_kv_arr(kv, "tokenizer.ggml.token_type", PT_GGUF_INT32, v->type, (uint64_t)v->n);
}

/* ---- SentencePiece -------------------------------------------------------- */

static pt_status spm_vocab(const char *dir, const cJSON *tcfg, int64_t n_vocab, vocab *v, pt_error *err) {
    char path[4096];
    snprintf(path, sizeof path, "%s/tokenizer.model", dir);
    const uint8_t *map;
    uint64_t size;
    pt_status st = pt_map_file(path, "tokenizer.model", &map, &size, err);
    if (st) return st;
    cv_spm sp;
    st = cv_spm_parse(map, (size_t)size, path, &sp, err);
    munmap((void *)map, (size_t)size);
    if (st) return st;
    const int64_t n = n_vocab > 0 && n_vocab <= CV_MAX_VOCAB ? n_vocab : sp.n;
    bool ok = vocab_init(v, n, -10000.0f);
    for (int64_t i = 0; ok && i < sp.n && i < n; i++) {
        const int32_t t = sp.types[i];
        const int32_t tt = t == 2 ? TT_UNKNOWN : t == 3 ? TT_CONTROL : t == 5 ? TT_UNUSED : t == 6 ? TT_BYTE
                                                                                                   : TT_NORMAL;
        ok = vocab_set(v, i, sp.pieces[i], sp.scores[i], tt);
    }
    cv_spm_free(&sp);
    if (!ok) return pt_fail(err, PT_ERR_NOMEM, "out of memory");

    cJSON *added = NULL;
    if ((st = cv_json_load(dir, "added_tokens.json", false, &added, err))) return st;
    const cJSON *e;
    cJSON_ArrayForEach(e, added) {
        if (!cJSON_IsNumber(e) || !e->string) continue;
        const double id = e->valuedouble;
        if (id >= 0 && id < (double)n && !vocab_set(v, (int64_t)id, e->string, -1000.0f, TT_USER_DEFINED)) {
            cJSON_Delete(added);
            return pt_fail(err, PT_ERR_NOMEM, "out of memory");
        }
    }
    cJSON_Delete(added);

    cJSON_ArrayForEach(e, cv_json_obj(tcfg, "added_tokens_decoder")) {
        char *endp;
        const long long id = e->string ? strtoll(e->string, &endp, 10) : -1;
        const char *content = cv_json_str(e, "content");
        if (id < 0 || id >= n || !content) continue;
        bool special = false;
        cv_json_bool(e, "special", &special);
        char *text = special || looks_special(content) ? strdup(content) : spaces_for_2581(content);
        const int32_t tt = special || looks_special(content) ? TT_CONTROL : TT_USER_DEFINED;
        if (!text || !vocab_set(v, id, text, -1000.0f, tt)) {
            free(text);
            return pt_fail(err, PT_ERR_NOMEM, "out of memory");
        }
        free(text);
    }
    return PT_OK;
}

/* ---- byte-level BPE ----------------------------------------------------------- */

static pt_status bpe_vocab(const char *dir, const cJSON *tj, int64_t n_vocab, vocab *v, pt_error *err) {
    const cJSON *model = cv_json_obj(tj, "model");
    const cJSON *tv = cv_json_obj(model, "vocab");
    if (!tv || !is_type(model, "BPE"))
        return pt_fail(err, PT_ERR_UNSUPPORTED, "%s/tokenizer.json: model is not a BPE with a vocab object", dir);
    const cJSON *added = cv_json_arr(tj, "added_tokens");
    int64_t max_id = -1, n_entries = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, tv) {
        if (!cJSON_IsNumber(e) || e->valuedouble < 0 || e->valuedouble >= CV_MAX_VOCAB || !e->string)
            return pt_fail(err, PT_ERR_FORMAT, "%s/tokenizer.json: vocab entry with a bad id", dir);
        if ((int64_t)e->valuedouble > max_id) max_id = (int64_t)e->valuedouble;
        n_entries++;
    }
    int64_t id;
    cJSON_ArrayForEach(e, added) {
        if (!cv_json_int(e, "id", &id) || id < 0 || id >= CV_MAX_VOCAB || !cv_json_str(e, "content"))
            return pt_fail(err, PT_ERR_FORMAT, "%s/tokenizer.json: added token with a bad id or content", dir);
        if (id > max_id) max_id = id;
        n_entries++;
    }
    const int64_t n = n_vocab > 0 ? n_vocab : n_entries;
    if (max_id >= n)
        return pt_fail(err, PT_ERR_FORMAT, "%s: token id %lld is past the vocabulary size %lld", dir,
                       (long long)max_id, (long long)n);
    if (!vocab_init(v, n, 0.0f)) return pt_fail(err, PT_ERR_NOMEM, "out of memory");
    cJSON_ArrayForEach(e, tv)
        if (!vocab_set(v, (int64_t)e->valuedouble, e->string, 0.0f, TT_NORMAL))
            return pt_fail(err, PT_ERR_NOMEM, "out of memory");
    cJSON_ArrayForEach(e, added) {
        cv_json_int(e, "id", &id);
        const char *content = cv_json_str(e, "content");
        bool special = false;
        cv_json_bool(e, "special", &special);
        const bool control = special || looks_special(content);
        char *text = control ? strdup(content) : spaces_for_2581(content);
        if (!text || !vocab_set(v, id, text, 0.0f, control ? TT_CONTROL : TT_USER_DEFINED)) {
            free(text);
            return pt_fail(err, PT_ERR_NOMEM, "out of memory");
        }
        free(text);
    }
    return PT_OK;
}

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
        if (is_type(p, "ByteLevel")) {
            if (s->add[0] < 0) set_add(s, 0, false, false);
            if (s->add[1] < 0) set_add(s, 1, false, false);
        } else if (is_type(p, "RobertaProcessing")) {
            set_add(s, 0, true, true);
            set_add(s, 1, true, true);
            set_add(s, 3, true, true);
        } else if (is_type(p, "TemplateProcessing")) {
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

static pt_status special_vocab(cv_kv *kv, const cJSON *tj, const cJSON *tcfg, const cJSON *config, const char *dir,
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
static pt_status chat_template(cv_kv *kv, const cJSON *tcfg, const char *dir, pt_error *err) {
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

pt_status cv_tokenizer(cv_kv *kv, const char *dir, const cJSON *config, int64_t n_vocab, bool prefer_spm,
                       int64_t *n_tokens, pt_error *err) {
    cJSON *tj = NULL, *tcfg = NULL;
    vocab v = {0};
    char path[4096];
    snprintf(path, sizeof path, "%s/tokenizer.model", dir);
    struct stat sb;
    const bool spm = prefer_spm && stat(path, &sb) == 0;
    pt_status st = cv_json_load(dir, "tokenizer.json", !spm, &tj, err);
    if (!st) st = cv_json_load(dir, "tokenizer_config.json", false, &tcfg, err);
    if (!st && spm) {
        st = spm_vocab(dir, tcfg, n_vocab, &v, err);
        if (!st) {
            cv_kv_cstr(kv, "tokenizer.ggml.model", "llama");
            cv_kv_cstr(kv, "tokenizer.ggml.pre", "default");
            vocab_to_kv(kv, &v, true);
            st = special_vocab(kv, tj, tcfg, config, dir, v.n, false, err);
        }
    } else if (!st) {
        const char *pre = cv_pre_name(tj);
        if (!pre) {
            const cJSON *p = cv_json_obj(tj, "pre_tokenizer");
            const char *type = p ? cv_json_str(p, "type") : NULL;
            st = pt_fail(err, PT_ERR_UNSUPPORTED,
                         "%s/tokenizer.json: unrecognised pre-tokenizer (%s): petrel knows those of Llama 3, "
                         "Qwen2, SmolLM and GPT-2", dir, type ? type : "none");
        } else {
            st = bpe_vocab(dir, tj, n_vocab, &v, err);
            if (!st) {
                cv_kv_cstr(kv, "tokenizer.ggml.model", "gpt2");
                cv_kv_cstr(kv, "tokenizer.ggml.pre", pre);
                vocab_to_kv(kv, &v, false);
                st = special_vocab(kv, tj, tcfg, config, dir, 0, true, err);
            }
        }
    }
    if (!st) st = chat_template(kv, tcfg, dir, err);
    *n_tokens = v.n;
    vocab_free(&v);
    cJSON_Delete(tj);
    cJSON_Delete(tcfg);
    if (!st && kv->oom) st = pt_fail(err, PT_ERR_NOMEM, "out of memory");
    return st;
}
