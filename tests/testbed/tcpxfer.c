/* One TCP transfer at a time over the shaped-link testbed, timed the way SimGrid's ns-3
 * binding (network/model:ns-3, SimGrid 3.32) times a message (issue 35): a fresh
 * connection per message, from connect() until the receiver has read every byte and closed
 * its end (the sender sees end of file). That is the three-way handshake, the message from
 * TCP's initial window up, and the receiver's close travelling back.
 *
 * usage: tcpxfer serve PORT              receives connections forever (until killed)
 *        tcpxfer send ADDRESS PORT BYTES [REPS]
 *                                        REPS transfers of BYTES (default 3), one a line:
 *                                        `transfer I bytes N seconds S`
 * The sockets are the system's defaults (buffers autotuned by the kernel, its congestion
 * control): what the testbed's MPI ranks get. Exit 2 on bad usage, 1 on a failed transfer. */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (1 << 16)

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* Reads everything a connection sends, then closes it: the close is the sender's signal. */
static int serve(long port)
{
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_ANY)};
    if (ls < 0 || setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
        bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 8)) {
        fprintf(stderr, "tcpxfer: cannot listen on port %ld: %s\n", port, strerror(errno));
        return 1;
    }
    static char buf[CHUNK];
    for (;;) {
        int c = accept(ls, NULL, NULL);
        if (c < 0)
            continue;
        while (read(c, buf, sizeof buf) > 0)
            ;
        close(c);
    }
}

static int send_one(const struct sockaddr_in *to, long bytes, double *seconds)
{
    static char buf[CHUNK];
    double t0 = now();
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0 || connect(s, (const struct sockaddr *)to, sizeof *to)) {
        fprintf(stderr, "tcpxfer: connect: %s\n", strerror(errno));
        return -1;
    }
    for (long left = bytes; left > 0;) {
        ssize_t n = write(s, buf, left < CHUNK ? (size_t)left : CHUNK);
        if (n <= 0) {
            fprintf(stderr, "tcpxfer: write: %s\n", strerror(errno));
            close(s);
            return -1;
        }
        left -= n;
    }
    shutdown(s, SHUT_WR);
    while (read(s, buf, sizeof buf) > 0) /* the receiver's close: everything arrived */
        ;
    *seconds = now() - t0;
    close(s);
    return 0;
}

int main(int argc, char **argv)
{
    long port = 0, bytes = 0, reps = 3;
    if (argc == 3 && !strcmp(argv[1], "serve") && !parse_long(argv[2], 1, 65535, &port))
        return serve(port);
    struct sockaddr_in to = {.sin_family = AF_INET};
    if ((argc != 5 && argc != 6) || strcmp(argv[1], "send") ||
        inet_pton(AF_INET, argv[2], &to.sin_addr) != 1 || parse_long(argv[3], 1, 65535, &port) ||
        parse_long(argv[4], 1, 1L << 40, &bytes) ||
        (argc == 6 && parse_long(argv[5], 1, 1000000, &reps))) {
        fprintf(stderr, "usage: tcpxfer serve PORT | tcpxfer send ADDRESS PORT BYTES [REPS]\n");
        return 2;
    }
    to.sin_port = htons((uint16_t)port);
    for (long i = 0; i < reps; i++) {
        double t;
        if (send_one(&to, bytes, &t))
            return 1;
        printf("transfer %ld bytes %ld seconds %.6f\n", i, bytes, t);
        fflush(stdout);
    }
    return 0;
}
