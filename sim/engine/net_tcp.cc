/* The tcp network model on SimGrid (net_tcp.h). SimGrid asks two factors of each
 * communication as it starts: its bandwidth factor (what share of the wire its payload gets:
 * the headers' toll, mss / (mss + header)) and then its latency factor. The latency carries
 * the time TCP's window takes to open (handshake and slow start, tcp_model.h), during which
 * the flow takes no share of its links, as a flow in slow start takes little; once open it
 * shares its links max-min with the others (CM02), bounded by the window cap per round trip
 * (SimGrid's TCP-gamma, the cap over the payload share: gamma / RTT on the wire). So a flow
 * that starts while another holds the link waits its ramp out while the first runs ahead.
 *
 * Connections are one per host pair (as Open MPI and gRPC keep them), a window per direction;
 * the handshake is paid by the first message either way. The state lives for one simulation
 * (one per process), reset by sim_net_tcp_install. */
#include <simgrid/kernel/resource/NetworkModelIntf.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/NetZone.hpp>
#include <xbt/config.h>

#include <map>
#include <utility>
#include <vector>

extern "C" {
#include "net_tcp.h"
#include "tcp_model.h"
}

namespace
{

using simgrid::s4u::Host;
using simgrid::s4u::Link;
using Pair = std::pair<const Host *, const Host *>;

sim_tcp_t params;
/* A connection direction and the bandwidth of its route's slowest link. */
struct Conn {
    sim_tcp_conn_t tcp{};
    double bottleneck = 0;
};
std::map<Pair, Conn> conns;
/* each host's connections as sender and as receiver: the messages a new one shares its
 * hosts' links with are theirs still leaving */
std::map<const Host *, std::vector<const Conn *>> sending, receiving;

/* The messages of `list` other than self's still leaving at `now` whose flights queue with
 * self's on `link` (a host's own link): those the link cannot carry each at its route's
 * bottleneck beside self's (two workers' pushes into a server's link of their own speed;
 * not a server's downloads to clients behind slower access links). */
int queued_with(const std::vector<const Conn *> &list, const Conn *self, const Link *link,
                double now)
{
    int n = 0;
    for (const Conn *o : list)
        n += o != self && o->tcp.last_send > now &&
             link->get_bandwidth() < self->bottleneck + o->bottleneck;
    return n;
}

/* The latency factor of the message whose bandwidth factor was just asked (SimGrid asks the
 * bandwidth factor first, then the latency factor, of the same communication). */
struct Pending {
    const Host *src = nullptr;
    const Host *dst = nullptr;
    double size = -1;
    double factor = 1;
} pending;

double charge(double size, const Host *src, const Host *dst, const std::vector<Link *> &links)
{
    double latency = 0, bandwidth = -1;
    for (const Link *l : links) {
        latency += l->get_latency();
        if (bandwidth < 0 || l->get_bandwidth() < bandwidth)
            bandwidth = l->get_bandwidth();
    }
    if (links.empty() || !(latency > 0) || !(bandwidth > 0))
        return 1.0; /* a host to itself, or a path without latency: nothing to open */
    auto found = conns.find(Pair(src, dst));
    if (found == conns.end()) {
        found = conns.emplace(Pair(src, dst), Conn{}).first;
        sending[src].push_back(&found->second);
        receiving[dst].push_back(&found->second);
    }
    Conn &conn = found->second;
    conn.bottleneck = bandwidth;
    sim_tcp_conn_t &c = conn.tcp;
    if (!c.open) { /* the other direction opened the connection: no handshake */
        auto back = conns.find(Pair(dst, src));
        if (back != conns.end() && back->second.tcp.open)
            sim_tcp_open(&params, &c);
    }
    double now = simgrid::s4u::Engine::get_clock();
    int out_queue = queued_with(sending[src], &conn, links.front(), now);
    int in_queue = queued_with(receiving[dst], &conn, links.back(), now);
    c.sharing = out_queue + in_queue;
    /* its fair share of the host link it shares (the lower of the two) */
    c.share = 0;
    if (out_queue > 0)
        c.share = links.front()->get_bandwidth() / (out_queue + 1);
    if (in_queue > 0 && (c.share == 0 || links.back()->get_bandwidth() / (in_queue + 1) < c.share))
        c.share = links.back()->get_bandwidth() / (in_queue + 1);
    sim_tcp_time_t time = sim_tcp_message(&params, &c, now, size, latency, bandwidth);
    /* SimGrid gives the flow latency x factor, then size / rate (the rate bounded by the
     * window cap per round trip: TCP-gamma). A message within a capped window leaves in one
     * flight, faster than the bound: its wait is shorter than the latency, down to none */
    double wait = time.total - size / time.rate;
    return wait > 0 ? wait / latency : 0.0;
}

double bandwidth_factor(double size, const Host *src, const Host *dst,
                        const std::vector<Link *> &links,
                        const std::unordered_set<simgrid::s4u::NetZone *> &)
{
    pending = {src, dst, size, charge(size, src, dst, links)};
    return sim_tcp_efficiency(&params);
}

double latency_factor(double size, const Host *src, const Host *dst,
                      const std::vector<Link *> &links,
                      const std::unordered_set<simgrid::s4u::NetZone *> &)
{
    if (pending.src == src && pending.dst == dst && pending.size == size) {
        pending.size = -1;
        return pending.factor;
    }
    return charge(size, src, dst, links); /* not asked in pairs: charge it here */
}

} // namespace

extern "C" void sim_net_tcp_install(const sim_tcp_t *tcp)
{
    params = *tcp;
    conns.clear();
    sending.clear();
    receiving.clear();
    pending = Pending();
    /* CM02 bounds a flow at TCP-gamma / (2 x its route's latency): the window cap per round
     * trip, in wire bytes */
    sg_cfg_set_double("network/TCP-gamma", sim_tcp_window_cap(tcp) / sim_tcp_efficiency(tcp));
    auto *model = simgrid::s4u::Engine::get_instance()->get_netzone_root()->get_network_model();
    model->set_bw_factor_cb(bandwidth_factor);
    model->set_lat_factor_cb(latency_factor);
}
