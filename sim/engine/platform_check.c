/* A platform file checked before the run's SimGrid sees it (see platform.h). SimGrid 3.32
 * ends the process on a platform it cannot take (malformed XML, an unknown element or host, a
 * second host of one name: SIGABRT or exit 1, with its reason on stderr), so a forked child
 * loads the file and tells what it found; the parent turns SimGrid's reason into one line
 * naming the scenario's key, the file and its line. The child also reports what SimGrid
 * accepts but no run can use: hosts of speed 0, links of bandwidth 0, too few hosts. */
#define _POSIX_C_SOURCE 200809L
#include "platform.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/link.h>
#include <xbt/log.h>

#define CHECK_SECONDS 60.0 /* a platform SimGrid takes longer than this to read is refused */
#define TAG "dtsim-platform: "

/* SimGrid ends the child with exit(1) on a platform it refuses: end it there and then, before
 * any handler the parent registered (a fuzzer's, the sanitizers') takes the exit for its own. */
static void child_exit_now(void) { _exit(1); }

/* The child: loads the file, prints what it found, one fact a line after TAG. */
static void child(const char *path, int fd)
{
    static const int deadly[] = {SIGABRT, SIGSEGV, SIGBUS, SIGILL, SIGFPE};
    for (size_t i = 0; i < sizeof deadly / sizeof deadly[0]; i++)
        signal(deadly[i], SIG_DFL); /* the parent's handlers (a fuzzer's) are not the child's */
    atexit(child_exit_now);
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    close(fd);
    int argc = 1;
    char *argv[] = {(char *)"dtsim", NULL};
    simgrid_init(&argc, argv);
    xbt_log_control_set("root.thresh:warning");
    simgrid_load_platform(path);
    size_t n = sg_host_count();
    sg_host_t *hosts = sg_host_list();
    for (size_t i = 0; i < n; i++)
        if (!(sg_host_get_speed(hosts[i]) > 0))
            printf(TAG "host %s %g\n", sg_host_get_name(hosts[i]), sg_host_get_speed(hosts[i]));
    free(hosts);
    size_t m = sg_link_count();
    sg_link_t *links = sg_link_list();
    for (size_t i = 0; i < m; i++)
        if (!(sg_link_get_bandwidth(links[i]) > 0))
            printf(TAG "link %s %g\n", sg_link_get_name(links[i]),
                   sg_link_get_bandwidth(links[i]));
    free(links);
    printf(TAG "hosts %zu\n", n);
    fflush(NULL);
    _exit(0);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Reads the child's output into buf (kept to its first n - 1 bytes) until it ends or the
 * time is up; 0 when it ended. */
static int collect(int fd, char *buf, size_t n)
{
    size_t len = 0;
    double until = now() + CHECK_SECONDS;
    for (;;) {
        double left = until - now();
        if (left <= 0)
            return -1;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, (int)(left * 1000) + 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        char chunk[4096];
        ssize_t got = read(fd, chunk, sizeof chunk);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        size_t keep = (size_t)got < n - 1 - len ? (size_t)got : n - 1 - len;
        memcpy(buf + len, chunk, keep);
        len += keep;
    }
    buf[len] = '\0';
    return 0;
}

/* The line of the file where the nth id="name" is written (n from 1), 0 if none. */
static int line_of_nth_id(const char *path, const char *name, int nth)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char want[160], line[4096];
    snprintf(want, sizeof want, "id=\"%s\"", name);
    int at = 0, seen = 0;
    while (seen < nth && fgets(line, sizeof line, f)) {
        at++;
        seen += strstr(line, want) != NULL;
    }
    fclose(f);
    return seen == nth ? at : 0;
}

/* The line that declares name, or for a name SimGrid made up from an element's id (a
 * cluster's links: "star_link_0_UP") that element's line; 0 if none. */
static int line_of_id(const char *path, const char *name)
{
    char prefix[128];
    snprintf(prefix, sizeof prefix, "%s", name);
    for (;;) {
        int line = line_of_nth_id(path, prefix, 1);
        char *cut = strrchr(prefix, '_');
        if (line || !cut)
            return line;
        *cut = '\0';
    }
}

/* The first len bytes of s into out (n bytes, cut to fit). The control bytes SimGrid echoes
 * from the file are escaped where every error line is made (dt_err_input). */
static void copy_span(const char *s, size_t len, char *out, size_t n)
{
    if (len > n - 1)
        len = n - 1;
    memcpy(out, s, len);
    out[len] = '\0';
}

/* SimGrid's reason from its output: "Parse error at FILE:LINE: WHY" gives the line and the
 * reason (less its parser state); an uncaught exception its message; else the last line. */
static void reason(const char *out, const char *path, int *line, char *why, size_t n)
{
    *line = 0;
    const char *p = strstr(out, "Parse error at ");
    if (p) {
        p += strlen("Parse error at ");
        size_t plen = strlen(path);
        if (!strncmp(p, path, plen) && p[plen] == ':') {
            char *end;
            long l = strtol(p + plen + 1, &end, 10);
            if (end != p + plen + 1 && *end == ':') {
                *line = (int)l;
                p = end + 1;
                while (*p == ' ')
                    p++;
            }
        }
        const char *x = strstr(p, "Invalid XML (");
        const char *close = x ? strstr(x, "): ") : NULL;
        const char *eol = strchr(p, '\n');
        if (x == p && close && (!eol || close < eol)) {
            snprintf(why, n, "invalid XML: ");
            size_t k = strlen(why);
            p = close + 3;
            eol = strchr(p, '\n');
            copy_span(p, eol ? (size_t)(eol - p) : strlen(p), why + k, n - k);
            return;
        }
        /* a reason may go on over lines (SimGrid lists the names it knows): join them */
        const char *stop = strstr(p, "\n[");
        size_t len = stop ? (size_t)(stop - p) : strlen(p);
        char joined[1024];
        size_t k = 0;
        for (size_t i = 0; i < len && k + 1 < sizeof joined; i++)
            joined[k++] = p[i] == '\n' ? ' ' : p[i];
        while (k > 0 && joined[k - 1] == ' ')
            k--;
        copy_span(joined, k, why, n);
        return;
    }
    p = strstr(out, "Uncaught exception ");
    if (p && (p = strstr(p, ": "))) {
        p += 2;
        const char *eol = strchr(p, '\n');
        copy_span(p, eol ? (size_t)(eol - p) : strlen(p), why, n);
        return;
    }
    /* the last line that is neither a backtrace's nor SimGrid's sign-off, less its log
     * prefix ("[0.000000] file:line: [category/LEVEL] ") */
    const char *best = NULL, *best_end = NULL;
    for (const char *s = out; *s;) {
        const char *e = strchr(s, '\n');
        if (!e)
            e = s + strlen(s);
        const char *t = s, *tag = memchr(s, ']', (size_t)(e - s));
        if (*s == '[' && tag && (tag = strstr(tag + 1, "] ")) && tag < e)
            t = tag + 2;
        while (t < e && *t == ' ')
            t++;
        int noise = strncmp(s, "  ->", 4) == 0 || t == e;
        for (const char *w = t; w < e && !noise; w++)
            noise = !strncmp(w, "acktrace", 8) || !strncmp(w, "Exiting now", 11);
        if (!noise) {
            best = t;
            best_end = e;
        }
        s = *e ? e + 1 : e;
    }
    if (best)
        copy_span(best, (size_t)(best_end - best), why, n);
    else
        snprintf(why, n, "SimGrid could not load it");
}

dt_status sim_platform_check(const scenario_t *sc, dt_err_t *err)
{
    if (sc->platform != SIM_PLATFORM_FILE)
        return sim_platform_shape_check(sc, err);
    const char *path = sc->platform_file;
    struct stat st;
    if (stat(path, &st) != 0)
        return scenario_fail(sc, err, "cluster.platform", "%s: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return scenario_fail(sc, err, "cluster.platform", "%s: not a regular file", path);
    int fds[2];
    if (pipe(fds) != 0) {
        dt_err_input(err, "checking %s: pipe: %s", path, strerror(errno));
        return DT_ERR_RUN;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        dt_err_input(err, "checking %s: fork: %s", path, strerror(errno));
        return DT_ERR_RUN;
    }
    if (pid == 0) {
        close(fds[0]);
        child(path, fds[1]);
    }
    close(fds[1]);
    static char out[1 << 16];
    int timed_out = collect(fds[0], out, sizeof out);
    close(fds[0]);
    if (timed_out)
        kill(pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (timed_out)
        return scenario_fail(sc, err, "cluster.platform",
                             "%s: SimGrid did not finish reading it in %.0f s", path,
                             CHECK_SECONDS);
    const char *done = strstr(out, TAG "hosts ");
    if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0) || !done) {
        char why[600];
        int line;
        reason(out, path, &line, why, sizeof why);
        const char *dup = strstr(why, "second host named '");
        if (!line && dup) { /* the line of the second one */
            char name[128];
            if (sscanf(dup + strlen("second host named '"), "%127[^']", name) == 1)
                line = line_of_nth_id(path, name, 2);
        }
        if (line > 0)
            return scenario_fail(sc, err, "cluster.platform", "%s:%d: %s", path, line, why);
        return scenario_fail(sc, err, "cluster.platform", "%s: %s", path, why);
    }
    /* what SimGrid took but no run can use */
    for (const char *p = strstr(out, TAG); p; p = strstr(p + 1, TAG)) {
        char kind[8], name[128];
        double v;
        if (sscanf(p + strlen(TAG), "%7s %127s %lg", kind, name, &v) != 3)
            continue;
        const char *what = !strcmp(kind, "host") ? "speed" : "bandwidth";
        int line = line_of_id(path, name);
        if (line > 0)
            return scenario_fail(sc, err, "cluster.platform",
                                 "%s:%d: %s %s has %s %g (expected more than 0)", path, line,
                                 kind, name, what, v);
        return scenario_fail(sc, err, "cluster.platform",
                             "%s: %s %s has %s %g (expected more than 0)", path, kind, name,
                             what, v);
    }
    long hosts = strtol(done + strlen(TAG "hosts "), NULL, 10);
    int workers, servers;
    sim_platform_counts(sc, &workers, &servers);
    if (hosts < workers + servers) {
        char sv[48] = "";
        if (servers)
            snprintf(sv, sizeof sv, " and %d server%s", servers, servers == 1 ? "" : "s");
        return scenario_fail(sc, err, "cluster.platform",
                             "%s has %ld host%s; %s needs %d %s%s%s (expected at least %d "
                             "hosts, or fewer cluster.workers)",
                             path, hosts, hosts == 1 ? "" : "s", sc->strategy->name, workers,
                             sc->strategy->worker_role, workers == 1 ? "" : "s", sv,
                             workers + servers);
    }
    return DT_OK;
}
