/* Partitioners: spec parsing, exact coverage (every sample once), the sizes each kind
 * promises, the shard structure rebuilt independently, label skew growing as the
 * Dirichlet alpha shrinks, determinism from the seed, and the documented errors; by-source
 * against the windows of each file as written. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "partition.h"

#define FORMS "expected iid, dirichlet:ALPHA, shards:K or by-source"

static trainer_partition_spec_t spec_of(const char *text)
{
    trainer_partition_spec_t spec;
    dt_err_t err = {{0}};
    ck_assert_msg(trainer_partition_parse(&spec, text, &err) == DT_OK, "%s: %s", text, err.msg);
    return spec;
}

static trainer_partition_t make_ok(const trainer_dataset_t *ds, int clients, const char *text,
                                   uint64_t seed)
{
    trainer_partition_spec_t spec = spec_of(text);
    trainer_partition_t p;
    dt_err_t err = {{0}};
    ck_assert_msg(trainer_partition_make(&p, ds, clients, &spec, seed, &err) == DT_OK, "%s: %s",
                  text, err.msg);
    ck_assert_int_eq(p.clients, clients);
    return p;
}

/* Every sample index appears exactly once, offsets are a proper cover of [0, n), and
 * each client's indices are ascending. */
static void check_cover(const trainer_partition_t *p, size_t n)
{
    ck_assert_uint_eq(p->offsets[0], 0);
    ck_assert_uint_eq(p->offsets[p->clients], n);
    unsigned char *seen = calloc(n, 1);
    for (int c = 0; c < p->clients; c++) {
        ck_assert_uint_le(p->offsets[c], p->offsets[c + 1]);
        for (size_t j = p->offsets[c]; j < p->offsets[c + 1]; j++) {
            uint32_t i = p->idx[j];
            ck_assert_uint_lt(i, n);
            ck_assert_msg(!seen[i], "sample %u appears twice", i);
            seen[i] = 1;
            if (j > p->offsets[c])
                ck_assert_uint_lt(p->idx[j - 1], i);
        }
    }
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(seen[i], "sample %zu missing", i);
    free(seen);
}

static void check_sizes_within_one(const trainer_partition_t *p, size_t n)
{
    size_t lo = SIZE_MAX, hi = 0;
    for (int c = 0; c < p->clients; c++) {
        size_t s = trainer_partition_size(p, c);
        lo = s < lo ? s : lo;
        hi = s > hi ? s : hi;
    }
    ck_assert_uint_le(hi - lo, 1);
    ck_assert_uint_eq(lo, n / (size_t)p->clients);
}

static int same_partition(const trainer_partition_t *a, const trainer_partition_t *b, size_t n)
{
    return a->clients == b->clients &&
           memcmp(a->offsets, b->offsets, ((size_t)a->clients + 1) * sizeof *a->offsets) == 0 &&
           memcmp(a->idx, b->idx, n * sizeof *a->idx) == 0;
}

/* ---- parsing ------------------------------------------------------------------------------ */

START_TEST(test_parse_ok)
{
    trainer_partition_spec_t s = spec_of("iid");
    ck_assert_int_eq(s.kind, TRAINER_PARTITION_IID);
    s = spec_of("dirichlet:0.5");
    ck_assert_int_eq(s.kind, TRAINER_PARTITION_DIRICHLET);
    ck_assert(s.alpha == 0.5);
    s = spec_of("dirichlet:1e-3");
    ck_assert(s.alpha == 1e-3);
    s = spec_of("dirichlet:100");
    ck_assert(s.alpha == 100.0);
    s = spec_of("shards:2");
    ck_assert_int_eq(s.kind, TRAINER_PARTITION_SHARDS);
    ck_assert_int_eq(s.shards, 2);
    s = spec_of("shards:1");
    ck_assert_int_eq(s.shards, 1);
    s = spec_of("by-source");
    ck_assert_int_eq(s.kind, TRAINER_PARTITION_BY_SOURCE);
}
END_TEST

static const char *const bad_specs[] = {
    "dirichlet:0",
    "dirichlet:-1",
    "dirichlet:abc",
    "dirichlet:",
    "dirichlet:inf",
    "dirichlet:nan",
    "dirichlet: 1",
    "dirichlet:1x",
    "dirichlet:1e999",
    "shards:0",
    "shards:1.5",
    "shards:-1",
    "shards:",
    "shards: 2",
    "shards:+2",
    "shards:99999999999",
    "foo",
    "",
    "IID",
    "iid ",
    "dirichlet",
    "shards",
    "by-source:1",
    "by_source",
    "bysource",
};

START_TEST(test_parse_errors)
{
    const char *text = bad_specs[_i];
    trainer_partition_spec_t spec;
    dt_err_t err = {{0}};
    ck_assert_int_eq(trainer_partition_parse(&spec, text, &err), DT_ERR_INPUT);
    char quoted[64];
    snprintf(quoted, sizeof quoted, "\"%s\"", text);
    ck_assert_msg(strstr(err.msg, quoted), "%s: message \"%s\" lacks the input", text, err.msg);
    ck_assert_msg(strstr(err.msg, FORMS), "%s: message \"%s\" lacks the forms", text, err.msg);
}
END_TEST

START_TEST(test_parse_unknown_message)
{
    trainer_partition_spec_t spec;
    dt_err_t err = {{0}};
    ck_assert_int_eq(trainer_partition_parse(&spec, "foo", &err), DT_ERR_INPUT);
    ck_assert_str_eq(err.msg, "unknown partition \"foo\" (" FORMS ")");
}
END_TEST

/* ---- iid --------------------------------------------------------------------------------- */

START_TEST(test_iid)
{
    trainer_dataset_t ds;
    trainer_dataset_synthetic(&ds, 1003, 2, 10, 1.0f, 1);
    trainer_partition_t p = make_ok(&ds, 10, "iid", 5);
    check_cover(&p, ds.n);
    check_sizes_within_one(&p, ds.n);
    /* Shuffled, not the identity slices: client 0 is not {0, ..., 99}. */
    ck_assert_uint_ne(p.idx[trainer_partition_size(&p, 0) - 1], trainer_partition_size(&p, 0) - 1);
    trainer_partition_free(&p);
    ck_assert_ptr_null(p.idx);
    ck_assert_ptr_null(p.offsets);

    /* Small cases: 10 over 3 is 3, 3, 4 in some order; n clients get one sample each. */
    trainer_dataset_t small;
    trainer_dataset_synthetic(&small, 10, 2, 2, 1.0f, 1);
    p = make_ok(&small, 3, "iid", 5);
    check_cover(&p, 10);
    check_sizes_within_one(&p, 10);
    trainer_partition_free(&p);
    p = make_ok(&small, 10, "iid", 5);
    check_cover(&p, 10);
    for (int c = 0; c < 10; c++)
        ck_assert_uint_eq(trainer_partition_size(&p, c), 1);
    trainer_partition_free(&p);
    p = make_ok(&small, 1, "iid", 5);
    check_cover(&p, 10);
    trainer_partition_free(&p);
    trainer_dataset_free(&small);
    trainer_dataset_free(&ds);
}
END_TEST

/* ---- shards ------------------------------------------------------------------------------ */

START_TEST(test_shards_balanced)
{
    /* 1000 balanced samples, 10 classes of 100, 10 clients x 2 shards: 20 shards of 50,
     * none straddles a class boundary, so each client has 100 samples from 1 or 2 classes,
     * and each class count is 50 or 100. */
    trainer_dataset_t ds;
    trainer_dataset_synthetic(&ds, 1000, 2, 10, 1.0f, 3);
    trainer_partition_t p = make_ok(&ds, 10, "shards:2", 9);
    check_cover(&p, ds.n);
    int two_class_clients = 0;
    for (int c = 0; c < 10; c++) {
        ck_assert_uint_eq(trainer_partition_size(&p, c), 100);
        size_t h[10];
        trainer_partition_histogram(&p, &ds, c, h);
        int distinct = 0;
        for (int k = 0; k < 10; k++) {
            ck_assert_msg(h[k] == 0 || h[k] == 50 || h[k] == 100, "client %d class %d: %zu", c, k,
                          h[k]);
            distinct += h[k] > 0;
        }
        ck_assert_int_le(distinct, 2);
        two_class_clients += distinct == 2;
    }
    ck_assert_int_gt(two_class_clients, 0); /* shards really were shuffled */
    trainer_partition_free(&p);
    trainer_dataset_free(&ds);
}
END_TEST

static const uint8_t *sort_labels;
static int cmp_by_label(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    if (sort_labels[x] != sort_labels[y])
        return sort_labels[x] < sort_labels[y] ? -1 : 1;
    return (x > y) - (x < y);
}

START_TEST(test_shards_structure)
{
    /* 1003 samples, 7 clients x 3 shards = 21 shards of 47 or 48: each client must hold
     * exactly 3 whole shards of the (label, index) order, rebuilt here with qsort. */
    enum { N = 1003, C = 7, K = 3, S = C * K };
    trainer_dataset_t ds;
    trainer_dataset_synthetic(&ds, N, 2, 10, 1.0f, 4);
    trainer_partition_t p = make_ok(&ds, C, "shards:3", 21);
    check_cover(&p, N);

    uint32_t order[N];
    size_t rank[N];
    for (uint32_t i = 0; i < N; i++)
        order[i] = i;
    sort_labels = ds.y;
    qsort(order, N, sizeof order[0], cmp_by_label);
    for (size_t r = 0; r < N; r++)
        rank[order[r]] = r;
    int owner[S];
    for (int s = 0; s < S; s++)
        owner[s] = -1;
    for (int c = 0; c < C; c++) {
        size_t in_shard[S] = {0};
        for (size_t j = p.offsets[c]; j < p.offsets[c + 1]; j++) {
            size_t r = rank[p.idx[j]];
            int s = 0;
            while ((size_t)(s + 1) * N / S <= r)
                s++;
            in_shard[s]++;
        }
        int whole = 0;
        for (int s = 0; s < S; s++) {
            size_t size = (size_t)(s + 1) * N / S - (size_t)s * N / S;
            ck_assert_msg(in_shard[s] == 0 || in_shard[s] == size,
                          "client %d holds %zu of shard %d (size %zu)", c, in_shard[s], s, size);
            if (in_shard[s]) {
                ck_assert_int_eq(owner[s], -1);
                owner[s] = c;
                whole++;
            }
        }
        ck_assert_int_eq(whole, K);
        /* Each shard (<= 48 samples) is shorter than a class (100): at most 2 labels each. */
        size_t h[10];
        trainer_partition_histogram(&p, &ds, c, h);
        int distinct = 0;
        for (int k = 0; k < 10; k++)
            distinct += h[k] > 0;
        ck_assert_int_le(distinct, 2 * K);
    }
    trainer_partition_free(&p);
    trainer_dataset_free(&ds);
}
END_TEST

START_TEST(test_shards_too_few_samples)
{
    trainer_dataset_t ds;
    trainer_dataset_synthetic(&ds, 20, 2, 2, 1.0f, 1);
    trainer_partition_spec_t spec = spec_of("shards:3");
    trainer_partition_t p;
    dt_err_t err = {{0}};
    ck_assert_int_eq(trainer_partition_make(&p, &ds, 7, &spec, 1, &err), DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "at least 21 samples (got 20)"), "%s", err.msg);
    ck_assert_ptr_null(p.idx);
    /* Exactly enough: 10 clients x 2 shards of one sample each. */
    trainer_partition_t q = make_ok(&ds, 10, "shards:2", 1);
    check_cover(&q, 20);
    trainer_partition_free(&q);
    trainer_dataset_free(&ds);
}
END_TEST

/* ---- dirichlet --------------------------------------------------------------------------- */

/* Mean over clients of the total-variation distance between the client's label
 * distribution and the global one. */
static double mean_tv(const trainer_partition_t *p, const trainer_dataset_t *ds)
{
    size_t global[256] = {0}, h[256];
    for (size_t i = 0; i < ds->n; i++)
        global[ds->y[i]]++;
    double total = 0.0;
    for (int c = 0; c < p->clients; c++) {
        trainer_partition_histogram(p, ds, c, h);
        double size = (double)trainer_partition_size(p, c), tv = 0.0;
        ck_assert(size > 0);
        for (int k = 0; k < ds->classes; k++)
            tv += fabs((double)h[k] / size - (double)global[k] / (double)ds->n);
        total += 0.5 * tv;
    }
    return total / p->clients;
}

START_TEST(test_dirichlet_skew)
{
    trainer_dataset_t ds;
    trainer_dataset_synthetic(&ds, 10000, 2, 10, 1.0f, 2);
    const char *specs[3] = {"dirichlet:100", "dirichlet:1", "dirichlet:0.1"};
    double tv[3];
    for (int a = 0; a < 3; a++) {
        trainer_partition_t p = make_ok(&ds, 10, specs[a], 17);
        check_cover(&p, ds.n);
        for (int c = 0; c < 10; c++)
            ck_assert_uint_gt(trainer_partition_size(&p, c), 0);
        tv[a] = mean_tv(&p, &ds);
        trainer_partition_free(&p);
    }
    /* Measured about 0.04, 0.35 and 0.7 (seeds 17 to 19 agree). */
    ck_assert_msg(tv[0] < 0.1 && tv[0] < tv[1] && tv[1] < tv[2] && tv[2] > 0.5,
                  "mean TV distances %g, %g, %g", tv[0], tv[1], tv[2]);
    trainer_dataset_free(&ds);
}
END_TEST

START_TEST(test_dirichlet_histogram)
{
    /* trainer_partition_histogram against a direct count, on a skewed split. */
    trainer_dataset_t ds;
    trainer_dataset_synthetic(&ds, 2000, 2, 10, 1.0f, 8);
    trainer_partition_t p = make_ok(&ds, 5, "dirichlet:0.3", 8);
    check_cover(&p, ds.n);
    for (int c = 0; c < 5; c++) {
        size_t h[10], direct[10] = {0}, sum = 0;
        trainer_partition_histogram(&p, &ds, c, h);
        for (size_t j = p.offsets[c]; j < p.offsets[c + 1]; j++)
            direct[ds.y[p.idx[j]]]++;
        for (int k = 0; k < 10; k++) {
            ck_assert_uint_eq(h[k], direct[k]);
            sum += h[k];
        }
        ck_assert_uint_eq(sum, trainer_partition_size(&p, c));
    }
    trainer_partition_free(&p);
    trainer_dataset_free(&ds);
}
END_TEST

START_TEST(test_dirichlet_unsatisfiable)
{
    /* 20 samples for 20 clients with alpha 1e-3: nearly all of a class goes to one client,
     * so some client stays empty in every one of the 100 draws. */
    trainer_dataset_t ds;
    trainer_dataset_synthetic(&ds, 20, 2, 10, 1.0f, 1);
    trainer_partition_spec_t spec = spec_of("dirichlet:0.001");
    trainer_partition_t p;
    dt_err_t err = {{0}};
    ck_assert_int_eq(trainer_partition_make(&p, &ds, 20, &spec, 1, &err), DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "no sample in 100 draws"), "%s", err.msg);
    ck_assert_ptr_null(p.idx);
    ck_assert_ptr_null(p.offsets);
    trainer_dataset_free(&ds);
}
END_TEST

/* ---- all kinds --------------------------------------------------------------------------- */

static const char *const all_specs[] = {"iid", "shards:2", "dirichlet:0.5"};

START_TEST(test_deterministic)
{
    const char *text = all_specs[_i];
    trainer_dataset_t ds;
    trainer_dataset_synthetic(&ds, 1000, 2, 10, 1.0f, 6);
    trainer_partition_t a = make_ok(&ds, 8, text, 100);
    trainer_partition_t b = make_ok(&ds, 8, text, 100);
    trainer_partition_t c = make_ok(&ds, 8, text, 101);
    check_cover(&a, ds.n);
    ck_assert_msg(same_partition(&a, &b, ds.n), "%s: same seed, different partitions", text);
    ck_assert_msg(!same_partition(&a, &c, ds.n), "%s: different seeds, same partition", text);
    trainer_partition_free(&a);
    trainer_partition_free(&b);
    trainer_partition_free(&c);
    trainer_dataset_free(&ds);
}
END_TEST

START_TEST(test_client_count_errors)
{
    const char *text = all_specs[_i];
    trainer_dataset_t ds;
    trainer_dataset_synthetic(&ds, 5, 2, 2, 1.0f, 6);
    trainer_partition_spec_t spec = spec_of(text);
    trainer_partition_t p;
    dt_err_t err = {{0}};
    ck_assert_int_eq(trainer_partition_make(&p, &ds, 6, &spec, 1, &err), DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "more clients than samples (expected at most 5 clients, got 6)"),
                  "%s: %s", text, err.msg);
    ck_assert_ptr_null(p.idx);
    ck_assert_int_eq(trainer_partition_make(&p, &ds, 0, &spec, 1, &err), DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "at least 1 client"), "%s: %s", text, err.msg);
    trainer_dataset_free(&ds);
}
END_TEST

/* A federated population (empty_ok): more clients than samples, or a Dirichlet draw that
 * always leaves some client empty, is a partition with empty clients, still a cover of the
 * samples and a function of the seed; shards still need K samples a client. */
static trainer_partition_t make_empty_ok(const trainer_dataset_t *ds, int clients, const char *text,
                                         uint64_t seed)
{
    trainer_partition_spec_t spec = spec_of(text);
    spec.empty_ok = 1;
    trainer_partition_t p;
    dt_err_t err = {{0}};
    ck_assert_msg(trainer_partition_make(&p, ds, clients, &spec, seed, &err) == DT_OK, "%s: %s",
                  text, err.msg);
    return p;
}

static int empty_clients(const trainer_partition_t *p)
{
    int n = 0;
    for (int c = 0; c < p->clients; c++)
        n += trainer_partition_size(p, c) == 0;
    return n;
}

START_TEST(test_empty_ok)
{
    trainer_dataset_t ds;
    trainer_dataset_synthetic(&ds, 50, 2, 4, 1.0f, 1);
    trainer_partition_t a = make_empty_ok(&ds, 200, "dirichlet:0.3", 7);
    trainer_partition_t b = make_empty_ok(&ds, 200, "dirichlet:0.3", 7);
    check_cover(&a, ds.n);
    ck_assert_int_ge(empty_clients(&a), 150); /* at most 50 clients hold a sample */
    ck_assert_msg(same_partition(&a, &b, ds.n), "same seed, different partitions");
    trainer_partition_free(&a);
    trainer_partition_free(&b);
    /* iid: 50 samples over 80 clients, one or none each */
    trainer_partition_t i = make_empty_ok(&ds, 80, "iid", 7);
    check_cover(&i, ds.n);
    check_sizes_within_one(&i, ds.n);
    ck_assert_int_eq(empty_clients(&i), 30);
    trainer_partition_free(&i);
    /* test_dirichlet_unsatisfiable's split: its last draw stands, with its empty clients */
    trainer_dataset_t few;
    trainer_dataset_synthetic(&few, 20, 2, 10, 1.0f, 1);
    trainer_partition_t d = make_empty_ok(&few, 20, "dirichlet:0.001", 1);
    check_cover(&d, few.n);
    ck_assert_int_gt(empty_clients(&d), 0);
    trainer_partition_free(&d);
    trainer_dataset_free(&few);
    trainer_partition_spec_t spec = spec_of("shards:1");
    spec.empty_ok = 1;
    dt_err_t err = {{0}};
    ck_assert_int_eq(trainer_partition_make(&a, &ds, 51, &spec, 1, &err), DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "at least 51 samples (got 50)"), "%s", err.msg);
    trainer_dataset_free(&ds);
}
END_TEST

/* ---- by-source ---------------------------------------------------------------------------- */

static char tmp_dir[] = "/tmp/dtsim_test_partition_XXXXXX";

/* Writes the n files dir/NAME[c] of lens[c] bytes, file c's byte i being
 * 'a' + (7 i + 3 c) % 26 (no two files agree at any offset), into tmp_dir/dir. */
static void write_corpus(const char *dir, int n, const char *const *names, const size_t *lens,
                         uint8_t **text, char *path, size_t cap)
{
    snprintf(path, cap, "%s/%s", tmp_dir, dir);
    ck_assert_int_eq(mkdir(path, 0700), 0);
    for (int c = 0; c < n; c++) {
        text[c] = malloc(lens[c]);
        for (size_t i = 0; i < lens[c]; i++)
            text[c][i] = (uint8_t)('a' + (7 * i + 3 * (size_t)c) % 26);
        char file[1100];
        snprintf(file, sizeof file, "%s/%s", path, names[c]);
        FILE *f = fopen(file, "wb");
        ck_assert_ptr_nonnull(f);
        ck_assert_uint_eq(fwrite(text[c], 1, lens[c], f), lens[c]);
        ck_assert_int_eq(fclose(f), 0);
    }
}

/* Client c holds exactly its file's training windows: (L - L/10 - 1) / seq of them, window k
 * being bytes [k seq, k seq + seq] of the file as written, in order. */
START_TEST(test_by_source_exact)
{
    static const char *const names[] = {"law", "food", "zen"}; /* sources by name: food, law, zen */
    static const size_t lens[] = {40, 25, 5};
    static const int by_name[] = {1, 0, 2}; /* file of client c */
    uint8_t *text[3];
    char dir[512];
    write_corpus("exact", 3, names, lens, text, dir, sizeof dir);
    trainer_dataset_t tr, va;
    dt_err_t err = {{0}};
    const int seq = 3;
    ck_assert_msg(trainer_dataset_load_text(&tr, &va, dir, seq, &err) == DT_OK, "%s", err.msg);
    ck_assert_int_eq(tr.sources, 3);
    trainer_partition_t p = make_ok(&tr, 3, "by-source", 1);
    check_cover(&p, tr.n);
    /* food 25: head 23, 22/3 = 7 windows; law 40: head 36, 35/3 = 11; zen 5: head 5, 4/3 = 1 */
    static const size_t want[] = {7, 11, 1};
    for (int c = 0; c < 3; c++) {
        int f = by_name[c];
        ck_assert_str_eq(tr.source_names[c], names[f]);
        ck_assert_uint_eq(trainer_partition_size(&p, c), want[c]);
        ck_assert_uint_eq(want[c], (lens[f] - lens[f] / 10 - 1) / (size_t)seq);
        for (size_t k = 0; k < want[c]; k++) {
            uint32_t w = p.idx[p.offsets[c] + k];
            ck_assert_mem_eq(tr.tokens + (size_t)w * (seq + 1), text[f] + k * seq, (size_t)seq + 1);
        }
    }
    /* another seed: the same split (by-source draws nothing) */
    trainer_partition_t q = make_ok(&tr, 3, "by-source", 99);
    ck_assert(same_partition(&p, &q, tr.n));
    trainer_partition_free(&q);
    trainer_partition_free(&p);

    /* the text has no labels: dirichlet and shards are refused, iid works */
    for (int k = 0; k < 2; k++) {
        trainer_partition_spec_t spec = spec_of(k ? "shards:1" : "dirichlet:0.5");
        ck_assert_int_eq(trainer_partition_make(&p, &tr, 3, &spec, 1, &err), DT_ERR_INPUT);
        ck_assert_msg(strstr(err.msg, "text windows have no labels (expected iid or by-source)"),
                      "%s", err.msg);
    }
    p = make_ok(&tr, 3, "iid", 1);
    check_cover(&p, tr.n);
    check_sizes_within_one(&p, tr.n);
    trainer_partition_free(&p);

    /* one client per source, no other count */
    trainer_partition_spec_t spec = spec_of("by-source");
    ck_assert_int_eq(trainer_partition_make(&p, &tr, 2, &spec, 1, &err), DT_ERR_INPUT);
    ck_assert_str_eq(err.msg, "partition by-source: one client per source (expected 3 clients "
                              "for 3 sources, got 2)");
    trainer_dataset_free(&tr);
    trainer_dataset_free(&va);
    for (int c = 0; c < 3; c++)
        free(text[c]);
}
END_TEST

/* A source too short for a window: an error naming it, or (a federated population) an empty
 * client; image data has no sources. */
START_TEST(test_by_source_errors)
{
    static const char *const names[] = {"long", "short"};
    static const size_t lens[] = {30, 4}; /* short: head 4 bytes, no window of 4 + 1 */
    uint8_t *text[2];
    char dir[512];
    write_corpus("short", 2, names, lens, text, dir, sizeof dir);
    trainer_dataset_t tr, va;
    dt_err_t err = {{0}};
    ck_assert_msg(trainer_dataset_load_text(&tr, &va, dir, 4, &err) == DT_OK, "%s", err.msg);
    trainer_partition_spec_t spec = spec_of("by-source");
    trainer_partition_t p;
    ck_assert_int_eq(trainer_partition_make(&p, &tr, 2, &spec, 1, &err), DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "source \"short\" has no window (4 bytes, windows of 4 + 1"),
                  "%s", err.msg);
    spec.empty_ok = 1;
    ck_assert_int_eq(trainer_partition_make(&p, &tr, 2, &spec, 1, &err), DT_OK);
    ck_assert_uint_eq(trainer_partition_size(&p, 0), (30 - 3 - 1) / 4);
    ck_assert_uint_eq(trainer_partition_size(&p, 1), 0);
    check_cover(&p, tr.n);
    trainer_partition_free(&p);
    trainer_dataset_free(&tr);
    trainer_dataset_free(&va);
    for (int c = 0; c < 2; c++)
        free(text[c]);

    trainer_dataset_t img;
    trainer_dataset_synthetic(&img, 20, 2, 2, 1.0f, 1);
    spec.empty_ok = 0;
    ck_assert_int_eq(trainer_partition_make(&p, &img, 2, &spec, 1, &err), DT_ERR_INPUT);
    ck_assert_str_eq(err.msg, "partition by-source: image data has no sources (expected a text "
                              "set, data.source = text)");
    trainer_dataset_free(&img);
}
END_TEST

static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char path[1024];
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

static Suite *partition_suite(void)
{
    Suite *s = suite_create("partition");
    TCase *tc = tcase_create("parse");
    tcase_add_test(tc, test_parse_ok);
    tcase_add_loop_test(tc, test_parse_errors, 0, (int)(sizeof bad_specs / sizeof *bad_specs));
    tcase_add_test(tc, test_parse_unknown_message);
    suite_add_tcase(s, tc);

    tc = tcase_create("make");
    tcase_add_test(tc, test_iid);
    tcase_add_test(tc, test_shards_balanced);
    tcase_add_test(tc, test_shards_structure);
    tcase_add_test(tc, test_shards_too_few_samples);
    tcase_add_test(tc, test_dirichlet_skew);
    tcase_add_test(tc, test_dirichlet_histogram);
    tcase_add_test(tc, test_dirichlet_unsatisfiable);
    tcase_add_test(tc, test_empty_ok);
    tcase_add_loop_test(tc, test_deterministic, 0, 3);
    tcase_add_loop_test(tc, test_client_count_errors, 0, 3);
    suite_add_tcase(s, tc);

    tc = tcase_create("by_source");
    tcase_add_test(tc, test_by_source_exact);
    tcase_add_test(tc, test_by_source_errors);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    if (!mkdtemp(tmp_dir)) {
        perror("mkdtemp");
        return 1;
    }
    SRunner *sr = srunner_create(partition_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    remove_tree(tmp_dir);
    return failed == 0 ? 0 : 1;
}
