/* The latency of the testbed's links (tests/testbed/README.md): this machine's kernel has no
 * netem, so a link's delay is this process. It runs inside the testbed's fabric namespace and
 * joins pairs of interfaces; every frame that arrives on one end of a pair leaves the other end
 * exactly DELAY_US later (the two directions apart, each a FIFO, as a wire of that latency).
 * Bandwidth is not its business: tbf shapes each direction before the frame gets here.
 *
 * usage: delayline IF_A IF_B DELAY_US [IF_A IF_B DELAY_US ...]
 *
 * Frames are read and written with packet sockets carrying a virtio-net header, so that the
 * kernel's large segmentation-offload frames (up to 64 KB) pass whole instead of being refused
 * as larger than the MTU. A direction holds up to SLOTS frames; a frame arriving at a full
 * direction is dropped, as a full switch queue would. It exits on SIGTERM or SIGINT, or when
 * an interface disappears (the namespace was deleted). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <linux/virtio_net.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define SLOTS 1024
#define SLOT_BYTES (sizeof(struct virtio_net_hdr) + 65536 + 256)
#define MAX_PAIRS 1024 /* testbed.sh: up to 500 host links and 500 uplinks */

/* One direction of a pair: frames read from `in`, held for `delay_ns`, written to `out`. */
typedef struct direction {
    int in, out;
    uint64_t delay_ns;
    unsigned char *slots; /* (SLOTS, SLOT_BYTES), mapped lazily */
    uint64_t due[SLOTS];  /* when each held frame leaves */
    uint32_t len[SLOTS];  /* its bytes, virtio-net header included */
    unsigned head, count; /* the oldest held frame, how many are held */
    unsigned long dropped;
} direction_t;

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

_Noreturn static void die(const char *what)
{
    fprintf(stderr, "delayline: %s: %s\n", what, strerror(errno));
    exit(1);
}

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* A packet socket on interface `name` that sees every frame arriving there (promiscuous),
 * not the ones this process sends out of it, with virtio-net headers, non-blocking. */
static int open_port(const char *name)
{
    unsigned idx = if_nametoindex(name);
    if (!idx) {
        fprintf(stderr, "delayline: no interface %s\n", name);
        exit(2);
    }
    int fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK, htons(ETH_P_ALL));
    if (fd < 0)
        die("socket");
    int one = 1, buf = 8 << 20;
    if (setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof one) < 0)
        die("PACKET_VNET_HDR");
    if (setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one) < 0)
        die("PACKET_IGNORE_OUTGOING");
    /* large buffers: a burst of frames must wait here, not be dropped by the socket */
    setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof buf);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof buf);
    struct sockaddr_ll sll = {
        .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL), .sll_ifindex = (int)idx};
    if (bind(fd, (struct sockaddr *)&sll, sizeof sll) < 0)
        die("bind");
    struct packet_mreq mr = {.mr_ifindex = (int)idx, .mr_type = PACKET_MR_PROMISC};
    if (setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof mr) < 0)
        die("PACKET_MR_PROMISC");
    return fd;
}

static void direction_init(direction_t *d, int in, int out, uint64_t delay_ns)
{
    memset(d, 0, sizeof *d);
    d->in = in;
    d->out = out;
    d->delay_ns = delay_ns;
    /* untouched slots cost no memory: only the pages frames were written to are resident */
    d->slots = mmap(NULL, (size_t)SLOTS * SLOT_BYTES, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (d->slots == MAP_FAILED)
        die("mmap");
}

/* Reads every frame waiting on d->in, stamping each with its departure time. Returns -1 when
 * the interface is gone. */
static int direction_read(direction_t *d)
{
    static unsigned char scratch[SLOT_BYTES];
    for (;;) {
        int full = d->count == SLOTS;
        unsigned slot = (d->head + d->count) % SLOTS;
        unsigned char *p = full ? scratch : d->slots + (size_t)slot * SLOT_BYTES;
        ssize_t n = recv(d->in, p, SLOT_BYTES, 0);
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR)
                return 0;
            if (errno == ENETDOWN || errno == ENXIO || errno == ENODEV)
                return -1;
            die("recv");
        }
        if (full) {
            d->dropped++;
            continue;
        }
        d->due[slot] = now_ns() + d->delay_ns;
        d->len[slot] = (uint32_t)n;
        d->count++;
    }
}

/* Writes every frame whose time has come. Returns -1 when the interface is gone. */
static int direction_write(direction_t *d, uint64_t now)
{
    while (d->count && d->due[d->head] <= now) {
        unsigned char *p = d->slots + (size_t)d->head * SLOT_BYTES;
        if (send(d->out, p, d->len[d->head], 0) < 0) {
            if (errno == EAGAIN || errno == EINTR)
                return 0; /* the socket drains; try again on the next turn */
            if (errno == ENETDOWN || errno == ENXIO || errno == ENODEV)
                return -1;
            d->dropped++; /* a frame the kernel refuses (ENOBUFS, EMSGSIZE) is lost */
        }
        d->head = (d->head + 1) % SLOTS;
        d->count--;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 4 || (argc - 1) % 3 != 0 || (argc - 1) / 3 > MAX_PAIRS) {
        fprintf(stderr, "usage: delayline IF_A IF_B DELAY_US [IF_A IF_B DELAY_US ...]\n");
        return 2;
    }
    int pairs = (argc - 1) / 3, ndir = 2 * pairs;
    static direction_t dirs[2 * MAX_PAIRS];
    static struct pollfd fds[2 * MAX_PAIRS];
    for (int i = 0; i < pairs; i++) {
        char *end;
        double us = strtod(argv[3 + 3 * i], &end);
        if (*end || !(us >= 0) || us > 60e6) {
            fprintf(stderr, "delayline: bad delay \"%s\" (microseconds)\n", argv[3 + 3 * i]);
            return 2;
        }
        int a = open_port(argv[1 + 3 * i]), b = open_port(argv[2 + 3 * i]);
        direction_init(&dirs[2 * i], a, b, (uint64_t)(us * 1e3));
        direction_init(&dirs[2 * i + 1], b, a, (uint64_t)(us * 1e3));
    }
    for (int i = 0; i < ndir; i++)
        fds[i] = (struct pollfd){.fd = dirs[i].in, .events = POLLIN};
    /* wake up when a frame is due, not up to 50 us later (the default timer slack) */
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    /* and then, not when the spinning MPI ranks leave it a time slice: real-time priority
     * (it sleeps between frames; where refused, it runs at the normal priority) */
    struct sched_param prio = {.sched_priority = 10};
    if (sched_setscheduler(0, SCHED_FIFO, &prio) < 0)
        fprintf(stderr, "delayline: no real-time priority (%s): delays stretch under load\n",
                strerror(errno));
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    signal(SIGHUP, SIG_IGN); /* outlives the shell that started it (testbed.sh up) */

    while (!stop) {
        uint64_t now = now_ns(), next = UINT64_MAX;
        for (int i = 0; i < ndir; i++) {
            if (direction_write(&dirs[i], now) < 0)
                return 0;
            if (dirs[i].count && dirs[i].due[dirs[i].head] < next)
                next = dirs[i].due[dirs[i].head];
        }
        struct timespec wait, *timeout = NULL;
        if (next != UINT64_MAX) {
            uint64_t ns = next > now ? next - now : 0;
            wait = (struct timespec){.tv_sec = (time_t)(ns / 1000000000u),
                                     .tv_nsec = (long)(ns % 1000000000u)};
            timeout = &wait;
        }
        if (ppoll(fds, (nfds_t)ndir, timeout, NULL) < 0) {
            if (errno == EINTR)
                continue;
            die("ppoll");
        }
        for (int i = 0; i < ndir; i++) {
            if (fds[i].revents & (POLLERR | POLLHUP | POLLNVAL))
                return 0;
            if ((fds[i].revents & POLLIN) && direction_read(&dirs[i]) < 0)
                return 0;
        }
    }
    return 0;
}
