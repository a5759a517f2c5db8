/*
 * fuzz_chat_template.c — chat-template detection and rendering. Input:
 * the template text, then "\x01"-separated fields: add_assistant flag
 * byte, bos text, eos text, then role/content pairs. Roles are whatever
 * the input says (unknown roles included).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "chat_template.h"

enum { MAX_FIELDS = 20 };

/* Split a copy of the input at '\x01' into NUL-terminated fields. */
static int split_fields(char *buf, size_t size, char **fields) {
    int n = 0;
    fields[n++] = buf;
    for (size_t i = 0; i < size && n < MAX_FIELDS; i++) {
        if (buf[i] == '\x01') {
            buf[i] = '\0';
            fields[n++] = buf + i + 1;
        }
    }
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *buf = malloc(size + 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    char *fields[MAX_FIELDS];
    int n = split_fields(buf, size, fields);
    pt_chat_template t;
    /* The template field only (its length, not the NULs inside the input). */
    pt_chat_template_detect(fields[0], strlen(fields[0]), &t);
    pt_tmpl_kind_name(t.kind);
    bool add_assistant = n > 1 && fields[1][0] & 1;
    const char *bos = n > 2 ? fields[2] : "";
    const char *eos = n > 3 ? fields[3] : "";
    pt_chat_message msgs[MAX_FIELDS / 2];
    int n_msgs = 0;
    for (int f = 4; f + 1 < n; f += 2)
        msgs[n_msgs++] = (pt_chat_message){.role = fields[f], .content = fields[f + 1]};
    char *out = NULL;
    pt_error err;
    if (pt_chat_template_render(&t, msgs, n_msgs, add_assistant, bos, eos, &out, &err) == PT_OK)
        free(out);
    pt_chat_template_clear(&t);
    free(buf);
    return 0;
}
