/* Helpers shared by the commands: usage errors, strict number parsing, child processes. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "dtsim %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see dtsim %s --help)\n", cmd);
    return CLI_EXIT_USAGE;
}

int cli_parse_long(const char *text, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (end == text || *end || errno || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int cli_parse_double(const char *text, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || *end || errno || !isfinite(v) || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

pid_t cli_spawn_start(const char *path, const char *const *args, int out)
{
    fflush(NULL);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        /* the child dies with dtsim, however dtsim ends (SIGKILL included): a testbed then
         * tears down its namespaces, a run stops as on a signal (recorded interrupted).
         * A parent already gone before prctl: end at once. */
        if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent)
            _exit(128 + SIGTERM);
        int fd = out >= 0 ? out : open("/dev/null", O_WRONLY);
        if (fd >= 0)
            dup2(fd, STDOUT_FILENO);
        execv(path, (char *const *)args);
        fprintf(stderr, "dtsim: cannot start %s: %s\n", path, strerror(errno));
        _exit(127);
    }
    return pid;
}

int cli_spawn_wait(pid_t pid)
{
    int st;
    if (pid < 0 || waitpid(pid, &st, 0) < 0)
        return 127;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

int cli_spawn(const char *path, const char *const *args, int out)
{
    return cli_spawn_wait(cli_spawn_start(path, args, out));
}
