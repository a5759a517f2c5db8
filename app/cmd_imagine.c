/*
 * cmd_imagine.c — `petrel imagine`: a prompt in, a PNG out.
 * The PNG carries the generation parameters in a "parameters" text chunk
 * in the A1111 format other SD tools read, and appears under its name only
 * once it is whole (png_out.h). Progress (step/total, it/s, ETA) goes to
 * stderr when it is a terminal, timings at the end. Ctrl-C cancels between
 * steps: no file is left, exit 130.
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device_opt.h"
#include "args.h"
#include "catalog.h"
#include "commands.h"
#include "paths.h"
#include "graphics/png_out.h"
#include "picture_out.h"
#include "sigbus.h"

/* Set by SIGINT; the only state a signal handler can share with the app. */
static atomic_bool g_interrupted;

static void on_sigint(int sig) {
    (void)sig;
    atomic_store(&g_interrupted, true);
}

static void usage(FILE *f) {
    fputs("usage: petrel imagine -p PROMPT [-m MODEL] [options] -o OUT.png\n"
          "Generate an image from PROMPT with a Stable Diffusion model and write it as PNG.\n"
          "  -m, --model PATH      diffusers folder, single-file .safetensors or image GGUF\n"
          "                        (default: the bundled demo image model, assets/demo-sd)\n"
          "  -p, --prompt TEXT     what to draw\n"
          "      --negative TEXT   what not to draw (default: empty)\n"
          "  -o, --output PATH     the PNG to write\n"
          "      --steps N         sampler steps, 1..1000 (default: the model's, else 20)\n"
          "      --cfg F           guidance scale, 0..100 (default: the model's, else 7.5;\n"
          "                        <= 1: no guidance)\n"
          "  -s, --seed N          seed (default 42): the same seed gives the same pixels\n"
          "  -W, --width N         width, a multiple of 64 in 64..2048 (default: the model's)\n"
          "  -H, --height N        height, the same\n"
          "      --sampler NAME    euler, euler_a, dpmpp_2m, ddim or lcm (default: the model's,\n"
          "                        else euler)\n"
          "      --clip-skip N     1: last CLIP layer, 2: penultimate (default: the model's)\n"
          "      --taesd PATH      decode with this TAESD decoder (fast, approximate)\n"
          "      --tokenizer DIR   vocab.json + merges.txt for a file without a tokenizer\n"
          "      --weights TYPE    auto (as stored), f16, q8_0 or q4_0 (default auto)\n"
          "  -t, --threads N       threads (default: all cores)\n"
          "      --device DEV      where the UNet and VAE run: cpu (default), opencl or opencl:N\n"
          "                        (the text encoder and TAESD run on the CPU); without a usable\n"
          "                        OpenCL device it runs on the CPU, saying why\n"
          "      --show            draw the image in the terminal once it is saved\n"
          "                        (as `petrel show`: nothing when stdout is not a terminal)\n"
          "      --graphics MODE   how --show draws: auto, kitty, iterm2, sixel, symbols, none\n"
          "                        (default: PETREL_GRAPHICS, else auto)\n"
          "  -h, --help            this help\n", f);
}

typedef struct imagine_options {
    const char *model, *output, *taesd, *tokenizer, *weights;
    int n_threads;
    bool show;                  /* --show: draw it in the terminal after saving */
    pt_gfx_proto graphics;      /* --graphics / PETREL_GRAPHICS */
    bool set_sampler, set_steps, set_cfg; /* given: else the model's defaults */
    pt_image_params ip;
    app_device device;          /* --device: where the UNet runs */
} imagine_options;

/* An integer option's value v (NULL: missing, already reported) in
 * [lo, hi]; false after printing the error. */
static bool int_opt(const char *name, const char *v, long lo, long hi, int *out) {
    if (!v) return false;
    if (arg_int(v, lo, hi, out)) return true;
    app_error("%s wants a whole number in [%ld, %ld], not '%s'", name, lo, hi, v);
    return false;
}

/* Parse argv into o; 0, or the exit status (error printed; -1: help shown). */
static int parse(imagine_options *o, int argc, char **argv) {
    const char *graphics = NULL;
    o->ip = pt_image_default_params();
    o->ip.seed = 42;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return -1;
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            if (!(o->model = arg_value(argc, argv, &i))) return 2;
        } else if (!strcmp(a, "-p") || !strcmp(a, "--prompt")) {
            if (!(o->ip.prompt = arg_value(argc, argv, &i))) return 2;
        } else if (!strcmp(a, "--negative")) {
            if (!(o->ip.negative = arg_value(argc, argv, &i))) return 2;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!(o->output = arg_value(argc, argv, &i))) return 2;
        } else if (!strcmp(a, "--taesd")) {
            if (!(o->taesd = arg_value(argc, argv, &i))) return 2;
            o->ip.use_taesd = true;
        } else if (!strcmp(a, "--show")) {
            o->show = true;
        } else if (!strcmp(a, "--device")) {
            if (app_device_parse(&o->device, arg_value(argc, argv, &i)) < 0) return 2;
        } else if (!strcmp(a, "--graphics")) {
            if (!(graphics = arg_value(argc, argv, &i))) return 2;
        } else if (!strcmp(a, "--tokenizer")) {
            if (!(o->tokenizer = arg_value(argc, argv, &i))) return 2;
        } else if (!strcmp(a, "--weights")) {
            if (!(v = o->weights = arg_value(argc, argv, &i))) return 2;
            if (strcmp(v, "auto") && strcmp(v, "f16") && strcmp(v, "q8_0") && strcmp(v, "q4_0")) {
                app_error("--weights wants auto, f16, q8_0 or q4_0, not '%s'", v);
                return 2;
            }
        } else if (!strcmp(a, "--sampler")) {
            if (!(v = arg_value(argc, argv, &i))) return 2;
            o->set_sampler = true;
            if (!pt_image_sampler_parse(v, &o->ip.sampler)) {
                app_error("unknown sampler '%s' (euler, euler_a, dpmpp_2m, ddim, lcm)", v);
                return 2;
            }
        } else if (!strcmp(a, "--steps")) {
            o->set_steps = true;
            if (!int_opt(a, arg_value(argc, argv, &i), 1, 1000, &o->ip.steps)) return 2;
        } else if (!strcmp(a, "--clip-skip")) {
            if (!int_opt(a, arg_value(argc, argv, &i), 1, 64, &o->ip.clip_skip)) return 2;
        } else if (!strcmp(a, "-W") || !strcmp(a, "--width") || !strcmp(a, "-H") ||
                   !strcmp(a, "--height")) {
            const bool width = !strcmp(a, "-W") || !strcmp(a, "--width");
            int *side = width ? &o->ip.width : &o->ip.height;
            if (!(v = arg_value(argc, argv, &i))) return 2;
            if (!arg_int(v, PT_IMAGE_MIN_SIZE, PT_IMAGE_MAX_SIZE, side) || *side % 64) {
                app_error("%s wants a multiple of 64 in %d..%d, not '%s'", a, PT_IMAGE_MIN_SIZE,
                          PT_IMAGE_MAX_SIZE, v);
                return 2;
            }
        } else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
            if (!int_opt(a, arg_value(argc, argv, &i), 0, 1024, &o->n_threads)) return 2;
        } else if (!strcmp(a, "--cfg")) {
            o->set_cfg = true;
            if (!(v = arg_value(argc, argv, &i))) return 2;
            if (!arg_float(v, 0, 100, &o->ip.cfg)) {
                app_error("--cfg wants a number in [0, 100], not '%s'", v);
                return 2;
            }
        } else if (!strcmp(a, "-s") || !strcmp(a, "--seed")) {
            if (!(v = arg_value(argc, argv, &i))) return 2;
            if (!arg_u64(v, &o->ip.seed)) {
                app_error("%s wants a non-negative whole number, not '%s'", a, v);
                return 2;
            }
        } else {
            app_error("imagine: unknown option '%s' (see petrel imagine --help)", a);
            return 2;
        }
    }
    char why[512];
    if (!pt_gfx_requested(graphics, &o->graphics, why, sizeof why)) {
        app_error("imagine: %s", why);
        return 2;
    }
    if (!o->ip.prompt) {
        app_error("imagine: no prompt given (-p TEXT)");
        return 2;
    }
    if (!o->output || !*o->output) {
        app_error("imagine: no output file given (-o OUT.png)");
        return 2;
    }
    return 0;
}

/* ---- progress ---------------------------------------------------------- */

typedef struct progress_state {
    bool tty;      /* stderr is a terminal: draw the line */
    bool drawn;    /* a line is on screen (end it before other output) */
} progress_state;

static void on_progress(void *user, const pt_image_progress *p) {
    progress_state *s = user;
    if (!s->tty) return;
    const double rate = p->elapsed > 0 ? p->step / p->elapsed : 0;
    const double eta = rate > 0 ? (p->total - p->step) / rate : 0;
    /* slow steps (big images on a phone) read better as seconds per step */
    if (rate >= 1 || rate <= 0)
        fprintf(stderr, "\r\033[Kstep %d/%d  %.2f it/s  ETA %d:%02d", p->step, p->total, rate,
                (int)eta / 60, (int)eta % 60);
    else
        fprintf(stderr, "\r\033[Kstep %d/%d  %.2f s/it  ETA %d:%02d", p->step, p->total, 1 / rate,
                (int)eta / 60, (int)eta % 60);
    fflush(stderr);
    s->drawn = true;
}

static void progress_end(progress_state *s) {
    if (s->drawn) fputc('\n', stderr);
    s->drawn = false;
}

/* ---- the PNG's parameters ---------------------------------------------- */

/* The model's name for the parameters: the last path component, without
 * a .safetensors / .gguf / .ckpt extension. */
static void model_name(const char *path, char *buf, size_t cap) {
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--;
    size_t start = n;
    while (start > 0 && path[start - 1] != '/') start--;
    size_t len = n - start;
    static const char *const EXT[] = {".safetensors", ".gguf", ".ckpt"};
    for (size_t e = 0; e < sizeof EXT / sizeof EXT[0]; e++) {
        size_t el = strlen(EXT[e]);
        if (len > el && !strncmp(path + start + len - el, EXT[e], el)) len -= el;
    }
    snprintf(buf, cap, "%.*s", (int)len, path + start);
}

/* A1111's "parameters" text: prompt, negative prompt line (when not
 * empty), then the settings line. malloc'd. */
static char *parameters_text(const imagine_options *o, const pt_image_params *ip, const char *model) {
    char name[256], settings[640];
    model_name(model, name, sizeof name);
    int n = snprintf(settings, sizeof settings,
                     "Steps: %d, Sampler: %s, CFG scale: %g, Seed: %llu, Size: %dx%d, Model: %s",
                     ip->steps, pt_image_sampler_title(ip->sampler), (double)ip->cfg,
                     (unsigned long long)ip->seed, ip->width, ip->height, name);
    if (ip->clip_skip > 1 && n > 0 && (size_t)n < sizeof settings)
        snprintf(settings + n, sizeof settings - (size_t)n, ", Clip skip: %d", ip->clip_skip);
    const char *neg = ip->negative ? ip->negative : "";
    size_t cap = strlen(ip->prompt) + strlen(neg) + strlen(settings) + 32;
    char *text = malloc(cap);
    if (!text) return NULL;
    if (*neg) snprintf(text, cap, "%s\nNegative prompt: %s\n%s", ip->prompt, neg, settings);
    else snprintf(text, cap, "%s\n%s", ip->prompt, settings);
    (void)o;
    return text;
}

static void print_stats(const pt_image_model *m) {
    pt_image_stats st;
    pt_image_get_stats(m, &st);
    pt_image_model_info info;
    pt_image_model_get_info(m, &info);
    fprintf(stderr, "unet: %s%s\n", strcmp(info.device, "CPU") ? "OpenCL: " : "", info.device);
    fprintf(stderr, "text: %.3f s\n", st.text_seconds);
    fprintf(stderr, "sample: %d steps in %.3f s (%.3f s/step)\n", st.n_steps, st.sample_seconds,
            st.n_steps ? st.sample_seconds / st.n_steps : 0.0);
    fprintf(stderr, "decode: %.3f s (%s)\n", st.decode_seconds, st.decoded_with_taesd ? "taesd" : "vae");
    uint64_t peak = 0;
    for (int s = 0; s < PT_IMAGE_STAGE_COUNT; s++)
        if (st.peak_bytes[s] > peak) peak = st.peak_bytes[s];
    fprintf(stderr, "memory: peak %.1f MiB (load %.1f, text %.1f, sample %.1f, decode %.1f)\n",
            peak / 1048576.0, st.peak_bytes[PT_IMAGE_STAGE_LOAD] / 1048576.0,
            st.peak_bytes[PT_IMAGE_STAGE_TEXT] / 1048576.0,
            st.peak_bytes[PT_IMAGE_STAGE_SAMPLE] / 1048576.0,
            st.peak_bytes[PT_IMAGE_STAGE_DECODE] / 1048576.0);
}

/* ---- the command ------------------------------------------------------- */

/* --show: the saved image drawn below the cursor (after the stats, which
 * went to stderr: a terminal shows them above the picture). */
static void show_image(const imagine_options *o, const pt_image *img) {
    pt_term_caps caps;
    picture_probe(o->graphics, false, &caps);
    if (o->graphics == PT_GFX_AUTO && !isatty(STDOUT_FILENO)) {
        app_error("imagine: standard output is not a terminal: --show draws nothing "
                  "(--graphics MODE draws anyway)");
        return;
    }
    const pt_gfx_image pic = {.rgb = img->pixels, .w = img->width, .h = img->height,
                              .stride = (int)img->stride};
    if (!picture_print(&caps, &pic, stdout)) app_error("imagine: out of memory drawing the image");
}

/* No -m: the bundled demo image model (paths.h says where it is looked
 * for); 0, or 1 after the error. */
static int default_model(char *buf, size_t cap) {
    char why[1024];
    if (pt_app_default_image_model(buf, cap, why, sizeof why)) return 0;
    app_error("imagine: no model given (-m PATH), and the default image model is not in %s "
              "(set PETREL_ASSETS to the assets/ folder of a petrel checkout)", why);
    return 1;
}

int cmd_imagine(int argc, char **argv) {
    imagine_options o = {0};
    int rc = parse(&o, argc, argv);
    if (rc) return rc < 0 ? 0 : rc;
    char default_path[4096], model_path[4096], taesd_path[4096];
    if (!o.model) {
        if (default_model(default_path, sizeof default_path)) return 1;
        o.model = default_path;
    } else if (!(o.model = app_resolve_model(o.model, PT_MODEL_KIND_IMAGE, model_path, sizeof model_path))) {
        return 1;
    }
    /* --taesd takes a catalog name too (petrel pull taesd) */
    if (o.taesd && !(o.taesd = app_resolve_model(o.taesd, PT_MODEL_KIND_IMAGE, taesd_path, sizeof taesd_path)))
        return 1;

    pt_error err = {0};
    pt_threadpool *pool = NULL;
    pt_image_model *m = NULL;
    pt_image img = {0};
    unsigned char *png = NULL;
    char *text = NULL;
    size_t png_len = 0;
    progress_state prog = {.tty = isatty(STDERR_FILENO) == 1};

    app_catch_sigbus(o.model);
    if (pt_threadpool_new(o.n_threads, &pool, &err) != PT_OK) return app_fail(&err);
    pt_image_model_params mp = pt_image_model_default_params();
    mp.cpu = getenv("PETREL_CPU");
    mp.threadpool = pool;
    mp.weights = o.weights;
    mp.taesd_path = o.taesd;
    mp.tokenizer_path = o.tokenizer;
    mp.backend = o.device.backend;
    mp.device = o.device.index;
    mp.device_cache = o.device.cache[0] ? o.device.cache : NULL;
    if (pt_image_model_load(o.model, &mp, &m, &err) != PT_OK) {
        rc = app_fail(&err);
        goto done;
    }
    pt_image_model_info info;
    pt_image_model_get_info(m, &info);
    if (info.device_note[0])
        fprintf(stderr, "petrel: OpenCL unavailable (%s): running on the CPU\n", info.device_note);
    pt_image_params ip = o.ip;
    if (!ip.width) ip.width = info.default_width;
    if (!ip.height) ip.height = info.default_height;
    if (!o.set_sampler) ip.sampler = info.default_sampler;
    if (!o.set_steps) ip.steps = info.default_steps;
    if (!o.set_cfg) ip.cfg = info.default_cfg;
    ip.progress = on_progress;
    ip.progress_user = &prog;
    ip.cancel = &g_interrupted;

    struct sigaction sa = {.sa_handler = on_sigint};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    pt_status st = pt_image_generate(m, &ip, &img, &err);
    progress_end(&prog);
    if (st == PT_ERR_CANCELLED) {
        rc = 130;
        goto done;
    }
    if (st != PT_OK) {
        rc = app_fail(&err);
        goto done;
    }
    text = parameters_text(&o, &ip, o.model);
    if (!text || !png_encode(&img, "parameters", text, &png, &png_len)) {
        app_error("imagine: out of memory encoding the PNG");
        rc = 1;
        goto done;
    }
    char why[640];
    bool cancelled = false;
    if (!write_file_atomic(o.output, png, png_len, &g_interrupted, &cancelled, why, sizeof why)) {
        if (cancelled) {
            rc = 130;
            goto done;
        }
        app_error("%s", why);
        rc = 1;
        goto done;
    }
    print_stats(m);
    rc = 0;
    if (o.show) show_image(&o, &img);
done:
    signal(SIGINT, SIG_DFL);
    free(png);
    free(text);
    pt_image_free(&img);
    pt_image_model_free(m);
    pt_threadpool_free(pool); /* after the model that runs on it */
    return rc;
}
