/* lora_read.c — reading LoRA adapters: PEFT folders and llama.cpp GGUF
 * adapter files (layouts in lora.h) into an unbound pt_lora. */
#include "lora.h"
#include "matmul.h"

#include "gguf.h"
#include "mapfile.h"
#include "quant.h"
#include "safetensors.h"
#include "status.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#define MAX_RANK 4096            /* far above any real adapter's */
#define MAX_CONFIG (1u << 20)    /* adapter_config.json is about 1 KB */

/* HF module path inside a decoder layer -> llama.cpp's tensor role. */
static const struct {
    const char *hf, *gguf;
} MODULES[] = {
    {"self_attn.q_proj", "attn_q"}, {"self_attn.k_proj", "attn_k"},  {"self_attn.v_proj", "attn_v"},
    {"self_attn.o_proj", "attn_output"}, {"mlp.gate_proj", "ffn_gate"}, {"mlp.up_proj", "ffn_up"},
    {"mlp.down_proj", "ffn_down"},
};

/* One factor as found in a file: a row-major [rows x cols] matrix of a
 * pt_type at possibly unaligned bytes. */
typedef struct factor {
    uint32_t type;
    int64_t rows, cols;
    const void *data;
} factor;

static void lora_clear(pt_lora *l) {
    if (!l) return;
    free(l->raw);
    free(l->mem);
    pt_lora_pairs_free(l->pairs, l->n_pairs);
    free(l);
}

void pt_lora_free(pt_lora *l) { lora_clear(l); }

static void copy_cstr(char *dst, size_t cap, const char *src, size_t len) {
    if (len >= cap) len = cap - 1;
    memcpy(dst, src, len);
    dst[len] = 0;
}

/* Append the role of raw pair i ("attn_q", "output") to l->targets once. */
static void add_target(pt_lora *l, const char *target) {
    const char *role = target;
    if (strncmp(role, "blk.", 4) == 0) {
        const char *dot = strchr(role + 4, '.');
        role = dot ? dot + 1 : role;
    }
    char name[64];
    size_t n = strlen(role);
    if (n > 7 && strcmp(role + n - 7, ".weight") == 0) n -= 7;
    copy_cstr(name, sizeof name, role, n);
    /* already listed? (whole comma-separated items only) */
    const char *p = l->targets;
    while (*p) {
        const size_t len = strcspn(p, ",");
        if (len == strlen(name) && strncmp(p, name, len) == 0) return;
        p += len + (p[len] == ',');
    }
    const size_t used = strlen(l->targets);
    if (used + strlen(name) + 2 < sizeof l->targets)
        snprintf(l->targets + used, sizeof l->targets - used, "%s%s", used ? "," : "", name);
}

/* Validate a pair of factors (A [rank x cols], B [rows x rank]) named for
 * target and note it in raw (its floats are converted later). */
static pt_status check_pair(const char *label, const char *target, const factor *a, const factor *b,
                            pt_lora_raw *raw, pt_error *err) {
    if (a->rows < 1 || a->rows > MAX_RANK || a->cols < 1 || b->rows < 1 || b->cols != a->rows)
        return pt_fail(err, PT_ERR_FORMAT,
                       "%s: LoRA factors of '%s' do not fit: A is %lld x %lld, B is %lld x %lld "
                       "(want A rank x in, B out x rank, rank 1..%d)",
                       label, target, (long long)a->rows, (long long)a->cols, (long long)b->rows,
                       (long long)b->cols, MAX_RANK);
    if (strlen(target) >= sizeof raw->target)
        return pt_fail(err, PT_ERR_FORMAT, "%s: tensor name '%.60s...' is too long", label, target);
    memset(raw, 0, sizeof *raw);
    snprintf(raw->target, sizeof raw->target, "%s", target);
    raw->layer = -1;
    if (strncmp(target, "blk.", 4) == 0) { /* "blk.N." with N a plain decimal below 10^6 */
        long layer = 0;
        const char *p = target + 4;
        while (*p >= '0' && *p <= '9' && layer < 1000000) layer = layer * 10 + (*p++ - '0');
        if (p > target + 4 && *p == '.' && layer < 1000000) raw->layer = (int)layer;
    }
    raw->rank = (int)a->rows;
    raw->cols = a->cols;
    raw->rows = b->rows;
    return PT_OK;
}

/* Convert every factor into one float32 allocation: l->raw[i] gets a and
 * b pointers (fa[i], fb[i] are its factors as stored). */
static pt_status convert_factors(pt_lora *l, const factor *fa, const factor *fb, const char *label,
                                 pt_error *err) {
    uint64_t floats = 0;
    size_t max_row = 0;
    for (int i = 0; i < l->n_pairs; i++) {
        const pt_lora_raw *r = &l->raw[i];
        floats += (uint64_t)r->rank * (uint64_t)(r->rows + r->cols);
        size_t ra = pt_type_row_bytes(fa[i].type, fa[i].cols), rb = pt_type_row_bytes(fb[i].type, fb[i].cols);
        if (ra > max_row) max_row = ra;
        if (rb > max_row) max_row = rb;
    }
    if (floats > SIZE_MAX / sizeof(float) / 2)
        return pt_fail(err, PT_ERR_NOMEM, "%s: adapter too large", label);
    l->mem = malloc(floats ? floats * sizeof(float) : 1);
    void *row = malloc(max_row ? max_row : 1); /* an aligned copy of one stored row */
    if (!l->mem || !row) {
        free(row);
        return pt_fail(err, PT_ERR_NOMEM, "%s: out of memory for the adapter's %llu floats", label,
                       (unsigned long long)floats);
    }
    float *p = l->mem;
    for (int i = 0; i < l->n_pairs; i++) {
        pt_lora_raw *r = &l->raw[i];
        const factor *f[2] = {&fa[i], &fb[i]};
        float *dst[2] = {p, p + (size_t)r->rank * (size_t)r->cols};
        r->a = dst[0];
        r->b = dst[1];
        for (int k = 0; k < 2; k++) {
            const size_t rb = pt_type_row_bytes(f[k]->type, f[k]->cols);
            for (int64_t y = 0; y < f[k]->rows; y++) {
                memcpy(row, (const uint8_t *)f[k]->data + (size_t)y * rb, rb);
                pt_dequant_row(f[k]->type, row, dst[k] + (size_t)y * (size_t)f[k]->cols, f[k]->cols);
            }
        }
        p += (size_t)r->rank * (size_t)(r->rows + r->cols);
    }
    free(row);
    l->bytes = floats * sizeof(float);
    for (int i = 0; i < l->n_pairs; i++) {
        if (l->raw[i].rank > l->rank) l->rank = l->raw[i].rank;
        add_target(l, l->raw[i].target);
    }
    return PT_OK;
}

static bool float_type(uint32_t t) {
    return t == PT_TYPE_F32 || t == PT_TYPE_F16 || t == PT_TYPE_BF16 || t == PT_TYPE_Q8_0;
}

/* ---- PEFT ------------------------------------------------------------------ */

/* GGUF name of the base matrix a PEFT module path adapts ("model.layers.3.
 * self_attn.q_proj" -> "blk.3.attn_q.weight"), or false. *qk: q/k_proj. */
static bool peft_target(const char *module, size_t len, char *out, size_t cap, bool *qk) {
    *qk = false;
    if (len == 7 && strncmp(module, "lm_head", 7) == 0) {
        snprintf(out, cap, "output.weight");
        return true;
    }
    static const char pre[] = "model.layers.";
    if (len <= sizeof pre - 1 || strncmp(module, pre, sizeof pre - 1) != 0) return false;
    const char *p = module + sizeof pre - 1, *end = module + len;
    long layer = 0;
    if (p >= end || *p < '0' || *p > '9') return false;
    while (p < end && *p >= '0' && *p <= '9') {
        layer = layer * 10 + (*p++ - '0');
        if (layer > 1000000) return false;
    }
    if (p >= end || *p++ != '.') return false;
    for (size_t i = 0; i < sizeof MODULES / sizeof MODULES[0]; i++) {
        const size_t n = strlen(MODULES[i].hf);
        if ((size_t)(end - p) == n && strncmp(p, MODULES[i].hf, n) == 0) {
            snprintf(out, cap, "blk.%ld.%s.weight", layer, MODULES[i].gguf);
            *qk = i <= 1;
            return true;
        }
    }
    return false;
}

/* The module path of a PEFT factor name and which factor it is (0: A,
 * 1: B), or -1 when the name is not a LoRA factor. */
static int peft_factor(const char *name, const char **module, size_t *len) {
    static const char pre[] = "base_model.model.";
    static const char *suf[2] = {".lora_A.weight", ".lora_B.weight"};
    const size_t n = strlen(name);
    if (strncmp(name, pre, sizeof pre - 1) != 0) return -1;
    for (int k = 0; k < 2; k++) {
        const size_t s = strlen(suf[k]);
        if (n > sizeof pre - 1 + s && strcmp(name + n - s, suf[k]) == 0) {
            *module = name + sizeof pre - 1;
            *len = n - s - (sizeof pre - 1);
            return k;
        }
    }
    return -1;
}

static factor st_factor(const st_tensor *t) {
    return (factor){st_dtype_pt_type(t->dtype), t->n_dims == 2 ? t->shape[0] : 0,
                    t->n_dims == 2 ? t->shape[1] : 0, t->data};
}

/* The config's settings petrel uses; refuses the variants it does not
 * compute (DoRA, per-module alphas, LoRA biases). */
static pt_status peft_config(pt_lora *l, const char *text, size_t len, const char *label, pt_error *err) {
    cJSON *j = cJSON_ParseWithLength(text, len);
    if (!j || !cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return pt_fail(err, PT_ERR_FORMAT, "%s: adapter_config.json is not a JSON object", label);
    }
    pt_status st = PT_OK;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(j, "peft_type");
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(j, "r");
    const cJSON *alpha = cJSON_GetObjectItemCaseSensitive(j, "lora_alpha");
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(j, "use_rslora");
    const cJSON *dora = cJSON_GetObjectItemCaseSensitive(j, "use_dora");
    const cJSON *bias = cJSON_GetObjectItemCaseSensitive(j, "lora_bias");
    const cJSON *ap = cJSON_GetObjectItemCaseSensitive(j, "alpha_pattern");
    const cJSON *base = cJSON_GetObjectItemCaseSensitive(j, "base_model_name_or_path");
    if (type && !(cJSON_IsString(type) && strcmp(type->valuestring, "LORA") == 0))
        st = pt_fail(err, PT_ERR_UNSUPPORTED, "%s: peft_type is not \"LORA\"", label);
    else if (!cJSON_IsNumber(r) || !(r->valuedouble >= 1 && r->valuedouble <= MAX_RANK))
        st = pt_fail(err, PT_ERR_FORMAT, "%s: adapter_config.json has no rank r in 1..%d", label, MAX_RANK);
    else if (!cJSON_IsNumber(alpha) || !isfinite(alpha->valuedouble) || fabs(alpha->valuedouble) > 1e6)
        st = pt_fail(err, PT_ERR_FORMAT, "%s: adapter_config.json has no finite lora_alpha", label);
    else if (cJSON_IsTrue(dora))
        st = pt_fail(err, PT_ERR_UNSUPPORTED, "%s: DoRA adapters (use_dora) are not supported", label);
    else if (cJSON_IsTrue(bias))
        st = pt_fail(err, PT_ERR_UNSUPPORTED, "%s: LoRA biases (lora_bias) are not supported", label);
    else if (cJSON_IsObject(ap) && ap->child)
        st = pt_fail(err, PT_ERR_UNSUPPORTED, "%s: per-module alphas (alpha_pattern) are not supported", label);
    if (st == PT_OK) {
        l->rank = (int)r->valuedouble;
        l->alpha = (float)alpha->valuedouble;
        l->rslora = cJSON_IsTrue(rs);
        if (cJSON_IsString(base)) copy_cstr(l->base, sizeof l->base, base->valuestring, strlen(base->valuestring));
    }
    cJSON_Delete(j);
    return st;
}

static pt_status peft_read(const char *config, size_t config_len, const st_file *f, const char *label,
                           pt_lora **out, pt_error *err) {
    pt_lora *l = calloc(1, sizeof *l);
    if (!l) return pt_fail(err, PT_ERR_NOMEM, "%s: out of memory", label);
    snprintf(l->format, sizeof l->format, "peft");
    pt_status st = peft_config(l, config, config_len, label, err);
    const int config_rank = l->rank;
    factor *fa = NULL, *fb = NULL;
    if (st == PT_OK && f->n_tensors > (uint64_t)INT32_MAX)
        st = pt_fail(err, PT_ERR_FORMAT, "%s: too many tensors", label);
    if (st == PT_OK) {
        const size_t n = (size_t)f->n_tensors / 2 + 1;
        l->raw = calloc(n, sizeof *l->raw);
        fa = calloc(n, sizeof *fa);
        fb = calloc(n, sizeof *fb);
        if (!l->raw || !fa || !fb) st = pt_fail(err, PT_ERR_NOMEM, "%s: out of memory", label);
    }
    /* tensors are sorted by name: each module's lora_A comes right before its lora_B */
    for (uint64_t i = 0; st == PT_OK && i < f->n_tensors; i++) {
        const st_tensor *t = &f->tensors[i];
        const char *mod, *mod_b;
        size_t len, len_b;
        const int k = peft_factor(t->name, &mod, &len);
        if (k < 0) {
            st = pt_fail(err, PT_ERR_UNSUPPORTED,
                         "%s: tensor '%.80s' is not a LoRA factor (petrel reads lora_A / lora_B only: "
                         "no DoRA, embedding adapters, biases or saved modules)",
                         label, t->name);
            break;
        }
        if (k == 1 || i + 1 >= f->n_tensors || peft_factor(f->tensors[i + 1].name, &mod_b, &len_b) != 1 ||
            len_b != len || strncmp(mod, mod_b, len) != 0) {
            st = pt_fail(err, PT_ERR_FORMAT, "%s: '%.80s' has no matching lora_%s", label, t->name, k ? "A" : "B");
            break;
        }
        char target[64];
        bool qk;
        if (!peft_target(mod, len, target, sizeof target, &qk)) {
            st = pt_fail(err, PT_ERR_UNSUPPORTED,
                         "%s: module '%.*s' is not one petrel can adapt (q/k/v/o_proj, gate/up/down_proj, lm_head)",
                         label, (int)(len > 80 ? 80 : len), mod);
            break;
        }
        const st_tensor *tb = &f->tensors[i + 1];
        fa[l->n_pairs] = st_factor(t);
        fb[l->n_pairs] = st_factor(tb);
        if (!float_type(fa[l->n_pairs].type) || !float_type(fb[l->n_pairs].type)) {
            st = pt_fail(err, PT_ERR_UNSUPPORTED, "%s: '%.80s' is %s (F32, F16 or BF16 wanted)", label, t->name,
                         st_dtype_name(float_type(fa[l->n_pairs].type) ? tb->dtype : t->dtype));
            break;
        }
        st = check_pair(label, target, &fa[l->n_pairs], &fb[l->n_pairs], &l->raw[l->n_pairs], err);
        if (st != PT_OK) break;
        pt_lora_raw *raw = &l->raw[l->n_pairs++];
        raw->hf_qk = qk;
        raw->scale = l->rslora ? l->alpha / sqrtf((float)raw->rank) : l->alpha / (float)raw->rank;
        i++; /* its lora_B */
    }
    if (st == PT_OK && l->n_pairs == 0) st = pt_fail(err, PT_ERR_FORMAT, "%s: the adapter has no LoRA factors", label);
    if (st == PT_OK) st = convert_factors(l, fa, fb, label, err);
    if (st == PT_OK) l->rank = config_rank > l->rank ? config_rank : l->rank;
    free(fa);
    free(fb);
    if (st != PT_OK) {
        lora_clear(l);
        return st;
    }
    *out = l;
    return PT_OK;
}

pt_status pt_lora_read_peft_memory(const char *config, size_t config_len, const void *st_data, uint64_t st_len,
                                   const char *label, pt_lora **out, pt_error *err) {
    *out = NULL;
    st_file *f = NULL;
    pt_status st = st_open_memory(st_data, st_len, label, &f, err);
    if (st != PT_OK) return st;
    st = peft_read(config, config_len, f, label, out, err);
    st_close(f);
    return st;
}

/* ---- GGUF ------------------------------------------------------------------ */

static pt_status gguf_str_is(const pt_gguf *g, const char *key, const char *want, const char *label,
                             pt_error *err) {
    pt_gguf_str s;
    if (!pt_gguf_get_str(g, key, &s) || !pt_gguf_str_eq(s, want))
        return pt_fail(err, PT_ERR_FORMAT, "%s: not a LoRA adapter (%s is not \"%s\")", label, key, want);
    return PT_OK;
}

static factor gguf_factor(const pt_gguf_tensor *t) {
    return (factor){t->type, t->n_dims == 2 ? t->ne[1] : 0, t->n_dims == 2 ? t->ne[0] : 0, t->data};
}

static pt_status gguf_read(const pt_gguf *g, const char *label, pt_lora **out, pt_error *err) {
    pt_status st = gguf_str_is(g, "general.type", "adapter", label, err);
    if (st == PT_OK) st = gguf_str_is(g, "adapter.type", "lora", label, err);
    if (st != PT_OK) return st;
    pt_lora *l = calloc(1, sizeof *l);
    factor *fa = calloc(g->n_tensors / 2 + 1, sizeof *fa), *fb = calloc(g->n_tensors / 2 + 1, sizeof *fb);
    if (l) l->raw = calloc(g->n_tensors / 2 + 1, sizeof *l->raw);
    if (!l || !fa || !fb || !l->raw) {
        free(fa), free(fb), lora_clear(l);
        return pt_fail(err, PT_ERR_NOMEM, "%s: out of memory", label);
    }
    snprintf(l->format, sizeof l->format, "gguf");
    pt_gguf_str s;
    if (pt_gguf_get_str(g, "general.architecture", &s)) copy_cstr(l->arch, sizeof l->arch, s.ptr, (size_t)s.len);
    if (pt_gguf_get_str(g, "general.base_model.0.name", &s)) copy_cstr(l->base, sizeof l->base, s.ptr, (size_t)s.len);
    float alpha = 0.0f;
    if (pt_gguf_find(g, "adapter.lora.alpha") && !pt_gguf_get_f32(g, "adapter.lora.alpha", &alpha))
        st = pt_fail(err, PT_ERR_FORMAT, "%s: adapter.lora.alpha is not a float", label);
    if (!isfinite(alpha)) st = pt_fail(err, PT_ERR_FORMAT, "%s: adapter.lora.alpha is not finite", label);
    l->alpha = alpha;
    uint64_t n_b = 0;
    for (uint64_t i = 0; st == PT_OK && i < g->n_tensors; i++) {
        const pt_gguf_tensor *t = &g->tensors[i];
        const size_t n = (size_t)t->name.len;
        const bool is_a = n > 7 && memcmp(t->name.ptr + n - 7, ".lora_a", 7) == 0;
        const bool is_b = n > 7 && memcmp(t->name.ptr + n - 7, ".lora_b", 7) == 0;
        if (!is_a && !is_b) {
            st = pt_fail(err, PT_ERR_UNSUPPORTED, "%s: tensor '%.*s' is not a LoRA factor (.lora_a / .lora_b)", label,
                         (int)(n > 80 ? 80 : n), t->name.ptr);
            break;
        }
        if (is_b) {
            n_b++;
            continue;
        }
        char target[64], bname[72];
        if (n - 7 >= sizeof target) {
            st = pt_fail(err, PT_ERR_FORMAT, "%s: tensor name '%.60s...' is too long", label, t->name.ptr);
            break;
        }
        copy_cstr(target, sizeof target, t->name.ptr, n - 7);
        snprintf(bname, sizeof bname, "%s.lora_b", target);
        const pt_gguf_tensor *tb = pt_gguf_find_tensor(g, bname);
        if (!tb) {
            st = pt_fail(err, PT_ERR_FORMAT, "%s: '%s.lora_a' has no matching lora_b", label, target);
            break;
        }
        fa[l->n_pairs] = gguf_factor(t);
        fb[l->n_pairs] = gguf_factor(tb);
        if (!float_type(t->type) || !float_type(tb->type)) {
            st = pt_fail(err, PT_ERR_UNSUPPORTED, "%s: factors of '%s' are %s / %s (F32, F16, BF16 or Q8_0 wanted)",
                         label, target, pt_type_name(t->type), pt_type_name(tb->type));
            break;
        }
        st = check_pair(label, target, &fa[l->n_pairs], &fb[l->n_pairs], &l->raw[l->n_pairs], err);
        if (st != PT_OK) break;
        pt_lora_raw *raw = &l->raw[l->n_pairs++];
        raw->scale = alpha != 0.0f ? alpha / (float)raw->rank : 1.0f; /* llama.cpp's rule */
    }
    if (st == PT_OK && n_b != (uint64_t)l->n_pairs)
        st = pt_fail(err, PT_ERR_FORMAT, "%s: %llu lora_b tensors for %d lora_a", label, (unsigned long long)n_b,
                     l->n_pairs);
    if (st == PT_OK && l->n_pairs == 0) st = pt_fail(err, PT_ERR_FORMAT, "%s: the adapter has no LoRA factors", label);
    if (st == PT_OK) st = convert_factors(l, fa, fb, label, err);
    free(fa);
    free(fb);
    if (st != PT_OK) {
        lora_clear(l);
        return st;
    }
    *out = l;
    return PT_OK;
}

pt_status pt_lora_read_gguf_memory(const void *data, uint64_t len, const char *label, pt_lora **out,
                                   pt_error *err) {
    *out = NULL;
    pt_gguf *g = NULL;
    pt_status st = pt_gguf_open_memory(data, len, &g, err);
    if (st != PT_OK) return st;
    st = gguf_read(g, label, out, err);
    pt_gguf_close(g);
    return st;
}

/* ---- files ----------------------------------------------------------------- */

/* Whole small file into a heap buffer. */
static pt_status read_small(const char *path, char **out, size_t *len, pt_error *err) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return pt_fail(err, PT_ERR_IO, "cannot open '%s'", path);
    char *buf = malloc(MAX_CONFIG + 1);
    size_t n = buf ? fread(buf, 1, MAX_CONFIG + 1, fp) : 0;
    const bool bad = ferror(fp);
    fclose(fp);
    if (!buf) return pt_fail(err, PT_ERR_NOMEM, "out of memory reading '%s'", path);
    if (bad || n > MAX_CONFIG) {
        free(buf);
        return pt_fail(err, bad ? PT_ERR_IO : PT_ERR_FORMAT, "'%s': %s", path,
                       bad ? "read error" : "larger than 1 MiB");
    }
    *out = buf;
    *len = n;
    return PT_OK;
}

static pt_status read_peft_dir(const char *dir, pt_lora **out, pt_error *err) {
    char cfg[4096], st_path[4096];
    if (snprintf(cfg, sizeof cfg, "%s/adapter_config.json", dir) >= (int)sizeof cfg ||
        snprintf(st_path, sizeof st_path, "%s/adapter_model.safetensors", dir) >= (int)sizeof st_path)
        return pt_fail(err, PT_ERR_ARG, "adapter path too long");
    struct stat sb;
    if (stat(cfg, &sb) != 0)
        return pt_fail(err, PT_ERR_IO, "'%s' is not a PEFT adapter: no adapter_config.json in it", dir);
    if (stat(st_path, &sb) != 0)
        return pt_fail(err, PT_ERR_IO, "'%s' is not a PEFT adapter: no adapter_model.safetensors in it", dir);
    char *text = NULL;
    size_t len = 0;
    pt_status st = read_small(cfg, &text, &len, err);
    if (st != PT_OK) return st;
    st_file *f = NULL;
    st = st_open(st_path, &f, err);
    if (st == PT_OK) st = peft_read(text, len, f, dir, out, err);
    st_close(f);
    free(text);
    return st;
}

pt_status pt_lora_read(const char *path, pt_lora **out, pt_error *err) {
    *out = NULL;
    if (!path || !*path) return pt_fail(err, PT_ERR_ARG, "no adapter path given");
    struct stat sb;
    if (stat(path, &sb) != 0) return pt_fail(err, PT_ERR_IO, "cannot open adapter '%s'", path);
    if (S_ISDIR(sb.st_mode)) return read_peft_dir(path, out, err);
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (strcmp(base, "adapter_config.json") == 0 || strcmp(base, "adapter_model.safetensors") == 0) {
        char dir[4096];
        const size_t n = (size_t)(base - path);
        if (n >= sizeof dir) return pt_fail(err, PT_ERR_ARG, "adapter path too long");
        if (n == 0) snprintf(dir, sizeof dir, ".");
        else copy_cstr(dir, sizeof dir, path, n - 1 ? n - 1 : 1);
        return read_peft_dir(dir, out, err);
    }
    const uint8_t *map;
    uint64_t size;
    pt_status st = pt_map_file(path, "adapter", &map, &size, err);
    if (st != PT_OK) return st;
    if (size < 4 || memcmp(map, "GGUF", 4) != 0)
        st = pt_fail(err, PT_ERR_FORMAT,
                     "'%s' is not a LoRA adapter (a GGUF adapter file or a PEFT folder with adapter_config.json)",
                     path);
    else
        st = pt_lora_read_gguf_memory(map, size, path, out, err);
    munmap((void *)map, size);
    return st;
}
