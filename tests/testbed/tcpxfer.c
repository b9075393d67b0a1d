/* TCP transfers over the shaped-link testbed, one message at a time, in two modes.
 *
 * Fresh (the default): a new connection per message, timed the way SimGrid's ns-3 binding
 * (network/model:ns-3, SimGrid 3.32) times a message (issue 35): from connect() until the
 * receiver has read every byte and closed its end (the sender sees end of file). That is the
 * three-way handshake, the message from TCP's initial window up, and the receiver's close
 * travelling back.
 *
 * Keep (--keep): one connection carries every message, its window carried from one to the
 * next, as MPI's connections carry a training run's messages. Each message is timed from its
 * first write until the receiver's 1-byte answer arrives: the message and one one-way
 * latency. --gap leaves the connection idle between messages (Linux's slow start after idle,
 * net.ipv4.tcp_slow_start_after_idle).
 *
 * usage: tcpxfer serve PORT              receives connections forever (until killed)
 *        tcpxfer send ADDRESS PORT BYTES [REPS] [--keep] [--gap SECONDS]
 *                                        BYTES: a size, or sizes separated by commas
 *                                        (10000000,1000000): the messages, in order, sent
 *                                        REPS times (default 3); one line a message:
 *                                        `transfer I bytes N seconds S`
 *
 * On the wire, one port serves both modes, told apart by the connection's first 8 bytes:
 * - fresh: the message's bytes (zeros), then the sender's shutdown; the receiver reads to
 *   the end of file and closes.
 * - keep: the 8 bytes "tcpxKEEP" (a fresh message's zeros never begin so), then per message
 *   its length as 8 bytes big-endian and its bytes; the receiver answers each whole message
 *   with 1 byte. Both ends set TCP_NODELAY, as Open MPI does: no small segment (the answer,
 *   a message's last one) waits for an acknowledgement under Nagle's rule.
 *
 * The sockets are otherwise the system's defaults (buffers autotuned by the kernel, its
 * congestion control): what the testbed's MPI ranks get. The server takes one connection at
 * a time. Exit 2 on bad usage, 1 on a failed transfer. */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (1 << 16)
#define MAX_SIZES 64
#define MAGIC "tcpxKEEP" /* a keep-mode connection's first 8 bytes */
#define USAGE                                                                                      \
    "usage: tcpxfer serve PORT | tcpxfer send ADDRESS PORT BYTES[,BYTES...] [REPS] [--keep] "      \
    "[--gap SECONDS]\n"

/* What `send` was asked for. */
typedef struct send_opts {
    struct sockaddr_in to;
    long sizes[MAX_SIZES]; /* bytes of each message of the list */
    int n_sizes;
    long reps;  /* times the list is sent */
    int keep;   /* 1: one connection for every message */
    double gap; /* idle between messages, s */
} send_opts_t;

static char zeros[CHUNK]; /* the messages' bytes (a fresh message's must be zeros: MAGIC) */

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

/* "N" or "N,N,...": every size in [1, 2^40] bytes, at most MAX_SIZES of them. */
static int parse_sizes(const char *s, send_opts_t *o)
{
    char text[1024];
    if (strlen(s) >= sizeof text)
        return -1;
    memcpy(text, s, strlen(s) + 1);
    o->n_sizes = 0;
    char *p = text;
    for (;;) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        if (o->n_sizes == MAX_SIZES || parse_long(p, 1, 1L << 40, &o->sizes[o->n_sizes++]))
            return -1;
        if (!comma)
            return 0;
        p = comma + 1;
    }
}

/* n bytes of buf on s, whole (a short write continued). */
static int write_all(int s, const char *buf, size_t n, int flags)
{
    while (n > 0) {
        ssize_t w = send(s, buf, n, flags | MSG_NOSIGNAL); /* a closed peer: an error */
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        buf += w;
        n -= (size_t)w;
    }
    return 0;
}

/* `bytes` zeros on s. */
static int write_zeros(int s, long bytes)
{
    for (long left = bytes; left > 0; left -= CHUNK)
        if (write_all(s, zeros, left < CHUNK ? (size_t)left : CHUNK, 0))
            return -1;
    return 0;
}

/* Exactly n bytes from s into buf; -1 on an error or an end of file before them. */
static int read_all(int s, char *buf, size_t n)
{
    while (n > 0) {
        ssize_t r = read(s, buf, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        buf += r;
        n -= (size_t)r;
    }
    return 0;
}

static void nodelay(int s)
{
    int one = 1;
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static void put_be64(unsigned char *out, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        out[i] = (unsigned char)(v & 0xff);
}

static uint64_t get_be64(const unsigned char *in)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | in[i];
    return v;
}

/* A keep-mode connection after its MAGIC: each message read whole, then answered with 1
 * byte, until the sender closes. */
static void serve_keep(int c)
{
    static char buf[CHUNK];
    unsigned char head[8];
    nodelay(c);
    while (read_all(c, (char *)head, sizeof head) == 0) {
        uint64_t left = get_be64(head);
        while (left > 0) {
            size_t want = left < CHUNK ? (size_t)left : CHUNK;
            ssize_t r = read(c, buf, want);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                return;
            left -= (uint64_t)r;
        }
        if (write_all(c, "k", 1, 0))
            return;
    }
}

/* Receives connections one at a time: a fresh one read to its end and closed (the close is
 * the sender's signal), a keep one served message by message. */
static int serve(long port)
{
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
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
        /* the first 8 bytes tell the modes apart; a fresh message may be shorter */
        if (read_all(c, buf, 8) == 0 && !memcmp(buf, MAGIC, 8))
            serve_keep(c);
        else
            while (read(c, buf, sizeof buf) > 0)
                ;
        close(c);
    }
}

static int connect_to(const struct sockaddr_in *to)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0 || connect(s, (const struct sockaddr *)to, sizeof *to)) {
        fprintf(stderr, "tcpxfer: connect: %s\n", strerror(errno));
        if (s >= 0)
            close(s);
        return -1;
    }
    return s;
}

/* One message on a connection of its own: connect() to the receiver's close. */
static int send_fresh(const struct sockaddr_in *to, long bytes, double *seconds)
{
    static char buf[CHUNK];
    double t0 = now();
    int s = connect_to(to);
    if (s < 0)
        return -1;
    if (write_zeros(s, bytes)) {
        fprintf(stderr, "tcpxfer: write: %s\n", strerror(errno));
        close(s);
        return -1;
    }
    shutdown(s, SHUT_WR);
    while (read(s, buf, sizeof buf) > 0) /* the receiver's close: everything arrived */
        ;
    *seconds = now() - t0;
    close(s);
    return 0;
}

/* One message on the kept connection s: its first write to the receiver's answer. */
static int send_kept(int s, long bytes, double *seconds)
{
    unsigned char head[8];
    char answer;
    put_be64(head, (uint64_t)bytes);
    double t0 = now();
    /* MSG_MORE: the length leaves in the message's first segment, not a tiny one of its own */
    if (write_all(s, (const char *)head, sizeof head, MSG_MORE) || write_zeros(s, bytes)) {
        fprintf(stderr, "tcpxfer: write: %s\n", strerror(errno));
        return -1;
    }
    if (read_all(s, &answer, 1)) {
        fprintf(stderr, "tcpxfer: the receiver closed before answering\n");
        return -1;
    }
    *seconds = now() - t0;
    return 0;
}

static void pause_for(double seconds)
{
    struct timespec t = {.tv_sec = (time_t)seconds};
    t.tv_nsec = (long)((seconds - (double)t.tv_sec) * 1e9);
    while (nanosleep(&t, &t) && errno == EINTR)
        ;
}

static int send_all(const send_opts_t *o)
{
    int s = -1;
    if (o->keep) {
        if ((s = connect_to(&o->to)) < 0)
            return 1;
        nodelay(s);
        if (write_all(s, MAGIC, 8, MSG_MORE)) { /* leaves with the first message */
            fprintf(stderr, "tcpxfer: write: %s\n", strerror(errno));
            close(s);
            return 1;
        }
    }
    long i = 0;
    for (long r = 0; r < o->reps; r++)
        for (int k = 0; k < o->n_sizes; k++, i++) {
            if (i > 0 && o->gap > 0)
                pause_for(o->gap);
            double t;
            if (o->keep ? send_kept(s, o->sizes[k], &t) : send_fresh(&o->to, o->sizes[k], &t)) {
                if (s >= 0)
                    close(s);
                return 1;
            }
            printf("transfer %ld bytes %ld seconds %.6f\n", i, o->sizes[k], t);
            fflush(stdout);
        }
    if (s >= 0)
        close(s);
    return 0;
}

static int usage(const char *why, const char *arg)
{
    fprintf(stderr, "tcpxfer: %s%s%s%s\n" USAGE, why, arg ? " \"" : "", arg ? arg : "",
            arg ? "\"" : "");
    return 2;
}

/* send's arguments: ADDRESS PORT BYTES [REPS], --keep and --gap SECONDS anywhere among them. */
static int parse_send(int argc, char **argv, send_opts_t *o)
{
    const char *pos[4];
    int n_pos = 0;
    long port;
    *o = (send_opts_t){.to = {.sin_family = AF_INET}, .reps = 3};
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--keep")) {
            o->keep = 1;
        } else if (!strcmp(argv[i], "--gap")) {
            char *end = NULL;
            if (i + 1 == argc)
                return usage("--gap needs a value in seconds", NULL);
            o->gap = strtod(argv[++i], &end);
            if (end == argv[i] || *end || !(o->gap >= 0 && o->gap <= 3600))
                return usage("--gap: expected seconds from 0 to 3600, got", argv[i]);
        } else if (!strncmp(argv[i], "--", 2)) {
            return usage("unknown option", argv[i]);
        } else if (n_pos == 4) {
            return usage("unexpected argument", argv[i]);
        } else {
            pos[n_pos++] = argv[i];
        }
    }
    if (n_pos < 3)
        return usage("send needs ADDRESS PORT BYTES", NULL);
    if (inet_pton(AF_INET, pos[0], &o->to.sin_addr) != 1)
        return usage("not an IPv4 address:", pos[0]);
    if (parse_long(pos[1], 1, 65535, &port))
        return usage("PORT: expected 1 to 65535, got", pos[1]);
    o->to.sin_port = htons((uint16_t)port);
    if (parse_sizes(pos[2], o))
        return usage("BYTES: expected sizes in bytes (1 to 2^40, at most 64, separated by "
                     "commas), got",
                     pos[2]);
    if (n_pos == 4 && parse_long(pos[3], 1, 1000000, &o->reps))
        return usage("REPS: expected 1 to 1000000, got", pos[3]);
    return 0;
}

int main(int argc, char **argv)
{
    long port = 0;
    if (argc >= 2 && !strcmp(argv[1], "serve")) {
        if (argc != 3 || parse_long(argv[2], 1, 65535, &port))
            return usage("serve needs a PORT from 1 to 65535", NULL);
        return serve(port);
    }
    if (argc < 2 || strcmp(argv[1], "send"))
        return usage("expected serve or send", NULL);
    send_opts_t o;
    int rc = parse_send(argc, argv, &o);
    return rc ? rc : send_all(&o);
}
