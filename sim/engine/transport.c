/* transport.h's functions: each calls the transport in use (transport_impl.h), SimGrid's
 * unless real mode (sim_real_init) switched to MPI's. The platform's hosts are SimGrid's in both.
 */
#include "transport_impl.h"

static const sim_transport_ops_t *T = &sim_transport_simgrid;

void sim_transport_use(const sim_transport_ops_t *ops)
{
    T = ops;
}
int sim_transport_is_real(void)
{
    return T != &sim_transport_simgrid;
}

void sim_transport_run(void)
{
    T->run();
}
void sim_transport_version(char *buf, size_t n)
{
    T->version(buf, n);
}
double sim_now(void)
{
    return T->now();
}
void sim_sleep(double seconds)
{
    T->sleep(seconds);
}
void sim_sleep_until(double t)
{
    T->sleep_until(t);
}
void sim_yield(void)
{
    T->yield();
}
sim_box_t sim_mailbox(const char *owner, const char *channel)
{
    return T->mailbox(owner, channel);
}
void sim_box_set_receiver(sim_box_t box)
{
    T->box_set_receiver(box);
}
static long posted;
long sim_posted_sends(void)
{
    return posted;
}
sim_comm_t sim_post_send(sim_box_t to, void *payload, long bytes)
{
    posted++;
    return T->post_send(to, payload, bytes);
}
sim_comm_t sim_post_recv(sim_box_t from, void **payload)
{
    return T->post_recv(from, payload);
}
sim_status_t sim_wait_for(sim_comm_t c, double timeout)
{
    return T->wait_for(c, timeout);
}
int sim_wait_any(sim_comm_t *c, int n)
{
    return T->wait_any(c, n);
}
int sim_test(sim_comm_t c)
{
    return T->test(c);
}
void sim_start(const char *name, sim_host_t host, void (*fn)(int argc, char **argv), void *data,
               int daemon)
{
    T->start(name, host, fn, data, daemon);
}
void *sim_self_data(void)
{
    return T->self_data();
}
const void *sim_self_id(void)
{
    return T->self_id();
}
void sim_execute(double flops)
{
    T->execute(flops);
}
sim_sem_t sim_sem_new(int value)
{
    return T->sem_new(value);
}
void sim_sem_acquire(sim_sem_t s)
{
    T->sem_acquire(s);
}
void sim_sem_release(sim_sem_t s)
{
    T->sem_release(s);
}
void sim_sem_free(sim_sem_t s)
{
    T->sem_free(s);
}
