/* Federated clients' devices (see client_devices.h). */
#include "client_devices.h"

#include <string.h>

/* The per-client streams, numbered as fedavg's client draws were (the runs stay the
 * same). */
enum { CLIENT_STREAM = 104 };

void sim_client_rng(uint64_t seed, long c, int what, trainer_rng_t *r)
{
    trainer_rng_seed(r, seed ^ ((uint64_t)(c + 1) << 24) ^ (uint64_t)what, CLIENT_STREAM);
}

static double client_dist(const sim_client_devices_t *d, const sim_dist_t *dist, long c, int what)
{
    trainer_rng_t r;
    sim_client_rng(d->seed, c, what, &r);
    return sim_dist_draw(dist, &r);
}

unsigned sim_client_links_given(const scenario_t *sc)
{
    unsigned given = sc->device_trace_has & (SIM_DEVICE_UP | SIM_DEVICE_DOWN | SIM_DEVICE_LATENCY);
    given |= strcmp(sc->client_up, "platform") ? SIM_DEVICE_UP : 0;
    given |= strcmp(sc->client_down, "platform") ? SIM_DEVICE_DOWN : 0;
    given |= strcmp(sc->client_latency, "platform") ? SIM_DEVICE_LATENCY : 0;
    return given;
}

dt_status sim_client_devices_open(sim_client_devices_t *d, const scenario_t *sc, double step_flops,
                                  dt_err_t *err)
{
    memset(d, 0, sizeof *d);
    d->seed = sc->seed;
    d->device_flops = sc->device_flops;
    d->step_flops = step_flops;
    /* the keys were checked when the scenario was read */
    DT_ASSERT(sim_client_classes_parse(sc->client_speed, &d->classes, err) == DT_OK);
    const struct {
        const char *text;
        sim_dist_unit_t unit;
        sim_dist_t *dist;
        unsigned bit;
    } links[] = {
        {sc->client_up, SIM_DIST_UNIT_BANDWIDTH, &d->up, SIM_DEVICE_UP},
        {sc->client_down, SIM_DIST_UNIT_BANDWIDTH, &d->down, SIM_DEVICE_DOWN},
        {sc->client_latency, SIM_DIST_UNIT_TIME, &d->latency, SIM_DEVICE_LATENCY},
    };
    for (size_t i = 0; i < sizeof links / sizeof *links; i++)
        if (strcmp(links[i].text, "platform")) {
            DT_ASSERT(sim_dist_parse(links[i].text, links[i].unit, links[i].dist, err) == DT_OK);
            d->dists |= links[i].bit;
        }
    if (strcmp(sc->device_trace, "none"))
        return sim_device_trace_load(sc->device_trace, &d->trace, err);
    return DT_OK;
}

void sim_client_devices_close(sim_client_devices_t *d)
{
    sim_device_trace_free(&d->trace);
    memset(d, 0, sizeof *d);
}

double sim_client_speed(const sim_client_devices_t *d, long c)
{
    if (d->trace.n && (d->trace.has & SIM_DEVICE_SPEED))
        return sim_device_trace_for(&d->trace, c)->speed;
    if (d->trace.n && (d->trace.has & SIM_DEVICE_MS_PER_SAMPLE))
        /* FedScale's time is one sample's inference; a training sample is about three */
        return sim_device_fedscale_speed(sim_device_trace_for(&d->trace, c)->ms_per_sample,
                                         d->step_flops / 3);
    if (d->classes.is_dist)
        return client_dist(d, &d->classes.dist, c, SIM_CLIENT_DRAW_SPEED);
    if (d->classes.n) {
        trainer_rng_t r;
        sim_client_rng(d->seed, c, SIM_CLIENT_DRAW_CLASS, &r);
        double u = trainer_rng_uniform(&r), acc = 0;
        for (int k = 0; k < d->classes.n; k++) {
            acc += d->classes.share[k];
            if (u < acc || k == d->classes.n - 1)
                return d->classes.speed[k];
        }
    }
    return d->device_flops;
}

unsigned sim_client_link(const sim_client_devices_t *d, long c, double *up, double *down,
                         double *latency)
{
    unsigned given = 0;
    const sim_device_row_t *row = d->trace.n ? sim_device_trace_for(&d->trace, c) : NULL;
    *up = *down = *latency = 0;
    if (row && (d->trace.has & SIM_DEVICE_UP))
        *up = row->up, given |= SIM_DEVICE_UP;
    else if (d->dists & SIM_DEVICE_UP)
        *up = client_dist(d, &d->up, c, SIM_CLIENT_DRAW_UP), given |= SIM_DEVICE_UP;
    if (row && (d->trace.has & SIM_DEVICE_DOWN))
        *down = row->down, given |= SIM_DEVICE_DOWN;
    else if (d->dists & SIM_DEVICE_DOWN)
        *down = client_dist(d, &d->down, c, SIM_CLIENT_DRAW_DOWN), given |= SIM_DEVICE_DOWN;
    if (row && (d->trace.has & SIM_DEVICE_LATENCY))
        *latency = row->latency, given |= SIM_DEVICE_LATENCY;
    else if (d->dists & SIM_DEVICE_LATENCY)
        *latency = client_dist(d, &d->latency, c, SIM_CLIENT_DRAW_LATENCY),
        given |= SIM_DEVICE_LATENCY;
    return given;
}
