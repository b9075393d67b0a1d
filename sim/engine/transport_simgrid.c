/* The transport on SimGrid (transport.h): simulated time, mailboxes, actors. Each opaque
 * handle is the SimGrid object itself. See ../shared/SIMGRID-NOTES.md for the traps: waits
 * only through sg_comm_wait_for, never a NULL payload, never a blocking put or get. */
#include "transport.h"

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

void sim_transport_run(void) { simgrid_run(); }

void sim_transport_version(char *buf, size_t n)
{
    int major, minor, patch;
    sg_version_get(&major, &minor, &patch);
    snprintf(buf, n, "%d.%d.%d", major, minor, patch);
}

double sim_now(void) { return simgrid_get_clock(); }
void sim_sleep(double seconds) { sg_actor_sleep_for(seconds); }
void sim_sleep_until(double t) { sg_actor_sleep_until(t); }
void sim_yield(void) { sg_actor_yield(); }

sim_box_t sim_mailbox(const char *owner, const char *channel)
{
    char name[96];
    snprintf(name, sizeof name, "%s/%s", owner, channel);
    return (sim_box_t)sg_mailbox_by_name(name);
}

void sim_box_set_receiver(sim_box_t box)
{
    sg_mailbox_set_receiver(sg_mailbox_get_name((sg_mailbox_t)box));
}

sim_comm_t sim_post_send(sim_box_t to, void *payload, long bytes)
{
    DT_ASSERT(payload); /* SimGrid aborts on a NULL payload */
    return (sim_comm_t)sg_mailbox_put_async((sg_mailbox_t)to, payload, bytes);
}

sim_comm_t sim_post_recv(sim_box_t from, void **payload)
{
    return (sim_comm_t)sg_mailbox_get_async((sg_mailbox_t)from, payload);
}

sim_status_t sim_wait_for(sim_comm_t c, double timeout)
{
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

void sim_start(const char *name, sim_host_t host, void (*fn)(int argc, char **argv),
               void *data, int daemon)
{
    sg_actor_t a = sg_actor_init(name, (sg_host_t)host);
    sg_actor_set_data(a, data);
    sg_actor_start(a, fn, 0, NULL);
    if (daemon)
        sg_actor_daemonize(a);
}

void *sim_self_data(void) { return sg_actor_self_get_data(); }
void sim_execute(double flops) { sg_actor_execute(flops); }
double sim_host_speed(sim_host_t host) { return sg_host_get_speed((sg_host_t)host); }
double sim_host_energy(sim_host_t host) { return sg_host_get_consumed_energy((sg_host_t)host); }
const char *sim_host_name(sim_host_t host) { return sg_host_get_name((sg_host_t)host); }

sim_sem_t sim_sem_new(int value) { return (sim_sem_t)sg_sem_init(value); }
void sim_sem_acquire(sim_sem_t s) { sg_sem_acquire((sg_sem_t)s); }
void sim_sem_release(sim_sem_t s) { sg_sem_release((sg_sem_t)s); }
void sim_sem_free(sim_sem_t s) { sg_sem_destroy((sg_sem_t)s); }
