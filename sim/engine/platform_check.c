/* A platform file checked before the run's SimGrid sees it (see platform.h). SimGrid 3.32
 * ends the process on a platform it cannot take (malformed XML, an unknown element or host, a
 * second host of one name: SIGABRT or exit 1, with its reason on stderr), so a forked child
 * loads the file and tells what it found; the parent turns SimGrid's reason into one line
 * naming the scenario's key, the file and its line. The child loads it as the run does
 * (sim_platform_load) and also reports what SimGrid accepts but no run can use: host speeds,
 * link bandwidths and latencies beyond what its solver computes with (scenario_simulable),
 * too few hosts, no route between two hosts the run uses. Before any of it the parent
 * counts the hosts in the file's text, so that SimGrid never allocates millions. */
#define _POSIX_C_SOURCE 200809L
#include "platform.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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
static void child_exit_now(void)
{
    _exit(1);
}

/* The pair of hosts whose route is being looked up: SimGrid throws (and so aborts) on some
 * missing routes, or crashes (Floyd routing without links), and the handler tells which
 * pair. */
static const char *route_src, *route_dst;

static void put(const char *s)
{
    (void)!write(STDOUT_FILENO, s, strlen(s));
}

static void no_route_abort(int sig)
{
    (void)sig;
    if (route_src && route_dst) {
        put("\n" TAG "noroute ");
        put(route_src);
        put(" ");
        put(route_dst);
        put("\n");
    }
    _exit(3);
}

/* Whether a message from a to b has a path: a route of links, or a latency of its own
 * (SimGrid's check before it sends; an empty route between two hosts aborts the run). */
static int route_exists(sg_host_t a, sg_host_t b, xbt_dynar_t links)
{
    route_src = sg_host_get_name(a);
    route_dst = sg_host_get_name(b);
    xbt_dynar_reset(links);
    sg_host_get_route(a, b, links);
    return xbt_dynar_length(links) > 0 || sg_host_get_route_latency(a, b) > 0;
}

/* Routes between the hosts the run uses, in both directions: with a strategy that
 * exchanges between workers (SIM_NEEDS_PEER_LINKS), every pair up to ROUTE_PAIRS_ALL hosts,
 * and beyond, each host with the first, with those 2^k places from it (ring neighbours,
 * trees, halving-doubling partners) and with every server; else (parameter servers,
 * federated clients) each worker with every server, and the servers among themselves. */
#define ROUTE_PAIRS_ALL 512
static void check_routes(const sim_platform_t *p, int peer)
{
    int n = p->n_workers + p->n_servers;
    sg_host_t *h = dt_calloc((size_t)n, sizeof *h);
    for (int i = 0; i < p->n_workers; i++)
        h[i] = (sg_host_t)p->workers[i];
    for (int i = 0; i < p->n_servers; i++)
        h[p->n_workers + i] = (sg_host_t)p->servers[i];
    xbt_dynar_t links = xbt_dynar_new(sizeof(sg_link_t), NULL);
    signal(SIGABRT, no_route_abort);
    signal(SIGSEGV, no_route_abort); /* Floyd routing without links: a lookup crashes */
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            if (i == j)
                continue;
            int d = j > i ? j - i : i - j, workers = i < p->n_workers && j < p->n_workers;
            if (workers && (!peer || (n > ROUTE_PAIRS_ALL && i && j && (d & (d - 1)))))
                continue;
            if (!route_exists(h[i], h[j], links)) {
                printf(TAG "noroute %s %s\n", route_src, route_dst);
                goto done;
            }
        }
done:
    signal(SIGABRT, SIG_DFL);
    signal(SIGSEGV, SIG_DFL);
    route_src = route_dst = NULL;
    xbt_dynar_free(&links);
    free(h);
}

/* The child: loads the platform as the run will (sim_platform_load: the network model, the
 * scenario's overrides, the hosts it picks), prints what it found, one fact a line after
 * TAG: values SimGrid's solver does not compute with, the host count, missing routes. */
static void child(const scenario_t *sc, int fd)
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
    /* warnings, less the network's one a link (a latency below its precision): those values
     * are told below, and thousands of such lines would crowd out the facts */
    xbt_log_control_set("root.thresh:warning res_network.thresh:error");
    sim_platform_t p;
    dt_err_t e;
    dt_status loaded = sim_platform_load(&p, sc, &e); /* DT_ERR_INPUT: too few hosts */
    size_t n = sg_host_count();
    sg_host_t *hosts = sg_host_list();
    for (size_t i = 0; i < n; i++)
        for (unsigned long k = 0; k < sg_host_get_nb_pstates(hosts[i]); k++) {
            double v = sg_host_get_pstate_speed(hosts[i], k);
            if (!scenario_simulable(SIM_Q_SPEED, v)) {
                printf(TAG "speed %s %g\n", sg_host_get_name(hosts[i]), v);
                break;
            }
        }
    free(hosts);
    size_t m = sg_link_count();
    sg_link_t *links = sg_link_list();
    for (size_t i = 0; i < m; i++) {
        double bw = sg_link_get_bandwidth(links[i]), lat = sg_link_get_latency(links[i]);
        if (!scenario_simulable(SIM_Q_BANDWIDTH, bw))
            printf(TAG "bandwidth %s %g\n", sg_link_get_name(links[i]), bw);
        if (!scenario_simulable(SIM_Q_LATENCY, lat))
            printf(TAG "latency %s %g\n", sg_link_get_name(links[i]), lat);
    }
    free(links);
    printf(TAG "hosts %zu\n", n);
    fflush(NULL);
    if (loaded == DT_OK) {
        check_routes(&p, (sc->strategy->takes & SIM_NEEDS_PEER_LINKS) != 0);
        sim_platform_free(&p);
    }
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

/* The first line holding attr="value" for the value val; 0 if none. */
static int line_of_attr(const char *path, const char *attr, const char *val)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char want[200], line[4096];
    snprintf(want, sizeof want, "%s=\"%s\"", attr, val);
    int at = 0, found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        at++;
        found = strstr(line, want) != NULL;
    }
    fclose(f);
    return found ? at : 0;
}

/* The line that declares name, or for a name SimGrid made up from an element's id (a
 * cluster's links: "star_link_0_UP") that element's line, or for a cluster's host
 * ("node-3") the line of the cluster of that prefix; 0 if none. */
static int line_of_id(const char *path, const char *name)
{
    char prefix[128];
    snprintf(prefix, sizeof prefix, "%s", name);
    for (;;) {
        int line = line_of_nth_id(path, prefix, 1);
        char *cut = strrchr(prefix, '_');
        if (line || !cut)
            break;
        *cut = '\0';
    }
    int line = line_of_nth_id(path, prefix, 1);
    if (line)
        return line;
    snprintf(prefix, sizeof prefix, "%s", name);
    size_t n = strlen(prefix);
    while (n && prefix[n - 1] >= '0' && prefix[n - 1] <= '9')
        prefix[--n] = '\0';
    return n < strlen(name) ? line_of_attr(path, "prefix", prefix) : 0;
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
static void reason_raw(const char *out, const char *path, int *line, char *why, size_t n)
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

/* SimGrid's words that say the wrong thing, in dtsim's: a gateway that names no node is
 * "gw_src='x' does name a node. Existing netpoints: 'a','b'" (its "not" missing). */
static void in_our_words(char *why, size_t n)
{
    const char *bad = strstr(why, "' does name a node.");
    const char *eq = bad ? strstr(why, "='") : NULL;
    if (!bad || !eq || eq > bad)
        return;
    const char *known = strstr(bad, "Existing netpoints: ");
    char fixed[1024];
    snprintf(fixed, sizeof fixed, "%.*s '%.*s' names no host or router of the platform%s%.600s%s",
             (int)(eq - why), why, (int)(bad - eq - 2), eq + 2, known ? " (it has " : "",
             known ? known + strlen("Existing netpoints: ") : "", known ? ")" : "");
    copy_span(fixed, strlen(fixed), why, n);
}

/* reason_raw, in dtsim's words */
static void reason(const char *out, const char *path, int *line, char *why, size_t n)
{
    reason_raw(out, path, line, why, n);
    in_our_words(why, n);
}

/* The value of attribute name in the element elem[0..len) into out (n bytes, cut to fit);
 * 0 if the element has none. */
static int attr(const char *elem, size_t len, const char *name, char *out, size_t n)
{
    size_t nl = strlen(name);
    for (size_t i = 1; i + nl + 2 < len; i++) {
        if (memcmp(elem + i, name, nl) || !strchr(" \t\r\n", elem[i - 1]))
            continue;
        size_t j = i + nl;
        while (j < len && strchr(" \t\r\n", elem[j]))
            j++;
        if (j >= len || elem[j] != '=')
            continue;
        j++;
        while (j < len && strchr(" \t\r\n", elem[j]))
            j++;
        if (j >= len || (elem[j] != '"' && elem[j] != '\''))
            continue;
        char q = elem[j++];
        size_t k = 0;
        while (j < len && elem[j] != q && k + 1 < n)
            out[k++] = elem[j++];
        out[k] = '\0';
        return 1;
    }
    return 0;
}

/* Hosts a radical ("0-99,200-299,300") names; what does not parse counts nothing (SimGrid
 * says what is wrong with it). */
static double radical_hosts(const char *r)
{
    double n = 0;
    while (*r) {
        char *end;
        double a = strtod(r, &end), b = a;
        if (end == r)
            return n;
        if (*end == '-') {
            const char *s = end + 1;
            b = strtod(s, &end);
            if (end == s)
                return n;
        }
        if (b >= a)
            n += b - a + 1;
        r = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            return n;
    }
    return n;
}

/* Hosts a cluster's topology creates: TORUS "X,Y,Z" their product; FAT_TREE
 * "L;d1,..,dL;u..;p.." the product of the d's; DRAGONFLY "G,l;C,l;R,l;N" G x C x R x N. */
static double topology_hosts(const char *topo, const char *params)
{
    double n = 1;
    if (!strcmp(topo, "TORUS")) {
        for (const char *p = params; *p;) {
            char *end;
            double x = strtod(p, &end);
            if (end == p)
                break;
            n *= x;
            p = *end == ',' ? end + 1 : end;
            if (*end != ',')
                break;
        }
        return n;
    }
    int group = 0;
    for (const char *p = params; *p; group++) {
        const char *semi = strchr(p, ';');
        if (!strcmp(topo, "DRAGONFLY") || (!strcmp(topo, "FAT_TREE") && group == 1)) {
            for (const char *q = p; q && *q && (!semi || q < semi);) {
                char *end;
                double x = strtod(q, &end);
                if (end == q)
                    break;
                n *= x;
                if (!strcmp(topo, "DRAGONFLY"))
                    break; /* the group's first number: the links after it are no hosts */
                q = *end == ',' ? end + 1 : NULL;
            }
        }
        if (!semi)
            break;
        p = semi + 1;
    }
    return n;
}

/* The hosts a platform file declares, counted in its text before SimGrid reads it:
 * SimGrid allocates each (a cluster radical of tens of millions took it minutes), so a
 * file of more than SIM_PLATFORM_FILE_MAX_HOSTS is refused at the element that passes it. */
static dt_status check_sizes(const scenario_t *sc, const char *path, const struct stat *st,
                             dt_err_t *err)
{
    if (st->st_size == 0)
        return DT_OK; /* SimGrid says what an empty file lacks */
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return scenario_fail(sc, err, "cluster.platform", "%s: %s", path, strerror(errno));
    size_t len = (size_t)st->st_size;
    const char *text = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (text == MAP_FAILED)
        return scenario_fail(sc, err, "cluster.platform", "%s: %s", path, strerror(errno));
    double hosts = 0;
    int line = 1;
    dt_status status = DT_OK;
    const char *p = text, *end = text + len, *counted = text;
    while ((p = memchr(p, '<', (size_t)(end - p)))) {
        const char *close = memchr(p, '>', (size_t)(end - p));
        size_t elen = close ? (size_t)(close - p) : (size_t)(end - p);
        double here = 0;
        char radical[4096], topo[32], params[512], version[32];
        if (elen >= 9 && !memcmp(p, "<platform", 9) && strchr(" \t\r\n>", p[9])) {
            /* SimGrid refuses any other version with a banner of its own ("BIG FAT
             * WARNING", "THIS FILE IS TOO OLD"): said here in one line instead */
            int has = attr(p, elen, "version", version, sizeof version);
            if (!has || (strcmp(version, "4.1") && strcmp(version, "4"))) {
                for (const char *c = counted; c < p; c++)
                    line += *c == '\n';
                char given[64] = "no version";
                if (has)
                    snprintf(given, sizeof given, "version \"%.40s\"", version);
                status = scenario_fail(sc, err, "cluster.platform",
                                       "%s:%d: <platform> with %s (expected version=\"4.1\", "
                                       "the format SimGrid 3.32 reads; simgrid_update_xml "
                                       "converts an older file)",
                                       path, line, given);
                break;
            }
        } else if (elen > 6 && !memcmp(p, "<host", 5) && strchr(" \t\r\n/", p[5])) {
            here = 1;
        } else if ((elen > 9 && !memcmp(p, "<cluster", 8) && strchr(" \t\r\n", p[8])) ||
                   (elen > 9 && !memcmp(p, "<cabinet", 8) && strchr(" \t\r\n", p[8]))) {
            if (attr(p, elen, "radical", radical, sizeof radical))
                here = radical_hosts(radical);
            if (attr(p, elen, "topology", topo, sizeof topo) &&
                attr(p, elen, "topo_parameters", params, sizeof params)) {
                double t = topology_hosts(topo, params);
                here = t > here ? t : here;
            }
        }
        if (here > 0) {
            hosts += here;
            for (const char *c = counted; c < p; c++)
                line += *c == '\n';
            counted = p;
            if (!(hosts <= SIM_PLATFORM_FILE_MAX_HOSTS)) {
                status = scenario_fail(sc, err, "cluster.platform",
                                       "%s:%d: %.3g hosts up to this element (expected at most "
                                       "%d in a platform file: SimGrid allocates every host "
                                       "before a run starts)",
                                       path, line, hosts, SIM_PLATFORM_FILE_MAX_HOSTS);
                break;
            }
        }
        p += 1;
    }
    munmap((void *)text, len);
    return status;
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
    if (check_sizes(sc, path, &st, err))
        return DT_ERR_INPUT;
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
        child(sc, fds[1]);
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
    /* 3: the child ended itself on a route SimGrid threw on (no_route_abort) */
    int ended = WIFEXITED(status) && (WEXITSTATUS(status) == 0 ||
                                      (WEXITSTATUS(status) == 3 && strstr(out, TAG "noroute ")));
    if (!ended || !done) {
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
        char kind[16], name[128];
        double v;
        if (sscanf(p + strlen(TAG), "%15s %127s %lg", kind, name, &v) != 3)
            continue;
        int speed = !strcmp(kind, "speed"), lat = !strcmp(kind, "latency");
        if (!speed && !lat && strcmp(kind, "bandwidth"))
            continue;
        sim_quantity_t q = speed ? SIM_Q_SPEED : lat ? SIM_Q_LATENCY : SIM_Q_BANDWIDTH;
        char at[32] = "";
        int line = line_of_id(path, name);
        if (line > 0)
            snprintf(at, sizeof at, ":%d", line);
        return scenario_fail(sc, err, "cluster.platform",
                             "%s%s: %s %s has %s %g %s (expected %s: what SimGrid's solver "
                             "computes with)",
                             path, at, speed ? "host" : "link", name, kind, v,
                             speed ? "flop/s"
                             : lat ? "s"
                                   : "B/s",
                             scenario_simulable_range(q));
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
    const char *nr = strstr(out, TAG "noroute ");
    if (nr) {
        char a[128], b[128];
        if (sscanf(nr + strlen(TAG "noroute "), "%127s %127s", a, b) == 2) {
            char at[32] = "";
            int line = line_of_id(path, a);
            if (line > 0)
                snprintf(at, sizeof at, ":%d", line);
            return scenario_fail(sc, err, "cluster.platform",
                                 "%s%s: no route from host %s to host %s, both hosts of the "
                                 "run (expected a route between every two hosts it uses)",
                                 path, at, a, b);
        }
    }
    return DT_OK;
}
