/* convo.c — conversation storage and JSON save/load (see convo.h). */
#include "convo.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

void pt_convo_init(pt_convo *c) { memset(c, 0, sizeof *c); }

void pt_convo_clear(pt_convo *c) {
    for (int i = 0; i < c->n; i++) free(c->msgs[i].text);
    c->n = 0;
    c->rev++;
}

void pt_convo_free(pt_convo *c) {
    pt_convo_clear(c);
    free(c->msgs);
    free(c->system);
    memset(c, 0, sizeof *c);
}

static bool msg_reserve(pt_msg *m, size_t need) {
    if (need + 1 <= m->cap) return true;
    size_t cap = m->cap ? m->cap : 64;
    while (cap < need + 1) cap *= 2;
    char *t = realloc(m->text, cap);
    if (!t) return false;
    m->text = t;
    m->cap = cap;
    return true;
}

int pt_convo_add(pt_convo *c, pt_role role, const char *text, size_t len) {
    if (c->n == c->cap) {
        int cap = c->cap ? c->cap * 2 : 16;
        pt_msg *m = realloc(c->msgs, (size_t)cap * sizeof *m);
        if (!m) return -1;
        c->msgs = m;
        c->cap = cap;
    }
    pt_msg *m = &c->msgs[c->n];
    memset(m, 0, sizeof *m);
    m->role = role;
    if (!msg_reserve(m, len)) return -1;
    if (len) memcpy(m->text, text, len);
    m->text[len] = 0;
    m->len = len;
    m->rev = ++c->rev;   /* unique over the convo's life: display caches key on it */
    return c->n++;
}

int pt_convo_add_picture(pt_convo *c, const char *caption, uint32_t pic_id, int w, int h) {
    int i = pt_convo_add(c, PT_ROLE_PICTURE, caption, strlen(caption));
    if (i >= 0) {
        c->msgs[i].pic_id = pic_id;
        c->msgs[i].pic_w = w;
        c->msgs[i].pic_h = h;
    }
    return i;
}

bool pt_convo_append(pt_convo *c, int index, const char *text, size_t len) {
    if (index < 0 || index >= c->n) return false;
    pt_msg *m = &c->msgs[index];
    if (!msg_reserve(m, m->len + len)) return false;
    memcpy(m->text + m->len, text, len);
    m->len += len;
    m->text[m->len] = 0;
    m->rev = ++c->rev;
    return true;
}

void pt_convo_remove_last(pt_convo *c) {
    if (c->n == 0) return;
    free(c->msgs[c->n - 1].text);
    c->n--;
    c->rev++;
}

void pt_convo_set_system(pt_convo *c, const char *text) {
    free(c->system);
    c->system = (text && *text) ? strdup(text) : NULL;
    c->rev++;
}

int pt_convo_engine_count(const pt_convo *c) {
    int n = c->system ? 1 : 0;
    for (int i = 0; i < c->n; i++)
        if (c->msgs[i].role == PT_ROLE_USER || c->msgs[i].role == PT_ROLE_ASSISTANT) n++;
    return n;
}

int pt_convo_engine_msgs(const pt_convo *c, pt_chat_message *out, int cap) {
    int n = 0;
    if (c->system && n < cap) out[n++] = (pt_chat_message){"system", c->system};
    for (int i = 0; i < c->n && n < cap; i++) {
        const pt_msg *m = &c->msgs[i];
        if (m->role == PT_ROLE_USER) out[n++] = (pt_chat_message){"user", m->text};
        else if (m->role == PT_ROLE_ASSISTANT) out[n++] = (pt_chat_message){"assistant", m->text};
    }
    return n;
}

/* ---- JSON ---- */

static void add_setting(cJSON *obj, const pt_chat_settings *s, const pt_slash_setting *st) {
    const char *p = (const char *)s + st->offset;
    double v;
    if (st->type == 'f') {
        /* write the float's shortest decimal form, not its double expansion */
        float f;
        memcpy(&f, p, sizeof f);
        char buf[32];
        snprintf(buf, sizeof buf, "%.7g", (double)f);
        v = strtod(buf, NULL);
    }
    else if (st->type == 'i') { int i; memcpy(&i, p, sizeof i); v = i; }
    else { uint64_t u; memcpy(&u, p, sizeof u); v = (double)u; }
    cJSON_AddNumberToObject(obj, st->name, v);
}

char *pt_convo_to_json(const pt_convo *c, const pt_chat_settings *s, const char *model_name) {
    cJSON *root = cJSON_CreateObject();
    if (!root) return NULL;
    cJSON_AddStringToObject(root, "format", "petrel-chat");
    cJSON_AddNumberToObject(root, "version", 1);
    if (model_name && *model_name) cJSON_AddStringToObject(root, "model", model_name);
    char when[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    cJSON_AddStringToObject(root, "saved", when);
    if (c->system) cJSON_AddStringToObject(root, "system", c->system);
    if (s) {
        cJSON *set = cJSON_AddObjectToObject(root, "settings");
        /* the seed is a uint64: a double keeps it exact only up to 2^53 */
        for (int i = 0; set && i < pt_slash_n_settings; i++) add_setting(set, s, &pt_slash_settings[i]);
    }
    cJSON *arr = cJSON_AddArrayToObject(root, "messages");
    for (int i = 0; arr && i < c->n; i++) {
        const pt_msg *m = &c->msgs[i];
        if (m->role != PT_ROLE_USER && m->role != PT_ROLE_ASSISTANT) continue;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "role", m->role == PT_ROLE_USER ? "user" : "assistant");
        cJSON_AddStringToObject(o, "content", m->text);
        if (m->stopped) cJSON_AddBoolToObject(o, "stopped", 1);
        cJSON_AddItemToArray(arr, o);
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    return text;
}

static void load_setting(pt_chat_settings *s, const pt_slash_setting *st, double v) {
    /* ignore out-of-range values (1e309 parses as infinity; a seed has no
     * max but must fit in a uint64_t: converting it otherwise is undefined) */
    if (!isfinite(v) || v < st->min || (st->max > st->min && v > st->max)) return;
    char *p = (char *)s + st->offset;
    if (st->type == 'f') { float f = (float)v; memcpy(p, &f, sizeof f); }
    else if (st->type == 'i') { int i = (int)v; memcpy(p, &i, sizeof i); }
    else if (v >= 0 && v < 18446744073709551616.0) { uint64_t u = (uint64_t)v; memcpy(p, &u, sizeof u); }
}

bool pt_convo_from_json(pt_convo *c, pt_chat_settings *s, const char *json,
                        char *err, size_t err_cap) {
    cJSON *root = cJSON_Parse(json);
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        snprintf(err, err_cap, "not valid JSON (near byte %ld)", at ? (long)(at - json) : -1L);
        return false;
    }
    cJSON *msgs = cJSON_GetObjectItemCaseSensitive(root, "messages");
    if (!cJSON_IsArray(msgs)) {
        snprintf(err, err_cap, "no \"messages\" array");
        cJSON_Delete(root);
        return false;
    }
    /* validate before touching c */
    const cJSON *m;
    cJSON_ArrayForEach(m, msgs) {
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
        if (!cJSON_IsString(role) || !cJSON_IsString(content)) {
            snprintf(err, err_cap, "a message lacks a string \"role\" or \"content\"");
            cJSON_Delete(root);
            return false;
        }
        const char *r = role->valuestring;
        if (strcmp(r, "user") && strcmp(r, "assistant") && strcmp(r, "system")) {
            snprintf(err, err_cap, "unknown role \"%.40s\"", r);
            cJSON_Delete(root);
            return false;
        }
    }
    pt_convo_clear(c);
    const cJSON *sys = cJSON_GetObjectItemCaseSensitive(root, "system");
    pt_convo_set_system(c, cJSON_IsString(sys) ? sys->valuestring : NULL);
    cJSON_ArrayForEach(m, msgs) {
        const char *r = cJSON_GetObjectItemCaseSensitive(m, "role")->valuestring;
        const char *t = cJSON_GetObjectItemCaseSensitive(m, "content")->valuestring;
        if (strcmp(r, "system") == 0) { pt_convo_set_system(c, t); continue; }
        int i = pt_convo_add(c, strcmp(r, "user") == 0 ? PT_ROLE_USER : PT_ROLE_ASSISTANT, t, strlen(t));
        if (i >= 0 && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "stopped")))
            c->msgs[i].stopped = true;
    }
    const cJSON *set = cJSON_GetObjectItemCaseSensitive(root, "settings");
    if (s && cJSON_IsObject(set)) {
        for (int i = 0; i < pt_slash_n_settings; i++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(set, pt_slash_settings[i].name);
            if (cJSON_IsNumber(v)) load_setting(s, &pt_slash_settings[i], v->valuedouble);
        }
    }
    cJSON_Delete(root);
    return true;
}

/* ---- files ---- */

bool pt_chat_path(const char *data_dir, const char *name, char *buf, size_t cap) {
    if (!name || !*name) return false;
    int n;
    if (strchr(name, '/')) {
        n = snprintf(buf, cap, "%s", name);
    } else {
        size_t len = strlen(name);
        bool has_ext = len > 5 && strcmp(name + len - 5, ".json") == 0;
        n = snprintf(buf, cap, "%s/chats/%s%s", data_dir, name, has_ext ? "" : ".json");
    }
    return n > 0 && (size_t)n < cap;
}

static bool mkdir_p(const char *path) {
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp) return false;
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return false;
        *p = '/';
    }
    return mkdir(tmp, 0755) == 0 || errno == EEXIST;
}

bool pt_convo_save(const pt_convo *c, const pt_chat_settings *s, const char *model_name,
                   const char *data_dir, const char *name, char *path_out, size_t path_cap,
                   char *err, size_t err_cap) {
    char defname[64], path[4096];
    if (!name || !*name) {
        time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        strftime(defname, sizeof defname, "chat-%Y%m%d-%H%M%S", &tm);
        name = defname;
    }
    if (!pt_chat_path(data_dir, name, path, sizeof path)) {
        snprintf(err, err_cap, "chat name too long");
        return false;
    }
    /* create the folder that holds the file */
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = 0;
        if (!mkdir_p(dir)) {
            snprintf(err, err_cap, "cannot create %s: %s", dir, strerror(errno));
            return false;
        }
    }
    char *json = pt_convo_to_json(c, s, model_name);
    if (!json) { snprintf(err, err_cap, "out of memory"); return false; }
    /* write to a temporary file and rename, so a crash never leaves half a chat */
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    bool ok = f != NULL;
    if (ok) {
        size_t n = strlen(json);
        ok = fwrite(json, 1, n, f) == n && fputc('\n', f) != EOF;
        ok = (fclose(f) == 0) && ok;
    }
    free(json);
    if (!ok || rename(tmp, path) != 0) {
        snprintf(err, err_cap, "cannot write %s: %s", path, strerror(errno));
        remove(tmp);
        return false;
    }
    if (path_out) snprintf(path_out, path_cap, "%s", path);
    return true;
}

bool pt_convo_load(pt_convo *c, pt_chat_settings *s, const char *data_dir, const char *name,
                   char *path_out, size_t path_cap, char *err, size_t err_cap) {
    char path[4096];
    if (!pt_chat_path(data_dir, name, path, sizeof path)) {
        snprintf(err, err_cap, "give a chat name (see /chats)");
        return false;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, err_cap, "cannot open %s: %s", path, strerror(errno));
        return false;
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 8192;
            char *nb = realloc(buf, cap);
            if (!nb) { free(buf); fclose(f); snprintf(err, err_cap, "out of memory"); return false; }
            buf = nb;
        }
        size_t n = fread(buf + len, 1, 4096, f);
        len += n;
        if (n < 4096) break;
    }
    fclose(f);
    buf[len] = 0;
    char why[200];
    bool ok = pt_convo_from_json(c, s, buf, why, sizeof why);
    free(buf);
    if (!ok) {
        snprintf(err, err_cap, "%s: %s", path, why);
        return false;
    }
    if (path_out) snprintf(path_out, path_cap, "%s", path);
    return true;
}

typedef struct { char name[256]; time_t mtime; } chat_entry;

static int by_mtime_desc(const void *a, const void *b) {
    const chat_entry *x = a, *y = b;
    if (x->mtime != y->mtime) return x->mtime < y->mtime ? 1 : -1;
    return strcmp(x->name, y->name);
}

char *pt_chats_list(const char *data_dir) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/chats", data_dir);
    chat_entry *e = NULL;
    int n = 0, cap = 0;
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d))) {
            size_t len = strlen(de->d_name);
            if (len <= 5 || len - 5 >= sizeof e->name || strcmp(de->d_name + len - 5, ".json")) continue;
            if (n == cap) {
                cap = cap ? cap * 2 : 16;
                chat_entry *ne = realloc(e, (size_t)cap * sizeof *e);
                if (!ne) break;
                e = ne;
            }
            memcpy(e[n].name, de->d_name, len - 5);
            e[n].name[len - 5] = 0;
            char p[4400];
            struct stat st;
            snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
            e[n].mtime = stat(p, &st) == 0 ? st.st_mtime : 0;
            n++;
        }
        closedir(d);
    }
    /* e is NULL when the folder is missing or holds no chat: qsort wants
     * a real array even for zero elements */
    if (n > 1) qsort(e, (size_t)n, sizeof *e, by_mtime_desc);
    /* names come from the file system: escaped, each at most 4 bytes per byte */
    size_t total = 1;
    for (int i = 0; i < n; i++) total += 4 * strlen(e[i].name) + 1;
    char *out = malloc(total);
    if (out) {
        size_t at = 0;
        for (int i = 0; i < n; i++) {
            at += pt_escape_text(e[i].name, strlen(e[i].name), out + at, total - at);
            out[at++] = '\n';
        }
        out[at] = 0;
    }
    free(e);
    return out;
}
