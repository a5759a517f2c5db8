/*
 * convert_sd.c — pt_convert_file for Stable Diffusion checkpoints (a
 * single-file LDM .safetensors or a diffusers folder). Not ported to C yet:
 * tools/sd_to_gguf.py writes the "sd" GGUF the image engine reads, and
 * this says so instead of writing a file the engine might misread.
 */
#include "convert_internal.h"

#include "status.h"

pt_status pt_convert_sd(const char *in, const char *out, const pt_convert_params *p, pt_convert_result *res,
                        pt_error *err) {
    (void)out, (void)p, (void)res;
    return pt_fail(err, PT_ERR_UNSUPPORTED,
                   "%s: not a Hugging Face LLM folder; Stable Diffusion checkpoints are converted by "
                   "tools/sd_to_gguf.py for now", in);
}
