/* The table each transport fills (transport.h's functions call through it): SimGrid's in
 * transport_simgrid.c, real processes over MPI in transport_mpi.c. Hosts stay SimGrid's in
 * both (the platform describes the machines whatever runs the nodes), so their speed, name
 * and energy are not in the table. */
#ifndef DTSIM_TRANSPORT_IMPL_H
#define DTSIM_TRANSPORT_IMPL_H

#include "transport.h"

typedef struct sim_transport_ops {
    const char *name; /* "simgrid", "mpi" */
    void (*run)(void);
    void (*version)(char *buf, size_t n);
    double (*now)(void);
    void (*sleep)(double seconds);
    void (*sleep_until)(double t);
    void (*yield)(void);
    sim_box_t (*mailbox)(const char *owner, const char *channel);
    void (*box_set_receiver)(sim_box_t box);
    sim_comm_t (*post_send)(sim_box_t to, void *payload, long bytes);
    sim_comm_t (*post_recv)(sim_box_t from, void **payload);
    sim_status_t (*wait_for)(sim_comm_t c, double timeout);
    int (*wait_any)(sim_comm_t *c, int n);
    int (*test)(sim_comm_t c);
    void (*start)(const char *name, sim_host_t host, void (*fn)(int argc, char **argv), void *data,
                  int daemon);
    void *(*self_data)(void);
    const void *(*self_id)(void);
    void (*execute)(double flops);
    sim_sem_t (*sem_new)(int value);
    void (*sem_acquire)(sim_sem_t s);
    void (*sem_release)(sim_sem_t s);
    void (*sem_free)(sim_sem_t s);
} sim_transport_ops_t;

extern const sim_transport_ops_t sim_transport_simgrid;

/* Makes ops the transport of every later call (real.c switches to MPI's before a run). */
void sim_transport_use(const sim_transport_ops_t *ops);

#endif
