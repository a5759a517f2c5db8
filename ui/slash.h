/*
 * slash.h — chat settings and slash commands, shared by the full-screen UI
 * and `petrel chat --plain`. No terminal code here: parsing, the command
 * table (which also feeds /help), and applying sampler settings.
 */
#ifndef PETREL_UI_SLASH_H
#define PETREL_UI_SLASH_H

#include <stdbool.h>
#include <stddef.h>

#include "petrel.h"

/* What one reply is generated with. */
typedef struct pt_chat_settings {
    pt_sampler_params sampler;
    int n_predict;            /* max new tokens per reply (> 0) */
} pt_chat_settings;

void pt_chat_settings_default(pt_chat_settings *s);

typedef enum pt_slash_id {
    PT_SLASH_UNKNOWN = 0,
    PT_SLASH_HELP,
    PT_SLASH_RESET,
    PT_SLASH_SYSTEM,
    PT_SLASH_MODEL,
    PT_SLASH_MODELS,
    PT_SLASH_SAVE,
    PT_SLASH_LOAD,
    PT_SLASH_CHATS,
    PT_SLASH_SET,      /* /set [name value]: show or change a setting */
    PT_SLASH_SETTING,  /* /temp 0.7, /top_k 40 ...: a setting by its name */
    PT_SLASH_STATS,
    PT_SLASH_RETRY,
    PT_SLASH_EDIT,     /* /edit [TEXT]: edit the last user message and send it again */
    PT_SLASH_DEMO,
    PT_SLASH_MOUSE,
    PT_SLASH_IMAGINE,  /* /imagine PROMPT: a picture into the transcript */
    PT_SLASH_STUDIO,   /* /studio: the image studio screen */
    PT_SLASH_LORA,     /* /lora ...: LoRA adapters (pt_slash_lora_parse) */
    PT_SLASH_QUIT,
} pt_slash_id;

typedef struct pt_slash_cmd {
    const char *name;
    const char *alias;     /* or NULL */
    pt_slash_id id;
    const char *args;      /* argument synopsis for help, "" if none */
    const char *help;
    bool tui_only;         /* not offered by the plain chat */
} pt_slash_cmd;

extern const pt_slash_cmd pt_slash_cmds[];
extern const int pt_slash_n_cmds;

typedef struct pt_slash_setting {
    const char *name;
    const char *alias;     /* or NULL */
    const char *help;
    char type;             /* 'f' float, 'i' int, 'u' uint64 */
    size_t offset;         /* into pt_chat_settings */
    double min, max;
} pt_slash_setting;

extern const pt_slash_setting pt_slash_settings[];
extern const int pt_slash_n_settings;

/* A parsed line. arg points into the parsed line (leading and trailing
 * blanks removed, not NUL-terminated: use arg_len). */
typedef struct pt_slash {
    pt_slash_id id;
    const pt_slash_cmd *cmd;          /* NULL for settings and unknown */
    const pt_slash_setting *setting;  /* for PT_SLASH_SETTING */
    const char *name; size_t name_len; /* the command word as typed */
    const char *arg; size_t arg_len;
} pt_slash;

/* Whether line is a command: it starts with '/' but not "//" (which sends
 * the rest, starting with one '/', as a message: see pt_slash_literal). */
bool pt_slash_parse(const char *line, pt_slash *out);
/* For a "//..." line, the message to send (line + 1); otherwise line. */
const char *pt_slash_literal(const char *line);

/* Apply "NAME VALUE" (for /set) or VALUE for a parsed setting. On failure
 * writes a one-line reason into msg; on success a confirmation. */
bool pt_slash_set(pt_chat_settings *s, const pt_slash_setting *setting,
                  const char *value, size_t value_len, char *msg, size_t msg_cap);
const pt_slash_setting *pt_slash_find_setting(const char *name, size_t len);

/* Current value of a setting as text. */
void pt_slash_setting_value(const pt_chat_settings *s, const pt_slash_setting *setting,
                            char *buf, size_t cap);

/* What /lora's argument asks for. */
typedef enum pt_lora_op {
    PT_LORA_LIST,      /* "": list the loaded adapters and the active set */
    PT_LORA_ON,        /* "PATH [SCALE]": load (once) and activate with scale */
    PT_LORA_OFF,       /* "-NAME" (or -PATH): deactivate one, keep it loaded */
    PT_LORA_OFF_ALL,   /* "off": deactivate all */
} pt_lora_op;

typedef struct pt_lora_cmd {
    pt_lora_op op;
    char target[4096];   /* ON: the path; OFF: the name or path; else "" */
    float scale;         /* ON: the scale (default 1, within [-100, 100]) */
    bool quiet;          /* no status line on success (petrel --lora at start:
                            the title shows the set; the load's line stays) */
} pt_lora_cmd;

/* Parse /lora's argument (arg[0..len)). A last blank-separated word that
 * is a number is the scale, the rest the path (which may hold blanks).
 * On failure writes a one-line reason into msg and returns false. */
bool pt_slash_lora_parse(const char *arg, size_t len, pt_lora_cmd *out, char *msg, size_t msg_cap);

/* Help text: one command per line ("/temp X  sampling temperature..."),
 * tui selects the commands offered by the full-screen UI. Writes at most
 * cap bytes, NUL-terminated; returns the full length. */
size_t pt_slash_help(bool tui, char *buf, size_t cap);

/* Commands whose name starts with prefix (for Tab completion): the first
 * match after `after` (NULL to start). */
const char *pt_slash_complete(const char *prefix, size_t len, const char *after);

#endif
