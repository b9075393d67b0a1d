/* Text data sets (see data.h): a corpus read as bytes, one source per file (or per
 * language folder), each source split into a training head and a validation tail, each part
 * cut into windows of seq + 1 byte tokens. The sets are a pure function of the files' bytes,
 * their names and seq; trainer_text_subsample alone draws (seeded) which test windows a
 * smaller test set keeps. */
#define _POSIX_C_SOURCE 200809L
#include "data.h"
#include "rng.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TEXT_PATH_MAX 4096

typedef struct text_source {
    char *name;
    uint8_t *bytes; /* (len), owned */
    size_t len;
} text_source_t;

typedef struct text_corpus {
    text_source_t *src; /* (n), owned */
    int n, cap;
    size_t total; /* bytes of all sources */
} text_corpus_t;

static void corpus_free(text_corpus_t *c)
{
    for (int i = 0; i < c->n; i++) {
        free(c->src[i].name);
        free(c->src[i].bytes);
    }
    free(c->src);
    memset(c, 0, sizeof *c);
}

static text_source_t *corpus_add(text_corpus_t *c, const char *name)
{
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 16;
        text_source_t *grown = realloc(c->src, (size_t)c->cap * sizeof *grown);
        DT_CHECK(grown, "out of memory");
        c->src = grown;
    }
    text_source_t *s = &c->src[c->n++];
    memset(s, 0, sizeof *s);
    size_t len = strlen(name);
    s->name = dt_malloc(len + 1);
    memcpy(s->name, name, len + 1);
    return s;
}

/* Appends the whole of the regular file at path to s, keeping the corpus under
 * TRAINER_TEXT_MAX_BYTES. */
static dt_status append_file(text_corpus_t *c, text_source_t *s, const char *path, dt_err_t *err)
{
    /* non-blocking, so that a FIFO in place of the file is refused rather than waited on */
    int fd = open(path, O_RDONLY | O_NONBLOCK);
    if (fd < 0)
        return dt_err_input(err, "%s: cannot open: %s", path, strerror(errno));
    dt_status st = DT_OK;
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        st = dt_err_input(err, "%s: cannot stat: %s", path, strerror(errno));
        goto done;
    }
    if (!S_ISREG(sb.st_mode)) {
        st = dt_err_input(err, "%s: not a regular file", path);
        goto done;
    }
    size_t want = (size_t)sb.st_size;
    if (want > TRAINER_TEXT_MAX_BYTES - c->total) {
        st = dt_err_input(err, "%s: corpus too large (expected at most %zu bytes in all)", path,
                          TRAINER_TEXT_MAX_BYTES);
        goto done;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    uint8_t *grown = realloc(s->bytes, s->len + want + 1);
    DT_CHECK(grown, "%s: out of memory", path);
    s->bytes = grown;
    size_t got = 0;
    while (got < want) {
        ssize_t r = read(fd, s->bytes + s->len + got, want - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            st = dt_err_input(err, "%s: cannot read: %s", path, strerror(errno));
            goto done;
        }
        if (r == 0) {
            st = dt_err_input(err, "%s: file shrank while read (expected %zu bytes, got %zu)", path,
                              want, got);
            goto done;
        }
        got += (size_t)r;
    }
    s->len += want;
    c->total += want;
done:
    close(fd);
    return st;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && !strcmp(s + n - m, tail);
}

/* The names of the sources in dir (data.h: regular files, no '.' prefix, no ".dat"
 * suffix, no links), sorted by strcmp, into a new array *names of *count. */
static dt_status list_folder(const char *dir, char ***names, int *count, dt_err_t *err)
{
    *names = NULL;
    *count = 0;
    DIR *d = opendir(dir);
    if (!d)
        return dt_err_input(err, "%s: cannot open folder: %s", dir, strerror(errno));
    int cap = 0;
    struct dirent *e;
    char path[TEXT_PATH_MAX];
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || ends_with(e->d_name, ".dat"))
            continue;
        int len = snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (len < 0 || (size_t)len >= sizeof path || lstat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
            continue;
        if (*count == cap) {
            cap = cap ? 2 * cap : 32;
            char **grown = realloc(*names, (size_t)cap * sizeof *grown);
            DT_CHECK(grown, "out of memory");
            *names = grown;
        }
        size_t n = strlen(e->d_name);
        (*names)[*count] = dt_malloc(n + 1);
        memcpy((*names)[*count], e->d_name, n + 1);
        (*count)++;
    }
    closedir(d);
    if (*count == 0)
        return dt_err_input(err, "%s: no text file in the folder", dir);
    qsort(*names, (size_t)*count, sizeof **names, cmp_str);
    return DT_OK;
}

static void free_names(char **names, int count)
{
    for (int i = 0; i < count; i++)
        free(names[i]);
    free(names);
}

/* Adds the sources of dir: one per file, or (one_source != NULL) all its files as one
 * source of that name. */
static dt_status add_folder(text_corpus_t *c, const char *dir, const char *one_source,
                            dt_err_t *err)
{
    char **names;
    int count;
    dt_status st = list_folder(dir, &names, &count, err);
    if (st != DT_OK)
        return st;
    char path[TEXT_PATH_MAX];
    text_source_t *s = one_source ? corpus_add(c, one_source) : NULL;
    for (int i = 0; i < count && st == DT_OK; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]); /* fits: list_folder checked */
        if (!one_source)
            s = corpus_add(c, names[i]);
        st = append_file(c, s, path, err);
    }
    free_names(names, count);
    return st;
}

/* A folder of a Debian fortunes package: a missing one names the package to install. */
static dt_status add_package_folder(text_corpus_t *c, const char *dir, const char *one_source,
                                    const char *package, dt_err_t *err)
{
    struct stat sb;
    if (stat(dir, &sb) != 0)
        return dt_err_input(err,
                            "%s: cannot open folder: %s (expected Debian's %s package: "
                            ".ci/deps.sh installs it)",
                            dir, strerror(errno), package);
    return add_folder(c, dir, one_source, err);
}

static dt_status read_corpus(text_corpus_t *c, const char *path, dt_err_t *err)
{
    if (!strcmp(path, "fortunes"))
        return add_package_folder(c, TRAINER_FORTUNES_DIR, NULL, "fortunes", err);
    if (!strcmp(path, "fortunes-languages")) {
        static const char *const langs[] = {"de", "es", "it"};
        dt_status st = add_package_folder(c, TRAINER_FORTUNES_DIR, "en", "fortunes", err);
        char dir[TEXT_PATH_MAX], package[32];
        for (size_t i = 0; i < sizeof langs / sizeof *langs && st == DT_OK; i++) {
            snprintf(dir, sizeof dir, "%s/%s", TRAINER_FORTUNES_DIR, langs[i]);
            snprintf(package, sizeof package, "fortunes-%s", langs[i]);
            st = add_package_folder(c, dir, langs[i], package, err);
        }
        return st;
    }
    struct stat sb;
    if (stat(path, &sb) != 0)
        return dt_err_input(err, "%s: cannot open: %s", path, strerror(errno));
    if (S_ISDIR(sb.st_mode))
        return add_folder(c, path, NULL, err);
    const char *base = strrchr(path, '/');
    return append_file(c, corpus_add(c, base ? base + 1 : path), path, err);
}

static size_t windows_of(size_t bytes, int seq)
{
    return bytes > (size_t)seq ? (bytes - 1) / (size_t)seq : 0;
}

/* Fills ds with the windows of each source's part [from(len), to(len)): valid = 0 the
 * training head, 1 the validation tail. */
static void cut_windows(trainer_dataset_t *ds, const text_corpus_t *c, int seq, int valid)
{
    size_t n = 0;
    for (int i = 0; i < c->n; i++) {
        size_t tail = c->src[i].len / TRAINER_TEXT_VALID_DIV;
        n += windows_of(valid ? tail : c->src[i].len - tail, seq);
    }
    memset(ds, 0, sizeof *ds);
    size_t dim = (size_t)seq + 1;
    ds->n = n;
    ds->dim = dim;
    ds->channels = 1;
    ds->rows = 1;
    ds->cols = (int)dim;
    ds->classes = TRAINER_TEXT_VOCAB;
    ds->seq = seq;
    ds->tokens = dt_malloc((n ? n : 1) * dim);
    ds->x = dt_malloc((n ? n : 1) * dim * sizeof *ds->x);
    ds->y = dt_calloc(n ? n : 1, 1);
    ds->source = dt_malloc((n ? n : 1) * sizeof *ds->source);
    ds->sources = c->n;
    ds->source_names = dt_malloc((size_t)c->n * sizeof *ds->source_names);
    ds->source_bytes = dt_malloc((size_t)c->n * sizeof *ds->source_bytes);
    size_t w = 0;
    for (int i = 0; i < c->n; i++) {
        const text_source_t *s = &c->src[i];
        size_t tail = s->len / TRAINER_TEXT_VALID_DIV;
        size_t from = valid ? s->len - tail : 0, bytes = valid ? tail : s->len - tail;
        size_t len = strlen(s->name);
        ds->source_names[i] = dt_malloc(len + 1);
        memcpy(ds->source_names[i], s->name, len + 1);
        ds->source_bytes[i] = bytes;
        for (size_t k = 0; k < windows_of(bytes, seq); k++, w++) {
            memcpy(ds->tokens + w * ((size_t)seq + 1), s->bytes + from + k * (size_t)seq,
                   (size_t)seq + 1);
            ds->source[w] = (uint32_t)i;
        }
    }
    DT_ASSERT(w == n);
    for (size_t i = 0; i < n * dim; i++)
        ds->x[i] = (float)ds->tokens[i];
}

dt_status trainer_dataset_load_text(trainer_dataset_t *train, trainer_dataset_t *valid,
                                    const char *path, int seq, dt_err_t *err)
{
    DT_ASSERT(train && valid && path);
    memset(train, 0, sizeof *train);
    memset(valid, 0, sizeof *valid);
    if (seq < 1)
        return dt_err_input(err, "%s: window length must be at least 1 token (got %d)", path, seq);
    text_corpus_t c = {0};
    dt_status st = read_corpus(&c, path, err);
    for (int i = 0; st == DT_OK && i < c.n; i++)
        if (c.src[i].len == 0)
            st = dt_err_input(err, "%s: source \"%s\" is empty", path, c.src[i].name);
    if (st == DT_OK) {
        cut_windows(train, &c, seq, 0);
        cut_windows(valid, &c, seq, 1);
        /* n < 2^32: at most TRAINER_TEXT_MAX_BYTES = 2^28 windows */
        if (train->n == 0) {
            st = dt_err_input(err,
                              "%s: no training window of %d + 1 bytes in %zu bytes of text "
                              "(expected more text or a shorter window)",
                              path, seq, c.total);
            trainer_dataset_free(train);
            trainer_dataset_free(valid);
        }
    }
    corpus_free(&c);
    return st;
}

void trainer_text_batch(const trainer_dataset_t *ds, const uint32_t *idx, int batch,
                        int32_t *inputs, int32_t *targets)
{
    DT_ASSERT(ds && ds->tokens && idx && inputs && targets && batch >= 0);
    size_t seq = (size_t)ds->seq;
    for (int b = 0; b < batch; b++) {
        DT_ASSERT(idx[b] < ds->n);
        const uint8_t *w = ds->tokens + (size_t)idx[b] * (seq + 1);
        int32_t *in = inputs + (size_t)b * seq, *out = targets + (size_t)b * seq;
        for (size_t t = 0; t < seq; t++) {
            in[t] = w[t];
            out[t] = w[t + 1];
        }
    }
}

void trainer_text_subsample(trainer_dataset_t *ds, size_t k, uint64_t seed)
{
    DT_ASSERT(ds && ds->tokens && ds->source && k < ds->n && ds->sources > 0);
    size_t S = (size_t)ds->sources, n = ds->n, dim = ds->dim;
    size_t *have = dt_calloc(S, sizeof *have), *first = dt_calloc(S, sizeof *first);
    size_t *take = dt_calloc(S, sizeof *take);
    double *rem = dt_calloc(S, sizeof *rem);
    for (size_t w = n; w-- > 0;) { /* windows are grouped by source, in source order */
        have[ds->source[w]]++;
        first[ds->source[w]] = w;
    }
    size_t nonempty = 0, left = k;
    for (size_t s = 0; s < S; s++)
        nonempty += have[s] > 0;
    /* one each first (k < nonempty: the sources with the most windows) */
    for (size_t s = 0; s < S && nonempty <= k; s++)
        if (have[s]) {
            take[s] = 1;
            left--;
        }
    /* the rest in proportion to what each source has beyond what it gave */
    size_t spare = 0;
    for (size_t s = 0; s < S; s++)
        spare += have[s] - take[s];
    for (size_t s = 0; s < S && spare; s++) {
        double share = (double)left * (double)(have[s] - take[s]) / (double)spare;
        size_t whole = (size_t)floor(share);
        take[s] += whole;
        rem[s] = share - (double)whole;
    }
    size_t given = 0;
    for (size_t s = 0; s < S; s++)
        given += take[s];
    while (given < k) { /* largest remainder first; ties to the lower source */
        size_t best = S;
        for (size_t s = 0; s < S; s++)
            if (take[s] < have[s] && (best == S || rem[s] > rem[best]))
                best = s;
        DT_ASSERT(best < S);
        take[best]++;
        rem[best] = -1.0;
        given++;
    }
    trainer_rng_t r;
    trainer_rng_seed(&r, seed, TRAINER_STREAM_TEST_SPLIT);
    uint32_t *pick = dt_malloc((n ? n : 1) * sizeof *pick);
    size_t out = 0;
    for (size_t s = 0; s < S; s++) {
        if (!take[s])
            continue;
        for (size_t i = 0; i < have[s]; i++)
            pick[i] = (uint32_t)(first[s] + i);
        trainer_rng_shuffle_u32(&r, pick, have[s]);
        /* the first take[s] of the shuffle, back in window order */
        for (size_t i = 1; i < take[s]; i++)
            for (size_t j = i; j > 0 && pick[j - 1] > pick[j]; j--) {
                uint32_t t = pick[j];
                pick[j] = pick[j - 1];
                pick[j - 1] = t;
            }
        for (size_t i = 0; i < take[s]; i++, out++) {
            size_t w = pick[i];
            DT_ASSERT(w >= out);
            memmove(ds->tokens + out * dim, ds->tokens + w * dim, dim);
            memmove(ds->x + out * dim, ds->x + w * dim, dim * sizeof *ds->x);
            ds->y[out] = ds->y[w];
            ds->source[out] = ds->source[w];
        }
    }
    DT_ASSERT(out == k);
    ds->n = k;
    free(pick);
    free(rem);
    free(take);
    free(first);
    free(have);
}

double trainer_text_unigram_loss(const trainer_dataset_t *train, const trainer_dataset_t *valid)
{
    /* x holds every window's tokens as exact floats, for text sets of either kind (the
     * disjoint windows of data.source = text, dtsim train's sliding ones) */
    if (!valid->n || valid->dim < 2)
        return NAN;
    double count[TRAINER_TEXT_VOCAB] = {0};
    size_t targets = 0;
    for (size_t i = 0; i < train->n; i++)
        for (size_t t = 1; t < train->dim; t++, targets++)
            count[(int)train->x[i * train->dim + t] & (TRAINER_TEXT_VOCAB - 1)] += 1;
    double denom = (double)targets + TRAINER_TEXT_VOCAB, sum = 0;
    size_t n = 0;
    for (size_t i = 0; i < valid->n; i++)
        for (size_t t = 1; t < valid->dim; t++, n++)
            sum -= log((count[(int)valid->x[i * valid->dim + t] & (TRAINER_TEXT_VOCAB - 1)] + 1) /
                       denom);
    return sum / (double)n;
}

double trainer_text_perplexity(double loss)
{
    return exp(loss);
}
