/*
 * main.c — petrel's entry point: picks the subcommand, or opens the
 * full-screen app when there is none.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "catalog.h"
#include "commands.h"
#include "device_opt.h"
#include "kv_args.h"
#include "paths.h"
#include "pull_entry.h"
#include "run_options.h"
#ifdef PETREL_HAVE_UI
#include "graphics/graphics.h"
#include "ui.h"
#endif

static void usage(FILE *f) {
    fputs("usage: petrel [-m MODEL] [options]  open the chat app\n"
          "       petrel demo [-m MODEL]       the app cycling scripted prompts (throughput demo)\n"
          "       petrel COMMAND [options]\n"
          "commands:\n"
          "  run        generate text from a prompt (streams to stdout)\n"
          "  chat       line-oriented chat (--plain) for pipes and dumb terminals\n"
          "  tokenize   print the token ids of a text\n"
          "  info       describe a GGUF model\n"
          "  bench      measure prefill and decode speed (llama-bench compatible)\n"
          "  imagine    generate an image from a prompt (PNG)\n"
          "  show       draw PNG/JPEG files in the terminal (sixel, kitty, iTerm2, characters)\n"
          "  pull       download a model: a catalog NAME, hf://ORG/REPO/FILE, ms://..., a URL\n"
          "  list       the downloaded models (size, type, quantization, last used)\n"
          "  rm         delete a downloaded model\n"
          "  quantize   write a GGUF's tensors in another type (like llama-quantize)\n"
          "  convert    turn a Hugging Face model folder or an SD checkpoint into a GGUF\n"
          "  export-lora merge LoRA adapters into a copy of a model (like llama-export-lora)\n"
          "  perplexity perplexity and KL divergence on a text (like llama-perplexity)\n"
          "app options:\n"
          "  -m, --model PATH|NAME   -t, --threads N   -c, --ctx-size N   -n, --n-predict N\n"
          "  --color auto|256|16|8|mono   --no-mouse   --demo\n"
          "  --graphics auto|sixel|kitty|iterm2|symbols|none  (or PETREL_GRAPHICS)\n"
          "  --image-model PATH  the studio's image model (default: the bundled demo model)\n"
          "  --lora PATH[:SCALE]  a LoRA adapter active from the start (repeat to stack; /lora in the chat)\n"
          "  --kv-type f32|f16|q8|q8f8   --kv-ram MB   --kv-spill-dir DIR  (the KV cache, as for run)\n"
          "  --kv-qk auto|float|int8     (Q.K of q8 / q8f8 keys, as for run)\n"
          "  --device cpu|opencl[:N]  where the chat's model runs (as for run; the title bar names it)\n"
          "options:\n"
          "  -h, --help     this help; COMMAND --help for a command's options\n"
          "  --version      print the version\n", f);
}

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
} command;

static const command COMMANDS[] = {
    {"run", cmd_run},
    {"chat", cmd_chat},
    {"tokenize", cmd_tokenize},
    {"info", cmd_info},
    {"bench", cmd_bench},
    {"imagine", cmd_imagine},
    {"show", cmd_show},
    {"pull", cmd_pull},
    {"list", cmd_list},
    {"rm", cmd_rm},
    {"quantize", cmd_quantize},
    {"convert", cmd_convert},
    {"export-lora", cmd_export_lora},
    {"perplexity", cmd_perplexity},
};

/* No subcommand: the full-screen app (or, in a build without it, the
 * line-oriented chat). */
static int open_app(int argc, char **argv, bool demo) {
#ifdef PETREL_HAVE_UI
    pt_ui_options o = {.demo = demo};
    char data_dir[4096], why[512];
    if (!pt_app_data_dir(data_dir, sizeof data_dir, why, sizeof why)) {
        app_error("%s", why);
        return 1;
    }
    o.data_dir = data_dir;
    run_loras loras = {0};   /* --lora: its strings live while the app runs */
    kv_args kv;              /* --kv-type, --kv-ram, --kv-spill-dir, --kv-qk: into kv_cp, then o */
    kv_args_init(&kv);
    app_device dev;          /* --device: its cache path lives while the app runs */
    app_device_init(&dev);
    pt_context_params kv_cp = pt_context_default_params();
    int kv_rc;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            if (!(o.model_path = arg_value(argc, argv, &i))) return 2;
        } else if (!strcmp(a, "--demo")) {
            o.demo = true;
        } else if (!strcmp(a, "--no-mouse")) {
            o.no_mouse = true;
        } else if (!strcmp(a, "--color")) {
            if (!(o.color = arg_value(argc, argv, &i))) return 2;
        } else if (!strcmp(a, "--graphics")) {
            pt_gfx_proto p;
            if (!(o.graphics = arg_value(argc, argv, &i))) return 2;
            if (!pt_gfx_parse(o.graphics, &p)) {
                app_error("--graphics wants auto, sixel, kitty, iterm2, symbols or none, not '%s'", o.graphics);
                return 2;
            }
        } else if (!strcmp(a, "--image-model")) {
            if (!(o.image_model = arg_value(argc, argv, &i))) return 2;
        } else if (!strcmp(a, "--lora")) {
            if (run_loras_add(&loras, arg_value(argc, argv, &i)) < 0) return 2;
        } else if (!strcmp(a, "--device")) {
            if (app_device_parse(&dev, arg_value(argc, argv, &i)) < 0) return 2;
        } else if ((kv_rc = kv_args_parse(&kv, &kv_cp, argc, argv, &i, false)) != 0) {
            if (kv_rc < 0) return 2;
        } else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
            if (!(v = arg_value(argc, argv, &i)) || !arg_int(v, 0, 1024, &o.n_threads)) goto bad_number;
        } else if (!strcmp(a, "-c") || !strcmp(a, "--ctx-size")) {
            if (!(v = arg_value(argc, argv, &i)) || !arg_int(v, 0, 1 << 22, &o.n_ctx)) goto bad_number;
        } else if (!strcmp(a, "-n") || !strcmp(a, "--n-predict")) {
            if (!(v = arg_value(argc, argv, &i)) || !arg_int(v, 0, 1 << 24, &o.n_predict)) goto bad_number;
        } else {
            app_error("unknown option '%s' (see petrel --help)", a);
            return 2;
        }
        continue;
    bad_number:
        if (v) app_error("%s wants a non-negative whole number, not '%s'", a, v);
        return 2;
    }
    /* -m takes a catalog ID or a pulled file's name too (catalog.h) */
    char model[4096];
    if (o.model_path && !(o.model_path = app_resolve_model(o.model_path, PT_MODEL_KIND_LLM, model, sizeof model)))
        return 1;
    /* the studio's image model: --image-model, else the bundled demo
     * model, found as `petrel imagine` finds it (paths.h) */
    char img_path[4096], img_why[1024];
    if (o.image_model &&
        !(o.image_model = app_resolve_model(o.image_model, PT_MODEL_KIND_IMAGE, img_path, sizeof img_path)))
        return 1;
    if (!o.image_model) {
        if (pt_app_default_image_model(img_path, sizeof img_path, img_why, sizeof img_why)) {
            o.image_model = img_path;
        } else {
            char *nl = strchr(img_why, '\n');
            if (nl) *nl = 0;
            o.image_model_why = img_why;
        }
    }
    /* the Models screen's catalog; a bad models.toml is the screen's
     * one-line note, not a reason to refuse the app */
    pt_error cat_err = {0};
    pt_catalog *catalog = app_catalog_open(&cat_err);
    if (!catalog) o.catalog_why = cat_err.msg;   /* the UI escapes it */
    o.catalog = catalog;
    o.pull = app_pull_entry;
    o.kv_type = (int)kv_cp.kv_type;
    o.kv_ram_mb = kv_cp.kv_ram_mb;
    o.kv_qk = (int)kv_cp.kv_qk;
    o.kv_spill_dir = kv_cp.kv_spill_dir;
    /* --device: what app_device_params sets, passed on as plain values (ui.h) */
    pt_model_params dev_mp = pt_model_default_params();
    app_device_params(&dev, &dev_mp);
    o.backend = dev_mp.backend;
    o.device = dev_mp.device;
    o.device_cache = dev_mp.device_cache;
    o.n_loras = loras.n;
    o.lora_paths = loras.path;
    o.lora_scales = loras.scale;
    int rc = pt_ui_run(&o);
    pt_catalog_free(catalog);
    return rc;
#else
    (void)demo;
    argv[0] = "chat";
    return cmd_chat(argc, argv);
#endif
}

static int dispatch(int argc, char **argv) {
    if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        usage(stdout);
        return 0;
    }
    if (argc > 1 && !strcmp(argv[1], "--version")) {
        printf("petrel %s\n", PETREL_VERSION_STRING);
        return 0;
    }
    if (argc == 1 || argv[1][0] == '-') return open_app(argc, argv, false);
    if (!strcmp(argv[1], "demo")) return open_app(argc - 1, argv + 1, true);
    for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++)
        if (!strcmp(argv[1], COMMANDS[i].name)) return COMMANDS[i].run(argc - 1, argv + 1);
    app_error("unknown command '%s' (see petrel --help)", argv[1]);
    return 2;
}

/* Every command's output is checked here, once, at exit: a write that
 * failed earlier (ferror), or the final flush or close (a full disk shows up
 * only when the buffer is written). One line, exit status 1 (the command's
 * own non-zero status is kept). A closed pipe (`| head -c1`) normally ends
 * petrel by SIGPIPE, silently, like cat; when SIGPIPE is ignored the EPIPE
 * is reported here like any other write error. */
static int close_stdout(int rc) {
    errno = 0;
    bool failed = ferror(stdout) != 0;
    if (fflush(stdout) != 0) failed = true;
    int why = errno;
    if (fclose(stdout) != 0 && !failed) {
        failed = true;
        why = errno;
    }
    if (!failed) return rc;
    if (why) app_error("write error on standard output: %s", strerror(why));
    else app_error("write error on standard output");
    return rc ? rc : 1;
}

int main(int argc, char **argv) {
    return close_stdout(dispatch(argc, argv));
}
