/* Platform generation and loading (see platform.h).
 *
 * Every generated host link is SPLITDUPLEX (full duplex, as Ethernet and InfiniBand are):
 * a ring or a pairwise exchange sends and receives at full bandwidth at once, which is what
 * the alpha-beta formulas of the collectives assume. Switch backbones are FATPIPE
 * (non-blocking switches). */
#define _POSIX_C_SOURCE 200809L
#include "platform.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/link.h>
#include <simgrid/plugins/energy.h>
#include <xbt/config.h>

#include "client_devices.h"
#include "fault_spec.h"
#include "net_tcp.h"
#include "platform_impl.h"

void sim_platform_counts(const scenario_t *sc, int *workers, int *servers)
{
    *workers = (int)sc->workers;
    *servers = 0;
    /* a file of jobs (jobs.h): cluster.workers is the shared platform's host count */
    if (sc->strategy->hosts && !strcmp(sc->jobs_files, "none"))
        sc->strategy->hosts(sc, workers, servers);
}

/* Access-link classes of the edge platform, as fractions of cluster.bandwidth (down, up)
 * and fixed one-way latencies: home fibre, cable and 4G, in the proportions 3:4:3. */
typedef struct edge_class {
    const char *name;
    double down, up, latency;
} edge_class_t;
static const edge_class_t edge_classes[] = {
    {"fibre", 1.0, 0.5, 5e-3},
    {"cable", 0.2, 0.02, 15e-3},
    {"4g", 0.03, 0.01, 40e-3},
};
static const int edge_pattern[10] = {0, 1, 2, 0, 1, 2, 1, 0, 1, 2};

/* Every generated host draws its device's power: wattage_per_state "idle:max" (W), which
 * SimGrid's host energy plugin charges at max while the host computes and at idle
 * otherwise. A device without power figures, and the fault injector's host, draw 0 W (the
 * plugin refuses hosts without the property). */
static void power_prop(const scenario_t *sc, char *buf, size_t n)
{
    double idle = 0, max = 0;
    if (sim_platform_device_power(sc, &idle, &max) != DT_OK)
        idle = max = 0;
    snprintf(buf, n, "<prop id=\"wattage_per_state\" value=\"%.15g:%.15g\"/>", idle, max);
}

dt_status sim_platform_device_power(const scenario_t *sc, double *idle, double *max)
{
    const sim_device_profile_t *p = scenario_device(sc);
    if (!p || isnan(p->value[SIM_DEV_POWER_IDLE]) || isnan(p->value[SIM_DEV_POWER_MAX]))
        return DT_ERR_INPUT;
    *idle = p->value[SIM_DEV_POWER_IDLE];
    *max = p->value[SIM_DEV_POWER_MAX];
    return DT_OK;
}

/* ---- the plan: the scenario read once ------------------------------------------------- */

/* The edge platform's clients: each class's links in the fixed pattern, or a client's own
 * links (faults.device_trace, client_up, ...) where given: host c is client c's
 * (scenario_validate: a host per client). */
static dt_status plan_clients(sim_platform_plan_t *p, const scenario_t *sc, dt_err_t *err)
{
    p->client = dt_calloc((size_t)(p->workers ? p->workers : 1), sizeof *p->client);
    sim_client_devices_t dev = {0};
    unsigned links = sim_client_links_given(sc);
    if (links && sim_client_devices_open(&dev, sc, 0, err))
        return DT_ERR_INPUT;
    for (int c = 0; c < p->workers; c++) {
        const edge_class_t *e = &edge_classes[edge_pattern[c % 10]];
        sim_platform_client_link_t *l = &p->client[c];
        double u, d, lat;
        unsigned given = links ? sim_client_link(&dev, c, &u, &d, &lat) : 0;
        l->up = given & SIM_DEVICE_UP ? u : sc->bandwidth * e->up;
        l->down = given & SIM_DEVICE_DOWN ? d : sc->bandwidth * e->down;
        l->latency = given & SIM_DEVICE_LATENCY ? lat : e->latency + sc->latency;
        l->access = given ? "client" : e->name;
    }
    sim_client_devices_close(&dev);
    return DT_OK;
}

dt_status sim_platform_plan(sim_platform_plan_t *p, const scenario_t *sc, dt_err_t *err)
{
    DT_ASSERT(sc->platform != SIM_PLATFORM_FILE); /* files are not generated */
    memset(p, 0, sizeof *p);
    p->kind = sc->platform;
    sim_platform_counts(sc, &p->workers, &p->servers);
    int hosts = p->workers + p->servers;
    p->speed = sc->device_flops;
    power_prop(sc, p->power, sizeof p->power);
    p->control = scenario_has_faults(sc);
    p->bandwidth = sc->bandwidth;
    p->latency = sc->latency;
    p->uplink_bandwidth = sc->uplink_bandwidth;
    p->uplink_latency = sc->uplink_latency;
    p->racks = (int)sc->racks < hosts ? (int)sc->racks : hosts;
    p->built_racks = p->racks;
    p->gpus_per_server = sc->gpus_per_server;
    p->nvlink_bandwidth = sc->nvlink_bandwidth;
    p->nvlink_latency = sc->nvlink_latency;
    switch (sc->platform) {
    case SIM_PLATFORM_EDGE:
        p->regions = sc->strategy->regions ? sc->strategy->regions(sc) : 0;
        return plan_clients(p, sc, err);
    case SIM_PLATFORM_TORUS:
    case SIM_PLATFORM_DRAGONFLY:
    case SIM_PLATFORM_RAIL:
        return sim_platform_plan_topology(p, sc, err);
    default:
        return DT_OK;
    }
}

void sim_platform_plan_free(sim_platform_plan_t *p)
{
    free(p->client);
    p->client = NULL;
}

/* ---- the XML, from the plan alone ------------------------------------------------------- */

static void xml_head(FILE *out)
{
    fprintf(out, "<?xml version='1.0'?>\n"
                 "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
                 "<platform version=\"4.1\">\n");
}

/* One <cluster>: hosts node-FIRST .. node-LAST on a non-blocking switch. */
static void xml_cluster(FILE *out, const sim_platform_plan_t *p, const char *id, int first,
                        int last, const char *extra)
{
    fprintf(out,
            "  <cluster id=\"%s\" prefix=\"node-\" suffix=\"\" radical=\"%d-%d\" "
            "speed=\"%.15gf\" bw=\"%.15gBps\" lat=\"%.15gs\" sharing_policy=\"SPLITDUPLEX\" "
            "bb_bw=\"%.15gBps\" bb_lat=\"0s\" bb_sharing_policy=\"FATPIPE\"%s>%s</cluster>\n",
            id, first, last, p->speed, p->bandwidth, p->latency, p->bandwidth * (last - first + 1),
            extra ? extra : "", p->power);
}

/* With faults, a host of its own for the fault injector, which no crash can reach; it
 * has no links (it never communicates). */
static void xml_control_zone(FILE *out, const sim_platform_plan_t *p)
{
    if (p->control)
        fprintf(
            out,
            "  <zone id=\"dtsim-control\" routing=\"None\"><host id=\"" SIM_PLATFORM_CONTROL_HOST
            "\" speed=\"1f\">" CONTROL_POWER "</host></zone>\n");
}

/* Server(s) behind one datacenter link (uplink_*), clients behind their access links;
 * regional aggregators (strategy_def.h: regions): server-(1+r) behind its own link
 * region-r (uplink_*) serves the client hosts h with h mod R = r, and reaches the cloud
 * server-0 over a WAN link wan-r (uplink_*) and the cloud's dc. */
static void xml_edge(FILE *out, const sim_platform_plan_t *p)
{
    int workers = p->workers, servers = p->servers, regions = p->regions;
    fprintf(out, "<zone id=\"world\" routing=\"Full\">\n");
    fprintf(out,
            "  <link id=\"dc\" bandwidth=\"%.15gBps\" latency=\"%.15gs\" "
            "sharing_policy=\"SPLITDUPLEX\"/>\n",
            p->uplink_bandwidth, p->uplink_latency);
    for (int s = 0; s < servers; s++)
        fprintf(out, "  <host id=\"server-%d\" speed=\"%.15gf\">%s</host>\n", s, p->speed,
                p->power);
    if (p->control)
        fprintf(out, "  <host id=\"" SIM_PLATFORM_CONTROL_HOST "\" speed=\"1f\">" CONTROL_POWER
                     "</host>\n");
    for (int c = 0; c < workers; c++) {
        const sim_platform_client_link_t *l = &p->client[c];
        fprintf(out,
                "  <host id=\"client-%d\" speed=\"%.15gf\"><prop id=\"access\" "
                "value=\"%s\"/>%s</host>\n",
                c, p->speed, l->access, p->power);
        fprintf(out, "  <link id=\"up-%d\" bandwidth=\"%.15gBps\" latency=\"%.15gs\"/>\n", c, l->up,
                l->latency);
        fprintf(out, "  <link id=\"down-%d\" bandwidth=\"%.15gBps\" latency=\"%.15gs\"/>\n", c,
                l->down, l->latency);
    }
    for (int r = 0; r < regions; r++)
        fprintf(out,
                "  <link id=\"region-%d\" bandwidth=\"%.15gBps\" latency=\"%.15gs\" "
                "sharing_policy=\"SPLITDUPLEX\"/>\n"
                "  <link id=\"wan-%d\" bandwidth=\"%.15gBps\" latency=\"%.15gs\" "
                "sharing_policy=\"SPLITDUPLEX\"/>\n",
                r, p->uplink_bandwidth, p->uplink_latency, r, p->uplink_bandwidth,
                p->uplink_latency);
    for (int r = 0; r < regions; r++)
        fprintf(out,
                "  <route src=\"server-%d\" dst=\"server-0\" symmetrical=\"NO\">"
                "<link_ctn id=\"wan-%d\" direction=\"UP\"/><link_ctn id=\"dc\" "
                "direction=\"DOWN\"/></route>\n"
                "  <route src=\"server-0\" dst=\"server-%d\" symmetrical=\"NO\">"
                "<link_ctn id=\"dc\" direction=\"UP\"/><link_ctn id=\"wan-%d\" "
                "direction=\"DOWN\"/></route>\n",
                1 + r, r, 1 + r, r);
    for (int s = regions ? 1 : 0; s < servers; s++)
        for (int c = 0; c < workers; c++) {
            char via[32] = "dc";
            if (regions && c % regions != s - 1)
                continue;
            if (regions)
                snprintf(via, sizeof via, "region-%d", s - 1);
            fprintf(out,
                    "  <route src=\"client-%d\" dst=\"server-%d\" symmetrical=\"NO\">"
                    "<link_ctn id=\"up-%d\"/><link_ctn id=\"%s\" direction=\"DOWN\"/></route>\n",
                    c, s, c, via);
            fprintf(out,
                    "  <route src=\"server-%d\" dst=\"client-%d\" symmetrical=\"NO\">"
                    "<link_ctn id=\"%s\" direction=\"UP\"/><link_ctn id=\"down-%d\"/></route>\n",
                    s, c, via, c);
        }
    fprintf(out, "</zone>\n");
}

void sim_platform_write_xml(const sim_platform_plan_t *p, FILE *out)
{
    int hosts = p->workers + p->servers;
    xml_head(out);
    switch (p->kind) {
    case SIM_PLATFORM_STAR:
        fprintf(out, "<zone id=\"world\" routing=\"Full\">\n");
        xml_cluster(out, p, "star", 0, hosts - 1, NULL);
        xml_control_zone(out, p);
        fprintf(out, "</zone>\n");
        break;
    case SIM_PLATFORM_FAT_TREE: {
        /* Two levels: leaves of k hosts, k spines (non-blocking), enough leaves for all
         * hosts; spare hosts stay idle. */
        int k = hosts < 8 ? hosts : 8;
        int leaves = (hosts + k - 1) / k;
        if (leaves < 2)
            leaves = 2;
        fprintf(out, "<zone id=\"world\" routing=\"Full\">\n");
        fprintf(out,
                "  <cluster id=\"fat-tree\" prefix=\"node-\" suffix=\"\" radical=\"0-%d\" "
                "speed=\"%.15gf\" bw=\"%.15gBps\" lat=\"%.15gs\" sharing_policy=\"SPLITDUPLEX\" "
                "topology=\"FAT_TREE\" topo_parameters=\"2;%d,%d;1,%d;1,1\">%s</cluster>\n",
                k * leaves - 1, p->speed, p->bandwidth, p->latency, k, leaves, k, p->power);
        xml_control_zone(out, p);
        fprintf(out, "</zone>\n");
        break;
    }
    case SIM_PLATFORM_MULTI_RACK: {
        /* Racks meet at one core router: each rack's route to it is its uplink's UP
         * direction and back its DOWN, and the routes between racks (uplink a UP, uplink b
         * DOWN) are found through the core, so the file grows with the racks, not with
         * their pairs (2048 racks: 4096 routes instead of 2 million, whose loading was 40% of
         * the CPU of a 16,384-host run of one micro-batch) */
        int racks = p->racks, built = p->built_racks;
        fprintf(out, "<zone id=\"world\" routing=\"DijkstraCache\">\n");
        for (int r = 0; r < built; r++) {
            int first = (int)((long)hosts * r / racks),
                last = (int)((long)hosts * (r + 1) / racks) - 1;
            char id[32], extra[64];
            snprintf(id, sizeof id, "rack-%d", r);
            snprintf(extra, sizeof extra, " router_id=\"rack-%d-router\"", r);
            xml_cluster(out, p, id, first, last, extra);
        }
        for (int r = 0; r < built; r++)
            fprintf(out,
                    "  <link id=\"uplink-%d\" bandwidth=\"%.15gBps\" latency=\"%.15gs\" "
                    "sharing_policy=\"SPLITDUPLEX\"/>\n",
                    r, p->uplink_bandwidth, p->uplink_latency);
        fprintf(out, "  <zone id=\"core\" routing=\"None\"><router id=\"core-router\"/></zone>\n");
        for (int r = 0; r < built; r++)
            fprintf(out,
                    "  <zoneRoute src=\"rack-%d\" dst=\"core\" gw_src=\"rack-%d-router\" "
                    "gw_dst=\"core-router\" symmetrical=\"NO\"><link_ctn id=\"uplink-%d\" "
                    "direction=\"UP\"/></zoneRoute>\n"
                    "  <zoneRoute src=\"core\" dst=\"rack-%d\" gw_src=\"core-router\" "
                    "gw_dst=\"rack-%d-router\" symmetrical=\"NO\"><link_ctn id=\"uplink-%d\" "
                    "direction=\"DOWN\"/></zoneRoute>\n",
                    r, r, r, r, r, r);
        xml_control_zone(out, p);
        fprintf(out, "</zone>\n");
        break;
    }
    case SIM_PLATFORM_EDGE:
        xml_edge(out, p);
        break;
    case SIM_PLATFORM_TORUS:
    case SIM_PLATFORM_DRAGONFLY:
        fprintf(out, "<zone id=\"world\" routing=\"Full\">\n");
        sim_platform_write_topology(p, out);
        xml_control_zone(out, p);
        fprintf(out, "</zone>\n");
        break;
    case SIM_PLATFORM_RAIL:
        sim_platform_write_rail(p, out);
        break;
    case SIM_PLATFORM_FILE:
        DT_ASSERT(!"file platforms are not generated");
    }
    fprintf(out, "</platform>\n");
}

static int by_natural_name(const void *a, const void *b)
{
    const char *x = sg_host_get_name(*(const sg_host_t *)a);
    const char *y = sg_host_get_name(*(const sg_host_t *)b);
    size_t lx = strlen(x), ly = strlen(y), dx = lx, dy = ly;
    while (dx > 0 && x[dx - 1] >= '0' && x[dx - 1] <= '9')
        dx--;
    while (dy > 0 && y[dy - 1] >= '0' && y[dy - 1] <= '9')
        dy--;
    int c = strncmp(x, y, dx < dy ? dx : dy);
    if (c || dx != dy)
        return c ? c : (dx < dy ? -1 : 1);
    long nx = dx < lx ? atol(x + dx) : -1, ny = dy < ly ? atol(y + dy) : -1;
    return (nx > ny) - (nx < ny);
}

/* Physical links: each host's own, plus a fat-tree's leaf-to-spine links, a multi-rack
 * platform's rack uplinks, the edge platform's datacenter, regional and WAN links; a
 * torus's D links per position (it has no host links: each host routes); a dragonfly's
 * host-to-router links, all-to-all routers in a chassis, same-position routers across a
 * group's chassis, one link per pair of groups; the rail platform's NICs, NVLink ports and,
 * per rail leaf, as many spine links as it has NICs. Host links of spare positions are not
 * counted (but a torus's are: they carry transit traffic). None known for a file. */
static long platform_links(const scenario_t *sc, int hosts)
{
    switch (sc->platform) {
    case SIM_PLATFORM_FAT_TREE: {
        int k = hosts < 8 ? hosts : 8, leaves = (hosts + k - 1) / k;
        return hosts + k * (leaves < 2 ? 2 : leaves);
    }
    case SIM_PLATFORM_MULTI_RACK:
        return hosts + ((int)sc->racks < hosts ? (int)sc->racks : hosts);
    case SIM_PLATFORM_EDGE:
        return hosts + 1 + 2 * (sc->strategy->regions ? sc->strategy->regions(sc) : 0);
    case SIM_PLATFORM_TORUS:
    case SIM_PLATFORM_DRAGONFLY:
    case SIM_PLATFORM_RAIL:
        return sim_platform_topology_links(sc, hosts);
    default:
        return hosts;
    }
}

/* The rack of host h on the multi-rack platform (racks of hosts x r / racks onwards, as
 * sim_platform_write_xml cuts them). */
static int rack_of(int h, int hosts, int racks)
{
    int r = (int)((long)h * racks / hosts);
    while (r > 0 && (long)hosts * r / racks > h)
        r--;
    while (r + 1 < racks && (long)hosts * (r + 1) / racks <= h)
        r++;
    return r;
}

double sim_platform_ring_step_seconds(const scenario_t *sc, int first, int last, double bytes)
{
    int workers, servers;
    sim_platform_counts(sc, &workers, &servers);
    int hosts = workers + servers;
    if (first < 0 || last >= hosts || first > last)
        return -1;
    if (sc->platform == SIM_PLATFORM_MULTI_RACK) {
        int racks = (int)sc->racks < hosts ? (int)sc->racks : hosts;
        if (rack_of(first, hosts, racks) != rack_of(last, hosts, racks))
            return -1;
    } else if (sc->platform != SIM_PLATFORM_STAR) {
        return -1;
    }
    sim_net_model_t model = scenario_network_model(sc);
    if (model == SIM_NET_SMPI || model == SIM_NET_TCP || strcmp(sc->link_down, "none") ||
        strcmp(sc->link_degrade, "none") || sc->live_links)
        return -1;
    /* SimGrid's factors for its models (LV08: latency x 13.01, bandwidth x 0.97; CM02:
     * none); with cross traffic each flow's acknowledgements weigh 0.05 of it on the
     * reverse direction of its route, here the link its host sends its own flow on. A
     * flow's rate is also bounded by its TCP window, gamma / (2 x the route's latency):
     * checked against messages under CM02; under LV08 the bound's form differs (0.6% at
     * 1 ms links), so there it is messages where the bound binds */
    int lv08 = model == SIM_NET_LV08;
    double lat = 2 * sc->latency * (lv08 ? 13.01 : 1.0);
    double rate = sc->bandwidth * (lv08 ? 0.97 : 1.0) / (sc->crosstraffic ? 1.05 : 1.0);
    double gamma = sg_cfg_get_double("network/TCP-gamma");
    if (sc->latency > 0 && gamma > 0 && gamma / (4 * sc->latency) < rate) {
        if (lv08)
            return -1;
        rate = gamma / (4 * sc->latency);
    }
    return lat + bytes / rate;
}

int sim_platform_server_of(const scenario_t *sc, int host, int *size, double *nic)
{
    int workers, servers;
    sim_platform_counts(sc, &workers, &servers);
    int hosts = workers + servers;
    if (host < 0 || host >= hosts)
        return -1;
    switch (sc->platform) {
    case SIM_PLATFORM_STAR:
        *size = 1;
        *nic = sc->bandwidth;
        return host;
    case SIM_PLATFORM_RAIL:
        *size = (int)sc->gpus_per_server;
        *nic = sc->bandwidth;
        return (int)(host / sc->gpus_per_server);
    case SIM_PLATFORM_MULTI_RACK: {
        int racks = (int)sc->racks < hosts ? (int)sc->racks : hosts;
        int r = rack_of(host, hosts, racks);
        *size = (int)((long)hosts * (r + 1) / racks - (long)hosts * r / racks);
        /* the host's link, or its share of the rack's uplink */
        double share = sc->uplink_bandwidth / *size;
        *nic = sc->bandwidth < share ? sc->bandwidth : share;
        return r;
    }
    default:
        return -1;
    }
}

double sim_platform_tcp_gamma(void)
{
    return sg_cfg_get_double("network/TCP-gamma");
}

void sim_platform_widen(const sim_platform_t *p, int stride)
{
    /* a generated cluster names host node-N's own links CLUSTER_link_N_UP and _DOWN (its
     * routes are not built before the simulation starts: found by name) */
    sg_link_t *links = sg_link_list();
    size_t n = sg_link_count(); /* it walks every zone: once */
    for (size_t i = 0; i < n; i++) {
        const char *name = sg_link_get_name(links[i]), *at = strstr(name, "_link_");
        char *end;
        long host = at ? strtol(at + 6, &end, 10) : -1;
        if (host < 0 || host >= p->n_workers || host % stride ||
            (strcmp(end, "_UP") && strcmp(end, "_DOWN")))
            continue;
        sg_link_set_bandwidth(links[i], stride * sg_link_get_bandwidth(links[i]));
    }
    free(links);
    sg_cfg_set_double("network/TCP-gamma", stride * sg_cfg_get_double("network/TCP-gamma"));
}

/* 1 when a link_degrade item changes a latency ("to 50ms"). */
static int degrades_latency(const scenario_t *sc)
{
    sim_fault_spec_t specs[SIM_FAULT_MAX];
    size_t n = 0;
    dt_err_t e;
    if (sim_fault_spec_parse(SIM_FAULT_LINK_DEGRADE, sc->link_degrade, specs, SIM_FAULT_MAX, &n,
                             &e))
        return 0; /* the scenario parser refused it already */
    for (size_t i = 0; i < n; i++)
        if (specs[i].latency)
            return 1;
    return 0;
}

static void apply_network_model(const scenario_t *sc)
{
    /* tcp is CM02's sharing with factors of its own (net_tcp.cc, installed once loaded) */
    static const char *names[] = {"LV08", "CM02", "SMPI", "CM02"};
    sg_cfg_set_string("network/model", names[scenario_network_model(sc)]);
    sg_cfg_set_boolean("network/crosstraffic", sc->crosstraffic ? "yes" : "no");
    /* SimGrid 3.32 aborts ("Variable penalty should not be negative") when a link's
     * bandwidth changes under a model with an RTT-fairness term (LV08's weight-S): with link
     * faults (and links a teacher may change, faults.live_links) that term is off */
    if (strcmp(sc->link_down, "none") || strcmp(sc->link_degrade, "none") || sc->live_links)
        sg_cfg_set_double("network/weight-S", 0.0);
    /* SimGrid 3.32's lazy update never delivers a flow whose link's latency changes while the
     * flow pays its latency (it waited for the peers' timeout); the full update does, and
     * gives the same rows as the lazy one elsewhere (a bandwidth-degrade run and the demo's
     * async-ps, row for row): it is used where a latency may change */
    if (sc->live_links || degrades_latency(sc))
        sg_cfg_set_string("network/optim", "Full");
}

/* The racks of a multi-rack plan to build for its first `live` workers to run: up to the
 * last live worker's, where those racks hold no other host; all where any other host may
 * matter (servers, the fault injector's targets, links or hosts a live teacher changes). */
static int built_racks(const sim_platform_plan_t *plan, const scenario_t *sc, int live)
{
    int hosts = plan->workers + plan->servers;
    if (plan->kind != SIM_PLATFORM_MULTI_RACK || plan->servers || plan->control || sc->live_links ||
        sc->live_hosts || live <= 0 || live >= hosts)
        return plan->racks;
    int r = rack_of(live - 1, hosts, plan->racks) + 1;
    return (long)hosts * r / plan->racks == live ? r : plan->racks;
}

dt_status sim_platform_load(sim_platform_t *p, const scenario_t *sc, dt_err_t *err)
{
    int workers, servers;
    sim_platform_counts(sc, &workers, &servers);
    return sim_platform_load_live(p, sc, workers, err);
}

dt_status sim_platform_load_live(sim_platform_t *p, const scenario_t *sc, int live, dt_err_t *err)
{
    memset(p, 0, sizeof *p);
    sim_platform_counts(sc, &p->n_workers, &p->n_servers);
    p->built = p->n_workers;
    apply_network_model(sc);

    if (sc->platform == SIM_PLATFORM_FILE) {
        simgrid_load_platform(sc->platform_file);
        /* bandwidth and latency written in the scenario override every link of the file */
        int bw = scenario_key_given(sc, "cluster.bandwidth");
        int lat = scenario_key_given(sc, "cluster.latency");
        if (bw || lat) {
            sg_link_t *links = sg_link_list();
            for (size_t i = 0; i < sg_link_count(); i++) {
                if (bw)
                    sg_link_set_bandwidth(links[i], sc->bandwidth);
                if (lat)
                    sg_link_set_latency(links[i], sc->latency);
            }
            free(links);
        }
    } else {
        char path[] = "/tmp/dtsim-platform-XXXXXX";
        int fd = mkstemp(path);
        DT_CHECK(fd >= 0, "cannot create a temporary platform file: %s", strerror(errno));
        FILE *f = fdopen(fd, "w");
        DT_CHECK(f, "fdopen: %s", strerror(errno));
        sim_platform_plan_t plan;
        dt_status st = sim_platform_plan(&plan, sc, err);
        if (st == DT_OK) {
            plan.built_racks = built_racks(&plan, sc, live);
            if (plan.built_racks < plan.racks)
                p->built = live;
            sim_platform_write_xml(&plan, f);
        }
        sim_platform_plan_free(&plan);
        DT_CHECK(fclose(f) == 0, "writing %s: %s", path, strerror(errno));
        if (st) {
            unlink(path);
            return st;
        }
        /* before the hosts exist: the plugin reads their wattage_per_state as they are
         * created. It adds no activity and changes no timing. */
        sg_host_energy_plugin_init();
        p->energy = 1;
        simgrid_load_platform(path);
        unlink(path);
    }

    p->workers = dt_calloc((size_t)p->n_workers, sizeof(sg_host_t));
    p->servers = dt_calloc((size_t)(p->n_servers ? p->n_servers : 1), sizeof(sg_host_t));
    p->group = dt_calloc((size_t)p->n_workers, sizeof(int));
    char name[64];
    if (sc->platform == SIM_PLATFORM_EDGE) {
        for (int i = 0; i < p->n_servers; i++) {
            snprintf(name, sizeof name, "server-%d", i);
            p->servers[i] = (sim_host_t)sg_host_by_name(name);
        }
        for (int i = 0; i < p->n_workers; i++) {
            snprintf(name, sizeof name, "client-%d", i);
            p->workers[i] = (sim_host_t)sg_host_by_name(name);
        }
    } else if (sc->platform == SIM_PLATFORM_FILE) {
        size_t count = sg_host_count();
        if (count < (size_t)(p->n_workers + p->n_servers)) {
            dt_err_input(err, "%s: %zu hosts, but the scenario needs %d workers and %d servers",
                         sc->platform_file, count, p->n_workers, p->n_servers);
            sim_platform_free(p);
            return DT_ERR_INPUT;
        }
        /* hosts in natural name order (node-2 before node-10); servers are the hosts named
         * server-* when there are enough of them, else the last ones, as in the generated
         * platforms; workers are the first of the others */
        sg_host_t *all = sg_host_list();
        qsort(all, count, sizeof(sg_host_t), by_natural_name);
        size_t named = 0;
        for (size_t i = 0; i < count; i++)
            named += !strncmp(sg_host_get_name(all[i]), "server", 6);
        int by_name = p->n_servers > 0 && named >= (size_t)p->n_servers;
        int s = 0, w = 0;
        for (size_t i = 0; i < count; i++) {
            int is_server = by_name ? !strncmp(sg_host_get_name(all[i]), "server", 6)
                                    : i >= count - (size_t)p->n_servers;
            if (is_server && s < p->n_servers)
                p->servers[s++] = (sim_host_t)all[i];
            else if (!is_server && w < p->n_workers)
                p->workers[w++] = (sim_host_t)all[i];
        }
        free(all);
        if (s < p->n_servers || w < p->n_workers) {
            dt_err_input(err, "%s: not enough hosts for %d workers and %d servers",
                         sc->platform_file, p->n_workers, p->n_servers);
            sim_platform_free(p);
            return DT_ERR_INPUT;
        }
    } else {
        /* node-N by its number, from one list: SimGrid 3.32 finds a host by name walking
         * every zone (2048 of them for 16,384 hosts in racks) */
        sg_host_t *all = sg_host_list();
        size_t count = sg_host_count();
        for (size_t i = 0; i < count; i++) {
            const char *host = sg_host_get_name(all[i]);
            char *end;
            long k = strncmp(host, "node-", 5) ? -1 : strtol(host + 5, &end, 10);
            if (k < 0 || *end)
                continue;
            if (k < p->n_workers)
                p->workers[k] = (sim_host_t)all[i];
            else if (k < p->n_workers + p->n_servers)
                p->servers[k - p->n_workers] = (sim_host_t)all[i];
        }
        free(all);
        for (int i = p->built; i < p->n_workers; i++) /* a stand-in: its twin's host */
            p->workers[i] = p->workers[i % p->built];
    }
    for (int i = 0; i < p->n_workers; i++)
        DT_ASSERT(p->workers[i]);
    for (int i = 0; i < p->n_servers; i++)
        DT_ASSERT(p->servers[i]);

    /* Groups for hierarchical all-reduce: racks on a multi-rack platform, servers (NVLink
     * domains) on the rail platform, else blocks of group_size consecutive workers. */
    int hosts = p->n_workers + p->n_servers;
    if (sc->platform == SIM_PLATFORM_MULTI_RACK) {
        int racks = (int)sc->racks < hosts ? (int)sc->racks : hosts;
        for (int i = 0, r = 0; i < p->n_workers; i++) {
            while ((long)hosts * (r + 1) / racks <= i)
                r++;
            p->group[i] = r;
        }
    } else {
        long size = sc->platform == SIM_PLATFORM_RAIL ? sc->gpus_per_server : sc->group_size;
        for (int i = 0; i < p->n_workers; i++)
            p->group[i] = (int)(i / size);
    }
    p->n_groups = 0;
    for (int i = 0; i < p->n_workers; i++)
        if (p->group[i] + 1 > p->n_groups)
            p->n_groups = p->group[i] + 1;
    p->ports = (int)(2 * platform_links(sc, hosts));
    if (scenario_network_model(sc) == SIM_NET_TCP)
        sim_net_tcp_install(&sc->tcp);
    return DT_OK;
}

const char *sim_platform_worker_host(const sim_platform_t *p, int i, char *buf, size_t n)
{
    if (i >= p->built) { /* not built: the name xml_cluster gives it */
        snprintf(buf, n, "node-%d", i);
        return buf;
    }
    return sim_host_name(p->workers[i]);
}

void sim_platform_free(sim_platform_t *p)
{
    free(p->workers);
    free(p->servers);
    free(p->group);
    memset(p, 0, sizeof *p);
}

void sim_platform_print(const sim_platform_t *p, const char *worker_role, FILE *out)
{
    fprintf(out, "# hosts: %zu\n", sg_host_count());
    for (int i = 0; i < p->n_workers; i++)
        fprintf(out, "host %s %s-%d\n", sim_host_name(p->workers[i]), worker_role, i);
    for (int i = 0; i < p->n_servers; i++)
        fprintf(out, "host %s server-%d\n", sim_host_name(p->servers[i]), i);
    sg_link_t *links = sg_link_list();
    size_t n = sg_link_count();
    fprintf(out, "# links: %zu (name, bandwidth, latency)\n", n);
    for (size_t i = 0; i < n; i++) {
        char bw[32];
        scenario_format_bandwidth(sg_link_get_bandwidth(links[i]), bw, sizeof bw);
        fprintf(out, "link %s %s %.9gs\n", sg_link_get_name(links[i]), bw,
                sg_link_get_latency(links[i]));
    }
    free(links);
}
