/*
 * test_ui_convo.c — the saved-chat listing of the full-screen app
 * (pt_chats_list, ui/convo.c, behind /chats and /load): a missing and an
 * empty chats folder give "" (this once handed qsort a NULL array, which
 * UBSan aborts on), chats are listed newest first with other files left
 * out, and a file name holding control characters is escaped, so it can
 * neither reach the terminal raw nor split the list into two names.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "convo.h"

static char root[256];

/* An empty file root/chats/name with the given modification time. */
static void touch_at(const char *name, time_t mtime) {
    char path[512];
    snprintf(path, sizeof path, "%s/chats/%s", root, name);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL, "create %s", path);
    if (f) fclose(f);
    struct timespec ts[2] = {{mtime, 0}, {mtime, 0}};
    CHECK(utimensat(AT_FDCWD, path, ts, 0) == 0, "set the time of %s", path);
}

static void expect_list(const char *want, const char *what) {
    char *got = pt_chats_list(root);
    CHECK(got != NULL, "%s: a list, not NULL", what);
    if (got) CHECK(strcmp(got, want) == 0, "%s: got \"%s\", want \"%s\"", what, got, want);
    free(got);
}

static void test_missing_folder(void) {
    expect_list("", "no chats folder");
}

static void test_empty_folder(void) {
    char dir[300];
    snprintf(dir, sizeof dir, "%s/chats", root);
    CHECK(mkdir(dir, 0700) == 0, "mkdir %s", dir);
    expect_list("", "empty chats folder");
    touch_at("notes.txt", 1000);
    touch_at(".json", 1000);   /* no name before the extension */
    expect_list("", "folder without chats");
}

static void test_newest_first(void) {
    touch_at("old.json", 1000);
    touch_at("new.json", 3000);
    touch_at("mid.json", 2000);
    expect_list("new\nmid\nold\n", "three chats");
}

static void test_escaped_names(void) {
    /* ESC [2J clears the screen; ESC ]0;x BEL sets the window title; a
     * newline would make one chat look like two */
    touch_at("\033[2J\033]0;pwned\a\nx.json", 4000);
    expect_list("\\e[2J\\e]0;pwned\\x07\\nx\nnew\nmid\nold\n", "a name with control characters");
}

int main(void) {
    snprintf(root, sizeof root, "%s/petrel-ui-convo.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(root)) { perror("mkdtemp"); return 1; }
    test_missing_folder();
    test_empty_folder();
    test_newest_first();
    test_escaped_names();
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", root);
    return check_done("ui_convo");
}
