/* The run fuzzer: what `check` accepts, `run` runs. Each input is a folder holding
 * scenario.ini and the files it names (a platform, a device file, a trace); the fuzzer copies
 * one into a scratch folder, mutates it (a key deleted, values swapped between two keys, an
 * extreme number or unit put in a value, a number of a platform, trace or device file made
 * extreme, or an override given on the command line: a time-like key or a model size set to
 * an extreme with `--set`, kept in the input as set.txt), and runs `dtsim run scenario.ini
 * --set run.steps=2 [--set KEY=VALUE]` in a child process with a time limit. Exit 0, 1 or 2 is an
 * answer; a signal, another exit code or a hang is a finding, kept as a folder under OUT that
 * replays as a regression.
 *
 *   run_fuzz DTSIM OUT LIMIT_S replay DIR...           each DIR unmutated: 0 if all answer
 *   run_fuzz DTSIM OUT LIMIT_S fuzz SEED N|-SECONDS DIR...
 *                                                    N inputs (or SECONDS of them) mutated
 *                                                    from the seed folders, from seed SEED
 *
 * Prints inputs, findings and inputs per minute; exits 1 on any finding. No shell is used:
 * dtsim is started with execv, its output kept in the scratch folder. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_FILES 8
#define MAX_TEXT (1 << 20)

typedef struct input {
    int n;
    char name[MAX_FILES][64];
    char *text[MAX_FILES]; /* NUL-terminated */
} input_t;

static uint64_t rng_state;

static uint64_t rnd(void) /* splitmix64 */
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static size_t pick(size_t n)
{
    return n ? (size_t)(rnd() % n) : 0;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = malloc(MAX_TEXT + 1);
    size_t n = buf ? fread(buf, 1, MAX_TEXT, f) : 0;
    fclose(f);
    if (!buf)
        return NULL;
    buf[n] = '\0';
    return buf;
}

static int spill(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    fputs(text, f);
    return fclose(f);
}

/* Reads the regular files of folder dir (scenario.ini among them). */
static int input_read(input_t *in, const char *dir)
{
    memset(in, 0, sizeof *in);
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    struct dirent *e;
    int has_scenario = 0;
    while ((e = readdir(d)) && in->n < MAX_FILES) {
        char path[4096];
        struct stat sb;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (e->d_name[0] == '.' || stat(path, &sb) || !S_ISREG(sb.st_mode) ||
            strlen(e->d_name) >= sizeof in->name[0])
            continue;
        in->text[in->n] = slurp(path);
        if (!in->text[in->n])
            continue;
        snprintf(in->name[in->n], sizeof in->name[0], "%s", e->d_name);
        has_scenario |= !strcmp(e->d_name, "scenario.ini");
        in->n++;
    }
    closedir(d);
    return has_scenario ? 0 : -1;
}

static void input_free(input_t *in)
{
    for (int i = 0; i < in->n; i++)
        free(in->text[i]);
    memset(in, 0, sizeof *in);
}

static int input_write(const input_t *in, const char *dir)
{
    mkdir(dir, 0700);
    for (int i = 0; i < in->n; i++) {
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", dir, in->name[i]);
        if (spill(path, in->text[i]))
            return -1;
    }
    return 0;
}

/* ---- mutations ---- */

static const char *const extremes[] = {
    "0",       "-1",      "1e308",    "1e-308",   "nan",      "inf",        "-inf",
    "2e-09us", "1e-300f", "0.001bps", "1e300Bps", "99999999", "",           "0s",
    "1e9s",    "-5us",    "1e24f",    "1e-12s",   "1e6s",     "4294967296", "2",
    "0.5",     "1",       "none",     "yes",      "1e-9",     "0.0001",     "1000000",
};
static const char *const units[] = {"us", "ns", "s",  "h",  "Gbps", "Bps", "kbps", "TBps",
                                    "f",  "Tf", "Gf", "MB", "GiB",  "W",   "%",    "x"};

/* The [start, end) of each "key = value" line's value in text. */
static int value_spans(const char *text, size_t *start, size_t *end, int max)
{
    int n = 0;
    for (const char *p = text; *p && n < max;) {
        const char *eol = strchr(p, '\n');
        if (!eol)
            eol = p + strlen(p);
        const char *eq = memchr(p, '=', (size_t)(eol - p));
        if (eq && *p != '#' && *p != ';' && *p != '[') {
            const char *v = eq + 1;
            while (v < eol && *v == ' ')
                v++;
            start[n] = (size_t)(v - text);
            end[n] = (size_t)(eol - text);
            n++;
        }
        p = *eol ? eol + 1 : eol;
    }
    return n;
}

/* text with [a, b) replaced by with (a new buffer; the old one freed). */
static char *splice(char *text, size_t a, size_t b, const char *with)
{
    size_t len = strlen(text), w = strlen(with);
    if (len - (b - a) + w > MAX_TEXT)
        return text;
    char *out = malloc(len - (b - a) + w + 1);
    if (!out)
        return text;
    memcpy(out, text, a);
    memcpy(out + a, with, w);
    memcpy(out + a + w, text + b, len - b + 1);
    free(text);
    return out;
}

static void mutate_scenario(input_t *in, int f)
{
    size_t s[256], e[256];
    int n = value_spans(in->text[f], s, e, 256);
    if (!n)
        return;
    int k = (int)pick((size_t)n);
    char value[512];
    switch (pick(4)) {
    case 0: { /* delete the key's line */
        size_t a = s[k], b = e[k];
        while (a > 0 && in->text[f][a - 1] != '\n')
            a--;
        if (in->text[f][b] == '\n')
            b++;
        in->text[f] = splice(in->text[f], a, b, "");
        return;
    }
    case 1: { /* the value of another key */
        int j = (int)pick((size_t)n);
        size_t len = e[j] - s[j] < sizeof value - 1 ? e[j] - s[j] : sizeof value - 1;
        memcpy(value, in->text[f] + s[j], len);
        value[len] = '\0';
        break;
    }
    case 2:
        snprintf(value, sizeof value, "%s", extremes[pick(sizeof extremes / sizeof *extremes)]);
        break;
    default: { /* the number kept, an extreme exponent or another unit */
        size_t len = e[k] - s[k] < 64 ? e[k] - s[k] : 64;
        size_t digits = 0;
        while (digits < len && strchr("0123456789.-+e", in->text[f][s[k] + digits]))
            digits++;
        snprintf(value, sizeof value, "%.*s%s%s", (int)digits, in->text[f] + s[k],
                 pick(2) ? "e-300" : "", units[pick(sizeof units / sizeof *units)]);
        break;
    }
    }
    in->text[f] = splice(in->text[f], s[k], e[k], value);
}

/* A number in a platform, trace or device file made extreme (its unit kept). */
static void mutate_numbers(input_t *in, int f)
{
    const char *t = in->text[f];
    size_t at[512];
    int n = 0;
    for (size_t i = 0; t[i] && n < 512; i++)
        if (t[i] >= '0' && t[i] <= '9' && (i == 0 || !strchr("0123456789.eE-+", t[i - 1])) &&
            (i == 0 || t[i - 1] != 'v'))
            at[n++] = i;
    if (!n)
        return;
    size_t a = at[pick((size_t)n)], b = a;
    while (t[b] && strchr("0123456789.eE-+", t[b]))
        b++;
    static const char *const nums[] = {"0",   "-5",       "1e-300", "1e300", "1e-12",     "inf",
                                       "nan", "30000000", "0.001",  "1e-9",  "4294967297"};
    in->text[f] = splice(in->text[f], a, b, nums[pick(sizeof nums / sizeof *nums)]);
}

/* Keys whose extremes have hung or aborted runs before (a loop per interval, a model beyond
 * memory), set with --set: the override path as well as the file's. */
static const char *const override_keys[] = {
    "run.eval_interval", "run.max_time",
    "run.eval_every",    "run.eval_samples",
    "faults.timeout",    "faults.mtbf",
    "faults.mttr",       "faults.stall_after",
    "cluster.latency",   "cluster.uplink_latency",
    "model.hidden",      "model.layers",
    "model.heads",       "model.seq",
    "model.batch",       "data.test_samples",
    "run.seed",          "model.warmup",
    "model.clip_norm",   "run.divergence_factor",
};
static const char *const override_values[] = {
    "1e-15s", "1e-300s", "1ns", "1e9s", "0s",    "-1s",     "nan", "inf",    "1e-12",
    "0",      "1",       "-3",  "4096", "65536", "1048576", "1e9", "banana", "",
};

/* in's set.txt (the --set override) replaced by a random key and extreme value. */
static void mutate_override(input_t *in)
{
    char line[160];
    snprintf(line, sizeof line, "%s=%s",
             override_keys[pick(sizeof override_keys / sizeof *override_keys)],
             override_values[pick(sizeof override_values / sizeof *override_values)]);
    int f = 0;
    while (f < in->n && strcmp(in->name[f], "set.txt"))
        f++;
    if (f == in->n) {
        if (in->n == MAX_FILES)
            return;
        snprintf(in->name[f], sizeof in->name[f], "set.txt");
        in->text[f] = NULL;
        in->n++;
    }
    free(in->text[f]);
    in->text[f] = strdup(line);
    if (!in->text[f]) {
        perror("run_fuzz");
        exit(2);
    }
}

static void mutate(input_t *in)
{
    if (pick(3) == 0)
        mutate_override(in);
    int rounds = 1 + (int)pick(3);
    for (int r = 0; r < rounds; r++) {
        int f = (int)pick((size_t)in->n);
        if (!strcmp(in->name[f], "scenario.ini") || pick(2))
            for (int i = 0; i < in->n; i++)
                if (!strcmp(in->name[i], "scenario.ini"))
                    f = i;
        if (!strcmp(in->name[f], "scenario.ini"))
            mutate_scenario(in, f);
        else
            mutate_numbers(in, f);
    }
}

/* ---- running one input ---- */

/* Runs dtsim on dir/scenario.ini for two steps; its exit code, 128 + a signal, or -1 past
 * the limit (the child's process group killed). */
static int run_one(const char *dtsim, const char *dir, double limit)
{
    char ini[4096], db[4096], out[4096];
    snprintf(ini, sizeof ini, "%s/scenario.ini", dir);
    snprintf(db, sizeof db, "%s/run.db", dir);
    snprintf(out, sizeof out, "%s/output.txt", dir);
    unlink(db);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return -2;
    if (pid == 0) {
        setpgid(0, 0);
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        char *argv[] = {(char *)dtsim,
                        (char *)"run",
                        ini,
                        (char *)"--set",
                        (char *)"run.steps=2",
                        (char *)"--db",
                        db,
                        NULL,
                        NULL,
                        NULL};
        char set[4096], *override = NULL;
        snprintf(set, sizeof set, "%s/set.txt", dir);
        if ((override = slurp(set)) != NULL) { /* the input's --set override */
            override[strcspn(override, "\n")] = '\0';
            argv[7] = (char *)"--set";
            argv[8] = override;
        }
        execv(dtsim, argv);
        _exit(127);
    }
    setpgid(pid, pid);
    double until = now() + limit;
    int status;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR)
            return -2;
        if (now() > until) {
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return -1;
        }
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    kill(-pid, SIGKILL); /* whatever it left behind */
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int answered(int rc)
{
    return rc == 0 || rc == 1 || rc == 2;
}

static void describe(int rc, char *buf, size_t n)
{
    if (rc == -1)
        snprintf(buf, n, "a hang (killed at the time limit)");
    else if (rc > 128)
        snprintf(buf, n, "signal %d (%s)", rc - 128, strsignal(rc - 128));
    else
        snprintf(buf, n, "exit %d", rc);
}

int main(int argc, char **argv)
{
    if (argc < 6 || (strcmp(argv[4], "replay") && strcmp(argv[4], "fuzz")) ||
        (!strcmp(argv[4], "fuzz") && argc < 8)) {
        fprintf(stderr, "usage: run_fuzz DTSIM OUT LIMIT_S replay DIR...\n"
                        "       run_fuzz DTSIM OUT LIMIT_S fuzz SEED N|-SECONDS DIR...\n");
        return 2;
    }
    const char *dtsim = argv[1], *outdir = argv[2];
    double limit = atof(argv[3]);
    int replay = !strcmp(argv[4], "replay");
    mkdir(outdir, 0700);
    char scratch[4096];
    snprintf(scratch, sizeof scratch, "%s/scratch", outdir);
    int first = replay ? 5 : 7, n_dirs = argc - first;
    long inputs = 0, findings = 0;
    double t0 = now();
    if (replay) {
        for (int i = first; i < argc; i++) {
            input_t in;
            if (input_read(&in, argv[i])) {
                fprintf(stderr, "run_fuzz: %s: no scenario.ini\n", argv[i]);
                return 2;
            }
            char dir[4200];
            snprintf(dir, sizeof dir, "%s-%d", scratch, i);
            input_write(&in, dir);
            int rc = run_one(dtsim, dir, limit);
            inputs++;
            if (!answered(rc)) {
                char what[96];
                describe(rc, what, sizeof what);
                printf("run_fuzz: %s: %s\n", argv[i], what);
                findings++;
            }
            input_free(&in);
        }
    } else {
        rng_state = strtoull(argv[5], NULL, 10);
        long n = atol(argv[6]);
        double until = n < 0 ? t0 - (double)n : 0;
        input_t *seeds = calloc((size_t)n_dirs, sizeof *seeds);
        for (int i = 0; i < n_dirs; i++)
            if (input_read(&seeds[i], argv[first + i])) {
                fprintf(stderr, "run_fuzz: %s: no scenario.ini\n", argv[first + i]);
                return 2;
            }
        while (n < 0 ? now() < until : inputs < n) {
            const input_t *seed = &seeds[pick((size_t)n_dirs)];
            input_t in = *seed;
            for (int i = 0; i < in.n; i++)
                in.text[i] = strdup(seed->text[i]);
            mutate(&in);
            input_write(&in, scratch);
            int rc = run_one(dtsim, scratch, limit);
            inputs++;
            if (!answered(rc)) {
                char what[96], keep[4200];
                describe(rc, what, sizeof what);
                snprintf(keep, sizeof keep, "%s/finding-%ld", outdir, findings + 1);
                input_write(&in, keep);
                printf("run_fuzz: input %ld: %s: kept in %s\n", inputs, what, keep);
                findings++;
            }
            input_free(&in);
        }
        for (int i = 0; i < n_dirs; i++)
            input_free(&seeds[i]);
        free(seeds);
    }
    double minutes = (now() - t0) / 60;
    printf("run_fuzz: %ld inputs in %.1f min (%.0f a minute), %ld finding%s\n", inputs, minutes,
           minutes > 0 ? (double)inputs / minutes : 0.0, findings, findings == 1 ? "" : "s");
    return findings ? 1 : 0;
}
