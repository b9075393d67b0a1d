/* The child-process helper of the run service (sim/cli/cli_exec.h), which dtsim check, the
 * sweeps, dtsim plan's fit, run --mpi and validate fork through: what a child writes comes
 * back whole (or cut at the buffer, the rest drained: the child never blocks on a full pipe),
 * its exit code or the signal that killed it is told apart, a child that dies mid-write does
 * not hang the parent, its streams go where the flags say, the parent's signal mask and the
 * child's handlers are as documented, and a tied child dies with its parent. */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli_exec.h"

static int write_text(int fd, const char *text)
{
    return write(fd, text, strlen(text)) == (ssize_t)strlen(text) ? 0 : 1;
}

static int line_then_3(void *ctx, int fd)
{
    (void)ctx;
    write_text(fd, "worker 3 holds 61.2 GB");
    return 3;
}

START_TEST(child_line_and_exit_code)
{
    cli_child_t c;
    ck_assert_int_eq(cli_child_start(&c, CLI_CHILD_QUIET, -1, line_then_3, NULL), 0);
    ck_assert_int_gt(c.pid, 0);
    char text[64], how[32];
    ck_assert_int_eq(cli_child_finish(&c, text, sizeof text), 3);
    ck_assert_str_eq(text, "worker 3 holds 61.2 GB");
    ck_assert_int_eq(c.pid, 0);
    ck_assert_int_eq(c.fd, -1);
    cli_child_describe(c.status, how, sizeof how);
    ck_assert_str_eq(how, "exit status 3");
}
END_TEST

/* dies mid-answer: the parent gets what was written and the signal, and does not hang */
static int half_then_killed(void *ctx, int fd)
{
    (void)ctx;
    write_text(fd, "half");
    raise(SIGKILL);
    return 0;
}

START_TEST(child_killed_is_told_and_never_hangs)
{
    cli_child_t c;
    ck_assert_int_eq(cli_child_start(&c, CLI_CHILD_QUIET, -1, half_then_killed, NULL), 0);
    char text[64], how[32];
    ck_assert_int_eq(cli_child_finish(&c, text, sizeof text), 128 + SIGKILL);
    ck_assert_str_eq(text, "half");
    ck_assert(WIFSIGNALED(c.status));
    cli_child_describe(c.status, how, sizeof how);
    ck_assert_str_eq(how, "signal 9");
}
END_TEST

/* 1 MiB, well over a pipe's 64 KiB: the parent keeps the first bytes and drains the rest,
 * or the child would block on its write forever */
static int one_mib(void *ctx, int fd)
{
    (void)ctx;
    char block[4096];
    memset(block, 'x', sizeof block);
    for (int i = 0; i < 256; i++)
        if (write(fd, block, sizeof block) != (ssize_t)sizeof block)
            return 1;
    return 0;
}

START_TEST(child_long_answer_cut_and_drained)
{
    cli_child_t c;
    ck_assert_int_eq(cli_child_start(&c, CLI_CHILD_QUIET, -1, one_mib, NULL), 0);
    char text[16];
    ck_assert_int_eq(cli_child_finish(&c, text, sizeof text), 0);
    ck_assert_str_eq(text, "xxxxxxxxxxxxxxx");
}
END_TEST

static int prints_both(void *ctx, int fd)
{
    (void)ctx;
    (void)fd;
    printf("to stdout\n");
    fprintf(stderr, "to stderr\n");
    return 0;
}

/* CLI_CHILD_STDERR: its stderr is the pipe, its stdout /dev/null (a sweep's member) */
START_TEST(child_stderr_into_the_pipe)
{
    cli_child_t c;
    ck_assert_int_eq(cli_child_start(&c, CLI_CHILD_STDERR, -1, prints_both, NULL), 0);
    char text[64];
    ck_assert_int_eq(cli_child_finish(&c, text, sizeof text), 0);
    ck_assert_str_eq(text, "to stderr\n");
}
END_TEST

/* out: the child's stdout into a file of the caller's */
START_TEST(child_stdout_to_out)
{
    char path[] = "/tmp/dtsim-exec-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    cli_child_t c;
    ck_assert_int_eq(cli_child_start(&c, CLI_CHILD_QUIET, fd, prints_both, NULL), 0);
    char text[64];
    ck_assert_int_eq(cli_child_finish(&c, text, sizeof text), 0);
    ck_assert_str_eq(text, ""); /* stderr went to /dev/null, nothing to the pipe */
    char got[64] = "";
    ck_assert_int_eq(pread(fd, got, sizeof got - 1, 0), 10);
    ck_assert_str_eq(got, "to stdout\n");
    close(fd);
    unlink(path);
}
END_TEST

static void on_int(int sig)
{
    (void)sig;
}

/* 0 when SIGINT and SIGTERM are unblocked, SIGINT (caught in the parent) at its default and
 * SIGTERM (ignored in the parent) still ignored, as exec would leave them */
static int signals_default(void *ctx, int fd)
{
    (void)ctx;
    (void)fd;
    sigset_t m;
    struct sigaction a, b;
    sigprocmask(SIG_BLOCK, NULL, &m);
    sigaction(SIGINT, NULL, &a);
    sigaction(SIGTERM, NULL, &b);
    return sigismember(&m, SIGINT) || sigismember(&m, SIGTERM) || a.sa_handler != SIG_DFL ||
           b.sa_handler != SIG_IGN;
}

START_TEST(child_signals_default_parent_mask_kept)
{
    struct sigaction sa = {.sa_handler = on_int}, ign = {.sa_handler = SIG_IGN}, old, old_term;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old);
    sigaction(SIGTERM, &ign, &old_term);
    cli_child_t c;
    ck_assert_int_eq(cli_child_start(&c, 0, -1, signals_default, NULL), 0);
    sigset_t m;
    sigprocmask(SIG_BLOCK, NULL, &m);
    ck_assert(!sigismember(&m, SIGINT) && !sigismember(&m, SIGTERM));
    char text[8];
    ck_assert_int_eq(cli_child_finish(&c, text, sizeof text), 0);
    sigaction(SIGINT, &old, NULL);
    sigaction(SIGTERM, &old_term, NULL);
}
END_TEST

static int sleeps_300ms(void *ctx, int fd)
{
    (void)ctx;
    (void)fd;
    nanosleep(&(struct timespec){0, 300000000}, NULL);
    return 5;
}

/* reap without blocking: 0 while it runs, then its status once waited for */
START_TEST(child_reap_running_then_ended)
{
    cli_child_t c;
    ck_assert_int_eq(cli_child_start(&c, 0, -1, sleeps_300ms, NULL), 0);
    ck_assert_int_eq(cli_child_reap(&c, 0), 0);
    ck_assert_int_gt(c.pid, 0);
    ck_assert_int_eq(cli_child_reap(&c, 1), 1);
    ck_assert_int_eq(c.pid, 0);
    ck_assert_int_eq(cli_child_code(c.status), 5);
    close(c.fd);
}
END_TEST

static int sleeps_long(void *ctx, int fd)
{
    (void)ctx;
    (void)fd;
    sleep(30);
    return 0;
}

/* 1 while pid is a process that has not ended (not gone, not a zombie) */
static int alive(pid_t pid)
{
    char path[64], stat[256] = "";
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t got = fread(stat, 1, sizeof stat - 1, f);
    fclose(f);
    stat[got] = '\0';
    const char *close_paren = strrchr(stat, ')');
    return close_paren && close_paren[1] == ' ' && close_paren[2] != 'Z' && close_paren[2] != 'X';
}

/* CLI_CHILD_TIED: a parent that ends (here by SIGKILL) takes its child with it */
START_TEST(child_tied_dies_with_its_parent)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t middle = fork();
    if (middle == 0) {
        cli_child_t c;
        if (cli_child_start(&c, CLI_CHILD_TIED, -1, sleeps_long, NULL) != 0)
            _exit(1);
        if (write(fds[1], &c.pid, sizeof c.pid) != sizeof c.pid)
            _exit(1);
        pause();
        _exit(0);
    }
    close(fds[1]);
    pid_t child;
    ck_assert_int_eq(read(fds[0], &child, sizeof child), sizeof child);
    close(fds[0]);
    ck_assert(alive(child));
    kill(middle, SIGKILL);
    waitpid(middle, NULL, 0);
    int waited = 0;
    while (alive(child) && waited++ < 200)
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    ck_assert_msg(!alive(child), "the tied child outlived its parent by 2 s");
}
END_TEST

/* cli_spawn: a program's exit code, 127 when it cannot start, 128 when killed, its stdout */
START_TEST(spawn_codes_and_stdout)
{
    ck_assert_int_eq(cli_spawn("/bin/sh", (const char *[]){"sh", "-c", "exit 7", NULL}, -1), 7);
    ck_assert_int_eq(cli_spawn("/nonexistent/dtsim-nothing", (const char *[]){"x", NULL}, -1), 127);
    ck_assert_int_eq(cli_spawn("/bin/sh", (const char *[]){"sh", "-c", "kill -9 $$", NULL}, -1),
                     128);
    char path[] = "/tmp/dtsim-exec-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(cli_spawn("/bin/sh", (const char *[]){"sh", "-c", "echo hi", NULL}, fd), 0);
    char got[16] = "";
    ck_assert_int_eq(pread(fd, got, sizeof got - 1, 0), 3);
    ck_assert_str_eq(got, "hi\n");
    close(fd);
    unlink(path);
    ck_assert_int_eq(cli_spawn_wait(-1), 127);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("exec");
    TCase *tc = tcase_create("child");
    tcase_add_test(tc, child_line_and_exit_code);
    tcase_add_test(tc, child_killed_is_told_and_never_hangs);
    tcase_add_test(tc, child_long_answer_cut_and_drained);
    tcase_add_test(tc, child_stderr_into_the_pipe);
    tcase_add_test(tc, child_stdout_to_out);
    tcase_add_test(tc, child_signals_default_parent_mask_kept);
    tcase_add_test(tc, child_reap_running_then_ended);
    tcase_add_test(tc, child_tied_dies_with_its_parent);
    tcase_add_test(tc, spawn_codes_and_stdout);
    tcase_set_timeout(tc, 30);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
