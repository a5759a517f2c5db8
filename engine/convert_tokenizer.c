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
 * the rest NORMAL. Merges, special ids, add_* flags and the chat template
 * come after, from convert_special.c (gguf-py's SpecialVocab).
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

bool cv_json_is_type(const cJSON *o, const char *type) {
    const char *t = cv_json_str(o, "type");
    return t && !strcmp(t, type);
}

static bool byte_level_with_regex(const cJSON *o) {
    bool use_regex = true; /* the library's default */
    cv_json_bool(o, "use_regex", &use_regex);
    return cv_json_is_type(o, "ByteLevel") && use_regex;
}

const char *cv_pre_name(const cJSON *tj) {
    const cJSON *pre = cv_json_obj(tj, "pre_tokenizer");
    if (!pre) return NULL;
    if (byte_level_with_regex(pre)) return "gpt-2";
    const cJSON *seq = cv_json_is_type(pre, "Sequence") ? cv_json_arr(pre, "pretokenizers") : NULL;
    const int n = seq ? cJSON_GetArraySize(seq) : 0;
    if (n != 2) return NULL;
    const cJSON *a = cJSON_GetArrayItem(seq, 0), *b = cJSON_GetArrayItem(seq, 1);
    if (cv_json_is_type(a, "Split") && cv_json_is_type(b, "ByteLevel") && !byte_level_with_regex(b)) {
        const char *re = cv_json_str(cv_json_obj(a, "pattern"), "Regex");
        if (re && !strcmp(re, RE_LLAMA3)) return "llama-bpe";
        if (re && !strcmp(re, RE_QWEN2)) return "qwen2";
        return NULL;
    }
    bool individual = false;
    if (cv_json_is_type(a, "Digits") && cv_json_bool(a, "individual_digits", &individual) && individual &&
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
    if (!tv || !cv_json_is_type(model, "BPE"))
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
            st = cv_special_vocab(kv, tj, tcfg, config, dir, v.n, false, err);
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
                st = cv_special_vocab(kv, tj, tcfg, config, dir, 0, true, err);
            }
        }
    }
    if (!st) st = cv_chat_template(kv, tcfg, dir, err);
    *n_tokens = v.n;
    vocab_free(&v);
    cJSON_Delete(tj);
    cJSON_Delete(tcfg);
    if (!st && kv->oom) st = pt_fail(err, PT_ERR_NOMEM, "out of memory");
    return st;
}
