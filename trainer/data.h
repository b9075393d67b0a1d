/* Data sets: samples as one (n, dim) float matrix scaled to [0, 1] plus one label byte each.
 * Loaded from IDX files (MNIST format, gzip or plain), or generated (seeded
 * class-conditional Gaussians) for tests and large runs. Text sets (data_text.c) hold byte
 * tokens instead: n windows of seq + 1 tokens, each from one source file. */
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

/* The Debian packages fortunes (English, by topic), fortunes-de, fortunes-it and fortunes-es
 * install their text here (the languages in folders de, it, es). */
#define TRAINER_FORTUNES_DIR "/usr/share/games/fortunes"
/* Byte tokens: the vocabulary of every text set. */
#define TRAINER_TEXT_VOCAB 256
/* Largest text corpus read, all sources together: 256 MiB (the windows take about 5 bytes a
 * byte of text, their tokens as bytes and as floats). */
#define TRAINER_TEXT_MAX_BYTES ((size_t)1 << 28)
/* The validation split of a text set: the last 1/TRAINER_TEXT_VALID_DIV of each source's
 * bytes (rounded down). */
#define TRAINER_TEXT_VALID_DIV 10

typedef struct trainer_dataset {
    size_t n;                 /* samples (text: windows) */
    size_t dim;               /* features per sample = channels * rows * cols (text: seq + 1) */
    int channels, rows, cols; /* sample shape; synthetic sets are (1, 1, dim), text
                                 (1, 1, seq + 1) */
    int classes;              /* labels are in [0, classes) (text: the vocabulary, 256) */
    float *x;                 /* (n, dim), owned (text: the window's token ids as floats, exact,
                                 so that the learner's gather feeds a token model unchanged) */
    uint8_t *y;               /* (n), owned (text: zeros; the targets are in the window) */
    /* Text sets only (tokens != NULL); zero for image sets. */
    int seq;              /* input tokens per window; a window holds seq + 1 tokens */
    uint8_t *tokens;      /* (n, seq + 1), owned: window i is tokens[i*(seq+1) ..]; its inputs
                             are its first seq tokens, its next-token targets its last seq */
    int sources;          /* source files (topics, languages) the windows come from */
    uint32_t *source;     /* (n), owned: the source of each window; windows are grouped by
                             source, in source order */
    char **source_names;  /* (sources), owned: each source's file or folder name */
    size_t *source_bytes; /* (sources), owned: bytes of the source's part (train or validation) */
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

/* Loads a text corpus as byte tokens into a training and a validation set of windows.
 * path is "fortunes" (the English topic files of TRAINER_FORTUNES_DIR, one source a topic),
 * "fortunes-languages" (one source per language: en, the same topic files together, and
 * de, es, it, each folder's files together), a text file (one source) or a folder (one
 * source per regular file directly in it, by name; names starting with '.' or ending in
 * ".dat", strfile(1)'s index files, symbolic links and subfolders are skipped). A
 * language's files are concatenated in name order.
 * Each source of L bytes gives its first L - L/TRAINER_TEXT_VALID_DIV bytes to training and
 * the rest to validation; each part of B bytes is cut into (B - 1) / seq windows (none when
 * B <= seq), window k holding bytes [k*seq, k*seq + seq]: consecutive windows share one
 * byte, the last target of one being the first input of the next. No window crosses a
 * source or the split. Errors (DT_ERR_INPUT, "path: what is wrong"): seq < 1, an unreadable
 * path, a folder with no source, an empty source, more than TRAINER_TEXT_MAX_BYTES, or no
 * training window at all. Both sets are empty on error. */
dt_status trainer_dataset_load_text(trainer_dataset_t *train, trainer_dataset_t *valid,
                                    const char *path, int seq, dt_err_t *err);

/* Fills inputs and targets, each (batch, seq), from windows idx[0..batch) of a text set:
 * inputs[b][t] = token t of window idx[b], targets[b][t] = token t + 1. */
void trainer_text_batch(const trainer_dataset_t *ds, const uint32_t *idx, int batch,
                        int32_t *inputs, int32_t *targets);

/* The baseline a language model must beat: the mean next-token cross-entropy (nats) of
 * valid's targets under the unigram frequencies of train's targets, add-one smoothed
 * (p(t) = (count(t) + 1) / (targets + vocabulary)), the loss of a model that knows only
 * how often each byte comes. NaN when valid holds no window. */
/* Keeps k of a text set's n windows (k < n), drawn from every source: one from each source
 * that has any (while k allows), the rest in proportion to each source's windows (largest
 * remainders), each source's chosen by a shuffle seeded with seed (stream
 * TRAINER_STREAM_TEST_SPLIT) and kept in their order, grouped by source as before. */
void trainer_text_subsample(trainer_dataset_t *ds, size_t k, uint64_t seed);
double trainer_text_unigram_loss(const trainer_dataset_t *train, const trainer_dataset_t *valid);

/* Perplexity of a mean next-token cross-entropy (nats): exp(loss); NaN stays NaN. */
double trainer_text_perplexity(double loss);

/* Frees x, y and the text fields and zeroes ds; NULL is allowed. */
void trainer_dataset_free(trainer_dataset_t *ds);

#endif
