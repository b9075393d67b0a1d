/* What the fuzz targets share: a scratch file per process for the parsers that read paths. */
#ifndef DTSIM_FUZZ_H
#define DTSIM_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* libFuzzer's entry point, which tests/fuzz/replay.c also calls on saved inputs. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Writes data to this process's scratch file NAME (under $TMPDIR or /tmp) and returns its
 * path (static storage, one per name slot 0..3). */
const char *fuzz_file(int slot, const char *name, const uint8_t *data, size_t size);

#endif
