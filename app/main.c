/* main.c — petrel's entry point: picks the subcommand. */
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--version") == 0) {
        printf("petrel %s\n", PETREL_VERSION_STRING);
        return 0;
    }
    fprintf(stderr, "petrel: no subcommands yet\n");
    return 2;
}
