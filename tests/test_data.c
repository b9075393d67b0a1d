/* Data sets: the IDX reader on small valid and malformed files written at run time (plain
 * and gzip), the real Fashion-MNIST set checked against golden counts and pixel sums, and
 * the synthetic generator's determinism, balance and class means, and text sets: windows
 * and the validation split against hand counts on tiny texts, a folder's sources, and the
 * Debian fortunes corpora against sizes counted with find(1) and wc(1). */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "data.h"

static char tmp_dir[] = "/tmp/dtsim_test_data_XXXXXX";

/* ---- writing test files -------------------------------------------------------------- */

typedef struct bytes {
    uint8_t *p;
    size_t len;
} bytes_t;

/* An IDX byte string: magic bytes m0 m1, type byte, the dims, then payload. */
static bytes_t idx_bytes(uint8_t m0, uint8_t m1, uint8_t type, int ndims, const uint32_t *dims,
                         const uint8_t *payload, size_t payload_len)
{
    bytes_t b;
    b.len = 4 + 4 * (size_t)ndims + payload_len;
    b.p = malloc(b.len);
    ck_assert_ptr_nonnull(b.p);
    b.p[0] = m0;
    b.p[1] = m1;
    b.p[2] = type;
    b.p[3] = (uint8_t)ndims;
    for (int d = 0; d < ndims; d++) {
        b.p[4 + 4 * d] = (uint8_t)(dims[d] >> 24);
        b.p[5 + 4 * d] = (uint8_t)(dims[d] >> 16);
        b.p[6 + 4 * d] = (uint8_t)(dims[d] >> 8);
        b.p[7 + 4 * d] = (uint8_t)dims[d];
    }
    if (payload_len)
        memcpy(b.p + 4 + 4 * ndims, payload, payload_len);
    return b;
}

static bytes_t ubyte_idx(int ndims, const uint32_t *dims, const uint8_t *payload, size_t len)
{
    return idx_bytes(0, 0, 0x08, ndims, dims, payload, len);
}

/* Writes b to tmp_dir/name, plain or through gzopen with `gz_mode` ("wb", "wb0", ...), into
 * path (PATH_BUF bytes), and frees b. */
#define PATH_BUF 512
static void write_file(char *path, const char *name, bytes_t b, const char *gz_mode)
{
    snprintf(path, PATH_BUF, "%s/%s", tmp_dir, name);
    if (gz_mode) {
        gzFile gz = gzopen(path, gz_mode);
        ck_assert_msg(gz != NULL, "gzopen %s", path);
        if (b.len)
            ck_assert_int_eq(gzwrite(gz, b.p, (unsigned)b.len), (int)b.len);
        ck_assert_int_eq(gzclose(gz), Z_OK);
    } else {
        FILE *f = fopen(path, "wb");
        ck_assert_msg(f != NULL, "fopen %s", path);
        if (b.len)
            ck_assert_uint_eq(fwrite(b.p, 1, b.len, f), b.len);
        ck_assert_int_eq(fclose(f), 0);
    }
    free(b.p);
}

static bytes_t read_raw(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "fopen %s", path);
    bytes_t b = {malloc(1 << 20), 0};
    b.len = fread(b.p, 1, 1 << 20, f);
    fclose(f);
    return b;
}

/* The tiny valid set: 2 images of 2 x 3 pixels, labels 3 and 9. */
static const uint8_t tiny_pixels[12] = {0, 255, 51, 102, 153, 204, 1, 2, 3, 4, 5, 6};
static const uint32_t tiny_idims[3] = {2, 2, 3};
static const uint8_t tiny_labels[2] = {3, 9};
static const uint32_t tiny_ldims[1] = {2};

static void write_tiny(char *images, char *labels, const char *prefix, const char *gz_mode)
{
    char name[64];
    snprintf(name, sizeof name, "%s-images", prefix);
    write_file(images, name, ubyte_idx(3, tiny_idims, tiny_pixels, 12), gz_mode);
    snprintf(name, sizeof name, "%s-labels", prefix);
    write_file(labels, name, ubyte_idx(1, tiny_ldims, tiny_labels, 2), gz_mode);
}

static void check_tiny(const trainer_dataset_t *ds)
{
    ck_assert_uint_eq(ds->n, 2);
    ck_assert_uint_eq(ds->dim, 6);
    ck_assert_int_eq(ds->channels, 1);
    ck_assert_int_eq(ds->rows, 2);
    ck_assert_int_eq(ds->cols, 3);
    ck_assert_int_eq(ds->classes, 10);
    ck_assert(ds->x[0] == 0.0f);
    ck_assert(ds->x[1] == 1.0f);
    ck_assert(ds->x[2] == 0.2f);
    ck_assert(ds->x[3] == 0.4f);
    for (int i = 0; i < 12; i++)
        ck_assert_msg(fabs((double)ds->x[i] - tiny_pixels[i] / 255.0) < 1e-7, "pixel %d: %g", i,
                      (double)ds->x[i]);
    ck_assert_uint_eq(ds->y[0], 3);
    ck_assert_uint_eq(ds->y[1], 9);
}

/* Loading must fail with DT_ERR_INPUT, a message naming `path` and containing each of the
 * NULL-terminated substrings, and ds left empty. */
static void expect_reject(const char *images, const char *labels, int classes, const char *path,
                          ...)
{
    trainer_dataset_t ds;
    memset(&ds, 0xab, sizeof ds);
    dt_err_t err = {{0}};
    ck_assert_int_eq(trainer_dataset_load_idx(&ds, images, labels, classes, &err), DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, path) != NULL, "message \"%s\" lacks the path %s", err.msg, path);
    va_list ap;
    va_start(ap, path);
    for (const char *want; (want = va_arg(ap, const char *)) != NULL;)
        ck_assert_msg(strstr(err.msg, want) != NULL, "message \"%s\" lacks \"%s\"", err.msg, want);
    va_end(ap);
    ck_assert_uint_eq(ds.n, 0);
    ck_assert_ptr_null(ds.x);
    ck_assert_ptr_null(ds.y);
    ck_assert_int_eq(ds.classes, 0);
}

/* A valid label file for a 2-image set, for tests that break the image file. */
static void good_labels(char *labels, const char *name)
{
    write_file(labels, name, ubyte_idx(1, tiny_ldims, tiny_labels, 2), NULL);
}

/* ---- valid files ---------------------------------------------------------------------- */

START_TEST(test_valid_plain)
{
    char images[PATH_BUF], labels[PATH_BUF];
    write_tiny(images, labels, "valid-plain", NULL);
    trainer_dataset_t ds;
    dt_err_t err = {{0}};
    ck_assert_int_eq(trainer_dataset_load_idx(&ds, images, labels, 10, &err), DT_OK);
    check_tiny(&ds);
    trainer_dataset_free(&ds);
    ck_assert_ptr_null(ds.x);
    ck_assert_ptr_null(ds.y);
    ck_assert_uint_eq(ds.n, 0);
}
END_TEST

START_TEST(test_valid_gzip)
{
    char images[PATH_BUF], labels[PATH_BUF];
    write_tiny(images, labels, "valid-gz", "wb9");
    bytes_t raw = read_raw(images);
    ck_assert(raw.len >= 2 && raw.p[0] == 0x1f && raw.p[1] == 0x8b); /* really gzip */
    free(raw.p);
    trainer_dataset_t ds;
    dt_err_t err = {{0}};
    ck_assert_int_eq(trainer_dataset_load_idx(&ds, images, labels, 10, &err), DT_OK);
    check_tiny(&ds);
    trainer_dataset_free(&ds);

    /* Mixed: gzip images, plain labels. */
    char plain_labels[PATH_BUF];
    good_labels(plain_labels, "valid-mixed-labels");
    ck_assert_int_eq(trainer_dataset_load_idx(&ds, images, plain_labels, 10, &err), DT_OK);
    check_tiny(&ds);
    trainer_dataset_free(&ds);
}
END_TEST

START_TEST(test_load_dir)
{
    /* train-images as .gz, train-labels only without .gz: both names are tried. */
    char dir[PATH_BUF], path[PATH_BUF];
    snprintf(dir, sizeof dir, "%s/split", tmp_dir);
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    write_file(path, "split/train-images-idx3-ubyte.gz", ubyte_idx(3, tiny_idims, tiny_pixels, 12),
               "wb");
    write_file(path, "split/train-labels-idx1-ubyte", ubyte_idx(1, tiny_ldims, tiny_labels, 2),
               NULL);
    trainer_dataset_t ds;
    dt_err_t err = {{0}};
    ck_assert_int_eq(trainer_dataset_load_dir(&ds, dir, "train", 10, &err), DT_OK);
    check_tiny(&ds);
    trainer_dataset_free(&ds);

    /* No t10k files at all: the message names both paths tried. */
    memset(&ds, 0xab, sizeof ds);
    ck_assert_int_eq(trainer_dataset_load_dir(&ds, dir, "t10k", 10, &err), DT_ERR_INPUT);
    char want[2 * PATH_BUF];
    snprintf(want, sizeof want, "%s/t10k-images-idx3-ubyte.gz", dir);
    ck_assert_msg(strstr(err.msg, want), "message \"%s\" lacks %s", err.msg, want);
    snprintf(want, sizeof want, "also tried %s/t10k-images-idx3-ubyte:", dir);
    ck_assert_msg(strstr(err.msg, want), "message \"%s\" lacks %s", err.msg, want);
    ck_assert_msg(strstr(err.msg, "No such file"), "message \"%s\"", err.msg);
    ck_assert_ptr_null(ds.x);
    ck_assert_uint_eq(ds.n, 0);
}
END_TEST

/* ---- malformed files ------------------------------------------------------------------ */

START_TEST(test_missing_file)
{
    char labels[PATH_BUF], missing[PATH_BUF];
    good_labels(labels, "missing-labels");
    snprintf(missing, sizeof missing, "%s/no-such-file", tmp_dir);
    expect_reject(missing, labels, 10, missing, "cannot open", "No such file", NULL);
    char images[PATH_BUF];
    write_file(images, "missing-images", ubyte_idx(3, tiny_idims, tiny_pixels, 12), NULL);
    expect_reject(images, missing, 10, missing, "cannot open", "No such file", NULL);
    expect_reject(tmp_dir, labels, 10, tmp_dir, "not a regular file", NULL);
}
END_TEST

START_TEST(test_bad_magic)
{
    char images[PATH_BUF], labels[PATH_BUF];
    good_labels(labels, "magic-labels");
    write_file(images, "magic-images", idx_bytes(0, 1, 0x08, 3, tiny_idims, tiny_pixels, 12), NULL);
    expect_reject(images, labels, 10, images, "bad magic", "got 00 01", NULL);
    write_file(images, "magic-images.gz", idx_bytes(7, 0, 0x08, 3, tiny_idims, tiny_pixels, 12),
               "wb");
    expect_reject(images, labels, 10, images, "bad magic", "got 07 00", NULL);
}
END_TEST

START_TEST(test_bad_type)
{
    char images[PATH_BUF], labels[PATH_BUF];
    good_labels(labels, "type-labels");
    /* 0x0d is IDX float: a valid IDX type, but not ours. */
    write_file(images, "type-images", idx_bytes(0, 0, 0x0d, 3, tiny_idims, tiny_pixels, 12), NULL);
    expect_reject(images, labels, 10, images, "element type", "got 0x0d", NULL);
}
END_TEST

START_TEST(test_bad_dim_count)
{
    char images[PATH_BUF], labels[PATH_BUF];
    good_labels(labels, "ndim-labels");
    const uint32_t d2[2] = {2, 6};
    write_file(images, "ndim-images", ubyte_idx(2, d2, tiny_pixels, 12), NULL);
    expect_reject(images, labels, 10, images, "wrong number of dimensions", "(expected 3, got 2)",
                  NULL);
    /* Labels given a 3-dimension file. */
    char images_ok[PATH_BUF];
    write_file(images_ok, "ndim-images-ok", ubyte_idx(3, tiny_idims, tiny_pixels, 12), NULL);
    expect_reject(images_ok, images_ok, 10, images_ok, "wrong number of dimensions",
                  "(expected 1, got 3)", NULL);
}
END_TEST

START_TEST(test_zero_dim)
{
    char images[PATH_BUF], labels[PATH_BUF];
    good_labels(labels, "zero-labels");
    const uint32_t d[3] = {2, 0, 3};
    write_file(images, "zero-images", ubyte_idx(3, d, NULL, 0), NULL);
    expect_reject(images, labels, 10, images, "dimension 1 is zero", NULL);
    const uint32_t l0[1] = {0};
    char images_ok[PATH_BUF];
    write_file(images_ok, "zero-images-ok", ubyte_idx(3, tiny_idims, tiny_pixels, 12), NULL);
    write_file(labels, "zero-labels-0", ubyte_idx(1, l0, NULL, 0), NULL);
    expect_reject(images_ok, labels, 10, labels, "dimension 0 is zero", NULL);
}
END_TEST

START_TEST(test_overflow_and_cap)
{
    char images[PATH_BUF], labels[PATH_BUF];
    good_labels(labels, "cap-labels");
    const uint32_t huge[3] = {0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu};
    write_file(images, "overflow-images", ubyte_idx(3, huge, tiny_pixels, 12), NULL);
    expect_reject(images, labels, 10, images, "overflows", NULL);

    /* One byte over the cap... */
    const uint32_t over[3] = {1024, 1024, 1025};
    write_file(images, "over-cap-images.gz", ubyte_idx(3, over, tiny_pixels, 12), "wb");
    expect_reject(images, labels, 10, images, "too large", "got 1074790400", NULL);
    /* ...and exactly at it: passes the cap, then fails the size check. */
    const uint32_t at[3] = {1024, 1024, 1024};
    write_file(images, "at-cap-images", ubyte_idx(3, at, tiny_pixels, 12), NULL);
    expect_reject(images, labels, 10, images, "truncated",
                  "expected 1073741840 bytes from the header, got 28", NULL);
}
END_TEST

START_TEST(test_truncated_plain)
{
    char images[PATH_BUF], labels[PATH_BUF];
    good_labels(labels, "trunc-labels");
    write_file(images, "trunc-images", ubyte_idx(3, tiny_idims, tiny_pixels, 11), NULL);
    expect_reject(images, labels, 10, images, "truncated",
                  "(expected 28 bytes from the header, got 27)", NULL);
    /* Cut inside the header, and an empty file. */
    bytes_t b = ubyte_idx(3, tiny_idims, tiny_pixels, 12);
    b.len = 10;
    write_file(images, "trunc-header", b, NULL);
    expect_reject(images, labels, 10, images, "truncated header", "(expected 16 bytes, got 10)",
                  NULL);
    write_file(images, "empty", (bytes_t){malloc(1), 0}, NULL);
    expect_reject(images, labels, 10, images, "truncated header",
                  "(expected at least 4 bytes, got 0)", NULL);
}
END_TEST

START_TEST(test_trailing_plain)
{
    char images[PATH_BUF], labels[PATH_BUF];
    good_labels(labels, "trail-labels");
    uint8_t px[13];
    memcpy(px, tiny_pixels, 12);
    px[12] = 7;
    write_file(images, "trail-images", ubyte_idx(3, tiny_idims, px, 13), NULL);
    expect_reject(images, labels, 10, images, "trailing bytes",
                  "(expected 28 bytes from the header, got 29)", NULL);
    /* Same for labels. */
    char images_ok[PATH_BUF];
    write_file(images_ok, "trail-images-ok", ubyte_idx(3, tiny_idims, tiny_pixels, 12), NULL);
    const uint8_t lab[3] = {1, 2, 3};
    write_file(labels, "trail-labels-3", ubyte_idx(1, tiny_ldims, lab, 3), NULL);
    expect_reject(images_ok, labels, 10, labels, "trailing bytes", NULL);
}
END_TEST

START_TEST(test_gzip_size_checks)
{
    char images[PATH_BUF], labels[PATH_BUF];
    good_labels(labels, "gz-labels");
    /* A well-formed gzip stream whose content is one byte short / one byte long. */
    write_file(images, "gz-short.gz", ubyte_idx(3, tiny_idims, tiny_pixels, 11), "wb");
    expect_reject(images, labels, 10, images, "truncated", "gzip trailer says 27", NULL);
    uint8_t px[13] = {0};
    write_file(images, "gz-long.gz", ubyte_idx(3, tiny_idims, px, 13), "wb");
    expect_reject(images, labels, 10, images, "trailing bytes", "gzip trailer says 29", NULL);
    /* Too short to be gzip at all, and gzip magic followed by junk whose last 4 bytes
     * claim the right size: zlib must report the corruption. */
    write_file(images, "gz-tiny.gz", (bytes_t){memcpy(malloc(3), "\x1f\x8b\x08", 3), 3}, NULL);
    expect_reject(images, labels, 10, images, "truncated gzip file", NULL);
    bytes_t junk = {calloc(40, 1), 40};
    junk.p[0] = 0x1f;
    junk.p[1] = 0x8b;
    junk.p[2] = 0x63; /* not deflate */
    junk.p[36] = 28;  /* ISIZE = 28, little endian */
    write_file(images, "gz-junk.gz", junk, NULL);
    expect_reject(images, labels, 10, images, "corrupt gzip data", NULL);
}
END_TEST

START_TEST(test_gzip_cut_midstream)
{
    /* A stored (level 0) gzip of 20000 pixels cut in half, with a forged trailer that
     * claims the full size: the size probe passes, so the read itself must notice. */
    char images[PATH_BUF], labels[PATH_BUF];
    good_labels(labels, "cut-labels");
    const uint32_t d[3] = {2, 100, 100};
    uint8_t *px = malloc(20000);
    for (int i = 0; i < 20000; i++)
        px[i] = (uint8_t)(i * 7);
    write_file(images, "cut-full.gz", ubyte_idx(3, d, px, 20000), "wb0");
    free(px);
    bytes_t raw = read_raw(images);
    ck_assert_uint_gt(raw.len, 20016);
    size_t cut = raw.len / 2;
    uint32_t total = 20016;
    for (int i = 0; i < 4; i++)
        raw.p[cut + (size_t)i] = (uint8_t)(total >> (8 * i));
    raw.len = cut + 4;
    write_file(images, "cut-half.gz", raw, NULL);
    expect_reject(images, labels, 10, images, "truncated data", "(expected 20000 bytes, got", NULL);

    /* Cut inside the 8-byte gzip trailer, with the last 4 bytes forged to the right ISIZE:
     * the data decompresses, but zlib's trailer check must fail. */
    write_tiny(images, labels, "cut-trailer", "wb");
    raw = read_raw(images);
    raw.p[raw.len - 5] = 28; /* keep a correct-looking ISIZE in the last 4 bytes */
    raw.p[raw.len - 4] = 0;
    raw.p[raw.len - 3] = 0;
    raw.p[raw.len - 2] = 0;
    raw.len -= 1;
    write_file(images, "cut-trailer-images.gz", raw, NULL);
    expect_reject(images, labels, 10, images, "corrupt gzip data", NULL);
}
END_TEST

/* A gzip file cut short with nothing forged, as a download or a full disk leaves it: its
 * last 4 bytes are compressed data, not a size, and were read as the trailer's ISIZE ("
 * trailing bytes after the data" for a file that lacks half its bytes). The stream is now
 * counted before the trailer is believed: "truncated gzip stream", cut off. And zlib's own
 * errors name the file, never "<fd:5>". */
START_TEST(test_gzip_cut_without_forgery)
{
    char images[PATH_BUF], labels[PATH_BUF];
    good_labels(labels, "plaincut-labels");
    const uint32_t d[3] = {2, 100, 100};
    uint8_t *px = malloc(20000);
    for (int i = 0; i < 20000; i++) /* incompressible enough that a cut lands mid-stream */
        px[i] = (uint8_t)((i * 2654435761u) >> 13);
    write_file(images, "plaincut-full.gz", ubyte_idx(3, d, px, 20000), "wb");
    free(px);
    bytes_t raw = read_raw(images);
    for (size_t cut = raw.len / 4; cut < raw.len - 8; cut += raw.len / 4) {
        bytes_t part = {malloc(cut), cut};
        memcpy(part.p, raw.p, cut);
        write_file(images, "plaincut-images.gz", part, NULL);
        expect_reject(images, labels, 10, images, "truncated gzip stream", "cut off", NULL);
        trainer_dataset_t ds;
        dt_err_t err = {{0}};
        ck_assert_int_eq(trainer_dataset_load_idx(&ds, images, labels, 10, &err), DT_ERR_INPUT);
        ck_assert_msg(!strstr(err.msg, "trailing") && !strstr(err.msg, "<fd:"), "%s", err.msg);
    }
    free(raw.p);
    /* cut inside the trailer, its size forged right: zlib's "incorrect length check" or
     * "unexpected end of file", under the file's name */
    write_tiny(images, labels, "fdname", "wb");
    raw = read_raw(images);
    raw.p[raw.len - 5] = 28;
    raw.p[raw.len - 4] = 0;
    raw.p[raw.len - 3] = 0;
    raw.p[raw.len - 2] = 0;
    raw.len -= 1;
    write_file(images, "fdname-images.gz", raw, NULL);
    trainer_dataset_t ds;
    dt_err_t err = {{0}};
    ck_assert_int_eq(trainer_dataset_load_idx(&ds, images, labels, 10, &err), DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, images) && strstr(err.msg, "corrupt gzip data") &&
                      !strstr(err.msg, "<fd:"),
                  "%s", err.msg);
}
END_TEST

#if !defined(__SANITIZE_ADDRESS__)
/* Virtual memory of this process in bytes, from /proc (0 when unavailable). */
static size_t vm_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    if (!f)
        return 0;
    if (fscanf(f, "%lu", &pages) != 1)
        pages = 0;
    fclose(f);
    return (size_t)pages * (size_t)sysconf(_SC_PAGESIZE);
}
#endif

START_TEST(test_gzip_lying_header)
{
    /* The header claims 10^9 pixels (under the cap); the file holds 12. The gzip trailer
     * says 28 bytes, so the loader must refuse before allocating 1 GB (+ 4 GB of floats).
     * Outside sanitizer builds, the address space is capped to prove it. */
    char images[PATH_BUF], labels[PATH_BUF];
    good_labels(labels, "lie-labels");
    const uint32_t d[3] = {1000, 1000, 1000};
    write_file(images, "lie-images.gz", ubyte_idx(3, d, tiny_pixels, 12), "wb");
    struct rlimit old = {0, 0};
    int capped = 0;
#if !defined(__SANITIZE_ADDRESS__)
    size_t vm = vm_bytes();
    if (vm > 0 && getrlimit(RLIMIT_AS, &old) == 0) {
        struct rlimit cap = old;
        cap.rlim_cur = (rlim_t)(vm + ((size_t)256 << 20));
        capped = setrlimit(RLIMIT_AS, &cap) == 0;
    }
#endif
    double t0 = dt_wall_seconds();
    expect_reject(images, labels, 10, images, "truncated",
                  "expected 1000000016 uncompressed bytes from the header, gzip trailer says 28",
                  NULL);
    double dt = dt_wall_seconds() - t0;
    if (capped)
        setrlimit(RLIMIT_AS, &old);
    ck_assert_msg(dt < 0.5, "rejecting a lying header took %.3f s", dt);
}
END_TEST

START_TEST(test_count_mismatch)
{
    char images[PATH_BUF], labels[PATH_BUF];
    write_file(images, "count-images", ubyte_idx(3, tiny_idims, tiny_pixels, 12), NULL);
    const uint32_t l3[1] = {3};
    const uint8_t lab[3] = {1, 2, 3};
    write_file(labels, "count-labels", ubyte_idx(1, l3, lab, 3), "wb");
    expect_reject(images, labels, 10, labels, "label count does not match", "(expected 2, got 3)",
                  NULL);
}
END_TEST

START_TEST(test_label_range)
{
    char images[PATH_BUF], labels[PATH_BUF];
    write_file(images, "range-images", ubyte_idx(3, tiny_idims, tiny_pixels, 12), NULL);
    const uint8_t lab[2] = {9, 10};
    write_file(labels, "range-labels", ubyte_idx(1, tiny_ldims, lab, 2), NULL);
    expect_reject(images, labels, 10, labels, "label out of range at index 1",
                  "(expected < 10, got 10)", NULL);
    /* The same file is fine with 11 classes. */
    trainer_dataset_t ds;
    dt_err_t err = {{0}};
    ck_assert_int_eq(trainer_dataset_load_idx(&ds, images, labels, 11, &err), DT_OK);
    ck_assert_uint_eq(ds.y[1], 10);
    trainer_dataset_free(&ds);
}
END_TEST

/* ---- Fashion-MNIST ----------------------------------------------------------------------- */

static void check_fashion(const char *split, size_t n, size_t per_class, uint64_t pixel_sum)
{
    struct stat sb;
    ck_assert_msg(stat(TRAINER_FASHION_MNIST_DIR, &sb) == 0,
                  "Fashion-MNIST not found at %s: install the dataset-fashion-mnist package "
                  "(a declared dependency)",
                  TRAINER_FASHION_MNIST_DIR);
    trainer_dataset_t ds;
    dt_err_t err = {{0}};
    dt_status st = trainer_dataset_load_dir(&ds, TRAINER_FASHION_MNIST_DIR, split, 10, &err);
    ck_assert_msg(st == DT_OK, "%s", err.msg);
    ck_assert_uint_eq(ds.n, n);
    ck_assert_uint_eq(ds.dim, 784);
    ck_assert_int_eq(ds.rows, 28);
    ck_assert_int_eq(ds.cols, 28);
    ck_assert_int_eq(ds.channels, 1);
    size_t count[10] = {0};
    for (size_t i = 0; i < n; i++)
        count[ds.y[i]]++;
    for (int k = 0; k < 10; k++)
        ck_assert_msg(count[k] == per_class, "%s class %d: %zu samples", split, k, count[k]);
    ck_assert_uint_eq(ds.y[0], 9); /* both splits start with an ankle boot */
    /* Golden pixel sum (computed independently with Python's gzip module). */
    uint64_t sum = 0;
    float lo = 1.0f, hi = 0.0f;
    for (size_t i = 0; i < n * 784; i++) {
        float v = ds.x[i];
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
        sum += (uint64_t)lrintf(v * 255.0f);
    }
    ck_assert(lo == 0.0f && hi == 1.0f);
    ck_assert_uint_eq(sum, pixel_sum);
    trainer_dataset_free(&ds);
}

START_TEST(test_fashion_train)
{
    check_fashion("train", 60000, 6000, 3431114169ull);
}
END_TEST

START_TEST(test_fashion_t10k)
{
    check_fashion("t10k", 10000, 1000, 573469082ull);
}
END_TEST

/* ---- synthetic ------------------------------------------------------------------------- */

START_TEST(test_synthetic_deterministic)
{
    trainer_dataset_t a, b, c;
    trainer_dataset_synthetic(&a, 500, 16, 10, 0.5f, 42);
    trainer_dataset_synthetic(&b, 500, 16, 10, 0.5f, 42);
    trainer_dataset_synthetic(&c, 500, 16, 10, 0.5f, 43);
    ck_assert_uint_eq(a.n, 500);
    ck_assert_uint_eq(a.dim, 16);
    ck_assert_int_eq(a.channels, 1);
    ck_assert_int_eq(a.rows, 1);
    ck_assert_int_eq(a.cols, 16);
    ck_assert_int_eq(a.classes, 10);
    ck_assert_int_eq(memcmp(a.x, b.x, 500 * 16 * sizeof(float)), 0);
    ck_assert_int_eq(memcmp(a.y, b.y, 500), 0);
    ck_assert_int_ne(memcmp(a.x, c.x, 500 * 16 * sizeof(float)), 0);
    ck_assert_int_ne(memcmp(a.y, c.y, 500), 0);
    trainer_dataset_free(&a);
    trainer_dataset_free(&b);
    trainer_dataset_free(&c);
    ck_assert_ptr_null(a.x);
    ck_assert_uint_eq(a.n, 0);
}
END_TEST

START_TEST(test_synthetic_balanced)
{
    trainer_dataset_t ds;
    trainer_dataset_synthetic(&ds, 1003, 4, 10, 1.0f, 7);
    size_t count[10] = {0};
    size_t in_order = 0;
    for (size_t i = 0; i < ds.n; i++) {
        ck_assert_uint_lt(ds.y[i], 10);
        count[ds.y[i]]++;
        in_order += ds.y[i] == i % 10;
    }
    /* i % 10 over 1003 samples: classes 0, 1, 2 get 101, the others 100. */
    for (int k = 0; k < 10; k++)
        ck_assert_uint_eq(count[k], k < 3 ? 101 : 100);
    ck_assert_uint_lt(in_order, 300); /* shuffled: about 100 expected by chance */
    trainer_dataset_free(&ds);
}
END_TEST

START_TEST(test_synthetic_means)
{
    /* With noise 0 every sample is its class mean; the noisy set with the same seed shares
     * the means and labels (data.h), so its class sample means must lie within a few
     * noise/sqrt(count) of them, and its residual variance must be noise^2. */
    enum { N = 4000, DIM = 8, K = 4 };
    const float noise = 0.5f;
    trainer_dataset_t clean, noisy;
    trainer_dataset_synthetic(&clean, N, DIM, K, 0.0f, 11);
    trainer_dataset_synthetic(&noisy, N, DIM, K, noise, 11);
    ck_assert_int_eq(memcmp(clean.y, noisy.y, N), 0);

    float mean[K][DIM];
    int seen[K] = {0};
    for (size_t i = 0; i < N; i++) {
        int k = clean.y[i];
        if (!seen[k]) {
            memcpy(mean[k], clean.x + i * DIM, sizeof mean[k]);
            seen[k] = 1;
        }
        ck_assert_int_eq(memcmp(mean[k], clean.x + i * DIM, sizeof mean[k]), 0);
    }
    /* The means themselves look like N(0, 1) draws and differ between classes. */
    double m1 = 0.0, m2 = 0.0;
    for (int k = 0; k < K; k++)
        for (int j = 0; j < DIM; j++) {
            m1 += mean[k][j];
            m2 += (double)mean[k][j] * mean[k][j];
        }
    m1 /= K * DIM;
    m2 /= K * DIM;
    ck_assert_msg(fabs(m1) < 0.6 && m2 > 0.4 && m2 < 2.0, "means: avg %g, avg square %g", m1, m2);
    ck_assert_int_ne(memcmp(mean[0], mean[1], sizeof mean[0]), 0);

    double sum[K][DIM] = {{0}}, sq = 0.0;
    size_t count[K] = {0};
    for (size_t i = 0; i < N; i++) {
        int k = noisy.y[i];
        count[k]++;
        for (int j = 0; j < DIM; j++) {
            double r = noisy.x[i * DIM + j] - mean[k][j];
            sum[k][j] += noisy.x[i * DIM + j];
            sq += r * r;
        }
    }
    for (int k = 0; k < K; k++)
        for (int j = 0; j < DIM; j++) {
            double est = sum[k][j] / (double)count[k];
            double tol = 5.0 * noise / sqrt((double)count[k]);
            ck_assert_msg(fabs(est - mean[k][j]) < tol, "class %d dim %d: %g vs %g (tol %g)", k, j,
                          est, (double)mean[k][j], tol);
        }
    double var = sq / (N * DIM);
    ck_assert_msg(fabs(var - noise * noise) < 0.05 * noise * noise, "noise variance %g", var);
    trainer_dataset_free(&clean);
    trainer_dataset_free(&noisy);
}
END_TEST

/* ---- text ------------------------------------------------------------------------------- */

/* 51 bytes: the last 51/10 = 5 ("STUVW") are the validation tail. */
static const char tiny_text[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJSTUVW";

static void write_text(char *path, const char *name, const char *text)
{
    size_t len = strlen(text);
    bytes_t b = {malloc(len + 1), len};
    memcpy(b.p, text, len);
    write_file(path, name, b, NULL);
}

START_TEST(test_text_windows_hand_count)
{
    ck_assert_uint_eq(strlen(tiny_text), 51); /* the count below is for 51 bytes */
    char path[PATH_BUF];
    write_text(path, "tiny.txt", tiny_text);
    trainer_dataset_t tr, va;
    dt_err_t err = {{0}};
    ck_assert_msg(trainer_dataset_load_text(&tr, &va, path, 4, &err) == DT_OK, "%s", err.msg);
    /* 51 bytes: tail 51/10 = 5 ("STUVW"), head 46 bytes ("0" to "J");
     * head windows (46 - 1) / 4 = 11, window k = bytes [4k, 4k + 4]; tail (5 - 1) / 4 = 1 */
    ck_assert_uint_eq(tr.n, 11);
    ck_assert_uint_eq(va.n, 1);
    ck_assert_int_eq(tr.seq, 4);
    ck_assert_uint_eq(tr.dim, 5);
    ck_assert_int_eq(tr.cols, 5);
    ck_assert_int_eq(tr.classes, 256);
    /* x: the same tokens as floats, y: zeros (the learner's gather reads them) */
    for (size_t i = 0; i < tr.n * 5; i++)
        ck_assert(tr.x[i] == (float)tr.tokens[i]);
    ck_assert(tr.x[5] == (float)'4' && tr.x[9] == (float)'8');
    for (size_t i = 0; i < tr.n; i++)
        ck_assert_uint_eq(tr.y[i], 0);
    ck_assert_mem_eq(tr.tokens, "01234", 5);
    ck_assert_mem_eq(tr.tokens + 5, "45678", 5);
    ck_assert_mem_eq(tr.tokens + 10 * 5, "EFGHI", 5); /* bytes 40..44 */
    ck_assert_mem_eq(va.tokens, "STUVW", 5);
    ck_assert_int_eq(tr.sources, 1);
    ck_assert_str_eq(tr.source_names[0], "tiny.txt");
    ck_assert_uint_eq(tr.source_bytes[0], 46);
    ck_assert_uint_eq(va.source_bytes[0], 5);
    for (size_t i = 0; i < tr.n; i++)
        ck_assert_uint_eq(tr.source[i], 0);

    /* the batch: windows 10 and 0, inputs their first 4 bytes, targets shifted by one */
    uint32_t idx[2] = {10, 0};
    int32_t in[8], out[8];
    trainer_text_batch(&tr, idx, 2, in, out);
    const int32_t want_in[8] = {'E', 'F', 'G', 'H', '0', '1', '2', '3'};
    const int32_t want_out[8] = {'F', 'G', 'H', 'I', '1', '2', '3', '4'};
    ck_assert_mem_eq(in, want_in, sizeof in);
    ck_assert_mem_eq(out, want_out, sizeof out);

    /* the unigram baseline: the training targets are bytes 1..44, each once; the validation
     * targets "TUVW" are none of them: each (0 + 1) / (44 + 256), the loss ln 300 */
    ck_assert_double_eq_tol(trainer_text_unigram_loss(&tr, &va), log(300.0), 1e-12);
    { /* 51 a's: 44 training targets 'a', so each validation 'a' has (44 + 1) / 300 */
        char apath[PATH_BUF];
        write_text(apath, "a51.txt", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
        trainer_dataset_t atr, ava;
        ck_assert_int_eq(trainer_dataset_load_text(&atr, &ava, apath, 4, &err), DT_OK);
        ck_assert_double_eq_tol(trainer_text_unigram_loss(&atr, &ava), -log(45.0 / 300.0), 1e-12);
        trainer_dataset_free(&atr);
        trainer_dataset_free(&ava);
    }

    /* the split is a pure function of the bytes: a second load is byte for byte the same */
    trainer_dataset_t tr2, va2;
    ck_assert_int_eq(trainer_dataset_load_text(&tr2, &va2, path, 4, &err), DT_OK);
    ck_assert_uint_eq(tr2.n, tr.n);
    ck_assert_uint_eq(va2.n, va.n);
    ck_assert_mem_eq(tr2.tokens, tr.tokens, tr.n * 5);
    ck_assert_mem_eq(va2.tokens, va.tokens, va.n * 5);
    trainer_dataset_free(&tr2);
    trainer_dataset_free(&va2);

    /* seq 45 leaves one head window (46 bytes) and none in the tail; seq 46 none at all */
    trainer_dataset_free(&tr);
    trainer_dataset_free(&va);
    ck_assert_int_eq(trainer_dataset_load_text(&tr, &va, path, 45, &err), DT_OK);
    ck_assert_uint_eq(tr.n, 1);
    ck_assert_uint_eq(va.n, 0);
    ck_assert_mem_eq(tr.tokens, tiny_text, 46);
    trainer_dataset_free(&tr);
    trainer_dataset_free(&va);
    ck_assert_int_eq(trainer_dataset_load_text(&tr, &va, path, 46, &err), DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, path) && strstr(err.msg, "no training window of 46 + 1"), "%s",
                  err.msg);
    ck_assert_ptr_null(tr.tokens);
    ck_assert_ptr_null(va.tokens);
    ck_assert_ptr_null(tr.x);
}
END_TEST

/* A folder: its regular files by name are the sources; hidden files, strfile's .dat
 * indexes, links and subfolders are not. */
START_TEST(test_text_folder_sources)
{
    char dir[PATH_BUF], path[PATH_BUF], sub[PATH_BUF];
    snprintf(dir, sizeof dir, "%s/corpus", tmp_dir);
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    write_text(path, "corpus/b", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"); /* 49 */
    write_text(path, "corpus/a", "aaaaaaaaaaaaaaaaaaaaa");                             /* 21 */
    write_text(path, "corpus/a.dat", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
    write_text(path, "corpus/.hidden", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
    snprintf(sub, sizeof sub, "%s/corpus/sub", tmp_dir);
    ck_assert_int_eq(mkdir(sub, 0700), 0);
    write_text(path, "corpus/sub/c", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
    snprintf(path, sizeof path, "%s/corpus/a.u8", tmp_dir);
    ck_assert_int_eq(symlink("a", path), 0);

    trainer_dataset_t tr, va;
    dt_err_t err = {{0}};
    ck_assert_msg(trainer_dataset_load_text(&tr, &va, dir, 4, &err) == DT_OK, "%s", err.msg);
    ck_assert_int_eq(tr.sources, 2);
    ck_assert_str_eq(tr.source_names[0], "a");
    ck_assert_str_eq(tr.source_names[1], "b");
    /* a: 21 bytes, tail 2, head 19: 18/4 = 4 windows; b: 49, tail 4, head 45: 11 windows;
     * tails 2 and 4 bytes: no window */
    ck_assert_uint_eq(tr.n, 4 + 11);
    ck_assert_uint_eq(va.n, 0);
    for (size_t i = 0; i < tr.n; i++) {
        ck_assert_uint_eq(tr.source[i], i < 4 ? 0 : 1);
        ck_assert_mem_eq(tr.tokens + i * 5, i < 4 ? "aaaaa" : "bbbbb", 5);
    }
    trainer_dataset_free(&tr);
    trainer_dataset_free(&va);
}
END_TEST

START_TEST(test_text_errors)
{
    char path[PATH_BUF], empty_dir[PATH_BUF];
    trainer_dataset_t tr, va;
    dt_err_t err = {{0}};
    write_text(path, "short.txt", "abc");
    ck_assert_int_eq(trainer_dataset_load_text(&tr, &va, path, 0, &err), DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "at least 1 token (got 0)"), "%s", err.msg);
    ck_assert_int_eq(trainer_dataset_load_text(&tr, &va, path, 3, &err), DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "no training window of 3 + 1 bytes in 3 bytes"), "%s", err.msg);
    write_text(path, "empty.txt", "");
    ck_assert_int_eq(trainer_dataset_load_text(&tr, &va, path, 3, &err), DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "source \"empty.txt\" is empty"), "%s", err.msg);
    snprintf(empty_dir, sizeof empty_dir, "%s/nothing", tmp_dir);
    ck_assert_int_eq(mkdir(empty_dir, 0700), 0);
    ck_assert_int_eq(trainer_dataset_load_text(&tr, &va, empty_dir, 3, &err), DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "no text file in the folder"), "%s", err.msg);
    snprintf(path, sizeof path, "%s/absent", tmp_dir);
    ck_assert_int_eq(trainer_dataset_load_text(&tr, &va, path, 3, &err), DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, path) && strstr(err.msg, "cannot open"), "%s", err.msg);
    ck_assert_ptr_null(tr.tokens);
    ck_assert_uint_eq(tr.n, 0);
}
END_TEST

/* The Debian corpora (fortunes 1:1.99.1-7.3, fortunes-de 0.35-1, fortunes-es 1.36,
 * fortunes-it 1.99-4.1), against sizes counted with find(1) and wc(1), and window counts at
 * seq 64 from a separate Python reading of the same files. */
static void check_corpus(const char *name, int sources, const char *const *names,
                         const size_t *bytes, size_t train_windows, size_t valid_windows)
{
    struct stat sb;
    ck_assert_msg(stat(TRAINER_FORTUNES_DIR, &sb) == 0,
                  "%s not found: install the fortunes, fortunes-de, fortunes-es and "
                  "fortunes-it packages (declared dependencies)",
                  TRAINER_FORTUNES_DIR);
    trainer_dataset_t tr, va;
    dt_err_t err = {{0}};
    const int seq = 64;
    ck_assert_msg(trainer_dataset_load_text(&tr, &va, name, seq, &err) == DT_OK, "%s", err.msg);
    ck_assert_int_eq(tr.sources, sources);
    size_t total = 0, want_tr = 0, want_va = 0;
    for (int s = 0; s < sources; s++) {
        size_t len = tr.source_bytes[s] + va.source_bytes[s], tail = len / 10;
        ck_assert_uint_eq(va.source_bytes[s], tail);
        want_tr += (len - tail - 1) / seq;
        want_va += tail > (size_t)seq ? (tail - 1) / seq : 0;
        total += len;
        if (names)
            ck_assert_str_eq(tr.source_names[s], names[s]);
        if (bytes)
            ck_assert_uint_eq(len, bytes[s]);
    }
    ck_assert_uint_eq(tr.n, want_tr);
    ck_assert_uint_eq(va.n, want_va);
    ck_assert_uint_eq(tr.n, train_windows);
    ck_assert_uint_eq(va.n, valid_windows);
    if (!bytes)
        ck_assert_uint_eq(total, 2576674);
    trainer_dataset_free(&tr);
    trainer_dataset_free(&va);
}

START_TEST(test_text_fortunes)
{
    check_corpus("fortunes", 43, NULL, NULL, 36213, 4003);
}
END_TEST

/* text-noniid's test set (512 windows of 33 bytes of the fortunes' 43 topics): drawn from
 * every source, one window each and the other 469 in proportion to the windows each has
 * (floor or ceiling of its share), each an unchanged window of its own source's tail, in
 * order; the same seed the same windows, another seed others. The first 512 windows held 3
 * sources (art 266, ascii-art 18, computers 228). */
START_TEST(test_text_subsample_every_source)
{
    trainer_dataset_t tr, va, full;
    dt_err_t err = {{0}};
    ck_assert_msg(trainer_dataset_load_text(&tr, &full, "fortunes", 32, &err) == DT_OK, "%s",
                  err.msg);
    trainer_dataset_free(&tr);
    ck_assert_int_eq(full.sources, 43);
    size_t have[43] = {0}, got[43] = {0}, k = 512, dim = full.dim;
    for (size_t w = 0; w < full.n; w++)
        have[full.source[w]]++;
    size_t firsts = 0; /* sources in the first k windows, as the cut was */
    for (int s = 0; s < 43; s++)
        firsts += s == 0 || full.source[k - 1] >= (uint32_t)s ? have[s] > 0 : 0;
    ck_assert_uint_eq(firsts, 3);
    uint32_t picked_a[512], picked_b[512];
    for (int pass = 0; pass < 3; pass++) {
        ck_assert(trainer_dataset_load_text(&tr, &va, "fortunes", 32, &err) == DT_OK);
        trainer_text_subsample(&va, k, pass == 2 ? 2 : 1);
        ck_assert_uint_eq(va.n, k);
        memset(got, 0, sizeof got);
        size_t from = 0; /* each window found in its source's part of full, in order */
        for (size_t w = 0; w < k; w++) {
            uint32_t s = va.source[w];
            ck_assert(w == 0 || s >= va.source[w - 1]);
            got[s]++;
            size_t j = from;
            while (j < full.n &&
                   (full.source[j] != s || memcmp(full.tokens + j * dim, va.tokens + w * dim, dim)))
                j++;
            ck_assert_msg(j < full.n, "window %zu is none of source %u's", w, s);
            for (size_t t = 0; t < dim; t++)
                ck_assert(va.x[w * dim + t] == (float)va.tokens[w * dim + t]);
            (pass == 1 ? picked_b : picked_a)[w] = (uint32_t)j;
            from = j + 1;
        }
        size_t spare = full.n - 43;
        for (int s = 0; s < 43; s++) {
            double share = (double)(k - 43) * (double)(have[s] - 1) / (double)spare;
            ck_assert_msg(have[s] > 0 && got[s] >= 1 + (size_t)floor(share) &&
                              got[s] <= 1 + (size_t)ceil(share),
                          "source %d (%s): %zu of %zu windows, share %g", s, full.source_names[s],
                          got[s], have[s], share);
        }
        if (pass == 1) /* the same seed: the same windows */
            ck_assert(!memcmp(picked_a, picked_b, sizeof picked_a));
        if (pass == 2) /* another seed: others */
            ck_assert(memcmp(picked_a, picked_b, sizeof picked_a));
        trainer_dataset_free(&tr);
        trainer_dataset_free(&va);
    }
    trainer_dataset_free(&full);
}
END_TEST

START_TEST(test_text_fortunes_languages)
{
    static const char *const names[] = {"en", "de", "es", "it"};
    static const size_t bytes[] = {2576674, 2963648, 936470, 1595662};
    check_corpus("fortunes-languages", 4, names, bytes, 113517, 12612);
}
END_TEST

/* ---- runner ------------------------------------------------------------------------------ */

static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char path[PATH_BUF];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
            remove_tree(path);
        else
            unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

static Suite *data_suite(void)
{
    Suite *s = suite_create("data");
    TCase *tc = tcase_create("idx");
    tcase_add_test(tc, test_valid_plain);
    tcase_add_test(tc, test_valid_gzip);
    tcase_add_test(tc, test_load_dir);
    tcase_add_test(tc, test_missing_file);
    tcase_add_test(tc, test_bad_magic);
    tcase_add_test(tc, test_bad_type);
    tcase_add_test(tc, test_bad_dim_count);
    tcase_add_test(tc, test_zero_dim);
    tcase_add_test(tc, test_overflow_and_cap);
    tcase_add_test(tc, test_truncated_plain);
    tcase_add_test(tc, test_trailing_plain);
    tcase_add_test(tc, test_gzip_size_checks);
    tcase_add_test(tc, test_gzip_cut_midstream);
    tcase_add_test(tc, test_gzip_cut_without_forgery);
    tcase_add_test(tc, test_gzip_lying_header);
    tcase_add_test(tc, test_count_mismatch);
    tcase_add_test(tc, test_label_range);
    suite_add_tcase(s, tc);

    tc = tcase_create("fashion_mnist");
    tcase_set_timeout(tc, 60); /* about 1 s each, several under sanitizers */
    tcase_add_test(tc, test_fashion_train);
    tcase_add_test(tc, test_fashion_t10k);
    suite_add_tcase(s, tc);

    tc = tcase_create("synthetic");
    tcase_add_test(tc, test_synthetic_deterministic);
    tcase_add_test(tc, test_synthetic_balanced);
    tcase_add_test(tc, test_synthetic_means);
    suite_add_tcase(s, tc);

    tc = tcase_create("text");
    tcase_set_timeout(tc, 60); /* the Debian corpora: 9 MB read, well under 1 s each */
    tcase_add_test(tc, test_text_windows_hand_count);
    tcase_add_test(tc, test_text_folder_sources);
    tcase_add_test(tc, test_text_errors);
    tcase_add_test(tc, test_text_fortunes);
    tcase_add_test(tc, test_text_fortunes_languages);
    tcase_add_test(tc, test_text_subsample_every_source);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    if (!mkdtemp(tmp_dir)) {
        perror("mkdtemp");
        return 1;
    }
    SRunner *sr = srunner_create(data_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    remove_tree(tmp_dir);
    return failed == 0 ? 0 : 1;
}
