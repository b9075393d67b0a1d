/* Fuzz target: the IDX reader (trainer/data.c). The input is an image file and a label file:
 * its first byte says how many bytes of the rest (times 16, at most the rest) are the
 * images; the others are the labels. Either may be gzip or plain. The oracle: no crash, no
 * sanitizer report, and a dataset only when both files agree (counts, labels < classes). */
#include <string.h>

#include "data.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t rest = size - 1, cut = (size_t)data[0] * 16;
    if (cut > rest)
        cut = rest;
    const char *images = fuzz_file(0, "images", data + 1, cut);
    const char *labels = fuzz_file(1, "labels", data + 1 + cut, rest - cut);
    trainer_dataset_t ds;
    dt_err_t err;
    if (trainer_dataset_load_idx(&ds, images, labels, 10, &err) == DT_OK) {
        if (ds.n && (!ds.x || !ds.y))
            __builtin_trap();
        for (size_t i = 0; i < ds.n; i++)
            if (ds.y[i] >= 10)
                __builtin_trap();
        trainer_dataset_free(&ds);
    } else if (!err.msg[0] || strchr(err.msg, '\n')) {
        __builtin_trap(); /* an error is one line */
    }
    return 0;
}
