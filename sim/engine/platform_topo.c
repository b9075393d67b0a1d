/* The torus, dragonfly and rail platforms (see platform.h, platform_impl.h): their shapes,
 * their XML and their link counts. Links are SPLITDUPLEX as in platform.c. */
#include "platform_impl.h"

#include <string.h>

/* Servers of the rail platform: enough for the hosts; spare GPUs are idle hosts. */
static long rail_servers(const scenario_t *sc, int hosts)
{
    return (hosts + sc->gpus_per_server - 1) / sc->gpus_per_server;
}

long sim_platform_torus_shape(const scenario_t *sc, int hosts, long dims[4])
{
    memcpy(dims, sc->torus, sizeof sc->torus);
    if (!dims[0]) {
        /* about a cube: a = ceil(cbrt(h)), then the two others as small as will do */
        long a = 1;
        while (a * a * a < hosts)
            a++;
        long b = 1;
        while (a * b * b < hosts)
            b++;
        long c = (hosts + a * b - 1) / (a * b);
        dims[0] = a, dims[1] = b, dims[2] = c < 1 ? 1 : c, dims[3] = 0;
    }
    long n = 1;
    for (int i = 0; i < 4 && dims[i]; i++)
        n *= dims[i];
    return n;
}

long sim_platform_dragonfly_shape(const scenario_t *sc, int hosts, long dims[4])
{
    memcpy(dims, sc->dragonfly, sizeof sc->dragonfly);
    if (!dims[0]) {
        dims[1] = 1, dims[2] = 4, dims[3] = 4;
        dims[0] = (hosts + 15) / 16;
    }
    return dims[0] * dims[1] * dims[2] * dims[3];
}

dt_status sim_platform_shape_check(const scenario_t *sc, dt_err_t *err)
{
    int workers, servers;
    sim_platform_counts(sc, &workers, &servers);
    long d[4], n;
    if (sc->platform == SIM_PLATFORM_RAIL &&
        rail_servers(sc, workers + servers) * sc->gpus_per_server > SIM_RAIL_MAX_HOSTS) {
        char where[96];
        const char *k =
            scenario_blame(sc, "cluster.workers", "cluster.platform", where, sizeof where);
        return scenario_fail(sc, err, k,
                             "the rail platform writes out every route: %d hosts would be "
                             "%.3g routes (expected at most %d hosts; %s)",
                             workers + servers,
                             (double)(workers + servers) * (workers + servers - 1) / 2,
                             SIM_RAIL_MAX_HOSTS, where);
    }
    if (sc->platform == SIM_PLATFORM_TORUS)
        n = sim_platform_torus_shape(sc, workers + servers, d);
    else if (sc->platform == SIM_PLATFORM_DRAGONFLY)
        n = sim_platform_dragonfly_shape(sc, workers + servers, d);
    else
        return DT_OK;
    if (n >= workers + servers)
        return DT_OK;
    int torus = sc->platform == SIM_PLATFORM_TORUS;
    char where[96];
    const char *k = scenario_blame(sc, torus ? "cluster.torus" : "cluster.dragonfly",
                                   "cluster.workers", where, sizeof where);
    return scenario_fail(sc, err, k,
                         "a %s of %ld hosts cannot hold the run's %d (expected a larger shape, "
                         "or auto; %s)",
                         torus ? "torus" : "dragonfly", n, workers + servers, where);
}

dt_status sim_platform_plan_topology(sim_platform_plan_t *p, const scenario_t *sc, dt_err_t *err)
{
    int hosts = p->workers + p->servers;
    if (sc->platform == SIM_PLATFORM_RAIL) {
        p->rail_hosts = rail_servers(sc, hosts) * sc->gpus_per_server;
        return DT_OK;
    }
    p->topo_hosts = sc->platform == SIM_PLATFORM_TORUS
                        ? sim_platform_torus_shape(sc, hosts, p->dims)
                        : sim_platform_dragonfly_shape(sc, hosts, p->dims);
    return sim_platform_shape_check(sc, err);
}

/* SimGrid's own cluster topologies: every host is its router; a torus link joins neighbours
 * in each dimension, a dragonfly's hosts hang off routers wired all-to-all in a chassis, by
 * position across a group's chassis, and by one link per pair of groups (topo_parameters
 * "G,links;C,links;R,links;N"). */
void sim_platform_write_topology(const sim_platform_plan_t *p, FILE *out)
{
    const long *d = p->dims;
    char params[96];
    int torus = p->kind == SIM_PLATFORM_TORUS;
    if (torus) {
        size_t len = 0;
        for (int i = 0; i < 4 && d[i]; i++)
            len += (size_t)snprintf(params + len, sizeof params - len, "%s%ld", i ? "," : "", d[i]);
    } else {
        snprintf(params, sizeof params, "%ld,1;%ld,1;%ld,1;%ld", d[0], d[1], d[2], d[3]);
    }
    fprintf(out,
            "  <cluster id=\"%s\" prefix=\"node-\" suffix=\"\" radical=\"0-%ld\" "
            "speed=\"%.15gf\" bw=\"%.15gBps\" lat=\"%.15gs\" sharing_policy=\"SPLITDUPLEX\" "
            "topology=\"%s\" topo_parameters=\"%s\">%s</cluster>\n",
            torus ? "torus" : "dragonfly", p->topo_hosts - 1, p->speed, p->bandwidth, p->latency,
            torus ? "TORUS" : "DRAGONFLY", params, p->power);
}

/* The rail-optimised fat-tree: server s holds GPUs node-(s*G) .. node-(s*G+G-1). GPU r of a
 * server reaches the server's other GPUs through its NVLink port (nvlink-I) and the NVSwitch
 * (non-blocking, no link of its own); its NIC (nic-I, cluster.bandwidth) sits on rail leaf
 * r, so GPU r of two servers meet at leaf r alone; GPUs of different rails and servers go
 * up through their leaves' spine links (rail-R, non-blocking: a server's worth of NICs).
 * Every route is written out (Full routing): H x (H - 1) / 2 of them. */
void sim_platform_write_rail(const sim_platform_plan_t *p, FILE *out)
{
    long g = p->gpus_per_server, n = p->rail_hosts;
    fprintf(out, "<zone id=\"world\" routing=\"Full\">\n");
    for (long i = 0; i < n; i++)
        fprintf(out,
                "  <host id=\"node-%ld\" speed=\"%.15gf\"><prop id=\"server\" value=\"%ld\"/>"
                "%s</host>\n"
                "  <link id=\"nic-%ld\" bandwidth=\"%.15gBps\" latency=\"%.15gs\" "
                "sharing_policy=\"SPLITDUPLEX\"/>\n"
                "  <link id=\"nvlink-%ld\" bandwidth=\"%.15gBps\" latency=\"%.15gs\" "
                "sharing_policy=\"SPLITDUPLEX\"/>\n",
                i, p->speed, i / g, p->power, i, p->bandwidth, p->latency, i, p->nvlink_bandwidth,
                p->nvlink_latency);
    for (long r = 0; r < g; r++)
        fprintf(out,
                "  <link id=\"rail-%ld\" bandwidth=\"%.15gBps\" latency=\"%.15gs\" "
                "sharing_policy=\"SPLITDUPLEX\"/>\n",
                r, p->bandwidth * (double)(n / g), p->uplink_latency);
    if (p->control)
        fprintf(out, "  <host id=\"" SIM_PLATFORM_CONTROL_HOST "\" speed=\"1f\">" CONTROL_POWER
                     "</host>\n");
    for (long a = 0; a < n; a++)
        for (long b = a + 1; b < n; b++) {
            fprintf(out, "  <route src=\"node-%ld\" dst=\"node-%ld\">", a, b);
            if (a / g == b / g)
                fprintf(out,
                        "<link_ctn id=\"nvlink-%ld\" direction=\"UP\"/>"
                        "<link_ctn id=\"nvlink-%ld\" direction=\"DOWN\"/>",
                        a, b);
            else if (a % g == b % g)
                fprintf(out,
                        "<link_ctn id=\"nic-%ld\" direction=\"UP\"/>"
                        "<link_ctn id=\"nic-%ld\" direction=\"DOWN\"/>",
                        a, b);
            else
                fprintf(out,
                        "<link_ctn id=\"nic-%ld\" direction=\"UP\"/>"
                        "<link_ctn id=\"rail-%ld\" direction=\"UP\"/>"
                        "<link_ctn id=\"rail-%ld\" direction=\"DOWN\"/>"
                        "<link_ctn id=\"nic-%ld\" direction=\"DOWN\"/>",
                        a, a % g, b % g, b);
            fprintf(out, "</route>\n");
        }
    fprintf(out, "</zone>\n");
}

long sim_platform_topology_links(const scenario_t *sc, int hosts)
{
    long d[4];
    switch (sc->platform) {
    case SIM_PLATFORM_TORUS: {
        long n = sim_platform_torus_shape(sc, hosts, d), dims = 0;
        while (dims < 4 && d[dims])
            dims++;
        return n * dims;
    }
    case SIM_PLATFORM_DRAGONFLY: {
        sim_platform_dragonfly_shape(sc, hosts, d);
        long g = d[0], c = d[1], r = d[2];
        return hosts + g * c * r * (r - 1) / 2 + g * r * c * (c - 1) / 2 + g * (g - 1) / 2;
    }
    case SIM_PLATFORM_RAIL:
        return hosts + 2 * rail_servers(sc, hosts) * sc->gpus_per_server;
    default:
        DT_ASSERT(!"not a torus, dragonfly or rail platform");
        return 0;
    }
}
