/*
 * mapfile.h — map a whole model file read-only, refusing what is not a
 * regular file (a directory, a FIFO, a device) before reading a byte.
 * Shared by the GGUF and safetensors readers. Internal to the engine.
 */
#ifndef PETREL_MAPFILE_H
#define PETREL_MAPFILE_H

#include "petrel.h"

#include <stdint.h>

/* Map `path` (PROT_READ, MAP_PRIVATE) into *map, its length in *size.
 * Errors (one line in err): PT_ERR_IO "cannot open 'P': ..." (missing,
 * unreadable, not a regular file, unmappable); PT_ERR_FORMAT
 * "WHAT: 'P' is empty (0 bytes)" for an empty file (WHAT is e.g. "gguf").
 * Release with munmap((void *)*map, *size). */
pt_status pt_map_file(const char *path, const char *what, const uint8_t **map, uint64_t *size,
                      pt_error *err);

#endif
