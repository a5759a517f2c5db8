/* probe.c — pt_file_probe_gguf (petrel.h): what a GGUF file is, from its
 * header and tensor table alone, for any architecture (listings). */
#include <stdio.h>
#include <string.h>

#include "model_internal.h"
#include "status.h"

pt_status pt_file_probe_gguf(const char *path, pt_file_probe *out, pt_error *err) {
    memset(out, 0, sizeof *out);
    pt_gguf *g = NULL;
    pt_status st = pt_gguf_open(path, &g, err);
    if (st) return st;
    pt_gguf_str arch = {"", 0};
    pt_gguf_get_str(g, "general.architecture", &arch);
    snprintf(out->arch, sizeof out->arch, "%.*s", (int)(arch.len < 31 ? arch.len : 31), arch.ptr);
    snprintf(out->ftype, sizeof out->ftype, "%s", pt_model_dominant_type(g));
    /* petrel's image GGUFs (engine/diffusion) carry a UNet: arch "sd" or
     * the sd.* keys */
    pt_gguf_str s;
    bool image = !strcmp(out->arch, "sd") || pt_gguf_get_str(g, "sd.family", &s);
    out->kind = image ? PT_MODEL_KIND_IMAGE : PT_MODEL_KIND_LLM;
    out->adapter = pt_gguf_get_str(g, "general.type", &s) && pt_gguf_str_eq(s, "adapter");
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const pt_gguf_tensor *t = &g->tensors[i];
        out->n_params += t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
    }
    pt_gguf_close(g);
    return PT_OK;
}
