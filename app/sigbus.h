/* sigbus.h — one-line error instead of a core dump when the mapped model
 * file is truncated or replaced while in use (see sigbus.c). */
#ifndef PETREL_SIGBUS_H
#define PETREL_SIGBUS_H

/* Install the SIGBUS handler for model_path; call before the model is opened
 * (main thread). A SIGBUS then prints "petrel: model file PATH changed or was
 * truncated while in use" and exits with status 1. */
void app_catch_sigbus(const char *model_path);

#endif
