/* Data sets: samples as one (n, dim) float matrix scaled to [0, 1] plus one label byte each.
 * Loaded from IDX files (MNIST format, gzip or plain), or generated (seeded
 * class-conditional Gaussians) for tests and large runs. */
#ifndef DTSIM_DATA_H
#define DTSIM_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

/* The Debian package dataset-fashion-mnist installs the set here. */
#define TRAINER_FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist"

/* Largest IDX payload accepted, in bytes: far above any MNIST-format set (47 MB), far below
 * what a lying header could make us allocate. */
#define TRAINER_IDX_MAX_BYTES ((size_t)1 << 30)

typedef struct trainer_dataset {
    size_t n;            /* samples */
    size_t dim;          /* features per sample = channels * rows * cols */
    int channels, rows, cols; /* sample shape; synthetic sets are (1, 1, dim) */
    int classes;         /* labels are in [0, classes) */
    float *x;            /* (n, dim), owned */
    uint8_t *y;          /* (n), owned */
} trainer_dataset_t;

/* Reads an image file (IDX type 0x08, 3 dimensions: count, rows, cols) and a label file
 * (IDX type 0x08, 1 dimension: count). Either may be gzip-compressed or plain. Checks magic,
 * type byte, dimension count, the dimension product (overflow-checked, capped at
 * TRAINER_IDX_MAX_BYTES), exact file size, equal counts and labels < classes. On error
 * returns DT_ERR_INPUT with "path: what is wrong" in err, and ds is left empty. */
dt_status trainer_dataset_load_idx(trainer_dataset_t *ds, const char *images_path,
                                   const char *labels_path, int classes, dt_err_t *err);

/* Loads split "train" or "t10k" of an MNIST-format directory: DIR/SPLIT-images-idx3-ubyte
 * and DIR/SPLIT-labels-idx1-ubyte, each with or without a .gz suffix. */
dt_status trainer_dataset_load_dir(trainer_dataset_t *ds, const char *dir, const char *split,
                                   int classes, dt_err_t *err);

/* n samples of dimension dim in `classes` classes: class c has a fixed random mean (drawn
 * from the seed) and unit-variance noise scaled by `noise`; labels are balanced
 * (sample i has label i % classes, then the order is shuffled). Values are not clamped.
 * The class means depend only on (seed, classes, dim), and the label order only on
 * (seed, classes, dim, n): sets that differ in noise alone differ only by their noise. */
void trainer_dataset_synthetic(trainer_dataset_t *ds, size_t n, size_t dim, int classes,
                               float noise, uint64_t seed);

/* Frees x and y and zeroes ds; NULL is allowed. */
void trainer_dataset_free(trainer_dataset_t *ds);

#endif
