/* Running programs (the dtsim binary above all) from a Check test as a user would: no shell,
 * stdout and stderr into files, the exit code back (128 + the signal when one ended it);
 * reading those files whole; the one-error-line rule of bad input (the project's
 * standard: one line naming file, line and key, exit code 2). Shared by the suites that drive the
 * binary (cli, jobs, report, export); each keeps its own short wrappers with its own paths.
 *
 * Static inline functions in a header: a test program uses those it needs. */
#ifndef DTSIM_TESTS_CLI_CHECKS_H
#define DTSIM_TESTS_CLI_CHECKS_H

#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* Starts argv[0] (a path, or a name found on PATH) in directory cwd (NULL: this one) with
 * stdout into out and stderr into err; returns its pid at once. */
static inline pid_t cli_start_in(const char *cwd, const char *out, const char *err,
                                 const char *const *argv)
{
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(o, 1);
        dup2(e, 2);
        if (cwd && chdir(cwd) != 0)
            _exit(126);
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    return pid;
}

/* Waits for pid; its exit code, or 128 + the signal that ended it. */
static inline int cli_wait(pid_t pid)
{
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* The program's argv: the binary, then args up to their NULL (at most 30). */
static inline void cli_argv(const char *binary, const char *const *args, const char **argv)
{
    int n = 0;
    argv[n++] = binary;
    for (; args[n - 1]; n++) {
        ck_assert_int_lt(n, 31);
        argv[n] = args[n - 1];
    }
    argv[n] = NULL;
}

/* Runs binary with args (NULL-terminated), stdout into out and stderr into err; its exit
 * code. */
static inline int cli_run(const char *binary, const char *out, const char *err,
                          const char *const *args)
{
    const char *argv[32];
    cli_argv(binary, args, argv);
    return cli_wait(cli_start_in(NULL, out, err, argv));
}

/* The whole file at path (a pipe or /proc file too), NUL-terminated (malloc'd). */
static inline char *cli_slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot read %s", path);
    size_t cap = 1 << 16, n = 0, got;
    char *buf = malloc(cap + 1);
    ck_assert_ptr_nonnull(buf);
    while ((got = fread(buf + n, 1, cap - n, f)) > 0)
        if ((n += got) == cap) {
            buf = realloc(buf, (cap *= 2) + 1);
            ck_assert_ptr_nonnull(buf);
        }
    fclose(f);
    buf[n] = '\0';
    return buf;
}

static inline void cli_write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_msg(f != NULL, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
}

/* The file at err_path is exactly one line, holding needle1 and (unless NULL) needle2. */
static inline void cli_one_error_line(const char *err_path, const char *needle1,
                                      const char *needle2)
{
    char *e = cli_slurp(err_path);
    char *nl = strchr(e, '\n');
    ck_assert_msg(nl && nl[1] == 0, "expected one error line, got: %s", e);
    ck_assert_msg(strstr(e, needle1), "\"%s\" not in: %s", needle1, e);
    ck_assert_msg(!needle2 || strstr(e, needle2), "\"%s\" not in: %s", needle2, e);
    free(e);
}

#endif
