/* session.h — saved sessions (session.c; the file format is described
 * there). Internal to the engine: the public calls are
 * pt_context_save_session / pt_context_load_session in petrel.h. */
#ifndef PETREL_SESSION_H
#define PETREL_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "petrel.h"

/* The model's identity as a session file records it (SHA-256, see session.c). */
pt_status pt_session_model_identity(const pt_model *m, uint8_t out[32], pt_error *err);

/* pt_context_load_session from a buffer of size bytes (the fuzz target). */
pt_status pt_session_load_memory(pt_context *ctx, const uint8_t *buf, size_t size, pt_error *err);

#endif
