/* Output: the resolved scenario as INI (scenario_write; scenario_load reads it back to the
 * same struct), every key's value (scenario_foreach_key) and the key reference in Markdown
 * (scenario_write_keys_markdown), all from the key table. */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "keys_impl.h"

/* A [sweep] value as a list item: quoted when it holds a comma or starts or ends blank. */
static void sweep_write_value(FILE *out, const char *v)
{
    size_t len = strlen(v);
    int quote = strchr(v, ',') || isspace((unsigned char)v[0]) ||
                (len && isspace((unsigned char)v[len - 1]));
    fprintf(out, quote ? "\"%s\"" : "%s", v);
}

/* Whether a key name alone names key k (no other section has a key of that name). */
static int name_alone(int k)
{
    for (int i = 0; i < scn_key_count; i++)
        if (i != k && !strcmp(scn_key_table[i].key, scn_key_table[k].key))
            return 0;
    return 1;
}

/* The [sweep] line of keys j..end (one group), without its newline. */
static void sweep_write_line(const scenario_t *sc, int j, int end, int compact, FILE *out)
{
    const char *sep = compact ? "," : ", ";
    for (int g = j; g < end; g++) {
        int k = sc->sweep.keys[g].key;
        if (compact && name_alone(k))
            fprintf(out, "%s%s", g > j ? sep : "", scn_key_table[k].key);
        else
            fprintf(out, "%s%s.%s", g > j ? sep : "", scn_key_table[k].section,
                    scn_key_table[k].key);
    }
    fputs(compact ? "=" : " = ", out);
    const scenario_sweep_key_t *sk = &sc->sweep.keys[j];
    for (int v = 0; v < sk->n_values; v++) {
        fputs(v ? sep : "", out);
        if (end - j > 1)
            fputc('(', out);
        for (int g = j; g < end; g++) {
            fputs(g > j ? sep : "", out);
            sweep_write_value(out, scn_sweep_value(sc, &sc->sweep.keys[g], v));
        }
        if (end - j > 1)
            fputc(')', out);
    }
}

/* "key = value", or where that is longer than a line the reader takes (only jobs.files,
 * whose repeated lines append: file.c), the value's comma-separated names over several
 * "key = ..." lines. */
static void write_key_line(FILE *out, const char *key, const char *value)
{
    size_t room = SCENARIO_LINE_MAX - strlen(key) - 3;
    while (strlen(value) > room) {
        /* the last ", " that leaves a line within room (a name longer than a line cannot
         * come from a file: written whole) */
        size_t cut = 0;
        for (size_t i = 1; i + 1 < room && value[i]; i++)
            if (value[i] == ',' && value[i + 1] == ' ')
                cut = i;
        if (!cut)
            break;
        fprintf(out, "%s = %.*s\n", key, (int)cut, value);
        value += cut + 2;
    }
    fprintf(out, "%s = %s\n", key, value);
}

/* Whether cluster.workers was left to a strategy that lays out its own hosts (a pipeline's
 * stages x replicas, tensor's group): written as the default it would read back as given,
 * and a layout of another size would refuse it. */
static int workers_laid_out(const scenario_t *sc)
{
    if (scenario_key_given(sc, "cluster.workers"))
        return 0;
    if (sc->sweep.n_keys && scn_sweep_find(sc, scn_key_index("strategy", "kind")) >= 0)
        return 1;
    if (!sc->strategy || !sc->strategy->hosts)
        return 0;
    /* the layout's count does not follow cluster.workers */
    scenario_t *probe = dt_malloc(sizeof *probe);
    memcpy(probe, sc, sizeof *probe);
    int a, b, servers;
    sc->strategy->hosts(probe, &a, &servers);
    probe->workers = sc->workers + 1;
    sc->strategy->hosts(probe, &b, &servers);
    free(probe);
    return a == b;
}

void scenario_write(const scenario_t *sc, FILE *out)
{
    const char *section = NULL;
    char value[SCENARIO_JOBS_FILES + 64];
    int sweep = sc->sweep.n_keys && !sc->sweep.is_run;
    int kd = scn_key_index("cluster", "device"), kw = scn_key_index("cluster", "workers");
    fprintf(out, "%s: every key with its value, defaults included\n", SCENARIO_RESOLVED_MARK);
    for (int k = 0; k < scn_key_count; k++) {
        if (!section || strcmp(section, scn_key_table[k].section)) {
            section = scn_key_table[k].section;
            fprintf(out, "\n[%s]\n", section);
        }
        /* a swept key is not written here: its values are in [sweep]; nor the other of
         * the device pair, which each value sets (device stays when it is custom) */
        int j = sweep ? scn_sweep_find(sc, k) : -1, partner = scn_device_partner(k);
        if (j < 0 && sweep && partner >= 0 && scn_sweep_find(sc, partner) >= 0 &&
            !(k == kd && !strcmp(sc->device, "custom")))
            j = scn_sweep_find(sc, partner);
        if (j >= 0) {
            const key_desc_t *d = &scn_key_table[sc->sweep.keys[j].key];
            fprintf(out, "; %s: from [sweep] %s.%s\n", scn_key_table[k].key, d->section, d->key);
            continue;
        }
        if (k == kw && workers_laid_out(sc)) {
            fprintf(out, "; workers: not given, the strategy's layout counts them\n");
            continue;
        }
        scn_key_format(sc, &scn_key_table[k], value, sizeof value);
        write_key_line(out, scn_key_table[k].key, value);
    }
    if (!sweep)
        return;
    fprintf(out, "\n[sweep]\n");
    for (int j = 0; j < sc->sweep.n_keys;) {
        int end = j + 1;
        while (end < sc->sweep.n_keys && sc->sweep.keys[end].group == sc->sweep.keys[j].group)
            end++;
        /* section.key names and spaces after commas; a line the reader could not take
         * (inih's line limit) is written again compact: the names alone where one section
         * has them, no spaces. A line a user could write fits written compact. */
        char *line = NULL;
        size_t len = 0;
        for (int compact = 0; compact < 2; compact++) {
            FILE *f = open_memstream(&line, &len);
            DT_CHECK(f, "open_memstream failed");
            sweep_write_line(sc, j, end, compact, f);
            fclose(f);
            if (len <= SCENARIO_LINE_MAX)
                break;
            if (!compact)
                free(line);
        }
        fprintf(out, "%s\n", line);
        free(line);
        j = end;
    }
}

void scenario_foreach_key(const scenario_t *sc,
                          void (*fn)(void *ctx, const char *key, const char *text, double number),
                          void *ctx)
{
    char value[SCENARIO_JOBS_FILES + 64], name[96];
    for (int k = 0; k < scn_key_count; k++) {
        const key_desc_t *d = &scn_key_table[k];
        const void *p = scn_field_cptr(sc, d);
        double number = NAN;
        switch (d->type) {
        case KEY_INT:
            number = d->store == ST_INT    ? *(const int *)p
                     : d->store == ST_LONG ? (double)*(const long *)p
                                           : (double)*(const uint64_t *)p;
            break;
        case KEY_REAL:
            number = d->store == ST_FLOAT ? *(const float *)p : *(const double *)p;
            break;
        case KEY_BOOL:
            number = *(const int *)p;
            break;
        case KEY_BANDWIDTH:
        case KEY_TIME:
        case KEY_FLOPS:
            number = *(const double *)p;
            break;
        default:
            break;
        }
        scn_key_format(sc, d, value, sizeof value);
        snprintf(name, sizeof name, "%s.%s", d->section, d->key);
        fn(ctx, name, value, number);
    }
}

void scenario_write_keys_markdown(FILE *out)
{
    const char *section = NULL;
    char buf[512];
    for (int k = 0; k < scn_key_count; k++) {
        const key_desc_t *d = &scn_key_table[k];
        int strategy = !strcmp(d->section, "strategy"); /* a column of who reads it */
        if (!section || strcmp(section, d->section)) {
            section = d->section;
            fprintf(out,
                    "%s### [%s]\n\n| key |%s default | accepted values | meaning |\n"
                    "|---|%s---|---|---|\n",
                    k ? "\n" : "", section, strategy ? " read by |" : "", strategy ? "---|" : "");
        }
        const char *accepted = d->accepted;
        switch (d->type) {
        case KEY_INT:
            scn_range_text(d, 1, buf, sizeof buf);
            accepted = buf;
            break;
        case KEY_REAL:
            scn_range_text(d, 0, buf, sizeof buf);
            accepted = buf;
            break;
        case KEY_BOOL:
            accepted = "yes, no, true, false, on, off, 1, 0";
            break;
        case KEY_ENUM: {
            scn_names_text(d->names, buf, sizeof buf);
            if (d->flags & NOCASE)
                strcat(buf, " (any case)");
            accepted = buf;
            break;
        }
        case KEY_BANDWIDTH:
            accepted = "bandwidth > 0 with a unit";
            break;
        case KEY_TIME:
            accepted = "time >= 0 with a unit (0 needs none)";
            break;
        case KEY_FLOPS:
            accepted = "speed > 0 with a unit";
            break;
        case KEY_STRING:
            break;
        case KEY_CUSTOM:
            if (!accepted) { /* strategy.kind: the registry's names */
                scn_kind_names(buf, sizeof buf);
                accepted = buf;
            }
            break;
        }
        char def[80];
        if (d->defdoc)
            snprintf(def, sizeof def, "%s", d->defdoc);
        else
            snprintf(def, sizeof def, "`%s`", d->def);
        char readers[512] = "";
        if (strategy && strcmp(d->key, "kind"))
            scenario_key_readers(d->key, " and ", readers, sizeof readers);
        fprintf(out, "| `%s` |%s%s%s %s | %s | %s |\n", d->key, strategy ? " " : "",
                strategy ? (readers[0] ? readers : "every strategy") : "", strategy ? " |" : "",
                def, accepted, d->doc);
    }

    fprintf(out, "\n### Units\n\nA unit is required (a time of 0 may omit it); spaces between the "
                 "number and the unit are allowed; units are case-sensitive.\n\n"
                 "| quantity | units | stored as |\n|---|---|---|\n");
    scn_unit_list(scn_bandwidth_units, buf, sizeof buf);
    fprintf(out,
            "| bandwidth | %s (bits/s and bytes/s, SI: k = 1000; also with a slash: 10Gb/s "
            "is 10Gbps, 1GB/s is 1GBps) | bytes per second (10Gbps = 1.25e9) |\n",
            buf);
    scn_unit_list(scn_time_units, buf, sizeof buf);
    fprintf(out, "| time | %s | seconds |\n", buf);
    scn_unit_list(scn_flops_units, buf, sizeof buf);
    fprintf(out, "| speed | %s (FLOP/s, SI, as in SimGrid) | FLOP/s |\n", buf);

    fprintf(
        out,
        "\n### Device catalogue\n\n`cluster.device` names one of these "
        "(`scenarios/devices/catalogue.ini`, compiled in; `dtsim devices NAME` shows "
        "one with the source of each value), a profile file or `custom`. Its peak at "
        "`model.precision` times its achieved fraction (`efficiency` for fp32, "
        "`tensor_efficiency` for the others, or `cluster.device_efficiency`) becomes "
        "`cluster.device_flops` (the last column: at fp32); `device_flops` given "
        "without `device` makes the device `custom`; both in one file must agree "
        "(`device = custom`, or the device's own speed); a `--set` of either one "
        "replaces the pair. With `sms`, a profile's GEMMs, attention and memory-bound layers are "
        "timed by their shapes instead (`cluster.compute_model`; sim/docs/capacity.md, "
        "\"Compute by operation and shape\"): `gemm_efficiency` of the peak for large "
        "GEMMs, `attention_efficiency` of the 16-bit peak for flash attention, "
        "`memory_efficiency` of the bandwidth for memory-bound layers. `nvlink_busbw` and "
        "`nvls_busbw` (GB/s, nccl-tests' bus bandwidth of an all-reduce inside the "
        "server, by ring and by NVLink SHARP) time tensor groups' collectives as NCCL "
        "runs them (`strategy.tensor_comm = nccl`); `nic_efficiency`, the fraction of a NIC's "
        "line rate NCCL's collectives carry between servers, those of the replicas "
        "(`strategy.dp_comm = nccl`); `fp8 block`, the fraction of the FP8 peak large "
        "GEMMs reach with block scaling (`model.fp8_scaling = block`). Peaks are dense "
        "(without 2:4 sparsity), in TFLOP/s; memory in GB (10^9 bytes), its bandwidth in "
        "GB/s, power in W; - where the "
        "device has no such figure.\n\n"
        "| device | what | fp32 | tf32 | bf16 | fp8 | memory | GB/s | idle W | max W | "
        "efficiency | tensor | sms | gemm | attention | memory eff. | NVLink busbw | "
        "NVLS busbw | NIC eff. | fp8 block | device_flops |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
        "---|\n");
    size_t n_profiles;
    const sim_device_profile_t *profiles = scenario_device_profiles(&n_profiles);
    for (size_t i = 0; i < n_profiles; i++) {
        const sim_device_profile_t *p = &profiles[i];
        fprintf(out, "| `%s` | %s |", p->name, p->title);
        for (int f = 0; f < SIM_DEV_FIELDS; f++) {
            scenario_device_cell(p, (sim_device_field_t)f, buf, sizeof buf);
            fprintf(out, " %s |", buf);
        }
        scn_format_unit(buf, sizeof buf, p->value[SIM_DEV_FP32] * p->value[SIM_DEV_EFFICIENCY],
                        scn_flops_units);
        fprintf(out, " %s |\n", buf);
    }
    /* the sources: [defaults]'s once, then each device's values by source */
    const sim_device_profile_t *def = scenario_device_defaults();
    fprintf(out, "\nSources (`dtsim devices NAME` shows them value by value):\n\n"
                 "| device | values | source |\n|---|---|---|\n");
    for (int f = 0; f < SIM_DEV_FIELDS; f++)
        if (def->source[f][0])
            fprintf(out, "| every device but where said | %s | %s |\n",
                    scenario_device_field_name(f), def->source[f]);
    for (size_t i = 0; i < n_profiles; i++) {
        const sim_device_profile_t *p = &profiles[i];
        int done[SIM_DEV_FIELDS] = {0};
        for (int f = 0; f < SIM_DEV_FIELDS; f++) {
            if (done[f] || isnan(p->value[f]) || !strcmp(p->source[f], def->source[f]))
                continue;
            fprintf(out, "| `%s` |", p->name); /* the values sharing this source */
            for (int g = f; g < SIM_DEV_FIELDS; g++)
                if (!isnan(p->value[g]) && !strcmp(p->source[g], p->source[f])) {
                    fprintf(out, "%s %s", g == f ? "" : ",", scenario_device_field_name(g));
                    done[g] = 1;
                }
            fprintf(out, " | %s |\n", p->source[f]);
        }
    }
}
