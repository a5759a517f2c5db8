/*
 * convo.h — a conversation: the system prompt and the transcript, plus
 * saving and loading it as JSON in the data directory (chats/NAME.json).
 *
 * The transcript also holds notes for the reader (info, error) that are
 * never sent to the model nor saved. Only the UI thread touches a
 * pt_convo; the engine worker gets a copy of the messages for each turn.
 *
 * JSON layout (written by pt_convo_to_json, read back by pt_convo_from_json):
 *   { "format": "petrel-chat", "version": 1,
 *     "model": "SmolLM2-135M-Instruct.Q4_1.gguf",   (informational)
 *     "saved": "2025-01-31T12:00:00Z",
 *     "system": "You are ...",                      (may be absent)
 *     "settings": { "temp": 0.8, "top_k": 40, ... }, (names of slash.h)
 *     "messages": [ {"role": "user", "content": "..."},
 *                   {"role": "assistant", "content": "...", "stopped": true} ] }
 * Loading also accepts a plain OpenAI-style {"messages": [...]} whose
 * "system" messages become the system prompt.
 */
#ifndef PETREL_UI_CONVO_H
#define PETREL_UI_CONVO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "petrel.h"
#include "slash.h"

typedef enum pt_role {
    PT_ROLE_USER = 0,
    PT_ROLE_ASSISTANT,
    PT_ROLE_INFO,    /* a note from petrel (command output), not sent */
    PT_ROLE_ERROR,   /* an error note, not sent */
    PT_ROLE_PICTURE, /* a picture of /imagine (text: its caption), not sent nor saved */
} pt_role;

typedef struct pt_msg {
    pt_role role;
    char *text;        /* NUL-terminated, len bytes */
    size_t len, cap;
    bool stopped;      /* an assistant reply cut short (Esc, error) */
    unsigned rev;      /* changes on every edit, unique within the convo (display caches) */
    uint32_t pic_id;   /* PT_ROLE_PICTURE: the gallery picture (gallery.h) */
    int pic_w, pic_h;  /* its size in pixels (the layout needs it when it is gone) */
} pt_msg;

typedef struct pt_convo {
    pt_msg *msgs;
    int n, cap;
    char *system;      /* NULL = none */
    unsigned rev;      /* bumped on every change to any message */
} pt_convo;

void pt_convo_init(pt_convo *c);
void pt_convo_free(pt_convo *c);
/* Drop every message (the system prompt stays). */
void pt_convo_clear(pt_convo *c);
/* Append a message; returns its index or -1 when out of memory. */
int pt_convo_add(pt_convo *c, pt_role role, const char *text, size_t len);
bool pt_convo_append(pt_convo *c, int index, const char *text, size_t len);
/* Append a picture message (PT_ROLE_PICTURE) showing gallery picture
 * pic_id (w x h pixels) under caption; index or -1. */
int pt_convo_add_picture(pt_convo *c, const char *caption, uint32_t pic_id, int w, int h);
void pt_convo_remove_last(pt_convo *c);
void pt_convo_set_system(pt_convo *c, const char *text); /* NULL or "" clears */

/* The messages the model sees: the system prompt (when set) and every
 * user/assistant message, as views into c (valid until c changes).
 * Returns the count written (at most cap). */
int pt_convo_engine_msgs(const pt_convo *c, pt_chat_message *out, int cap);
int pt_convo_engine_count(const pt_convo *c);

/* JSON text (malloc'd) of the conversation and settings (settings may be NULL). */
char *pt_convo_to_json(const pt_convo *c, const pt_chat_settings *s, const char *model_name);
/* Replace c's content (and *s when non-NULL and the file has settings). */
bool pt_convo_from_json(pt_convo *c, pt_chat_settings *s, const char *json,
                        char *err, size_t err_cap);

/* Path of a saved chat: a name without '/' means data_dir/chats/NAME.json
 * (".json" added when missing); anything with '/' is used as it is. */
bool pt_chat_path(const char *data_dir, const char *name, char *buf, size_t cap);

/* Save (creating data_dir/chats/) and load. On success *path_out gets the
 * file written/read when non-NULL. */
bool pt_convo_save(const pt_convo *c, const pt_chat_settings *s, const char *model_name,
                   const char *data_dir, const char *name, char *path_out, size_t path_cap,
                   char *err, size_t err_cap);
bool pt_convo_load(pt_convo *c, pt_chat_settings *s, const char *data_dir, const char *name,
                   char *path_out, size_t path_cap, char *err, size_t err_cap);

/* Names (without .json) of the saved chats, newest first, as one
 * newline-separated malloc'd string ("" when the folder is missing or
 * holds none). Names come from the file system and are escaped with
 * pt_escape_text, so a control character in one cannot reach the screen
 * nor split the list. NULL only when out of memory. */
char *pt_chats_list(const char *data_dir);

#endif
