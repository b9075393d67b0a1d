/* Scratch files for the fuzz targets (fuzz.h). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fuzz.h"

const char *fuzz_file(int slot, const char *name, const uint8_t *data, size_t size)
{
    static char paths[4][256];
    const char *tmp = getenv("TMPDIR");
    snprintf(paths[slot], sizeof paths[slot], "%s/dtsim-fuzz-%ld-%s", tmp && *tmp ? tmp : "/tmp",
             (long)getpid(), name);
    FILE *f = fopen(paths[slot], "wb");
    if (!f)
        abort(); /* the fuzzer's own trouble, not the target's: stop loudly */
    if (size && fwrite(data, 1, size, f) != size)
        abort();
    fclose(f);
    return paths[slot];
}
