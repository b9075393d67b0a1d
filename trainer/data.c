/* IDX reader (gzip or plain, through zlib) and the synthetic data set (see data.h).
 *
 * A header can claim any size, so nothing is allocated from it until the size has been
 * checked against what is actually on disk: the file size for a plain file, the gzip
 * trailer's ISIZE (uncompressed size mod 2^32) for a gzip file. The reads are verified
 * again afterwards (short read, trailing byte, zlib errors) because the trailer can lie
 * or the file can be cut in the middle of the compressed stream. Only single-member gzip
 * files (what gzip(1) writes) are accepted: for concatenated members ISIZE describes the
 * last member only, and the size check rejects the file. */
#define _POSIX_C_SOURCE 200809L
#include "data.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "rng.h"

#define IDX_TYPE_UBYTE 0x08
#define GZIP_MIN_BYTES 18 /* 10-byte header + 8-byte trailer */

/* Longest path we build in trainer_dataset_load_dir. */
#define DATA_PATH_MAX 4096

static int gz_failed(gzFile gz)
{
    int errnum = Z_OK;
    gzerror(gz, &errnum);
    return errnum != Z_OK;
}

/* Reads up to len bytes; returns the count read, which is short only at end of data, or
 * -1 on a zlib error (gzerror says which). */
static long long gz_read_all(gzFile gz, uint8_t *buf, size_t len)
{
    size_t got = 0;
    while (got < len) {
        size_t chunk = len - got;
        if (chunk > (size_t)1 << 30)
            chunk = (size_t)1 << 30; /* gzread takes an unsigned int */
        int r = gzread(gz, buf + got, (unsigned)chunk);
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (long long)got;
}

/* The zlib error of gz as a sentence; Z_BUF_ERROR is zlib's "unexpected end of file".
 * gzerror's message starts with the name zlib knows the file by, "<fd:5>" for gzdopen:
 * dropped, since every message here starts with the real path. */
static const char *gz_reason(gzFile gz)
{
    int errnum = Z_OK;
    const char *msg = gzerror(gz, &errnum);
    if (errnum == Z_ERRNO)
        return strerror(errno);
    if (msg && !strncmp(msg, "<fd:", 4) && strstr(msg, ">: "))
        msg = strstr(msg, ">: ") + 3;
    return msg && *msg ? msg : "unknown zlib error";
}

/* The uncompressed bytes left in gz, read through a small buffer and counted (at most
 * limit + 1); -1 when the stream is corrupt or cut off before its end (gz_failed). */
static long long gz_count(gzFile gz, unsigned long long limit)
{
    enum { SCRATCH = 1 << 16 };
    uint8_t *scratch = dt_malloc(SCRATCH);
    unsigned long long n = 0;
    int failed = 0;
    while (n <= limit && !failed) {
        int r = gzread(gz, scratch, SCRATCH);
        failed = r < 0 || gz_failed(gz);
        if (r <= 0)
            break;
        n += (unsigned long long)r;
    }
    free(scratch);
    return failed ? -1 : (long long)n;
}

static uint32_t be32(const uint8_t *b)
{
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | (uint32_t)b[3];
}

/* Reads an IDX file of unsigned bytes with exactly want_dims dimensions into dims and a new
 * buffer *data of *bytes bytes (the product of dims). On error *data is NULL. */
/* An IDX file open for reading: a gzip stream over it (zlib reads a plain file through as
 * it is), whether it is gzip, the gzip trailer's size (ISIZE) and the file's. */
typedef struct idx_file {
    gzFile gz;
    int is_gzip;
    uint32_t isize;
    unsigned long long file_bytes;
} idx_file_t;

/* Opens path: a regular file (a FIFO refused rather than waited on), its gzip magic and
 * trailer probed before anything is decompressed. */
static dt_status idx_open(const char *path, idx_file_t *f, dt_err_t *err)
{
    dt_status st;
    *f = (idx_file_t){0};
    /* non-blocking, so that a FIFO in place of the file is refused rather than waited on
     * for a writer; a regular file reads the same either way */
    int fd = open(path, O_RDONLY | O_NONBLOCK);
    if (fd < 0)
        return dt_err_input(err, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        st = dt_err_input(err, "%s: cannot stat: %s", path, strerror(errno));
        close(fd);
        return st;
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return dt_err_input(err, "%s: not a regular file", path);
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    f->file_bytes = (unsigned long long)sb.st_size;

    /* Cheap size probe: gzip magic, then the trailer's ISIZE (little endian). */
    uint8_t probe[4];
    f->is_gzip = pread(fd, probe, 2, 0) == 2 && probe[0] == 0x1f && probe[1] == 0x8b;
    if (f->is_gzip) {
        if (f->file_bytes < GZIP_MIN_BYTES) {
            close(fd);
            return dt_err_input(err,
                                "%s: truncated gzip file (expected at least %d bytes, got %llu)",
                                path, GZIP_MIN_BYTES, f->file_bytes);
        }
        if (pread(fd, probe, 4, (off_t)(f->file_bytes - 4)) != 4) {
            st = dt_err_input(err, "%s: cannot read the gzip trailer: %s", path, strerror(errno));
            close(fd);
            return st;
        }
        f->isize = (uint32_t)probe[0] | (uint32_t)probe[1] << 8 | (uint32_t)probe[2] << 16 |
                   (uint32_t)probe[3] << 24;
    }

    DT_CHECK(lseek(fd, 0, SEEK_SET) == 0, "%s: lseek: %s", path, strerror(errno));
    f->gz = gzdopen(fd, "rb"); /* owns fd from here: gzclose closes it */
    DT_CHECK(f->gz, "%s: gzdopen failed (out of memory)", path);
    gzbuffer(f->gz, 1u << 17);
    return DT_OK;
}

/* The header: two zero bytes, the type byte, the dimension count, then one big-endian u32
 * each; the dimensions into dims, the header's bytes and the data's (their product). */
static dt_status idx_header(const char *path, gzFile gz, int want_dims, uint32_t *dims,
                            size_t *hdr_bytes, size_t *product, dt_err_t *err)
{
    uint8_t hdr[4 + 4 * 3];
    *hdr_bytes = 4 + 4 * (size_t)want_dims;
    long long got = gz_read_all(gz, hdr, 4);
    if (got < 0)
        return dt_err_input(err, "%s: corrupt gzip data (%s)", path, gz_reason(gz));
    if (got < 4)
        return dt_err_input(err, "%s: truncated header (expected at least 4 bytes, got %lld)", path,
                            got);
    if (hdr[0] != 0 || hdr[1] != 0)
        return dt_err_input(err,
                            "%s: bad magic: not an IDX file (expected first bytes 00 00, got "
                            "%02x %02x)",
                            path, hdr[0], hdr[1]);
    if (hdr[2] != IDX_TYPE_UBYTE)
        return dt_err_input(err,
                            "%s: unsupported IDX element type (expected 0x08 unsigned byte, "
                            "got 0x%02x)",
                            path, hdr[2]);
    if (hdr[3] != want_dims)
        return dt_err_input(err, "%s: wrong number of dimensions (expected %d, got %d)", path,
                            want_dims, hdr[3]);
    got = gz_read_all(gz, hdr + 4, *hdr_bytes - 4);
    if (got < 0)
        return dt_err_input(err, "%s: corrupt gzip data (%s)", path, gz_reason(gz));
    if ((size_t)got < *hdr_bytes - 4)
        return dt_err_input(err, "%s: truncated header (expected %zu bytes, got %zu)", path,
                            *hdr_bytes, 4 + (size_t)got);

    *product = 1;
    int overflow = 0;
    for (int d = 0; d < want_dims; d++) {
        dims[d] = be32(hdr + 4 + 4 * d);
        if (dims[d] == 0)
            return dt_err_input(err, "%s: dimension %d is zero (expected > 0, got 0)", path, d);
        if (dims[d] > SIZE_MAX / *product)
            overflow = 1;
        else
            *product *= dims[d];
    }
    if (overflow)
        return dt_err_input(err,
                            "%s: dimension product overflows (expected at most %zu bytes, got "
                            "dimensions %u x %u x %u)",
                            path, TRAINER_IDX_MAX_BYTES, dims[0], want_dims > 1 ? dims[1] : 1,
                            want_dims > 2 ? dims[2] : 1);
    if (*product > TRAINER_IDX_MAX_BYTES)
        return dt_err_input(err, "%s: data too large (expected at most %zu bytes, got %zu)", path,
                            TRAINER_IDX_MAX_BYTES, *product);
    return DT_OK;
}

/* The size on disk (a gzip file's: its trailer, checked against the stream where they
 * differ) must match the header's want_total before anything the header says is
 * allocated. */
static dt_status idx_sizes(const char *path, const idx_file_t *f, size_t hdr_bytes, size_t product,
                           unsigned long long want_total, dt_err_t *err)
{
    unsigned long long have_total = f->is_gzip ? f->isize : f->file_bytes;
    if (f->is_gzip && have_total != (uint32_t)want_total) {
        /* the trailer of a file cut short is whatever compressed bytes came last: count what
         * the stream holds before believing it (bounded: the header's size is capped) */
        long long data_n = gz_count(f->gz, product);
        int errnum = Z_OK;
        gzerror(f->gz, &errnum);
        if (data_n < 0 && errnum == Z_BUF_ERROR)
            return dt_err_input(err,
                                "%s: truncated gzip stream: the file is cut off inside "
                                "its compressed data (expected %llu uncompressed bytes "
                                "from the header)",
                                path, want_total);
        if (data_n < 0)
            return dt_err_input(err, "%s: corrupt gzip data (%s)", path, gz_reason(f->gz));
        if ((uint32_t)(hdr_bytes + (unsigned long long)data_n) != have_total)
            return dt_err_input(err,
                                "%s: the gzip trailer says %llu bytes mod 2^32 and the "
                                "stream holds %llu: not one gzip member as gzip(1) "
                                "writes (expected %llu uncompressed bytes from the "
                                "header)",
                                path, have_total, hdr_bytes + (unsigned long long)data_n,
                                want_total);
    }
    if (have_total == want_total)
        return DT_OK;
    const char *what = have_total < want_total ? "truncated" : "trailing bytes after the data";
    if (f->is_gzip)
        return dt_err_input(err,
                            "%s: %s (expected %llu uncompressed bytes from the header, gzip "
                            "trailer says %llu mod 2^32)",
                            path, what, want_total, have_total);
    return dt_err_input(err, "%s: %s (expected %llu bytes from the header, got %llu)", path, what,
                        want_total, have_total);
}

/* The data: product bytes into buf, then nothing more before the stream's clean end. */
static dt_status idx_body(const char *path, gzFile gz, uint8_t *buf, size_t product,
                          unsigned long long want_total, dt_err_t *err)
{
    long long got = gz_read_all(gz, buf, product);
    if (got < 0)
        return dt_err_input(err, "%s: corrupt gzip data (%s)", path, gz_reason(gz));
    if ((size_t)got < product)
        return dt_err_input(err, "%s: truncated data (expected %zu bytes, got %lld)%s%s", path,
                            product, got, gz_failed(gz) ? ": " : "",
                            gz_failed(gz) ? gz_reason(gz) : "");
    uint8_t extra;
    got = gz_read_all(gz, &extra, 1);
    if (got < 0)
        return dt_err_input(err, "%s: corrupt gzip data (%s)", path, gz_reason(gz));
    if (got > 0)
        return dt_err_input(err,
                            "%s: trailing bytes after the data (expected %llu bytes, got more)",
                            path, want_total);
    if (gz_failed(gz)) /* the stream ended early, e.g. inside the gzip trailer */
        return dt_err_input(err, "%s: corrupt gzip data (%s)", path, gz_reason(gz));
    return DT_OK;
}

static dt_status idx_read(const char *path, int want_dims, uint32_t *dims, uint8_t **data,
                          size_t *bytes, dt_err_t *err)
{
    *data = NULL;
    *bytes = 0;
    idx_file_t f;
    dt_status st = idx_open(path, &f, err);
    if (st != DT_OK)
        return st;
    size_t hdr_bytes = 0, product = 0;
    uint8_t *buf = NULL;
    if ((st = idx_header(path, f.gz, want_dims, dims, &hdr_bytes, &product, err)) == DT_OK) {
        unsigned long long want_total = (unsigned long long)hdr_bytes + product;
        if ((st = idx_sizes(path, &f, hdr_bytes, product, want_total, err)) == DT_OK) {
            buf = dt_malloc(product);
            st = idx_body(path, f.gz, buf, product, want_total, err);
        }
    }
    if (st == DT_OK) {
        *data = buf;
        *bytes = product;
        buf = NULL;
    }
    free(buf);
    gzclose_r(f.gz);
    return st;
}

dt_status trainer_dataset_load_idx(trainer_dataset_t *ds, const char *images_path,
                                   const char *labels_path, int classes, dt_err_t *err)
{
    DT_ASSERT(ds && images_path && labels_path);
    memset(ds, 0, sizeof *ds);
    if (classes < 1 || classes > 256)
        return dt_err_input(err, "%s: classes must be in [1, 256] (got %d)", labels_path, classes);

    dt_status st;
    uint32_t idims[3], ldims[1];
    uint8_t *pixels = NULL, *labels = NULL;
    size_t pixel_bytes, label_bytes;

    st = idx_read(images_path, 3, idims, &pixels, &pixel_bytes, err);
    if (st != DT_OK)
        goto fail;
    st = idx_read(labels_path, 1, ldims, &labels, &label_bytes, err);
    if (st != DT_OK)
        goto fail;
    if (idims[0] != ldims[0]) {
        st = dt_err_input(err, "%s: label count does not match %s (expected %u, got %u)",
                          labels_path, images_path, idims[0], ldims[0]);
        goto fail;
    }
    for (size_t i = 0; i < label_bytes; i++) {
        if (labels[i] >= classes) {
            st = dt_err_input(err, "%s: label out of range at index %zu (expected < %d, got %u)",
                              labels_path, i, classes, labels[i]);
            goto fail;
        }
    }

    /* pixel_bytes <= TRAINER_IDX_MAX_BYTES, so dims fit in int and floats in size_t. */
    DT_ASSERT(pixel_bytes <= SIZE_MAX / sizeof(float));
    ds->n = idims[0];
    ds->channels = 1;
    ds->rows = (int)idims[1];
    ds->cols = (int)idims[2];
    ds->dim = (size_t)idims[1] * idims[2];
    ds->classes = classes;
    ds->x = dt_malloc(pixel_bytes * sizeof(float));
    for (size_t i = 0; i < pixel_bytes; i++)
        ds->x[i] = (float)pixels[i] / 255.0f;
    ds->y = labels;
    free(pixels);
    return DT_OK;

fail:
    free(pixels);
    free(labels);
    memset(ds, 0, sizeof *ds);
    return st;
}

/* Writes DIR/SPLIT-KIND-ubyte.gz, or the name without .gz when only that exists, into
 * path. */
static dt_status find_split_file(char *path, const char *dir, const char *split, const char *kind,
                                 dt_err_t *err)
{
    char plain[DATA_PATH_MAX];
    int len = snprintf(plain, sizeof plain, "%s/%s-%s-ubyte", dir, split, kind);
    if (len < 0 || (size_t)len + 3 >= sizeof plain)
        return dt_err_input(err, "%s: path too long", dir);
    memcpy(path, plain, (size_t)len);
    memcpy(path + len, ".gz", 4);
    struct stat sb;
    if (stat(path, &sb) == 0)
        return DT_OK;
    int gz_errno = errno;
    if (stat(plain, &sb) == 0) {
        memcpy(path, plain, (size_t)len + 1);
        return DT_OK;
    }
    return dt_err_input(err, "%s: cannot open: %s (also tried %s: %s)", path, strerror(gz_errno),
                        plain, strerror(errno));
}

dt_status trainer_dataset_load_dir(trainer_dataset_t *ds, const char *dir, const char *split,
                                   int classes, dt_err_t *err)
{
    DT_ASSERT(ds && dir && split);
    memset(ds, 0, sizeof *ds);
    char images[DATA_PATH_MAX], labels[DATA_PATH_MAX];
    dt_status st = find_split_file(images, dir, split, "images-idx3", err);
    if (st != DT_OK)
        return st;
    st = find_split_file(labels, dir, split, "labels-idx1", err);
    if (st != DT_OK)
        return st;
    return trainer_dataset_load_idx(ds, images, labels, classes, err);
}

void trainer_dataset_synthetic(trainer_dataset_t *ds, size_t n, size_t dim, int classes,
                               float noise, uint64_t seed)
{
    DT_ASSERT(ds && dim >= 1 && dim <= INT_MAX && classes >= 1 && classes <= 256);
    DT_ASSERT(n <= UINT32_MAX && n <= SIZE_MAX / sizeof(float) / dim);
    trainer_rng_t rng;
    trainer_rng_seed(&rng, seed, TRAINER_STREAM_SYNTHETIC);

    /* Draw order is part of the contract (data.h): means, then label order, then noise. */
    float *means = dt_malloc((size_t)classes * dim * sizeof(float)); // (classes, dim)
    for (size_t i = 0; i < (size_t)classes * dim; i++)
        means[i] = (float)trainer_rng_normal(&rng);

    uint32_t *order = dt_malloc(n * sizeof(uint32_t));
    for (size_t i = 0; i < n; i++)
        order[i] = (uint32_t)(i % (size_t)classes);
    trainer_rng_shuffle_u32(&rng, order, n);

    memset(ds, 0, sizeof *ds);
    ds->n = n;
    ds->dim = dim;
    ds->channels = 1;
    ds->rows = 1;
    ds->cols = (int)dim;
    ds->classes = classes;
    ds->x = dt_malloc(n * dim * sizeof(float));
    ds->y = dt_malloc(n);
    for (size_t i = 0; i < n; i++) {
        ds->y[i] = (uint8_t)order[i];
        const float *mu = means + (size_t)order[i] * dim;
        float *xi = ds->x + i * dim;
        for (size_t j = 0; j < dim; j++)
            xi[j] = mu[j] + noise * (float)trainer_rng_normal(&rng);
    }
    free(order);
    free(means);
}

void trainer_dataset_free(trainer_dataset_t *ds)
{
    if (!ds)
        return;
    free(ds->x);
    free(ds->y);
    free(ds->tokens);
    free(ds->source);
    for (int s = 0; ds->source_names && s < ds->sources; s++)
        free(ds->source_names[s]);
    free(ds->source_names);
    free(ds->source_bytes);
    memset(ds, 0, sizeof *ds);
}
