/* mapfile.c — read-only whole-file mappings of regular files (mapfile.h). */
#include "mapfile.h"

#include "status.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* What a non-regular file is, for the error message. */
static const char *file_kind(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a named pipe";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "a special file";
}

pt_status pt_map_file(const char *path, const char *what, const uint8_t **map, uint64_t *size,
                      pt_error *err) {
    *map = NULL;
    *size = 0;
    /* O_NONBLOCK: opening a FIFO for reading must not wait for a writer;
     * the type check below refuses it before anything is read. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        return pt_fail(err, PT_ERR_IO, "cannot open '%s': %s", path, strerror(e));
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return pt_fail(err, PT_ERR_IO, "cannot stat '%s': %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return pt_fail(err, PT_ERR_IO, "cannot open '%s': it is %s, not a regular file", path,
                       file_kind(sb.st_mode));
    }
    if (sb.st_size == 0) {
        close(fd);
        return pt_fail(err, PT_ERR_FORMAT, "%s: '%s' is empty (0 bytes)", what, path);
    }
    if ((uint64_t)sb.st_size > SIZE_MAX) {
        close(fd);
        return pt_fail(err, PT_ERR_IO, "cannot map '%s': too large for this system", path);
    }
    size_t n = (size_t)sb.st_size;
    void *m = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd); /* the mapping keeps the file alive */
    if (m == MAP_FAILED) return pt_fail(err, PT_ERR_IO, "cannot map '%s': %s", path, strerror(e));
    *map = m;
    *size = n;
    return PT_OK;
}
