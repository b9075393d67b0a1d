/* Platforms: SimGrid XML generated for N hosts from the scenario (star, fat-tree,
 * multi-rack, edge, torus, dragonfly, rail), or a user's XML file; network model settings;
 * host lists for the strategies. The C API cannot create hosts or links, so generated
 * platforms are written as XML into a temporary file, loaded, and removed. */
#ifndef DTSIM_PLATFORM_H
#define DTSIM_PLATFORM_H

#include <stdio.h>

#include "common.h"
#include "scenario.h"
#include "transport.h"

/* With faults, generated platforms add this host, without links, for the fault injector
 * (sim/fault.c), so that no crash can reach it. */
#define SIM_PLATFORM_CONTROL_HOST "dtsim-faults"

typedef struct sim_platform {
    int n_workers;       /* hosts that train (fedavg: client hosts) */
    int n_servers;       /* parameter-server shards / the fedavg server */
    sim_host_t *workers; /* (n_workers) */
    sim_host_t *servers; /* (n_servers) */
    int *group;          /* (n_workers) rack or group of each worker, for hierarchical */
    int n_groups;
    int energy; /* hosts carry wattage_per_state: sim_host_energy reads them */
    int ports;  /* network ports: two per host link and per switch-to-switch link */
    int built;  /* workers whose hosts were built, the first ones
                 * (sim_platform_load_live); worker i >= built has worker (i mod
                 * built)'s host: n_workers where every host was */
} sim_platform_t;

/* The device's power figures, W; DT_ERR_INPUT when it has none (custom, or a file that
 * gives none). */
dt_status sim_platform_device_power(const scenario_t *sc, double *idle, double *max);

/* Hosts a scenario needs: workers, and servers for the strategies that have them; a file of
 * jobs (jobs.h), its cluster.workers (the hosts its jobs share). */
void sim_platform_counts(const scenario_t *sc, int *workers, int *servers);

/* The torus's dimensions (0 after the last) and the dragonfly's groups, chassis, routers
 * and hosts per router: the scenario's, or sized to hold hosts; returns the host count. */
long sim_platform_torus_shape(const scenario_t *sc, int hosts, long dims[4]);
long sim_platform_dragonfly_shape(const scenario_t *sc, int hosts, long dims[4]);

/* The rail platform writes out each of its H (H - 1) / 2 routes: 1024 GPUs are 100 MB of
 * XML that SimGrid reads in 2.6 s, and the file grows as H squared. */
#define SIM_RAIL_MAX_HOSTS 1024

/* A platform file declares at most this many hosts (its <host> elements, its clusters'
 * radicals and topologies), counted before SimGrid allocates them: the most workers a
 * scenario takes (100,000) with room for servers. */
#define SIM_PLATFORM_FILE_MAX_HOSTS 131072

/* DT_ERR_INPUT naming cluster.torus / cluster.dragonfly (or cluster.workers) where the
 * shape given holds fewer hosts than the scenario needs, or cluster.workers where the rail
 * platform would hold more than SIM_RAIL_MAX_HOSTS. */
dt_status sim_platform_shape_check(const scenario_t *sc, dt_err_t *err);

/* A generated platform resolved from its scenario: every host, link and figure the XML
 * holds, so that writing it asks the scenario nothing (its strategy's hosts and regions,
 * its faults, its clients' device traces are read here once). */
typedef struct sim_platform_client_link {
    double up, down, latency; /* the client's access links */
    const char *access;       /* its class (fibre, cable, 4g) or "client" (its own links) */
} sim_platform_client_link_t;
typedef struct sim_platform_plan {
    sim_platform_kind_t kind;
    int workers, servers;      /* node-0 .. (or client-*, server-* on the edge platform) */
    double speed;              /* FLOP/s of a host */
    char power[128];           /* each host's wattage_per_state property */
    int control;               /* a host for the fault injector (the scenario has faults) */
    double bandwidth, latency; /* a host's link */
    double uplink_bandwidth, uplink_latency; /* racks' uplinks, the edge's dc and regions */
    int racks;                               /* multi-rack: racks, at most one a host */
    int built_racks;                         /* multi-rack: the first racks written (racks: all) */
    sim_platform_client_link_t *client;      /* edge: (workers) */
    int regions;                             /* edge: regional aggregators (hierfl) */
    long dims[4], topo_hosts;         /* torus, dragonfly: the shape and the hosts it holds */
    long gpus_per_server, rail_hosts; /* rail: GPUs a server, every GPU host */
    double nvlink_bandwidth, nvlink_latency; /* rail */
} sim_platform_plan_t;

/* Resolves sc's generated platform (not SIM_PLATFORM_FILE) into p; DT_ERR_INPUT where a
 * client device trace no longer reads (it was checked with the scenario) or a torus or
 * dragonfly shape is too small for the hosts. sim_platform_plan_free frees it. */
dt_status sim_platform_plan(sim_platform_plan_t *p, const scenario_t *sc, dt_err_t *err);
void sim_platform_plan_free(sim_platform_plan_t *p);
/* Writes a plan's platform XML. */
void sim_platform_write_xml(const sim_platform_plan_t *p, FILE *out);

/* Applies the network model settings, loads the platform (generated or file) and finds the
 * hosts. Must run after simgrid_init and before actors are created. For a file, hosts are
 * taken in natural name order: servers are the hosts named server-* when there are enough,
 * else the last hosts; workers are the first of the others; too few hosts is
 * DT_ERR_INPUT. cluster.bandwidth and
 * cluster.latency, when the scenario gives them, are set on every link of a file platform
 * (left at their defaults, the file's own values stand). */
dt_status sim_platform_load(sim_platform_t *p, const scenario_t *sc, dt_err_t *err);
/* sim_platform_load where only the first `live` workers run actors (the others stand in:
 * their work is those workers', strategy_def.h's live_workers): a multi-rack platform
 * without servers or faults, whose racks up to the live workers' last hold only them, is
 * built only that far, and worker i >= live gets worker (i mod live)'s host (p->built =
 * live; SimGrid 3.32 checks each host and link name it creates against every zone's, so
 * 16,384 hosts in 2048 racks take about 19 s to load, 16 racks a fraction of one). The
 * routes between the racks built, and so every simulated time, are the whole platform's.
 * Elsewhere every host (p->built = n_workers). */
dt_status sim_platform_load_live(sim_platform_t *p, const scenario_t *sc, int live, dt_err_t *err);
/* The name of worker i's host as the whole platform names it (a host not built: the name
 * it would have), into buf (n). */
const char *sim_platform_worker_host(const sim_platform_t *p, int i, char *buf, size_t n);
/* For a platform file: checks it as SimGrid will read it, in a child process, so that what
 * SimGrid refuses (and ends the process on) is one line naming cluster.platform, the file
 * and its line (DT_ERR_INPUT); also more than SIM_PLATFORM_FILE_MAX_HOSTS hosts (counted
 * before SimGrid reads it), host speeds and link bandwidths and latencies beyond what
 * SimGrid's solver computes with (scenario_simulable), fewer hosts than the scenario needs,
 * and hosts the run uses with no route between them. For generated platforms only
 * sim_platform_shape_check. Call before simgrid_init. */
dt_status sim_platform_check(const scenario_t *sc, dt_err_t *err);
/* The seconds of one step of a ring over the workers first..last when each sends `bytes` to
 * its neighbour while receiving as much (every flow alike, nothing else on the network),
 * under the run's network model: each host's link carries its own flow and the
 * acknowledgements of the one it receives (cross traffic), the cluster's backbone none. A
 * closed form of what SimGrid computes for those messages, for hosts of one cluster of the
 * generated star or multi-rack platform under CM02 or LV08; negative elsewhere (other
 * platforms and models, link faults), where only messages say how long it takes. */
double sim_platform_ring_step_seconds(const scenario_t *sc, int first, int last, double bytes);
/* The server (NVLink domain) of host: its rack on the multi-rack platform (a rack per
 * server), host / gpus_per_server on the rail platform, the host itself on a star; *size
 * the hosts it holds and *nic the bytes/s the host's own way out of it carries (multi-rack:
 * its link or its share of the uplink, whichever is less; rail and star: its link). -1 on
 * other platforms. */
int sim_platform_server_of(const scenario_t *sc, int host, int *size, double *nic);
/* The network model's TCP window (network/TCP-gamma, bytes): a flow's rate is at most
 * gamma / (2 x its route's latency). */
double sim_platform_tcp_gamma(void);
/* For a strategy that simulates worker i of each `stride` consecutive workers for all
 * of them, their flows one flow of stride times the bytes: that worker's own links (up and
 * down) stride times as fast and the TCP window stride times as wide. Under CM02 (no
 * bandwidth in a flow's weight) every rate of such a run is then stride times the rate of
 * each of the identical flows it stands for, wherever the shared links (uplinks, the
 * backbones) carry only such flows. Before any communication. */
void sim_platform_widen(const sim_platform_t *p, int stride);
/* Frees p's host and group lists and zeroes p (p itself is the caller's). */
void sim_platform_free(sim_platform_t *p);

/* Writes the hosts (with the node on each: worker_role-i, server-i) and every link with its
 * bandwidth and latency, as `dtsim platform --links` prints them. */
void sim_platform_print(const sim_platform_t *p, const char *worker_role, FILE *out);

#endif
