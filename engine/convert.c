/*
 * convert.c — pt_convert_file (petrel.h): picks the converter by what IN
 * is (a diffusers folder or a single file: an image model, convert_sd.c;
 * a PEFT adapter folder: a LoRA adapter, lora_convert.c; another folder:
 * a Hugging Face LLM, convert_hf.c) and the path by the
 * output type (f32 / f16 / bf16 / q8_0 written directly; the other
 * quantized types through a float file and pt_quantize_file).
 */
#include "convert_internal.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lora.h"
#include "quant.h"
#include "quantize_policy.h"
#include "status.h"

pt_convert_params pt_convert_default_params(void) {
    return (pt_convert_params){.size = sizeof(pt_convert_params)};
}

/* --outtype: f32 / f16 / bf16 / q8_0 are written directly (as the
 * converter does); the other quantized types through a float file and
 * pt_quantize_file. */
static bool direct_outtype(const char *t, uint32_t *type, uint32_t *ftype) {
    if (!strcasecmp(t, "f32")) *type = PT_TYPE_F32, *ftype = 0;
    else if (!strcasecmp(t, "f16")) *type = PT_TYPE_F16, *ftype = 1;
    else if (!strcasecmp(t, "bf16")) *type = PT_TYPE_BF16, *ftype = 32;
    else if (!strcasecmp(t, "q8_0")) *type = PT_TYPE_Q8_0, *ftype = 7;
    else return false;
    return true;
}
pt_status pt_convert_file(const char *in, const char *out, const pt_convert_params *params,
                          pt_convert_result *result, pt_error *err) {
    pt_convert_result scratch;
    pt_convert_result *res = result ? result : &scratch;
    memset(res, 0, sizeof *res);
    pt_convert_params p = pt_convert_default_params();
    if (pt_params_overlay(&p, sizeof p, params, "pt_convert_params", err)) return PT_ERR_ARG;
    if (!in || !*in || !out || !*out) return pt_fail(err, PT_ERR_ARG, "convert: no input or output given");
    const char *outtype = p.outtype && *p.outtype ? p.outtype : "f16";
    struct stat sb, so;
    if (stat(in, &sb) != 0) return pt_fail(err, PT_ERR_IO, "%s: no such file or folder", in);
    /* writing OUT (through OUT.tmp) must not replace the file being read */
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", out);
    if ((stat(out, &so) == 0 && so.st_dev == sb.st_dev && so.st_ino == sb.st_ino) ||
        (stat(tmp, &so) == 0 && so.st_dev == sb.st_dev && so.st_ino == sb.st_ino))
        return pt_fail(err, PT_ERR_ARG, "convert: %s is the input", out);
    /* a folder with adapter_config.json is a PEFT LoRA adapter */
    char probe[4096];
    snprintf(probe, sizeof probe, "%s/adapter_config.json", in);
    if (S_ISDIR(sb.st_mode) && stat(probe, &so) == 0) return pt_lora_convert(in, out, &p, res, err);
    /* a single file or a diffusers folder (model_index.json) is an image model */
    snprintf(probe, sizeof probe, "%s/model_index.json", in);
    if (!S_ISDIR(sb.st_mode) || stat(probe, &sb) == 0) return pt_convert_sd(in, out, &p, res, err);

    uint32_t type, ftype, qtype;
    if (direct_outtype(outtype, &type, &ftype)) return cv_convert_hf(in, out, &p, type, ftype, res, err);
    if (!pt_qtype_parse(outtype, &qtype, NULL))
        return pt_fail(err, PT_ERR_ARG, "unknown output type '%s' (f32, f16, bf16, q8_0, or a petrel quantize type)",
                       outtype);
    /* a float file first (OUT.convert, itself written through OUT.convert.tmp),
     * then llama-quantize's choices from it; the intermediate is removed */
    char mid[4096];
    if (snprintf(mid, sizeof mid, "%s.convert", out) >= (int)sizeof mid)
        return pt_fail(err, PT_ERR_ARG, "convert: output path too long");
    pt_status st = cv_hf_source_type(in, &type, err);
    ftype = type == PT_TYPE_F32 ? 0 : type == PT_TYPE_F16 ? 1 : 32;
    if (!st) st = cv_convert_hf(in, mid, &p, type, ftype, res, err);
    if (st) return st;
    pt_quantize_params q = pt_quantize_default_params();
    q.type = outtype;
    q.n_threads = p.n_threads;
    q.cancel = p.cancel;
    pt_quantize_result qr;
    st = pt_quantize_file(mid, out, &q, &qr, err);
    unlink(mid);
    if (!st) res->out_file_bytes = qr.out_file_bytes;
    return st;
}
