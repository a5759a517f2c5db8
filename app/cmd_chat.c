/*
 * cmd_chat.c — `petrel chat [--plain]`: a line-oriented chat for dumb
 * terminals, serial consoles and pipes. Same engine session, same slash
 * commands and the same saved-chat files as the full-screen app (the
 * shared pieces live in ui/: session.c, slash.c, convo.c, models.c).
 *
 * Input is read a line at a time from stdin; a line ending in '\' goes on
 * to the next one. The reply streams to stdout as it is generated; Ctrl-C
 * stops a reply (and quits when no reply is running); end of input quits.
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "sigbus.h"
#include "commands.h"
#include "convo.h"
#include "meter.h"
#include "models.h"
#include "paths.h"
#include "run_options.h"
#include "session.h"
#include "slash.h"

/* The SIGINT handler's view: set while a reply is being generated. */
static atomic_bool chat_cancel;
static volatile sig_atomic_t chat_generating;

static void on_sigint(int sig) {
    if (chat_generating) {
        atomic_store(&chat_cancel, true);
        return;
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

typedef struct chat_state {
    pt_session sess;
    pt_convo convo;
    pt_chat_settings set;
    pt_model_list models;
    char data_dir[4096];
    pt_context_params cparams;
    pt_threadpool *pool;      /* the process's one pool: every model load and context */
    bool show_stats;
    bool tty;
    pt_turn_result last;
    bool have_last;
    bool command_failed; /* a slash command (/save, /load) failed: exit 1 at the end */
    const run_loras *lora_req; /* --lora: loaded for every model opened */
    const app_device *device;  /* --device */
    pt_lora *loras[PT_LORA_MAX]; /* active on sess.ctx */
    int n_loras;
} chat_state;

static void usage(FILE *f) {
    fputs("usage: petrel chat [--plain] [-m MODEL] [options]\n"
          "A line-oriented chat on stdin/stdout, for pipes and dumb terminals; the\n"
          "same slash commands as the full-screen app (type /help). Exit status 1\n"
          "when a reply, /save or /load failed (each says why on stderr).\n"
          "  -m, --model PATH         GGUF model, or the name of one in the data dir\n"
          "  -n, --n-predict N        max tokens per reply (default 256)\n"
          "      --system TEXT        system prompt\n"
          "      --load NAME          start from a saved chat (see /chats), and its KV cache\n"
          "                           when one was saved beside it (NAME.kv)\n"
          "      --session FILE       restore the KV cache saved in FILE (a conversation that\n"
          "                           starts the same reuses it) and save it there at the end\n"
          "      --stats              print speed and memory after each reply (stderr)\n"
          "  -s, --seed N             sampler seed\n"
          "  -c, --ctx-size N         context window (default min(model, 4096))\n"
          "  -t, --threads N          threads (default: all cores)\n"
          "  -b, --batch-size N       prefill batch\n", f);
    run_options_usage(f);
}

static bool on_text(const char *text, size_t len, const pt_turn_live *live, void *user) {
    (void)live; (void)user;
    if (!text) return true;   /* prefill starts */
    fwrite(text, 1, len, stdout);
    fflush(stdout);
    return !ferror(stdout); /* stop generating into a broken stdout */
}

static void print_stats(chat_state *c, FILE *f) {
    if (!c->have_last) { fprintf(f, "no reply yet\n"); return; }
    const pt_generate_stats *g = &c->last.gen;
    uint64_t rss = 0, peak = 0;
    pt_proc_mem(&rss, &peak);
    pt_memory_stats m = {0};
    if (c->sess.ctx) pt_context_memory(c->sess.ctx, &m);
    char r[24], p[24], res[24], map[24], kr[24];
    pt_fmt_bytes(rss, r, sizeof r);
    pt_fmt_bytes(peak, p, sizeof p);
    pt_fmt_bytes(m.model_resident, res, sizeof res);
    pt_fmt_bytes(m.model_mapped, map, sizeof map);
    pt_fmt_bytes(m.kv_bytes_ram, kr, sizeof kr);
    fprintf(f,
            "[prompt %d tok (%d cached), generated %d tok, prefill %.2f t/s, decode %.2f t/s, "
            "ttft %.3f s, rss %s peak %s, model %s/%s resident, kv %s ram, ctx %d/%d]\n",
            g->n_prompt, c->last.n_cached, g->n_generated, g->prefill_tps, g->decode_tps,
            c->last.ttft, r, p, res, map, kr, m.kv_tokens, m.kv_capacity);
    if (c->sess.ctx) kv_args_print_stats(f, c->sess.ctx);
}

static int run_turn(chat_state *c) {
    int n = pt_convo_engine_count(&c->convo);
    pt_chat_message *msgs = malloc(sizeof *msgs * (size_t)(n > 0 ? n : 1));
    if (!msgs) return 1;
    n = pt_convo_engine_msgs(&c->convo, msgs, n);
    pt_turn_result res;
    pt_error err = {0};
    atomic_store(&chat_cancel, false);
    chat_generating = 1;
    pt_status st = pt_session_turn(&c->sess, msgs, n, &c->set, on_text, c, &chat_cancel, &res, &err);
    chat_generating = 0;
    free(msgs);
    if (st != PT_OK) {
        fprintf(stderr, "%spetrel: %s\n", res.reply && *res.reply ? "\n" : "", err.msg);
        if (res.reply && *res.reply) {
            int i = pt_convo_add(&c->convo, PT_ROLE_ASSISTANT, res.reply, strlen(res.reply));
            if (i >= 0) c->convo.msgs[i].stopped = true;
        }
        free(res.reply);
        return 1;
    }
    bool stopped = res.gen.stop == PT_STOP_CANCELLED;
    printf("%s\n", stopped ? " [stopped]" : "");
    fflush(stdout);
    if (res.n_dropped_msgs)
        app_error("note: the %d oldest messages were left out to fit the context window",
                  res.n_dropped_msgs);
    /* a reply stopped before any text leaves no empty message behind */
    if (!stopped || res.reply[0]) {
        int i = pt_convo_add(&c->convo, PT_ROLE_ASSISTANT, res.reply, strlen(res.reply));
        if (i >= 0) c->convo.msgs[i].stopped = stopped;
    }
    free(c->last.reply);
    c->last = res;
    c->last.reply = NULL;
    free(res.reply);
    c->have_last = true;
    if (c->show_stats) print_stats(c, stderr);
    return 0;
}

/* The KV cache saved beside the chat at json_path, restored when there is
 * one: a file that does not fit (another model, corrupt) is a note, not an
 * error, since the next turn can read the conversation again. */
static void load_chat_kv(chat_state *c, const char *json_path) {
    char kv[4096];
    if (!pt_session_kv_path(json_path, kv, sizeof kv) || access(kv, F_OK) != 0) return;
    pt_error err = {0};
    if (pt_session_load_kv(&c->sess, kv, &err) == PT_OK)
        printf("KV cache of %d tokens restored from %s\n", pt_context_n_past(c->sess.ctx), kv);
    else
        app_error("note: the KV cache beside the chat was not restored (%s): the conversation is read again",
                  err.msg);
}

static bool open_model(chat_state *c, const char *path) {
    pt_error err = {0};
    pt_session_close(&c->sess);
    run_loras_free(c->loras, c->n_loras); /* after the context that used them */
    c->n_loras = 0;
    app_catch_sigbus(path);
    if (!c->pool && pt_threadpool_new(c->cparams.n_threads, &c->pool, &err) != PT_OK) {
        app_error("%s", err.msg);
        return false;
    }
    pt_model_params mp = app_model_params(c->pool);
    app_device_params(c->device, &mp);
    c->cparams.threadpool = c->pool;
    if (pt_session_open(&c->sess, path, &mp, &c->cparams, &err) != PT_OK) {
        app_error("cannot open %s: %s", path, err.msg);
        return false;
    }
    app_device_report(c->device, c->sess.model);
    if (c->lora_req && c->lora_req->n) {
        if (run_loras_open(c->lora_req, c->sess.model, c->sess.ctx, c->loras) != 0) {
            pt_session_close(&c->sess);
            return false;
        }
        c->n_loras = c->lora_req->n;
    }
    return true;
}

static void list_models(chat_state *c) {
    pt_models_scan(&c->models, c->data_dir, c->sess.path[0] ? c->sess.path : NULL);
    for (int i = 0; i < c->models.n; i++) {
        char sz[24], name[1024];
        pt_fmt_bytes(c->models.items[i].bytes, sz, sizeof sz);
        printf("%2d %s  %s%s\n", i + 1, app_escaped(c->models.items[i].name, name, sizeof name), sz,
               strcmp(c->models.items[i].path, c->sess.path) == 0 ? "  (open)" : "");
    }
    if (c->models.n == 0) printf("no models in %s/models\n", c->data_dir);
}

/* Returns false to quit. */
static bool run_command(chat_state *c, const pt_slash *cmd) {
    char arg[4096], msg[512], path[4096], err[512];
    size_t n = cmd->arg_len < sizeof arg - 1 ? cmd->arg_len : sizeof arg - 1;
    memcpy(arg, cmd->arg, n);
    arg[n] = 0;
    if (cmd->cmd && cmd->cmd->tui_only) {
        printf("/%s is only in the full-screen app\n", cmd->cmd->name);
        return true;
    }
    switch (cmd->id) {
    case PT_SLASH_HELP: {
        char buf[4096];
        pt_slash_help(false, buf, sizeof buf);
        printf("commands:\n%s", buf);
        break;
    }
    case PT_SLASH_RESET:
        pt_convo_clear(&c->convo);
        pt_session_reset(&c->sess);
        printf("new conversation\n");
        break;
    case PT_SLASH_SYSTEM:
        if (!arg[0]) printf("system prompt: %s\n", c->convo.system ? c->convo.system : "(none)");
        else {
            pt_convo_set_system(&c->convo, strcmp(arg, "-") == 0 ? NULL : arg);
            printf("system prompt %s\n", c->convo.system ? "set" : "cleared");
        }
        break;
    case PT_SLASH_MODEL: {
        if (!arg[0]) { printf("open: %s\n", c->sess.path); list_models(c); break; }
        pt_models_scan(&c->models, c->data_dir, NULL);
        const char *p = pt_models_resolve(&c->models, arg, path, sizeof path);
        if (!p) { app_error("no model \"%s\" (see /models)", arg); break; }
        if (open_model(c, p)) printf("loaded %s\n", p);
        break;
    }
    case PT_SLASH_MODELS: list_models(c); break;
    case PT_SLASH_SAVE:
        if (pt_convo_save(&c->convo, &c->set, strrchr(c->sess.path, '/') ? strrchr(c->sess.path, '/') + 1 : c->sess.path,
                          c->data_dir, arg[0] ? arg : NULL,
                          path, sizeof path, err, sizeof err)) {
            char kv[4096];
            pt_error e = {0};
            printf("saved %s\n", path);
            if (!pt_session_kv_path(path, kv, sizeof kv)) {
                app_error("%s: the name is too long for its KV file", path);
                c->command_failed = true;
            } else if (pt_session_save_kv(&c->sess, kv, &e) != PT_OK) {
                app_error("%s", e.msg);
                c->command_failed = true;
            } else {
                printf("KV cache of %d tokens saved in %s\n", pt_context_n_past(c->sess.ctx), kv);
            }
        } else {
            app_error("%s", err);
            c->command_failed = true;
        }
        break;
    case PT_SLASH_LOAD:
        if (!arg[0]) { app_error("/load NAME (see /chats)"); break; }
        if (pt_convo_load(&c->convo, &c->set, c->data_dir, arg, path, sizeof path, err, sizeof err)) {
            pt_session_reset(&c->sess);
            printf("loaded %s (%d messages)\n", path, c->convo.n);
            load_chat_kv(c, path);
        } else {
            app_error("%s", err);
            c->command_failed = true;
        }
        break;
    case PT_SLASH_CHATS: {
        char *list = pt_chats_list(c->data_dir);
        printf("%s", list && *list ? list : "no saved chats\n");
        free(list);
        break;
    }
    case PT_SLASH_SET: {
        if (!arg[0]) {
            for (int i = 0; i < pt_slash_n_settings; i++) {
                char v[48];
                pt_slash_setting_value(&c->set, &pt_slash_settings[i], v, sizeof v);
                printf("%s = %s\n", pt_slash_settings[i].name, v);
            }
            break;
        }
        char *sp = strpbrk(arg, " \t");
        size_t nl = sp ? (size_t)(sp - arg) : strlen(arg);
        const pt_slash_setting *st = pt_slash_find_setting(arg, nl);
        if (!st) { app_error("no setting \"%.*s\"", (int)nl, arg); break; }
        const char *v = sp ? sp : "";
        if (pt_slash_set(&c->set, st, v, strlen(v), msg, sizeof msg)) printf("%s\n", msg);
        else app_error("%s", msg);
        break;
    }
    case PT_SLASH_SETTING:
        if (pt_slash_set(&c->set, cmd->setting, arg, strlen(arg), msg, sizeof msg)) printf("%s\n", msg);
        else app_error("%s", msg);
        break;
    case PT_SLASH_STATS: print_stats(c, stdout); break;
    case PT_SLASH_RETRY:
        while (c->convo.n > 0 && c->convo.msgs[c->convo.n - 1].role != PT_ROLE_USER)
            pt_convo_remove_last(&c->convo);
        if (c->convo.n == 0) { app_error("nothing to retry"); break; }
        run_turn(c);
        break;
    case PT_SLASH_EDIT: {
        if (!arg[0]) { app_error("/edit TEXT replaces the last message and sends it again"); break; }
        int last = c->convo.n - 1;
        while (last >= 0 && c->convo.msgs[last].role != PT_ROLE_USER) last--;
        if (last < 0) { app_error("no message to edit"); break; }
        while (c->convo.n > last) pt_convo_remove_last(&c->convo);
        pt_convo_add(&c->convo, PT_ROLE_USER, arg, strlen(arg));
        run_turn(c);
        break;
    }
    case PT_SLASH_QUIT: return false;
    default:
        app_error("unknown command /%.*s (/help lists them)", (int)cmd->name_len, cmd->name);
        break;
    }
    fflush(stdout);
    return true;
}

int cmd_chat(int argc, char **argv) {
    static chat_state cs;
    chat_state *c = &cs;
    memset(c, 0, sizeof *c);
    pt_convo_init(&c->convo);
    pt_chat_settings_default(&c->set);
    run_options o;
    run_options_init(&o);
    const char *system = NULL, *load = NULL, *session = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r = run_options_parse(&o, argc, argv, &i);
        if (r < 0) return 2;
        if (r > 0) continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--plain")) {
            /* the only chat there is on a line-oriented terminal */
        } else if (!strcmp(a, "--stats")) {
            c->show_stats = true;
        } else if (!strcmp(a, "--system")) {
            if (!(system = arg_value(argc, argv, &i))) return 2;
        } else if (!strcmp(a, "--load")) {
            if (!(load = arg_value(argc, argv, &i))) return 2;
        } else if (!strcmp(a, "--session")) {
            if (!(session = arg_value(argc, argv, &i))) return 2;
        } else if (!strcmp(a, "-n") || !strcmp(a, "--n-predict")) {
            const char *v = arg_value(argc, argv, &i);
            if (!v || !arg_int(v, 1, 1 << 24, &c->set.n_predict)) {
                if (v) app_error("%s wants a whole number in [1, %d], not '%s'", a, 1 << 24, v);
                return 2;
            }
        } else {
            app_error("chat: unknown option '%s' (see petrel chat --help)", a);
            return 2;
        }
    }
    c->set.sampler = o.sampling;
    c->cparams = o.context;
    c->lora_req = &o.loras;
    c->device = &o.device;
    char why[512];
    if (!pt_app_data_dir(c->data_dir, sizeof c->data_dir, why, sizeof why)) {
        app_error("%s", why);
        return 1;
    }
    char def[4096];
    const char *model = o.model;
    if (model && !strchr(model, '/') && access(model, R_OK) != 0) {
        /* a bare name: one of the data directory's models */
        pt_models_scan(&c->models, c->data_dir, NULL);
        const char *p = pt_models_resolve(&c->models, model, def, sizeof def);
        if (p) model = p;
    }
    if (!(model = app_model_path(model, def, sizeof def))) return 1;
    if (!open_model(c, model)) {
        pt_threadpool_free(c->pool);
        return 1;
    }
    if (system) pt_convo_set_system(&c->convo, system);
    if (load) {
        char path[4096], err[512];
        if (!pt_convo_load(&c->convo, &c->set, c->data_dir, load, path, sizeof path, err, sizeof err)) {
            app_error("%s", err);
            pt_session_close(&c->sess);
            run_loras_free(c->loras, c->n_loras);
            pt_threadpool_free(c->pool);
            return 1;
        }
        load_chat_kv(c, path);
    }
    if (session && access(session, F_OK) == 0) {
        pt_error err = {0};
        if (pt_session_load_kv(&c->sess, session, &err) != PT_OK) {
            app_fail(&err);
            pt_session_close(&c->sess);
            run_loras_free(c->loras, c->n_loras);
            pt_threadpool_free(c->pool);
            return 1;
        }
        fprintf(stderr, "session: %d tokens restored from %s\n", pt_context_n_past(c->sess.ctx), session);
    }
    c->tty = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);

    char safe_name[1024];
    if (c->tty)
        fprintf(stderr, "petrel chat: %s. /help lists commands, Ctrl-C stops a reply, Ctrl-D quits.\n",
                app_escaped(c->sess.info.name && *c->sess.info.name ? c->sess.info.name : c->sess.path,
                            safe_name, sizeof safe_name));
    char *line = NULL, *msgbuf = NULL;
    size_t cap = 0, mlen = 0;
    int status = 0;
    /* a write error on stdout ends the chat; main reports it */
    while (!ferror(stdout)) {
        if (c->tty) { fputs(mlen ? ". " : "> ", stdout); fflush(stdout); }
        ssize_t n = getline(&line, &cap, stdin);
        if (n < 0) {
            if (errno == EINTR && !feof(stdin)) { clearerr(stdin); continue; }
            break;
        }
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
        /* continuation: collect lines ending in a backslash */
        bool more = n > 0 && line[n - 1] == '\\';
        if (more) line[--n] = 0;
        char *nb = realloc(msgbuf, mlen + (size_t)n + 2);
        if (!nb) { status = 1; break; }
        msgbuf = nb;
        memcpy(msgbuf + mlen, line, (size_t)n);
        mlen += (size_t)n;
        if (more) { msgbuf[mlen++] = '\n'; continue; }
        msgbuf[mlen] = 0;
        mlen = 0;
        const char *p = msgbuf;
        while (*p == ' ' || *p == '\t' || *p == '\n') p++;
        if (!*p) continue;
        pt_slash cmd;
        if (pt_slash_parse(msgbuf, &cmd)) {
            if (!run_command(c, &cmd)) break;
            continue;
        }
        const char *text = pt_slash_literal(msgbuf);
        pt_convo_add(&c->convo, PT_ROLE_USER, text, strlen(text));
        if (run_turn(c) != 0) status = 1;
    }
    if (session) {
        pt_error err = {0};
        if (pt_session_save_kv(&c->sess, session, &err) != PT_OK) {
            app_fail(&err);
            status = 1;
        }
    }
    free(line);
    free(msgbuf);
    free(c->last.reply);
    pt_models_free(&c->models);
    pt_convo_free(&c->convo);
    pt_session_close(&c->sess);
    run_loras_free(c->loras, c->n_loras);
    pt_threadpool_free(c->pool);
    signal(SIGINT, SIG_DFL);
    return status ? status : c->command_failed ? 1 : 0;
}
