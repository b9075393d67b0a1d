/* The transport on SimGrid (transport.h): simulated time, mailboxes, actors. Each opaque
 * handle is the SimGrid object itself. SimGrid 3.32's C API has traps this file keeps clear of:
 * waits only through sg_comm_wait_for, never a NULL payload, never a blocking put or get. */
#include "transport_impl.h"

#include <signal.h>
#include <stdio.h>

#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>
#include <simgrid/plugins/energy.h>
#include <simgrid/semaphore.h>
#include <simgrid/version.h>
#include <xbt/log.h>

#include "common.h"

void sim_transport_init(const char *argv0)
{
    int argc = 1;
    char *argv[] = {(char *)argv0, NULL};
    simgrid_init(&argc, argv);
    xbt_log_control_set("root.thresh:warning");
}

static void sgt_transport_run(void)
{
    simgrid_run();
}

/* Set from a signal handler (sim_transport_halt): the next activity that calls into the
 * transport kills every other one and ends itself, so the simulation returns within one
 * event of SimGrid's, wherever the nodes are (a step of a big run can take minutes). */
static volatile sig_atomic_t halt_now;

void sim_transport_halt(void)
{
    halt_now = 1;
}

static void halt_check(void)
{
    if (!halt_now)
        return;
    sg_actor_kill_all();
    sg_actor_exit();
}

static void sgt_transport_version(char *buf, size_t n)
{
    int major, minor, patch;
    sg_version_get(&major, &minor, &patch);
    snprintf(buf, n, "%d.%d.%d", major, minor, patch);
}

static double sgt_now(void)
{
    return simgrid_get_clock();
}
static void sgt_sleep(double seconds)
{
    halt_check();
    sg_actor_sleep_for(seconds);
}
static void sgt_sleep_until(double t)
{
    halt_check();
    sg_actor_sleep_until(t);
}
static void sgt_yield(void)
{
    halt_check();
    sg_actor_yield();
}

static sim_box_t sgt_mailbox(const char *owner, const char *channel)
{
    char name[96];
    snprintf(name, sizeof name, "%s/%s", owner, channel);
    return (sim_box_t)sg_mailbox_by_name(name);
}

static void sgt_box_set_receiver(sim_box_t box)
{
    sg_mailbox_set_receiver(sg_mailbox_get_name((sg_mailbox_t)box));
}

static sim_comm_t sgt_post_send(sim_box_t to, void *payload, long bytes)
{
    DT_ASSERT(payload); /* SimGrid aborts on a NULL payload */
    return (sim_comm_t)sg_mailbox_put_async((sg_mailbox_t)to, payload, bytes);
}

static sim_comm_t sgt_post_recv(sim_box_t from, void **payload)
{
    return (sim_comm_t)sg_mailbox_get_async((sg_mailbox_t)from, payload);
}

static sim_status_t sgt_wait_for(sim_comm_t c, double timeout)
{
    halt_check();
    switch (sg_comm_wait_for((sg_comm_t)c, timeout)) {
    case SG_OK:
        return SIM_OK;
    case SG_ERROR_TIMEOUT:
        return SIM_ERR_TIMEOUT;
    case SG_ERROR_NETWORK:
        return SIM_ERR_NETWORK;
    default:
        return SIM_ERR_OTHER;
    }
}

static int sgt_wait_any(sim_comm_t *c, int n)
{
    halt_check();
    return (int)sg_comm_wait_any((sg_comm_t *)c, (size_t)n);
}

static int sgt_test(sim_comm_t c)
{
    return sg_comm_test((sg_comm_t)c);
}

static void sgt_start(const char *name, sim_host_t host, void (*fn)(int argc, char **argv),
                      void *data, int daemon)
{
    sg_actor_t a = sg_actor_init(name, (sg_host_t)host);
    sg_actor_set_data(a, data);
    sg_actor_start(a, fn, 0, NULL);
    if (daemon)
        sg_actor_daemonize(a);
}

static void *sgt_self_data(void)
{
    return sg_actor_self_get_data();
}
static const void *sgt_self_id(void)
{
    return sg_actor_self();
}
static void sgt_execute(double flops)
{
    halt_check();
    sg_actor_execute(flops);
}
double sim_host_speed(sim_host_t host)
{
    return sg_host_get_speed((sg_host_t)host);
}
double sim_host_energy(sim_host_t host)
{
    return sg_host_get_consumed_energy((sg_host_t)host);
}
const char *sim_host_name(sim_host_t host)
{
    return sg_host_get_name((sg_host_t)host);
}

static sim_sem_t sgt_sem_new(int value)
{
    return (sim_sem_t)sg_sem_init(value);
}
static void sgt_sem_acquire(sim_sem_t s)
{
    halt_check();
    sg_sem_acquire((sg_sem_t)s);
}
static void sgt_sem_release(sim_sem_t s)
{
    sg_sem_release((sg_sem_t)s);
}
static void sgt_sem_free(sim_sem_t s)
{
    sg_sem_destroy((sg_sem_t)s);
}

const sim_transport_ops_t sim_transport_simgrid = {
    .name = "simgrid",
    .run = sgt_transport_run,
    .version = sgt_transport_version,
    .now = sgt_now,
    .sleep = sgt_sleep,
    .sleep_until = sgt_sleep_until,
    .yield = sgt_yield,
    .mailbox = sgt_mailbox,
    .box_set_receiver = sgt_box_set_receiver,
    .post_send = sgt_post_send,
    .post_recv = sgt_post_recv,
    .wait_for = sgt_wait_for,
    .wait_any = sgt_wait_any,
    .test = sgt_test,
    .start = sgt_start,
    .self_data = sgt_self_data,
    .self_id = sgt_self_id,
    .execute = sgt_execute,
    .sem_new = sgt_sem_new,
    .sem_acquire = sgt_sem_acquire,
    .sem_release = sgt_sem_release,
    .sem_free = sgt_sem_free,
};
