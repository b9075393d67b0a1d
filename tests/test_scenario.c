/* The scenario parser: every error class with its exact "PATH:LINE: section.key: ..."
 * message, unit conversions against hand-computed values, the documented defaults, the
 * device / device_flops rule, --set overrides, cross-key checks, and a write -> load round
 * trip that must give the same struct byte for byte. Scenario texts are written into a
 * temporary directory so that each test shows the lines its expected message points at. */
#define _XOPEN_SOURCE 700 /* mkdtemp, realpath, open_memstream */
#include <check.h>
#include <stdarg.h>
#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client_devices.h"
#include "fault_spec.h"
#include "model_profile.h"
#include "scenario.h"
#include "strategy.h"

#define FIXTURE(name) DTSIM_FIXTURES "/scenarios/" name

static char tmpdir[PATH_MAX];

/* Writes text into tmpdir/name; returns the path (one of a few rotating buffers). */
static const char *tmp_file(const char *name, const char *text)
{
    static char paths[4][PATH_MAX + 64];
    static int next;
    char *path = paths[next++ % 4];
    snprintf(path, sizeof paths[0], "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    return path;
}

/* Loads text (as tmpdir/t.ini) and checks the error message is exactly
 * "TMPDIR/t.ini" + expected_after_path. */
static void expect_file_error(const char *text, const char *expected_after_path)
{
    const char *path = tmp_file("t.ini", text);
    scenario_t sc;
    dt_err_t err = {""};
    ck_assert_int_eq(scenario_load(&sc, path, NULL, 0, &err), DT_ERR_INPUT);
    char want[PATH_MAX + 1024];
    snprintf(want, sizeof want, "%s%s", path, expected_after_path);
    ck_assert_str_eq(err.msg, want);
}

/* Like expect_file_error, for a message that starts with the expected text. */
static void expect_file_error_start(const char *text, const char *expected_after_path)
{
    const char *path = tmp_file("t.ini", text);
    scenario_t sc;
    dt_err_t err = {""};
    ck_assert_int_eq(scenario_load(&sc, path, NULL, 0, &err), DT_ERR_INPUT);
    char want[PATH_MAX + 1024];
    snprintf(want, sizeof want, "%s%s", path, expected_after_path);
    ck_assert_msg(!strncmp(err.msg, want, strlen(want)), "got: %s", err.msg);
}

/* scenario_write's text (to free). */
static char *write_to_string(const scenario_t *sc)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    scenario_write(sc, f);
    fclose(f);
    return text;
}

static void expect_set_error(const char *assignment, const char *expected)
{
    scenario_t sc, before;
    scenario_defaults(&sc);
    before = sc;
    dt_err_t err = {""};
    ck_assert_int_eq(scenario_set(&sc, assignment, &err), DT_ERR_INPUT);
    ck_assert_str_eq(err.msg, expected);
    ck_assert_int_eq(memcmp(&sc, &before, sizeof sc), 0); /* a failed --set changes nothing */
}

static void load_ok(scenario_t *sc, const char *path, const char *const *sets, int n)
{
    dt_err_t err = {""};
    dt_status st = scenario_load(sc, path, sets, n, &err);
    ck_assert_msg(st == DT_OK, "%s", err.msg);
}

/* ---- defaults and units ---------------------------------------------------------------- */

START_TEST(defaults_are_the_documented_values)
{
    scenario_t sc;
    scenario_defaults(&sc);
    ck_assert_str_eq(sc.name, "scenario");
    ck_assert_uint_eq(sc.seed, 1);
    ck_assert_int_eq(sc.steps, 200);
    ck_assert(sc.max_time == 0.0);
    ck_assert_int_eq(sc.eval_every, 50);
    ck_assert(sc.target_accuracy == 0.85);
    ck_assert_int_eq(sc.time_model, SIM_TIME_FLOPS);
    ck_assert_str_eq(sc.db, "results/dtsim.db");
    ck_assert_int_eq(sc.model.arch, TRAINER_ARCH_MLP);
    ck_assert_int_eq(sc.model.n_hidden, 2);
    ck_assert_int_eq(sc.model.hidden[0], 256);
    ck_assert_int_eq(sc.model.hidden[1], 128);
    ck_assert_int_eq(sc.model.conv[0], 16);
    ck_assert_int_eq(sc.model.conv[1], 32);
    ck_assert_int_eq(sc.model.kernel, 5);
    ck_assert_int_eq(sc.model.fc, 128);
    ck_assert_int_eq(sc.batch, 64);
    ck_assert(sc.sgd.lr == 0.05f);
    ck_assert(sc.sgd.momentum == 0.0f);
    ck_assert(sc.sgd.weight_decay == 0.0f);
    ck_assert_int_eq(sc.schedule, TRAINER_LR_CONSTANT);
    ck_assert_int_eq(sc.threads, 1);
    ck_assert_str_eq(sc.data_source, "fashion-mnist");
    ck_assert_int_eq(sc.train_samples, 0);
    ck_assert_int_eq(sc.test_samples, 0);
    ck_assert_int_eq(sc.synthetic_dim, 784);
    ck_assert_int_eq(sc.synthetic_classes, 10);
    ck_assert(sc.synthetic_noise == 1.0);
    ck_assert_int_eq(sc.partition.kind, TRAINER_PARTITION_IID);
    ck_assert_int_eq(sc.platform, SIM_PLATFORM_STAR);
    ck_assert_str_eq(sc.platform_file, "");
    ck_assert_int_eq(sc.workers, 8);
    ck_assert(sc.bandwidth == 1.25e9); /* 10 Gb/s */
    ck_assert(sc.latency == 5e-6);
    ck_assert(sc.uplink_bandwidth == 5e9); /* 40 Gb/s */
    ck_assert(sc.uplink_latency == 5e-6);
    ck_assert_int_eq(sc.racks, 2);
    ck_assert_int_eq(sc.network_model, SIM_NET_AUTO);
    ck_assert_int_eq(scenario_network_model(&sc), SIM_NET_LV08); /* datacenter links */
    ck_assert_int_eq(sc.crosstraffic, 1);
    ck_assert_str_eq(sc.device, "cpu");
    ck_assert(sc.device_flops == 90e9);
    ck_assert_str_eq(sc.strategy->name, "sync-ps");
    ck_assert_int_eq(scenario_own(&sc, "servers")->l, 1);
    ck_assert_int_eq(scenario_own(&sc, "max_lead")->l, 0);
    ck_assert_int_eq(sc.algorithm, SIM_ALLREDUCE_RING);
    ck_assert_int_eq(sc.group_size, 4);
    ck_assert_int_eq(scenario_own(&sc, "local_steps")->l, 8);
    ck_assert_int_eq(scenario_own(&sc, "clients")->l, 100);
    ck_assert(scenario_own(&sc, "fraction")->d == 0.1);
    ck_assert_int_eq(scenario_own(&sc, "local_epochs")->l, 1);
    ck_assert_int_eq(scenario_own(&sc, "rounds")->l, 20);
    ck_assert(scenario_own(&sc, "prox_mu")->d == 0.0);
    ck_assert(sc.fault_timeout == 1.0);
    ck_assert_str_eq(sc.crash, "none");
    ck_assert_str_eq(sc.link_down, "none");
    ck_assert_str_eq(sc.link_degrade, "none");
    ck_assert_str_eq(sc.straggler, "none");
    ck_assert_str_eq(sc.slowdown, "none");
    ck_assert(sc.mtbf == 0.0 && sc.mttr == 0.0);
    ck_assert_int_eq(sc.checkpoint_every, 0);
    ck_assert(sc.dropout == 0.0 && sc.deadline == 0.0 && sc.over_select == 1.0);
    ck_assert_str_eq(sc.availability, "always");
    ck_assert_str_eq(sc.client_speed, "same");
    ck_assert_int_eq(scenario_has_faults(&sc), 0); /* the defaults are a fault-free run */
    ck_assert_int_eq(scenario_validate(&sc, NULL), DT_OK);
    ck_assert_int_eq(scenario_key_given(&sc, "run.steps"), 0);
}
END_TEST

START_TEST(defaults_are_written_in_their_documented_form)
{
    /* scenario_write picks the shortest exact spelling: the defaults come back as typed. */
    scenario_t sc;
    scenario_defaults(&sc);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    scenario_write(&sc, f);
    fclose(f);
    static const char *const lines[] = {
        "\n[run]\nname = scenario\nseed = 1\nsteps = 200\nmax_time = 0s\n",
        "\nlr = 0.05\nmomentum = 0\n",
        "\nbandwidth = 10Gbps\nlatency = 5us\nuplink_bandwidth = 40Gbps\nuplink_latency = 5us\n",
        "\nnetwork_model = auto\ncrosstraffic = yes\ntcp_congestion = cubic\n"
        "tcp_initial_window = 10\ntcp_mss = 1448\ntcp_header = 66\ntcp_wmem_max = 4194304\n"
        "tcp_rmem_max = 6291456\ntcp_slow_start_after_idle = yes\ntcp_rto_min = 200ms\n"
        "tcp_handshake = 1\ndevice = cpu\ndevice_flops = 90Gf\n",
        "\nhidden = 256,128\nconv = 16,32\n",
        "\npartition = iid\n",
        "\nfraction = 0.1\n",
        "\n[faults]\ntimeout = 1s\ncrash = none\nlink_down = none\nlink_degrade = none\nlive_links "
        "= no\n"
        "live_hosts = no\n"
        "straggler = none\nslowdown = none\nmtbf = 0s\nmttr = 0s\ncheckpoint_every = 0\n"
        "dropout = 0\ndeadline = 0s\nover_select = 1\navailability = always\n"
        "client_speed = same\n",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        ck_assert_msg(strstr(text, lines[i]), "missing \"%s\" in:\n%s", lines[i], text);
    free(text);
}
END_TEST

START_TEST(units_convert_to_hand_values)
{
    double v;
    static const struct {
        const char *text;
        double want;
    } bw[] = {{"10Gbps", 1.25e9},
              {"1GBps", 1e9},
              {"100Mbps", 1.25e7},
              {"8bps", 1.0},
              {"1kbps", 125.0},
              {"1.5kBps", 1500.0},
              {"10 Gbps", 1.25e9},
              {"2Tbps", 2.5e11},
              {"3MBps", 3e6},
              {"1TBps", 1e12},
              /* with a slash, as documents write it */
              {"10Gb/s", 1.25e9},
              {"1GB/s", 1e9},
              {"100 Mb/s", 1.25e7},
              {"8b/s", 1.0}},
      tm[] = {{"5us", 5e-6}, {"2ms", 2e-3}, {"1.5s", 1.5}, {"3ns", 3e-9},
              {"2min", 120}, {"1h", 3600},  {"0", 0},      {"1e3 ms", 1.0}},
      fl[] = {{"19.5Tf", 1.95e13}, {"90Gf", 9e10},   {"2Pf", 2e15},
              {"1.5Mf", 1.5e6},    {"3kflops", 3e3}, {"7f", 7.0}};
    for (size_t i = 0; i < sizeof bw / sizeof bw[0]; i++) {
        ck_assert_int_eq(scenario_parse_bandwidth(bw[i].text, &v, NULL), DT_OK);
        ck_assert_msg(v == bw[i].want, "%s -> %.17g", bw[i].text, v);
    }
    for (size_t i = 0; i < sizeof tm / sizeof tm[0]; i++) {
        ck_assert_int_eq(scenario_parse_time(tm[i].text, &v, NULL), DT_OK);
        ck_assert_msg(v == tm[i].want, "%s -> %.17g", tm[i].text, v);
    }
    for (size_t i = 0; i < sizeof fl / sizeof fl[0]; i++) {
        ck_assert_int_eq(scenario_parse_flops(fl[i].text, &v, NULL), DT_OK);
        ck_assert_msg(v == fl[i].want, "%s -> %.17g", fl[i].text, v);
    }
}
END_TEST

START_TEST(bad_units_are_errors)
{
    double v;
    dt_err_t err;
    ck_assert_int_eq(scenario_parse_bandwidth("10", &v, &err), DT_ERR_INPUT);
    ck_assert_str_eq(err.msg, "missing unit in bandwidth \"10\" (expected one of bps, kbps, "
                              "Mbps, Gbps, Tbps, Bps, kBps, MBps, GBps, TBps)");
    ck_assert_int_eq(scenario_parse_bandwidth("10Gbit", &v, &err), DT_ERR_INPUT);
    ck_assert_str_eq(err.msg, "unknown unit \"Gbit\" in bandwidth \"10Gbit\" (expected one of "
                              "bps, kbps, Mbps, Gbps, Tbps, Bps, kBps, MBps, GBps, TBps)");
    ck_assert_int_eq(scenario_parse_bandwidth("10gbps", &v, &err), DT_ERR_INPUT); /* b vs B */
    ck_assert_int_eq(scenario_parse_bandwidth("10Gbit/s", &v, &err), DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "unknown unit \"Gbit/s\" in bandwidth"), "%s", err.msg);
    ck_assert_int_eq(scenario_parse_time("5u/s", &v, &err), DT_ERR_INPUT); /* bandwidths only */
    ck_assert_int_eq(scenario_parse_time("5", &v, &err), DT_ERR_INPUT);
    ck_assert_str_eq(err.msg, "missing unit in time \"5\" (expected one of ns, us, ms, s, min, h)");
    ck_assert_int_eq(scenario_parse_time("-5us", &v, &err), DT_ERR_INPUT);
    ck_assert_str_eq(err.msg, "negative time \"-5us\"");
    ck_assert_int_eq(scenario_parse_time("fast", &v, &err), DT_ERR_INPUT);
    ck_assert_str_eq(err.msg, "bad time \"fast\" (expected a number and a unit: ns, us, ms, s, "
                              "min, h)");
    ck_assert_int_eq(scenario_parse_flops("1e999Tf", &v, &err), DT_ERR_INPUT);
    ck_assert_str_eq(err.msg, "speed \"1e999Tf\" is not a finite number");
    ck_assert_int_eq(scenario_parse_flops("0x10Gf", &v, &err), DT_ERR_INPUT); /* no hex */
    ck_assert_int_eq(scenario_parse_flops("inf", &v, &err), DT_ERR_INPUT);
    ck_assert_int_eq(scenario_parse_time("5 us x", &v, &err), DT_ERR_INPUT);
}
END_TEST

/* ---- file errors, each with its line --------------------------------------------------- */

START_TEST(unknown_unit_names_line_and_key)
{
    expect_file_error("[cluster]\nworkers = 4\nbandwidth = 10Gbit\n",
                      ":3: cluster.bandwidth: unknown unit \"Gbit\" in bandwidth \"10Gbit\" "
                      "(expected one of bps, kbps, Mbps, Gbps, Tbps, Bps, kBps, MBps, GBps, "
                      "TBps)");
}
END_TEST

START_TEST(missing_unit_names_line_and_key)
{
    expect_file_error("[cluster]\n\n; a comment\nlatency = 5\n",
                      ":4: cluster.latency: missing unit in time \"5\" (expected one of ns, us, "
                      "ms, s, min, h)");
}
END_TEST

START_TEST(out_of_range_values)
{
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"[strategy]\nservers = 0\n",
         ":2: strategy.servers: 0 is out of range (expected an integer in [1, 1024])"},
        {"[model]\nthreads = 2000\n",
         ":2: model.threads: 2000 is out of range (expected an integer in [1, 1024])"},
        {"[run]\nseed = -1\n",
         ":2: run.seed: -1 is out of range (expected an integer in [0, 2147483647])"},
        {"[run]\nsteps = 2.5\n",
         ":2: run.steps: \"2.5\" is not an integer (expected an integer in [1, 1000000000])"},
        {"[model]\nmomentum = 1\n",
         ":2: model.momentum: 1 is out of range (expected a number in [0, 1))"},
        {"[model]\nlr = 0\n", ":2: model.lr: 0 is out of range (expected a number in (0, 100])"},
        {"[data]\nsynthetic_noise = 0\n",
         ":2: data.synthetic_noise: 0 is out of range (expected a number in (0, 100])"},
        {"[run]\ntarget_accuracy = 1.5\n",
         ":2: run.target_accuracy: 1.5 is out of range (expected a number in [0, 1])"},
        {"[run]\ntarget_accuracy = high\n",
         ":2: run.target_accuracy: \"high\" is not a number (expected a number in [0, 1])"},
        {"[cluster]\nbandwidth = 0Gbps\n",
         ":2: cluster.bandwidth: \"0Gbps\" is out of range (expected > 0)"},
        {"[cluster]\ncrosstraffic = maybe\n",
         ":2: cluster.crosstraffic: \"maybe\" is not a yes/no value (expected yes, no, true, "
         "false, on, off, 1 or 0)"},
        {"[model]\nkernel = 16\n",
         ":2: model.kernel: 16 is out of range (expected an integer in [1, 15])"},
        {"[model]\nconv = 16\n",
         ":2: model.conv: bad channel counts \"16\" (expected C1,C2: two integers in [1, 4096], "
         "e.g. 16,32)"},
        {"[model]\nhidden = 256,,128\n",
         ":2: model.hidden: bad hidden sizes \"256,,128\" (expected comma-separated integers in "
         "[1, 1048576], e.g. 256,128)"},
        {"[data]\npartition = dirichlet:0\n",
         ":2: data.partition: bad partition \"dirichlet:0\": ALPHA must be a finite number > 0 "
         "(expected iid, dirichlet:ALPHA, shards:K or by-source)"},
        {"[run]\nname =\n", ":2: run.name: empty value (expected text)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_file_error(cases[i].text, cases[i].want);
}
END_TEST

/* The registry's strategies joined as an error message lists them ("a, b, c"; with last:
 * "a, b last c"), those whose takes lacks every bit of lacking (0: all of them). The
 * expected messages are built from it, so that a new strategy changes no test. */
static const char *strategy_names(unsigned lacking, const char *last)
{
    static char buf[4][512];
    static int next;
    char *out = buf[next++ % 4];
    const sim_strategy_t *const *s = scenario_strategies();
    int total = 0, i = 0;
    for (int j = 0; s[j]; j++)
        total += !(s[j]->takes & lacking);
    out[0] = 0;
    for (int j = 0; s[j]; j++)
        if (!(s[j]->takes & lacking)) {
            strcat(out, i == 0 ? "" : last && i == total - 1 ? last : ", ");
            strcat(out, s[j]->name);
            i++;
        }
    return out;
}

/* expect_file_error with the expected text a printf format. */
static void expect_file_errorf(const char *text, const char *format, ...)
{
    char want[2048];
    va_list ap;
    va_start(ap, format);
    vsnprintf(want, sizeof want, format, ap);
    va_end(ap);
    expect_file_error(text, want);
}

/* The tcp_* keys belong to the tcp model: refused under another, auto resolved by the
 * links' latency (tcp from 1 ms, and on the edge platform). */
START_TEST(tcp_keys_need_the_tcp_model)
{
    expect_file_error("[cluster]\nnetwork_model = CM02\ntcp_mss = 1000\n",
                      ":3: cluster.tcp_mss: cluster.tcp_mss is read by network_model = tcp "
                      "only, and this run's model is CM02 (cluster.network_model at line 2)");
    expect_file_error("[cluster]\nnetwork_model = auto\nlatency = 0.5ms\n"
                      "tcp_congestion = bbr\n",
                      ":4: cluster.tcp_congestion: cluster.tcp_congestion is read by "
                      "network_model = tcp only, and this run's model is LV08 (auto) "
                      "(cluster.network_model at line 2)");
    scenario_t sc;
    dt_err_t err = {""};
    const char *path = tmp_file("t.ini", "[cluster]\nnetwork_model = auto\nlatency = 1ms\n"
                                         "tcp_congestion = bbr\n");
    ck_assert_msg(scenario_load(&sc, path, NULL, 0, &err) == DT_OK, "%s", err.msg);
    ck_assert_int_eq(scenario_network_model(&sc), SIM_NET_TCP);
    ck_assert_int_eq(sc.tcp.congestion, SIM_TCP_BBR);
    const char *sets[] = {"cluster.latency=5us"};
    ck_assert_int_eq(scenario_load(&sc, path, sets, 1, &err), DT_ERR_INPUT);
    const char *edge[] = {"cluster.latency=5us", "cluster.platform=edge", "strategy.kind=fedavg"};
    ck_assert_msg(scenario_load(&sc, path, edge, 3, &err) == DT_OK, "%s", err.msg);
    ck_assert_int_eq(scenario_network_model(&sc), SIM_NET_TCP);
    /* a written configuration holds every key at its default: loads under any model */
    path = tmp_file("t.ini", "[cluster]\nnetwork_model = SMPI\ntcp_mss = 1448\n");
    ck_assert_msg(scenario_load(&sc, path, NULL, 0, &err) == DT_OK, "%s", err.msg);
}
END_TEST

START_TEST(bad_enum_value)
{
    expect_file_errorf("[strategy]\nkind = ps\n",
                       ":2: strategy.kind: unknown value \"ps\" (expected one of %s)",
                       strategy_names(0, NULL));
    expect_file_error("[strategy]\nalgorithm = Ring\n",
                      ":2: strategy.algorithm: unknown value \"Ring\" (expected one of ring, "
                      "tree, halving-doubling, hierarchical, 2d); did you mean ring?");
    expect_file_error("[cluster]\nnetwork_model = LV09\n",
                      ":2: cluster.network_model: unknown value \"LV09\" (expected one of LV08, "
                      "CM02, SMPI, tcp, auto, in any case); did you mean LV08?");
    /* did you mean: the name but for '-' and '_', or one within 2 edits (1 for short ones) */
    expect_file_errorf(
        "[strategy]\nkind = all-reduce\n",
        ":2: strategy.kind: unknown value \"all-reduce\" (expected one of %s); did you "
        "mean allreduce?",
        strategy_names(0, NULL));
    expect_file_errorf(
        "[strategy]\nkind = Local_SGD\n",
        ":2: strategy.kind: unknown value \"Local_SGD\" (expected one of %s); did you "
        "mean local-sgd?",
        strategy_names(0, NULL));
    expect_file_errorf("[strategy]\nkind = fedvag\n",
                       ":2: strategy.kind: unknown value \"fedvag\" (expected one of %s); did you "
                       "mean fedavg?",
                       strategy_names(0, NULL));
    expect_file_error("[strategy]\nalgorithm = halvingdoubling\n",
                      ":2: strategy.algorithm: unknown value \"halvingdoubling\" (expected one "
                      "of ring, tree, halving-doubling, hierarchical, 2d); did you mean "
                      "halving-doubling?");
    expect_file_error(
        "[model]\narch = resnet\n",
        ":2: model.arch: unknown model \"resnet\" (expected logreg, mlp, cnn or gpt)");
    /* network models are the one case-insensitive enum */
    scenario_t sc;
    load_ok(&sc, tmp_file("t.ini", "[cluster]\nnetwork_model = smpi\n"), NULL, 0);
    ck_assert_int_eq(sc.network_model, SIM_NET_SMPI);
}
END_TEST

START_TEST(unknown_section)
{
    expect_file_error("[run]\nsteps = 3\n\n[modle]\nlr = 0.1\n",
                      ":4: [modle]: unknown section (expected run, model, data, cluster, "
                      "strategy, faults, jobs, sweep; did you mean [model]?)");
    /* inih says nothing about a section without keys; the parser still refuses it */
    expect_file_error("[run]\n[sweeps]\n",
                      ":2: [sweeps]: unknown section (expected run, model, data, cluster, "
                      "strategy, faults, jobs, sweep; did you mean [sweep]?)");
    expect_file_error("[run]\n[tests]\n",
                      ":2: [tests]: unknown section (expected run, model, data, cluster, "
                      "strategy, faults, jobs, sweep)");
    expect_file_error("[run] steps = 3\n", ":1: [run]: unexpected text after ']'");
}
END_TEST

START_TEST(unknown_key_with_suggestion)
{
    expect_file_error("[run]\nseed = 3\nsetps = 100\n",
                      ":3: run.setps: unknown key (did you mean steps?)");
    expect_file_error("[cluster]\nbandwith = 1Gbps\n",
                      ":2: cluster.bandwith: unknown key (did you mean bandwidth?)");
    expect_file_error("[model]\nworkers = 3\n",
                      ":2: model.workers: unknown key (workers is a [cluster] key)");
    expect_file_error("[run]\nfavourite_colour = blue\n", ":2: run.favourite_colour: unknown key");
    /* [faults] has keys now: its unknown ones are reported like any other section's */
    expect_file_error("[faults]\ncrash_at = 10s\n", ":2: faults.crash_at: unknown key");
    expect_file_error("[faults]\ntimeout = 2s\ncrsh = worker-1 at 1s\n",
                      ":3: faults.crsh: unknown key (did you mean crash?)");
    expect_file_error("[faults]\nworkers = 3\n",
                      ":2: faults.workers: unknown key (workers is a [cluster] key)");
}
END_TEST

START_TEST(duplicate_key_names_both_lines)
{
    expect_file_error("[run]\nsteps = 3\nseed = 2\n\n[run]\nsteps = 4\n",
                      ":6: run.steps: given twice (lines 2 and 6)");
}
END_TEST

START_TEST(syntax_errors_name_their_line)
{
    expect_file_error("[run]\nsteps = 3\nthis line has no equals sign\nseed = 2\n",
                      ":3: syntax error: \"this line has no equals sign\" (expected key = "
                      "value, [section] or a comment starting with ; or #)");
    expect_file_error("; header\n[run\nsteps = 3\n", ":2: missing ']' in section header \"[run\"");
    expect_file_error("[run]\n= 3\n", ":2: missing key name before '='");
    expect_file_error("steps = 3\n", ":1: steps: key outside any section (put it under [run], "
                                     "[model], [data], [cluster], [strategy] or [faults])");
    /* a syntax error before a bad key: the first one by line is reported */
    expect_file_error("[run]\noops\nsteps = -1\n",
                      ":2: syntax error: \"oops\" (expected key = value, [section] or a "
                      "comment starting with ; or #)");
}
END_TEST

START_TEST(long_line_is_an_error_not_two_lines)
{
    char text[600];
    int n = snprintf(text, sizeof text, "[run]\nname = ");
    memset(text + n, 'x', 300);
    strcpy(text + n + 300, "\nsteps = 3\n");
    expect_file_error(text, ":2: line longer than 198 characters");
}
END_TEST

START_TEST(missing_file)
{
    scenario_t sc;
    dt_err_t err;
    ck_assert_int_eq(scenario_load(&sc, "/nonexistent/dir/x.ini", NULL, 0, &err), DT_ERR_INPUT);
    ck_assert_str_eq(err.msg, "/nonexistent/dir/x.ini: cannot open: No such file or directory");
    ck_assert_int_eq(scenario_load(&sc, tmpdir, NULL, 0, &err), DT_ERR_INPUT);
    char want[2 * PATH_MAX + 64];
    snprintf(want, sizeof want, "%s: cannot read: Is a directory", tmpdir);
    ck_assert_str_eq(err.msg, want);
    /* a FIFO: refused before a read that would wait for a writer for good */
    char fifo[PATH_MAX + 16];
    snprintf(fifo, sizeof fifo, "%s/fifo.ini", tmpdir);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    ck_assert_int_eq(scenario_load(&sc, fifo, NULL, 0, &err), DT_ERR_INPUT);
    snprintf(want, sizeof want, "%s: not a regular file (a FIFO or a device would never end)",
             fifo);
    ck_assert_str_eq(err.msg, want);
    unlink(fifo);
}
END_TEST

/* ---- platform and data paths ----------------------------------------------------------- */

START_TEST(platform_so_is_refused)
{
    tmp_file("libplatform.so", "not really a library\n");
    expect_file_error("[cluster]\nplatform = libplatform.so\n",
                      ":2: cluster.platform: \"libplatform.so\" refused: a .so platform is "
                      "compiled code that SimGrid would load and run; give a SimGrid .xml file");
}
END_TEST

START_TEST(platform_xml_must_exist)
{
    char want[PATH_MAX + 200];
    snprintf(want, sizeof want,
             ":2: cluster.platform: cannot read \"nothere.xml\" (%s/nothere.xml): No such file or "
             "directory",
             tmpdir);
    expect_file_error("[cluster]\nplatform = nothere.xml\n", want);
    expect_file_error("[cluster]\nplatform = cluster.txt\n",
                      ":2: cluster.platform: unknown platform \"cluster.txt\" (expected star, "
                      "fat-tree, multi-rack, edge, torus, dragonfly, rail or a path to a "
                      "SimGrid .xml file)");
}
END_TEST

START_TEST(relative_paths_resolve_against_the_scenario_file)
{
    /* tmpdir/sub/p.xml named as "sub/p.xml" from tmpdir/t.ini, and as "p.xml" nowhere else */
    char sub[PATH_MAX + 8], xml[PATH_MAX + 16], real[PATH_MAX];
    snprintf(sub, sizeof sub, "%s/sub", tmpdir);
    ck_assert_int_eq(mkdir(sub, 0700), 0);
    snprintf(xml, sizeof xml, "%s/p.xml", sub);
    FILE *f = fopen(xml, "w");
    ck_assert_ptr_nonnull(f);
    fputs("<platform version=\"4.1\"/>\n", f);
    fclose(f);
    scenario_t sc;
    load_ok(&sc, tmp_file("t.ini", "[cluster]\nplatform = sub/p.xml\n[data]\nsource = sub\n"), NULL,
            0);
    ck_assert_int_eq(sc.platform, SIM_PLATFORM_FILE);
    ck_assert_ptr_nonnull(realpath(xml, real));
    ck_assert_str_eq(sc.platform_file, real);
    ck_assert_ptr_nonnull(realpath(sub, real));
    ck_assert_str_eq(sc.data_source, real);
    /* a data source that is neither a built-in name nor a directory */
    char want[PATH_MAX + 300];
    snprintf(want, sizeof want,
             ":2: data.source: cannot read \"fashion_mnist\" (%s/fashion_mnist): No such file or "
             "directory (expected fashion-mnist, synthetic, text or a directory of MNIST-format "
             "files)",
             tmpdir);
    expect_file_error("[data]\nsource = fashion_mnist\n", want);
    unlink(xml);
    rmdir(sub);
}
END_TEST

/* data.text: fortunes by default, a path resolved against the scenario file; text needs a
 * model that reads tokens, and by-source a text corpus. */
START_TEST(text_data_keys)
{
    scenario_t sc;
    load_ok(&sc, tmp_file("t.ini", "[run]\nname = x\n"), NULL, 0);
    ck_assert_str_eq(sc.data_text, "fortunes");
    char corpus[PATH_MAX + 16], real[PATH_MAX];
    snprintf(corpus, sizeof corpus, "%s/corpus", tmpdir);
    ck_assert_int_eq(mkdir(corpus, 0700), 0);
    load_ok(&sc,
            tmp_file("t.ini", "[data]\nsource = text\ntext = corpus\npartition = by-source\n"
                              "[model]\narch = profile:gpt2_xl\n"),
            NULL, 0);
    ck_assert_str_eq(sc.data_source, "text");
    ck_assert_ptr_nonnull(realpath(corpus, real));
    ck_assert_str_eq(sc.data_text, real);
    ck_assert_int_eq(sc.partition.kind, TRAINER_PARTITION_BY_SOURCE);
    const char *sets[] = {"data.text=fortunes-languages"};
    load_ok(&sc, tmp_file("t.ini", "[data]\ntext = corpus\n"), sets, 1);
    ck_assert_str_eq(sc.data_text, "fortunes-languages");
    rmdir(corpus);
    expect_file_error("[data]\nsource = text\n",
                      ":2: data.source: data.source = text is byte tokens, which model.arch = "
                      "mlp does not read (model.arch by default; expected a token model, "
                      "model.arch = gpt)");
    expect_file_error("[data]\npartition = by-source\n",
                      ":2: data.partition: by-source gives a client per source file of a text "
                      "corpus; data.source = fashion-mnist is not text and has none (data.source "
                      "by default; expected data.source = text, or iid, dirichlet:ALPHA or "
                      "shards:K)");
    expect_file_error_start("[data]\ntext = nowhere\n", ":2: data.text: cannot read \"nowhere\"");
}
END_TEST

/* ---- --set ------------------------------------------------------------------------------ */

START_TEST(set_overrides_the_file)
{
    static const char *const sets[] = {"run.steps=10", " cluster.bandwidth = 1 Gbps ",
                                       "strategy.kind=local-sgd", "model.hidden=32"};
    scenario_t sc;
    load_ok(&sc, FIXTURE("full.ini"), sets, 4);
    ck_assert_int_eq(sc.steps, 10);
    ck_assert(sc.bandwidth == 1.25e8);
    ck_assert_str_eq(sc.strategy->name, "local-sgd");
    ck_assert_int_eq(sc.model.n_hidden, 1);
    ck_assert_int_eq(sc.model.hidden[0], 32);
    ck_assert_int_eq(sc.model.hidden[1], 0);
    ck_assert_int_eq(sc.seed, 42); /* from the file */
    ck_assert_int_eq(scenario_key_given(&sc, "run.steps"), 1);
    ck_assert_int_eq(scenario_key_given(&sc, "run.seed"), 1);
    ck_assert_int_eq(scenario_key_given(&sc, "cluster.racks"), 1);
    ck_assert_int_eq(scenario_key_given(&sc, "strategy.rounds"), 1);
    scenario_t def;
    load_ok(&def, NULL, sets, 1);
    ck_assert_int_eq(def.steps, 10);
    ck_assert_int_eq(scenario_key_given(&def, "cluster.bandwidth"), 0);
}
END_TEST

START_TEST(set_errors)
{
    expect_set_error("run.stepz=10", "--set run.stepz: unknown key (did you mean steps?)");
    expect_set_error("run.steps=ten",
                     "--set run.steps: \"ten\" is not an integer (expected an integer in [1, "
                     "1000000000])");
    expect_set_error("run.steps", "--set run.steps: expected section.key=value (e.g. "
                                  "run.steps=100)");
    expect_set_error("steps=10", "--set steps=10: expected section.key=value (e.g. "
                                 "run.steps=100)");
    expect_set_error("runn.steps=1", "--set runn.steps: unknown section [runn] (expected run, "
                                     "model, data, cluster, strategy, faults, jobs, sweep; did you "
                                     "mean [run]?)");
    expect_set_error("cluster.latency=5", "--set cluster.latency: missing unit in time \"5\" "
                                          "(expected one of ns, us, ms, s, min, h)");
    expect_set_error("data.partition=shards:0",
                     "--set data.partition: bad partition \"shards:0\": K must be an integer "
                     ">= 1 (expected iid, dirichlet:ALPHA, shards:K or by-source)");
    expect_set_error("run.name=a ;b",
                     "--set run.name: \"a ;b\" contains \" ;\", which starts a comment in a "
                     "scenario file");
    expect_set_error("faults.crash=worker-1 at soon",
                     "--set faults.crash: crash item 1 \"worker-1 at soon\": bad time \"soon\" "
                     "(expected a number and a unit: ns, us, ms, s, min, h)");
    expect_set_error("sweep.cluster.workers=2",
                     "--set sweep.cluster.workers: [sweep] lists are written in the scenario "
                     "file, not given with --set");
    /* through scenario_load: the first bad --set is the error */
    static const char *const sets[] = {"run.steps=5", "cluster.workers=0"};
    scenario_t sc;
    dt_err_t err;
    ck_assert_int_eq(scenario_load(&sc, NULL, sets, 2, &err), DT_ERR_INPUT);
    ck_assert_str_eq(err.msg, "--set cluster.workers: 0 is out of range (expected an integer in "
                              "[1, 100000])");
}
END_TEST

/* ---- cross-key checks ------------------------------------------------------------------- */

START_TEST(cross_key_errors_name_the_line_at_fault)
{
    expect_file_error("[cluster]\nworkers = 2\n\n[strategy]\nservers = 4\n",
                      ":5: strategy.servers: 4 servers for 2 workers (expected servers <= "
                      "workers for sync-ps; cluster.workers at line 2)");
    expect_file_error("[strategy]\nkind = async-ps\nservers = 9\n",
                      ":3: strategy.servers: 9 servers for 8 workers (expected servers <= "
                      "workers for async-ps; cluster.workers by default)");
    expect_file_error("[strategy]\nkind = fedavg\nclients = 5\nfraction = 0.1\n",
                      ":4: strategy.fraction: 5 clients x fraction 0.1 samples no client per "
                      "round (expected clients x fraction >= 1; strategy.clients at line 3)");
    expect_file_error("[cluster]\nworkers = 6\n[strategy]\nkind = allreduce\n"
                      "algorithm = hierarchical\ngroup_size = 4\n",
                      ":6: strategy.group_size: group_size 4 does not divide 6 workers "
                      "(hierarchical all-reduce needs equal groups; cluster.workers at line 2)");
    expect_file_error("[data]\nsource = synthetic\ntrain_samples = 4\n",
                      ":3: data.train_samples: 4 samples for 8 workers (expected at least one "
                      "sample each)");
    /* fedavg samples among the clients holding data (SIM_TAKES_EMPTY_CLIENTS), fedbuff not */
    expect_file_error("[data]\ntrain_samples = 50\n[strategy]\nkind = fedbuff\n",
                      ":2: data.train_samples: 50 samples for 100 clients (expected at least "
                      "one sample each)");
    scenario_t sc;
    load_ok(&sc, tmp_file("t.ini", "[data]\ntrain_samples = 50\n[strategy]\nkind = fedavg\n"), NULL,
            0);
    ck_assert_int_eq(scenario_own(&sc, "clients")->l, 100);
    /* the key a --set changed is blamed when the other one has its default */
    dt_err_t err;
    static const char *const sets[] = {"strategy.servers=16"};
    ck_assert_int_eq(scenario_load(&sc, NULL, sets, 1, &err), DT_ERR_INPUT);
    ck_assert_str_eq(err.msg, "--set strategy.servers: 16 servers for 8 workers (expected "
                              "servers <= workers for sync-ps; cluster.workers by default)");
    /* single ignores workers; hierarchical groups that divide are fine */
    load_ok(&sc,
            tmp_file("t.ini", "[cluster]\nworkers = 3\n[strategy]\nkind = single\n"
                              "servers = 4\n"),
            NULL, 0);
    load_ok(&sc,
            tmp_file("t.ini", "[cluster]\nworkers = 12\n[strategy]\nkind = allreduce\n"
                              "algorithm = hierarchical\ngroup_size = 4\n"),
            NULL, 0);
    /* floor(100 x 0.29) is 29, not 28 */
    load_ok(&sc, tmp_file("t.ini", "[strategy]\nkind = fedavg\nfraction = 0.29\n"), NULL, 0);
    ck_assert_int_eq(scenario_fedavg_sampled(&sc), 29);
}
END_TEST

/* ---- model profiles (timing-only runs) --------------------------------------------------- */

/* Loads a scenario that must fail and checks that its message contains want. */
static void expect_load_error(const char *text, const char *want)
{
    scenario_t sc;
    dt_err_t err = {""};
    ck_assert_int_eq(scenario_load(&sc, tmp_file("t.ini", text), NULL, 0, &err), DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, want), "got \"%s\", expected it to contain \"%s\"", err.msg,
                  want);
}

/* Every built-in profile loads, adds up, and has the published parameter count; the
 * layers come in backward order (the classifier first). */
START_TEST(builtin_model_profiles)
{
    static const struct {
        const char *name, *first;
        size_t params;
        int pieces; /* cuts + 1: embeddings, blocks, head; stem, modules or blocks, fc */
    } want[] = {{"bert_large", "pooler", 335141888, 26}, {"gpt2_xl", "lm_head", 1557611200, 51},
                {"inception_v3", "fc", 23834568, 17},    {"resnet101", "fc", 44549160, 35},
                {"resnet50", "fc", 25557032, 18},        {"vgg16", "classifier.6", 138357544, 16}};
    size_t n = 0;
    while (sim_model_profile_builtin(n))
        n++;
    ck_assert_uint_eq(n, 6);
    for (size_t i = 0; i < n; i++) {
        sim_model_profile_t p;
        dt_err_t err = {""};
        ck_assert_str_eq(sim_model_profile_builtin(i), want[i].name);
        ck_assert_msg(sim_model_profile_load(&p, want[i].name, &err) == DT_OK, "%s", err.msg);
        ck_assert_uint_eq(p.params, want[i].params);
        ck_assert_str_eq(p.layers[0].name, want[i].first);
        size_t sum = 0;
        double flops = 0;
        for (int k = 0; k < p.n_layers; k++) {
            sum += p.layers[k].params;
            flops += p.layers[k].backward_flops;
        }
        ck_assert_uint_eq(sum, p.params);
        ck_assert(fabs(flops - p.backward_flops) <= 1e-9 * flops);
        /* backward costs about twice the forward pass in this convention */
        ck_assert(p.backward_flops > 1.9 * p.forward_flops &&
                  p.backward_flops <= 2.0 * p.forward_flops);
        ck_assert(p.source[0] && p.sample[0]);
        /* [forward]: the same layers, adding up to forward_flops, with outputs and cuts */
        ck_assert(p.has_forward_layers);
        double fwd = 0;
        int pieces = 1;
        for (int k = 0; k < p.n_layers; k++) {
            fwd += p.layers[k].forward_flops;
            ck_assert_msg(p.layers[k].outputs >= 1, "%s", p.layers[k].name);
            pieces += p.layers[k].cut > 0;
        }
        ck_assert(fabs(fwd - p.forward_flops) <= 1e-9 * fwd);
        ck_assert_msg(p.layers[0].cut == 0, "%s: a cut after the last layer", want[i].name);
        ck_assert_msg(pieces == want[i].pieces, "%s: %d pieces, want %d", want[i].name, pieces,
                      want[i].pieces);
        sim_model_profile_free(&p);
    }
    /* what crosses a cut: GPT-2 XL's residual stream, 1024 tokens x 1600; ResNet-50 after
     * the stem, 64 x 56 x 56; VGG-16's last pooling, 512 x 7 x 7 */
    static const struct {
        const char *profile, *layer;
        double cut;
    } cuts[] = {{"gpt2_xl", "h.0.mlp.c_proj", 1024 * 1600},
                {"resnet50", "conv1.bn", 64 * 56 * 56},
                {"vgg16", "features.28", 512 * 7 * 7},
                {"bert_large", "encoder.layer.23.output.LayerNorm", 128 * 1024}};
    for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
        sim_model_profile_t q;
        ck_assert(sim_model_profile_load(&q, cuts[c].profile, NULL) == DT_OK);
        int k = 0;
        while (k < q.n_layers && strcmp(q.layers[k].name, cuts[c].layer))
            k++;
        ck_assert_msg(k < q.n_layers && q.layers[k].cut == cuts[c].cut, "%s %s: cut %g",
                      cuts[c].profile, cuts[c].layer, k < q.n_layers ? q.layers[k].cut : -1.0);
        sim_model_profile_free(&q);
    }
    /* resnet50: 4.1 G multiply-adds per 224x224 image, as the literature quotes */
    sim_model_profile_t p;
    ck_assert(sim_model_profile_load(&p, "resnet50", NULL) == DT_OK);
    ck_assert(p.forward_flops > 8.0e9 && p.forward_flops < 8.4e9);
    sim_model_profile_free(&p);
}
END_TEST

/* A hundred jobs: jobs.files given on several lines appends (a line ends at 198 characters
 * and a repeated key was refused, so no file could list them); the resolved text writes
 * them back over lines the reader takes, and reads back to the same list. Other keys given
 * twice stay refused. */
START_TEST(jobs_files_lines_append)
{
    static char text[8192];
    size_t len = (size_t)snprintf(text, sizeof text, "[cluster]\nworkers = 200\n[jobs]\n");
    char want[4096] = "";
    for (int line = 0; line < 10; line++) {
        len += (size_t)snprintf(text + len, sizeof text - len, "files = ");
        for (int i = 0; i < 10; i++) {
            char name[32];
            snprintf(name, sizeof name, "jobs/job-%03d.ini", 10 * line + i);
            len += (size_t)snprintf(text + len, sizeof text - len, "%s%s", i ? ", " : "", name);
            snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s", line || i ? ", " : "",
                     name);
        }
        len += (size_t)snprintf(text + len, sizeof text - len, "\n");
    }
    scenario_t *sc = malloc(sizeof *sc), *back = malloc(sizeof *back);
    load_ok(sc, tmp_file("hundred.ini", text), NULL, 0);
    ck_assert_str_eq(sc->jobs_files, want);
    char *written = write_to_string(sc);
    for (char *l = written; *l;) {
        size_t n = strcspn(l, "\n");
        ck_assert_msg(n <= 198, "a written line of %zu characters: %.60s...", n, l);
        l += n + (l[n] == '\n');
    }
    load_ok(back, tmp_file("back.ini", written), NULL, 0);
    ck_assert_str_eq(back->jobs_files, want);
    free(written);
    free(sc);
    free(back);
    expect_file_error("[jobs]\nplacement = packed\nplacement = interleaved\n",
                      ":3: jobs.placement: given twice (lines 2 and 3)");
}
END_TEST

START_TEST(model_profile_files_and_errors)
{
    scenario_t sc;
    tmp_file("mine.ini", "[profile]\nname = mine\nparams = 30\nforward_flops = 1e6\n"
                         "[backward]\nb = 10 1e6\na = 20 1e6\n");
    load_ok(&sc, tmp_file("t.ini", "[model]\narch = profile:mine.ini\n"), NULL, 0);
    char real[PATH_MAX], want[PATH_MAX + 64];
    ck_assert_ptr_nonnull(realpath(tmpdir, real));
    snprintf(want, sizeof want, "%s/mine.ini", real);
    ck_assert_str_eq(sc.profile, want);
    load_ok(&sc, tmp_file("t.ini", "[model]\narch = profile:vgg16\n"), NULL, 0);
    ck_assert_str_eq(sc.profile, "vgg16");
    load_ok(&sc, tmp_file("t.ini", "[model]\narch = mlp\n"), NULL, 0);
    ck_assert_str_eq(sc.profile, "");
    expect_load_error("[model]\narch = profile:resnet18\n",
                      ":2: model.arch: unknown model profile \"resnet18\" (built in: bert_large, "
                      "gpt2_xl, inception_v3, resnet101, resnet50, vgg16; or a profile file "
                      "FILE.ini)");
    tmp_file("sum.ini", "[profile]\nparams = 31\nforward_flops = 1e6\n[backward]\na = 30 1\n");
    expect_load_error("[model]\narch = profile:sum.ini\n",
                      "sum.ini: the [backward] layers hold 30 gradient elements, profile.params "
                      "says 31");
    tmp_file("num.ini", "[profile]\nparams = 30\nforward_flops = 1e6\n[backward]\na = 30 x\n");
    expect_load_error("[model]\narch = profile:num.ini\n",
                      "num.ini:5: backward.a: \"30 x\" is not GRADIENT_ELEMENTS BACKWARD_FLOPS");
    tmp_file("key.ini", "[profile]\nparams = 30\nflops = 1e6\n");
    expect_load_error("[model]\narch = profile:key.ini\n", "key.ini:3: profile.flops: unknown key");
    tmp_file("sec.ini", "[layers]\na = 1 1\n");
    expect_load_error("[model]\narch = profile:sec.ini\n", "sec.ini:2: [layers]: unknown section");
    tmp_file("bwd.ini", "[profile]\nparams = 30\nforward_flops = 1\nbackward_flops = 5\n"
                        "[backward]\na = 30 1\n");
    expect_load_error("[model]\narch = profile:bwd.ini\n",
                      "bwd.ini: the [backward] layers add up to 1 FLOPs, "
                      "profile.backward_flops says 5");
    expect_load_error("[model]\narch = profile:absent.ini\n", ":2: model.arch: cannot read");
    /* [forward]: the [backward] layers first layer first, adding up to forward_flops */
    static const char head[] = "[profile]\nparams = 30\nforward_flops = 3\n"
                               "[backward]\nb = 10 2\na = 20 2\n[forward]\n";
    char text[512];
    snprintf(text, sizeof text, "%sb = 1 5 5\na = 2 5\n", head);
    tmp_file("order.ini", text);
    expect_load_error("[model]\narch = profile:order.ini\n",
                      "order.ini:8: forward.b: [forward]'s layer 1, but [backward] read from "
                      "its end gives a there");
    snprintf(text, sizeof text, "%sa = 1 5 5\nb = 1 5\n", head);
    tmp_file("fsum.ini", text);
    expect_load_error("[model]\narch = profile:fsum.ini\n",
                      "fsum.ini: the [forward] layers add up to 2 FLOPs, profile.forward_flops "
                      "says 3");
    snprintf(text, sizeof text, "%sa = 1 5 5\n", head);
    tmp_file("fcount.ini", text);
    expect_load_error("[model]\narch = profile:fcount.ini\n",
                      "fcount.ini: [forward] lists 1 layers, [backward] 2");
    snprintf(text, sizeof text, "%sa = 1 5 0\nb = 2 5\n", head);
    tmp_file("fnum.ini", text);
    expect_load_error("[model]\narch = profile:fnum.ini\n",
                      "fnum.ini:8: forward.a: \"1 5 0\" is not FORWARD_FLOPS OUTPUT_ELEMENTS "
                      "[CUT_ELEMENTS]");
    /* a pipeline of a profile: stages end at its cuts, and it needs them */
    snprintf(text, sizeof text, "%sa = 1 5 5\nb = 2 5\n", head);
    tmp_file("two.ini", text);
    load_ok(&sc,
            tmp_file("t.ini", "[model]\narch = profile:two.ini\n[strategy]\n"
                              "kind = pipeline\nstages = 2\n"),
            NULL, 0);
    expect_load_error("[model]\narch = profile:two.ini\n[strategy]\nkind = pipeline\n"
                      "stages = 3\n",
                      ":5: strategy.stages: 3 stages but the profile ");
    expect_load_error("[model]\narch = profile:two.ini\n[strategy]\nkind = pipeline\n"
                      "stages = 3\n",
                      "two.ini can be cut into at most 2 (its [forward] cuts + 1; "
                      "model.arch at line 2)");
    expect_load_error("[model]\narch = profile:mine.ini\n[strategy]\nkind = pipeline\n"
                      "stages = 2\n",
                      ":2: model.arch: a pipeline of the profile ");
    /* [tensor]: splits of [backward] layers, with [forward]; strategy.tensor needs it */
    snprintf(text, sizeof text, "%sa = 1 5 5\nb = 2 5\n[tensor]\na = column 7\nb = row\n", head);
    tmp_file("tp.ini", text);
    load_ok(&sc,
            tmp_file("t.ini", "[model]\narch = profile:tp.ini\n[strategy]\n"
                              "kind = pipeline\nstages = 2\ntensor = 4\n"
                              "sequence_parallel = yes\n"),
            NULL, 0);
    ck_assert(sc.profile_splits && scenario_own(&sc, "tensor")->l == 4 &&
              scenario_own(&sc, "sequence_parallel")->i);
    /* a profile file rewritten: what the scenario keeps of it (kept while its text is the
     * same: a plan loads it with every layout) follows the new text */
    load_ok(&sc, tmp_file("t.ini", "[model]\narch = profile:two.ini\n"), NULL, 0);
    ck_assert(!sc.profile_splits && sc.profile_pieces == 2);
    tmp_file("two.ini", text);
    load_ok(&sc, tmp_file("t.ini", "[model]\narch = profile:two.ini\n"), NULL, 0);
    ck_assert(sc.profile_splits && sc.profile_pieces == 2);
    snprintf(text, sizeof text, "%sa = 1 5 5\nb = 2 5\n", head);
    tmp_file("two.ini", text);
    load_ok(&sc, tmp_file("t.ini", "[model]\narch = profile:two.ini\n"), NULL, 0);
    ck_assert(!sc.profile_splits);
    snprintf(text, sizeof text, "%sa = 1 5 5\nb = 2 5\n[tensor]\na = rows 7\n", head);
    tmp_file("tpname.ini", text);
    expect_load_error("[model]\narch = profile:tpname.ini\n",
                      "tpname.ini:11: tensor.a: \"rows 7\" is not SPLIT [REDUCE_ELEMENTS] "
                      "(column, row, heads or vocab");
    snprintf(text, sizeof text, "%sa = 1 5 5\nb = 2 5\n[tensor]\na = heads 7\n", head);
    tmp_file("tpheads.ini", text);
    expect_load_error("[model]\narch = profile:tpheads.ini\n",
                      "tpheads.ini:11: tensor.a: \"heads 7\" is not SPLIT");
    snprintf(text, sizeof text, "%sa = 1 5 5\nb = 2 5\n[tensor]\nc = row\n", head);
    tmp_file("tpc.ini", text);
    expect_load_error("[model]\narch = profile:tpc.ini\n",
                      "tpc.ini:11: tensor.c: no such layer in [backward]");
    snprintf(text, sizeof text, "%sa = 1 5 5\nb = 2 5\n[tensor]\na = row\na = row\n", head);
    tmp_file("tptwice.ini", text);
    expect_load_error("[model]\narch = profile:tptwice.ini\n",
                      "tptwice.ini:12: tensor.a: layer listed twice");
    /* two faults: the first one's line with the first one's message (a later handler's
     * message used to stand beside the first fault's line: "line 6" for line 13's fault);
     * a syntax error first is a syntax error, whatever follows */
    tmp_file("two.bad.ini", "[profile]\nparams = 30\nforward_flops = 3\n[backward]\nb = 10 2\n"
                            "a = 20 x\nc = 1 1\n\n\n\n\n\nd = 1 y\n");
    expect_load_error("[model]\narch = profile:two.bad.ini\n",
                      "two.bad.ini:6: backward.a: \"20 x\" is not GRADIENT_ELEMENTS");
    tmp_file("syn.bad.ini", "[profile]\nparams = 30\nforward_flops = 3\n[backward]\nb 10 2\n"
                            "a = 20 x\n");
    expect_load_error("[model]\narch = profile:syn.bad.ini\n",
                      "syn.bad.ini:5: syntax error (expected key = value)");
    /* a line longer than inih's buffer is refused, not split into two miscounted lines */
    {
        char longer[512];
        snprintf(longer, sizeof longer,
                 "[profile]\nparams = 30\nforward_flops = 3\n"
                 "source = %0300d\n[backward]\na = 30 x\n",
                 0);
        tmp_file("long.bad.ini", longer);
        expect_load_error("[model]\narch = profile:long.bad.ini\n",
                          "long.bad.ini:4: line longer than 198 characters");
    }
    /* a layer listed twice among many (the reader's name index grown several times) */
    {
        static char many[16384];
        size_t len = (size_t)snprintf(many, sizeof many,
                                      "[profile]\nparams = 600\nforward_flops = 1\n[backward]\n");
        for (int i = 0; i < 600; i++)
            len += (size_t)snprintf(many + len, sizeof many - len, "l%d = 1 2\n", i);
        snprintf(many + len, sizeof many - len, "l7 = 1 2\n");
        tmp_file("many.ini", many);
        expect_load_error("[model]\narch = profile:many.ini\n",
                          "many.ini:605: backward.l7: layer listed twice");
        many[len] = '\0';
        tmp_file("many.ini", many);
        load_ok(&sc, tmp_file("t.ini", "[model]\narch = profile:many.ini\n"), NULL, 0);
    }
    tmp_file("tpfwd.ini", "[profile]\nparams = 30\nforward_flops = 3\n"
                          "[backward]\nb = 10 2\na = 20 2\n[tensor]\na = row\n");
    expect_load_error("[model]\narch = profile:tpfwd.ini\n",
                      "tpfwd.ini: a [tensor] section needs a [forward] section");
    expect_load_error("[model]\narch = profile:two.ini\n[strategy]\nkind = pipeline\n"
                      "tensor = 2\n",
                      ":5: strategy.tensor: tensor = 2 splits the layers of a model profile "
                      "with a [tensor] section (this one has none)");
    /* recomputation composes with tensor parallelism (the sim suite checks its costs) */
    load_ok(&sc,
            tmp_file("t.ini", "[model]\narch = profile:tp.ini\nrecompute = full\n"
                              "[strategy]\nkind = pipeline\ntensor = 2\n"),
            NULL, 0);
    /* ZeRO over a pipeline's replicas: zero_stage with shard_optimizer, stage 3 on a profile */
    load_ok(&sc,
            tmp_file("t.ini", "[model]\narch = profile:tp.ini\n[cluster]\nworkers = 2\n"
                              "[strategy]\nkind = pipeline\nstages = 1\n"
                              "data_parallel = 2\nshard_optimizer = yes\nzero_stage = 3\n"),
            NULL, 0);
    ck_assert_int_eq(scenario_own(&sc, "zero_stage")->l, 3);
    expect_load_error("[model]\narch = profile:tp.ini\n[cluster]\nworkers = 2\n[strategy]\n"
                      "kind = pipeline\nstages = 1\ndata_parallel = 2\nzero_stage = 2\n",
                      ":9: strategy.zero_stage: zero_stage = 2 shards a pipeline's replicas only "
                      "with shard_optimizer = yes");
    expect_load_error("[cluster]\nworkers = 4\n[strategy]\nkind = pipeline\nstages = 2\n"
                      "data_parallel = 2\nshard_optimizer = yes\nzero_stage = 3\n",
                      ":8: strategy.zero_stage: zero_stage = 3 on a pipeline shards a model "
                      "profile's parameters (timing only)");
    /* in a sweep over kinds zero_stage is zero's: the pipeline's runs leave it alone */
    load_ok(&sc,
            tmp_file("t.ini", "[cluster]\nworkers = 2\n[strategy]\nzero_stage = 3\n"
                              "stages = 2\n[sweep]\nstrategy.kind = zero, pipeline\n"),
            NULL, 0);
    scenario_t swept;
    dt_err_t why = {""};
    ck_assert_int_eq(scenario_sweep_run(&sc, 1, &swept, &why), DT_OK);
    ck_assert_str_eq(swept.strategy->name, "pipeline");
    expect_load_error("[model]\narch = profile:tp.ini\n[strategy]\nkind = pipeline\n"
                      "tensor = 2\nstages = 2\n[cluster]\nworkers = 2\n",
                      "workers must equal stages x data_parallel x tensor");
    expect_load_error("[run]\ntime_model = measured\n[model]\narch = profile:vgg16\n",
                      ":2: run.time_model: time_model = measured needs real kernels");
    /* keys that only make sense with a profile, or with one strategy */
    expect_load_error("[strategy]\nkind = allreduce\nring_messages = phases\n",
                      ":3: strategy.ring_messages: ring_messages = phases moves each phase in "
                      "one message, which cannot carry real partial sums");
    expect_load_error("[strategy]\nkind = allreduce\nbucket_mb = 25\n[faults]\n"
                      "crash = worker-1 at 1s\n",
                      ":3: strategy.bucket_mb: bucket_mb with [faults] is not supported");
    load_ok(&sc,
            tmp_file("t.ini", "[model]\narch = profile:resnet50\n[strategy]\n"
                              "kind = allreduce\nring_messages = phases\nbucket_mb = 25\n"),
            NULL, 0);
    ck_assert(sc.bucket_mb == 25 && sc.ring_messages == SIM_RING_PHASES);
    /* pipeline splits that do not fit the model or the batch */
    expect_load_error("[model]\narch = mlp\nhidden = 256,128\n[strategy]\nkind = pipeline\n"
                      "stages = 4\n",
                      ":6: strategy.stages: 4 stages but the mlp has 3 layers with weights, and a "
                      "stage needs at least one (model.arch at line 2)");
    expect_load_error("[model]\nbatch = 30\n[strategy]\nkind = pipeline\nmicro_batches = 4\n",
                      ":5: strategy.micro_batches: 4 micro-batches do not divide a batch of 30 "
                      "(model.batch at line 2)");
    expect_load_error(
        "[cluster]\nworkers = 8\n[strategy]\nkind = pipeline\nstages = 3\n",
        ":2: cluster.workers: a pipeline of 3 stages x 1 replicas runs on 3 hosts, not 8");
    load_ok(&sc,
            tmp_file("t.ini", "[model]\narch = profile:resnet50\n[strategy]\n"
                              "kind = pipeline\nstages = 18\n"),
            NULL, 0);
    expect_load_error("[model]\narch = profile:resnet50\n[strategy]\nkind = pipeline\n"
                      "stages = 19\n",
                      ":5: strategy.stages: 19 stages but the profile resnet50 can be cut into "
                      "at most 18");
    /* the interleaved schedule: micro-batches S at a time, a chunk's layers for every
     * chunk, virtual_stages with it alone (but in a sweep over schedules) */
    expect_load_error("[model]\nbatch = 24\nhidden = 16,12,12,8,8,8,8\n[strategy]\n"
                      "kind = pipeline\nstages = 4\nmicro_batches = 6\n"
                      "pipeline_schedule = interleaved\nvirtual_stages = 2\n",
                      ":7: strategy.micro_batches: the interleaved schedule takes micro-batches S "
                      "at a time through each chunk: micro_batches = 6 must be a multiple of "
                      "stages = 4 (strategy.stages at line 6)");
    expect_load_error("[strategy]\nkind = pipeline\npipeline_schedule = gpipe\n"
                      "virtual_stages = 2\n",
                      ":4: strategy.virtual_stages: virtual_stages = 2 chunks a stage need "
                      "pipeline_schedule = interleaved, not gpipe");
    expect_load_error("[strategy]\nkind = pipeline\nvirtual_stages = 2\n",
                      ":3: strategy.virtual_stages: virtual_stages = 2 chunks a stage need "
                      "pipeline_schedule = interleaved, not 1f1b");
    expect_load_error("[model]\nhidden = 16,12,12\n[strategy]\nkind = pipeline\n"
                      "pipeline_schedule = interleaved\nvirtual_stages = 3\n",
                      ":6: strategy.virtual_stages: stages x virtual_stages = 2 x 3 = 6 chunks, "
                      "but the mlp has 4 layers with weights, and a chunk needs at least one");
    expect_load_error("[model]\narch = profile:resnet50\n[strategy]\nkind = pipeline\n"
                      "pipeline_schedule = interleaved\nstages = 4\nvirtual_stages = 5\n",
                      ":7: strategy.virtual_stages: stages x virtual_stages = 4 x 5 = 20 chunks, "
                      "but the profile resnet50 can be cut into at most 18");
    expect_load_error("[cluster]\nworkers = 1\n[strategy]\nkind = pipeline\nstages = 1\n"
                      "pipeline_schedule = interleaved\nvirtual_stages = 2\n",
                      ":7: strategy.virtual_stages: virtual_stages = 2 interleaves the chunks of 2 "
                      "or more stages");
    load_ok(&sc,
            tmp_file("t.ini", "[model]\nhidden = 16,12,12\n[strategy]\nkind = pipeline\n"
                              "virtual_stages = 2\n[sweep]\n"
                              "strategy.pipeline_schedule = 1f1b, interleaved\n"),
            NULL, 0);
    ck_assert_int_eq(scenario_own(&sc, "virtual_stages")->l, 2);
    load_ok(&sc,
            tmp_file("t.ini", "[model]\nbatch = 24\n[strategy]\nkind = pipeline\n"
                              "micro_batches = 3\npipeline_schedule = interleaved\n"),
            NULL, 0); /* one chunk a stage: 1f1b, any micro-batches */
    ck_assert(scenario_own(&sc, "pipeline_schedule")->i == 2 /* gpipe, 1f1b, interleaved */);
    expect_load_error("[data]\npartition = shards:2\n[strategy]\nkind = pipeline\n",
                      ":2: data.partition: a pipeline trains one model on the global batch");
    load_ok(&sc,
            tmp_file("t.ini", "[model]\narch = cnn\n[strategy]\nkind = pipeline\n"
                              "stages = 4\nmicro_batches = 8\npipeline_schedule = gpipe\n"),
            NULL, 0);
    ck_assert(scenario_own(&sc, "stages")->l == 4 && scenario_own(&sc, "micro_batches")->l == 8 &&
              scenario_own(&sc, "pipeline_schedule")->i == 0);
    /* tensor splits that do not divide the widths */
    expect_load_error("[model]\nhidden = 256,100\n[strategy]\nkind = tensor\n"
                      "tensor_parallel = 3\n",
                      ":5: strategy.tensor_parallel: tensor_parallel = 3 does not divide hidden "
                      "layer 1's width 256, which it splits (model.hidden at line 2)");
    expect_load_error("[model]\nhidden = 256,128\n[strategy]\nkind = tensor\n"
                      "tensor_parallel = 4\n",
                      ":5: strategy.tensor_parallel: tensor_parallel = 4 does not divide the 10 "
                      "classes of the output layer");
    expect_load_error("[model]\narch = cnn\n[strategy]\nkind = tensor\n",
                      ":2: model.arch: tensor parallelism splits fully connected layers");
    load_ok(&sc,
            tmp_file("t.ini", "[model]\nhidden = 256,128,64\n[strategy]\nkind = tensor\n"
                              "tensor_parallel = 4\n"),
            NULL, 0);
    ck_assert(scenario_own(&sc, "tensor_parallel")->l == 4);
    /* less communication: who takes what */
    expect_load_error("[strategy]\nkind = local-sgd\ncompression = topk:0.01\n",
                      ":3: strategy.compression: compression applies to sync-ps, allreduce and "
                      "fedavg, not local-sgd (strategy.kind at line 2)");
    expect_load_error("[strategy]\ncompression = topk:0\n",
                      ":2: strategy.compression: bad compression \"topk:0\": F must be a number "
                      "in (0, 1]");
    expect_load_error("[strategy]\ncompression = int4\n",
                      ":2: strategy.compression: unknown compression \"int4\" (none, fp16, "
                      "qsgd8 or topk:F with 0 < F <= 1)");
    expect_load_error("[strategy]\nkind = allreduce\ndp_comm = formula\n",
                      ":3: strategy.dp_comm: formula times a pipeline's replicas "
                      "(strategy.kind = pipeline); allreduce takes messages or nccl");
    expect_load_error("[strategy]\nkind = local-sgd\naccumulate = 4\n",
                      ":3: strategy.accumulate: accumulate applies to single, sync-ps, "
                      "allreduce, fedavg, hierfl and zero, not local-sgd");
    expect_load_error("[model]\nside_by_side = yes\n[strategy]\nkind = fedavg\n"
                      "accumulate = 4\n",
                      ":5: strategy.accumulate: clients side by side take one batch per step");
    expect_load_error("[strategy]\nkind = allreduce\nbucket_mb = 25\ncompression = qsgd8\n",
                      ":4: strategy.compression: bucket_mb overlaps one backward pass with plain "
                      "all-reduces; it does not combine with topk or qsgd8 compression (use "
                      "bucket_mb = 0; strategy.bucket_mb at line 3)");
    expect_load_error("[strategy]\nkind = allreduce\ncompression = topk:0.1\n[faults]\n"
                      "crash = worker-1 at 1s\n",
                      ":3: strategy.compression: allreduce with topk or qsgd8 compression");
    load_ok(&sc,
            tmp_file("t.ini", "[strategy]\nkind = allreduce\nbucket_mb = 25\n"
                              "compression = fp16\naccumulate = 1\n"),
            NULL, 0);
    ck_assert(sc.compression.kind == TRAINER_CODEC_FP16 && sc.error_feedback);
}
END_TEST

/* Every scenario the project ships loads (sweeps included); the profiles are not scenarios. */
START_TEST(shipped_scenarios_load)
{
    static const char *const dirs[] = {"",     "/mlp8", "/faults",   "/scale",     "/compress",
                                       "/gpu", "/real", "/parallel", "/federated", "/lessons"};
    int loaded = 0;
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s/../../scenarios%s", DTSIM_FIXTURES, dirs[i]);
        DIR *d = opendir(dir);
        ck_assert_msg(d != NULL, "%s", dir);
        struct dirent *e;
        while ((e = readdir(d))) {
            size_t n = strlen(e->d_name);
            if (n < 5 || strcmp(e->d_name + n - 4, ".ini"))
                continue;
            char path[PATH_MAX * 2];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            static scenario_t sc;
            load_ok(&sc, path, NULL, 0);
            loaded++;
        }
        closedir(d);
    }
    ck_assert_int_ge(loaded, 20);
}
END_TEST

/* ---- device and device_flops ------------------------------------------------------------ */

/* A profile file as dtsim calibrate writes it: its speed becomes device_flops; the path is
 * relative to the scenario and stored absolute; a bad file names its own line. */
START_TEST(device_profile_files)
{
    tmp_file("measured.ini", "; dtsim device profile\n[device]\nname = cpu-vm\nflops = "
                             "40.88Gf\n");
    scenario_t sc;
    load_ok(&sc, tmp_file("t.ini", "[cluster]\ndevice = measured.ini\n"), NULL, 0);
    char want[PATH_MAX + 64];
    char real[PATH_MAX];
    ck_assert_ptr_nonnull(realpath(tmpdir, real));
    snprintf(want, sizeof want, "%s/measured.ini", real);
    ck_assert_str_eq(sc.device, want);
    ck_assert(sc.device_flops == 40.88e9);
    /* it writes back and loads again to the same speed */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    scenario_write(&sc, f);
    fclose(f);
    scenario_t again;
    load_ok(&again, tmp_file("w.ini", text), NULL, 0);
    free(text);
    ck_assert(again.device_flops == 40.88e9);
    /* bad files */
    tmp_file("noflops.ini", "[device]\nname = x\n");
    expect_file_error_start("[cluster]\ndevice = noflops.ini\n", ":2: cluster.device: ");
    dt_err_t err = {""};
    ck_assert_int_eq(
        scenario_load(&sc, tmp_file("t.ini", "[cluster]\ndevice = noflops.ini\n"), NULL, 0, &err),
        DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "noflops.ini:1: device.fp32: missing"), "%s", err.msg);
    tmp_file("badunit.ini", "[device]\nflops = 40Gbps\n");
    ck_assert_int_eq(
        scenario_load(&sc, tmp_file("t.ini", "[cluster]\ndevice = badunit.ini\n"), NULL, 0, &err),
        DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "badunit.ini:2: device.flops: unknown unit \"Gbps\""), "%s",
                  err.msg);
    tmp_file("badkey.ini", "[device]\nflops = 4Gf\nspeed = 3\n");
    ck_assert_int_eq(
        scenario_load(&sc, tmp_file("t.ini", "[cluster]\ndevice = badkey.ini\n"), NULL, 0, &err),
        DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, "badkey.ini:3: device.speed: unknown key"), "%s", err.msg);
    ck_assert_int_eq(
        scenario_load(&sc, tmp_file("t.ini", "[cluster]\ndevice = none.ini\n"), NULL, 0, &err),
        DT_ERR_INPUT);
    ck_assert_msg(strstr(err.msg, ":2: cluster.device: cannot read \"none.ini\""), "%s", err.msg);
}
END_TEST

/* The catalogue against the datasheet figures written out again here, every value with a
 * source; the FP32 speeds of the four first profiles kept (peak x 0.7, the CPU measured). */
START_TEST(device_catalogue_values_and_sources)
{
    size_t n;
    const sim_device_profile_t *p = scenario_device_profiles(&n);
    static const struct {
        const char *name;
        double fp32, tf32, bf16, fp8, memory_gb, bandwidth_gbs, power_max; /* 0: none */
    } want[] = {
        {"cpu", 0.09, 0, 0, 0, 0, 0, 0},
        {"v100", 15.7, 0, 125, 0, 32, 900, 300},
        {"a100", 19.5, 156, 312, 0, 40, 1555, 400},
        {"a100-80gb", 19.5, 156, 312, 0, 80, 2039, 400},
        {"h100", 67, 494.7, 989.4, 1978.9, 80, 3350, 700},
        {"h100-pcie", 51, 378, 756, 1513, 80, 2000, 350},
        {"h200", 67, 494.7, 989.4, 1978.9, 141, 4800, 700},
        {"b200", 80, 1100, 2250, 4500, 180, 8000, 1000},
        {"mi300x", 163.4, 653.7, 1307.4, 2614.9, 192, 5300, 750},
        {"l4", 30.3, 60, 121, 242.5, 24, 300, 72},
    };
    ck_assert_uint_eq(n, sizeof want / sizeof want[0]);
    for (size_t i = 0; i < n; i++) {
        const sim_device_profile_t *d = &p[i];
        ck_assert_str_eq(d->name, want[i].name);
        ck_assert_msg(d->title[0], "%s has no name", d->name);
        const double w[] = {want[i].fp32 * 1e12,     want[i].tf32 * 1e12,
                            want[i].bf16 * 1e12,     want[i].fp8 * 1e12,
                            want[i].memory_gb * 1e9, want[i].bandwidth_gbs * 1e9};
        for (int f = 0; f < 6; f++) {
            if (w[f] == 0)
                ck_assert_msg(isnan(d->value[f]), "%s.%s", d->name, scenario_device_field_name(f));
            else
                ck_assert_msg(fabs(d->value[f] - w[f]) <= 1e-12 * w[f], "%s.%s = %g, want %g",
                              d->name, scenario_device_field_name(f), d->value[f], w[f]);
        }
        if (want[i].power_max > 0) {
            ck_assert(d->value[SIM_DEV_POWER_MAX] == want[i].power_max);
            /* idle: an assumption, 10% of the maximum, and its source says so */
            ck_assert(fabs(d->value[SIM_DEV_POWER_IDLE] - 0.1 * want[i].power_max) < 1e-9);
            ck_assert_ptr_nonnull(strstr(d->source[SIM_DEV_POWER_IDLE], "assumed"));
        }
        for (int f = 0; f < SIM_DEV_FIELDS; f++)
            if (!isnan(d->value[f]))
                ck_assert_msg(strlen(d->source[f]) > 20, "%s.%s has no source", d->name,
                              scenario_device_field_name(f));
    }
    /* the first profiles' speeds, bit for bit: existing runs keep their times */
    scenario_t sc;
    scenario_defaults(&sc);
    static const struct {
        const char *name;
        double speed;
    } kept[] = {{"cpu", 90e9}, {"v100", 10.99e12}, {"a100", 13.65e12}, {"h100", 46.9e12}};
    for (size_t i = 0; i < 4; i++) {
        char set[64];
        snprintf(set, sizeof set, "cluster.device=%s", kept[i].name);
        dt_err_t err;
        ck_assert_int_eq(scenario_set(&sc, set, &err), DT_OK);
        ck_assert_msg(sc.device_flops == kept[i].speed, "%s: %.17g", kept[i].name, sc.device_flops);
    }
}
END_TEST

START_TEST(device_profiles_and_device_flops)
{
    scenario_t sc;
    load_ok(&sc, tmp_file("t.ini", "[cluster]\ndevice = a100\n"), NULL, 0);
    ck_assert_str_eq(sc.device, "a100");
    ck_assert(sc.device_flops == 13.65e12);
    /* device_flops alone: a custom device */
    load_ok(&sc, tmp_file("t.ini", "[cluster]\ndevice_flops = 19.5Tf\n"), NULL, 0);
    ck_assert_str_eq(sc.device, "custom");
    ck_assert(sc.device_flops == 19.5e12);
    /* both, agreeing: fine (this is what scenario_write produces) */
    load_ok(&sc, tmp_file("t.ini", "[cluster]\ndevice_flops = 46.9Tf\ndevice = h100\n"), NULL, 0);
    ck_assert_str_eq(sc.device, "h100");
    ck_assert(sc.device_flops == 46.9e12);
    load_ok(&sc, tmp_file("t.ini", "[cluster]\ndevice = custom\ndevice_flops = 3Tf\n"), NULL, 0);
    ck_assert_str_eq(sc.device, "custom");
    ck_assert(sc.device_flops == 3e12);
    /* both, disagreeing: an error naming both lines */
    expect_file_error("[cluster]\ndevice = a100\nworkers = 2\ndevice_flops = 20Tf\n",
                      ":4: cluster.device_flops: 20Tf disagrees with device = a100 at line 2 "
                      "(13.65Tf at model.precision = fp32); write device = custom to use your "
                      "own speed, or drop one of the two");
    expect_file_error("[cluster]\ndevice = custom\n",
                      ":2: cluster.device: custom needs cluster.device_flops (the simulated "
                      "speed, e.g. 20Tf)");
    expect_file_error("[cluster]\ndevice = tpu\n",
                      ":2: cluster.device: unknown device \"tpu\" (expected one of cpu, v100, "
                      "a100, a100-80gb, h100, h100-pcie, h200, b200, mi300x, l4, a profile "
                      "file FILE.ini, or custom with device_flops; dtsim devices lists them)");
    expect_file_error("[cluster]\ndevice_flops = 0Gf\n",
                      ":2: cluster.device_flops: \"0Gf\" is out of range (expected > 0)");
    /* --set replaces the pair */
    static const char *const to_h100[] = {"cluster.device=h100"};
    load_ok(&sc, tmp_file("t.ini", "[cluster]\ndevice_flops = 3Tf\n"), to_h100, 1);
    ck_assert_str_eq(sc.device, "h100");
    ck_assert(sc.device_flops == 46.9e12);
    static const char *const to_custom[] = {"cluster.device_flops=2.5Tf"};
    load_ok(&sc, tmp_file("t.ini", "[cluster]\ndevice = v100\n"), to_custom, 1);
    ck_assert_str_eq(sc.device, "custom");
    ck_assert(sc.device_flops == 2.5e12);
    expect_set_error("cluster.device=custom",
                     "--set cluster.device: custom needs a speed: give --set "
                     "cluster.device_flops=SPEED instead (it makes the device custom)");
}
END_TEST

/* model.precision picks the peak and cluster.device_efficiency the fraction, in a file, by
 * --set and in a sweep; what a device lacks, and what only timing-only models take, are
 * errors naming the key. */
START_TEST(precision_and_efficiency_set_the_speed)
{
    scenario_t sc;
    const char *gpt = "[model]\narch = profile:gpt2_xl\n";
    char text[512];
    snprintf(text, sizeof text, "%sprecision = bf16\n[cluster]\ndevice = h100\n", gpt);
    load_ok(&sc, tmp_file("t.ini", text), NULL, 0);
    ck_assert(sc.device_flops == 989.4e12 * 0.5); /* BF16 peak x tensor_efficiency */
    ck_assert(scenario_value_bytes(&sc) == 2);
    static const char *const fp8[] = {"model.precision=fp8", "cluster.device_efficiency=0.4"};
    load_ok(&sc, tmp_file("t.ini", text), fp8, 2);
    ck_assert(sc.device_flops == 1978.9e12 * 0.4);
    static const char *const tf32[] = {"model.precision=tf32", "cluster.device=a100"};
    load_ok(&sc, tmp_file("t.ini", text), tf32, 2);
    ck_assert(sc.device_flops == 156e12 * 0.5);
    ck_assert(scenario_value_bytes(&sc) == 4);
    /* the written configuration loads back to the same speed */
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    scenario_write(&sc, f);
    fclose(f);
    scenario_t again;
    load_ok(&again, tmp_file("w.ini", out), NULL, 0);
    free(out);
    ck_assert(again.device_flops == sc.device_flops && again.precision == SIM_PREC_TF32);
    /* a sweep over precisions: each run its own speed */
    snprintf(text, sizeof text,
             "%s[cluster]\ndevice = mi300x\n[sweep]\nmodel.precision = fp32, bf16, fp8\n", gpt);
    load_ok(&sc, tmp_file("t.ini", text), NULL, 0);
    const double speeds[] = {163.4e12 * 0.7, 1307.4e12 * 0.5, 2614.9e12 * 0.5};
    for (int i = 0; i < 3; i++) {
        scenario_t run;
        dt_err_t err;
        ck_assert_int_eq(scenario_sweep_run(&sc, i, &run, &err), DT_OK);
        ck_assert_msg(run.device_flops == speeds[i], "run %d: %g", i, run.device_flops);
    }
    /* errors: a precision the device lacks, a fraction for a custom device, an unknown
     * precision, precision and optimizer on a real model */
    snprintf(text, sizeof text, "%sprecision = fp8\n[cluster]\ndevice = a100\n", gpt);
    expect_file_error(text, ":3: model.precision: device a100 has no fp8 peak (it has fp32, "
                            "tf32, bf16; cluster.device at line 5)");
    expect_file_error("[cluster]\ndevice_flops = 3Tf\ndevice_efficiency = 0.5\n",
                      ":3: cluster.device_efficiency: device_efficiency scales a device's peak, "
                      "but device = custom gives device_flops, a sustained speed, itself "
                      "(expected a device of the catalogue or a profile file, or no "
                      "device_efficiency; cluster.device_flops at line 2)");
    expect_file_error("[model]\nprecision = fp16\n",
                      ":2: model.precision: unknown value \"fp16\" (expected one of fp32, tf32, "
                      "bf16, fp8)");
    expect_file_error("[model]\nprecision = bf16\n[cluster]\ndevice = h100\n",
                      ":2: model.precision: model.precision needs a timing-only model "
                      "(model.arch = profile:NAME): real training here is FP32: another "
                      "precision would change the simulated time and bytes, not the numbers "
                      "trained (model.arch by default)");
    /* the optimizer's keys: each refused where nothing reads it */
    expect_file_error("[model]\nbeta2 = 0.99\n",
                      ":2: model.beta2: model.beta2 is read by model.optimizer = adam or adamw "
                      "only, and this run's is sgd (model.optimizer by default)");
    expect_file_error("[model]\noptimizer = adamw\nmomentum = 0.9\n",
                      ":3: model.momentum: model.momentum is sgd's; adamw reads model.beta1 "
                      "instead (model.optimizer at line 2; expected momentum = 0)");
    expect_file_error("[model]\nlr_min = 0.001\n",
                      ":2: model.lr_min: model.lr_min is the floor of a decay, which schedule = "
                      "constant does not have (model.schedule by default; expected schedule = "
                      "cosine or linear)");
    /* the pipeline takes Adam and clipping (it sums its stages' squares) */
    {
        scenario_t sc;
        dt_err_t err = {""};
        const char *path = tmp_file("t.ini", "[model]\noptimizer = adamw\nclip_norm = 1\n"
                                             "[strategy]\nkind = pipeline\nstages = 2\n");
        ck_assert_msg(scenario_load(&sc, path, NULL, 0, &err) == DT_OK, "%s", err.msg);
    }
    expect_file_error("[model]\nclip_norm = 1\n[strategy]\nkind = sync-ps\nservers = 2\n"
                      "[faults]\ncrash = worker-1 at 1s\n",
                      ":2: model.clip_norm: sync-ps's shards sum their squares for the norm in "
                      "an all-reduce among them, which a shard down would stall: with [faults] "
                      "(strategy.servers at line 5; expected clip_norm = 0, or servers = 1)");
    {
        scenario_t sc;
        dt_err_t err = {""};
        const char *path = tmp_file("t.ini", "[model]\nclip_norm = 1\n[strategy]\n"
                                             "kind = sync-ps\nservers = 2\n");
        ck_assert_msg(scenario_load(&sc, path, NULL, 0, &err) == DT_OK, "%s", err.msg);
    }
    expect_file_error("[model]\noptimizer = adam\nside_by_side = yes\n",
                      ":3: model.side_by_side: replicas side by side train with sgd, unclipped "
                      "(model.optimizer at line 2; expected side_by_side = auto or no)");
    expect_file_error("[model]\narch = profile:resnet50\nrecompute = selective\n",
                      ":3: model.recompute: selective recomputes attention cores, layers named "
                      "*.scores, and resnet50 has none (expected recompute = full or none; "
                      "model.arch at line 2)");
    expect_file_error("[model]\narch = profile:gpt2_xl\nprecision = bf16\n[strategy]\n"
                      "kind = allreduce\ncompression = fp16\n[cluster]\ndevice = h100\n",
                      ":6: strategy.compression: the codecs encode FP32 values; with precision "
                      "= bf16 the values are 16-bit already (expected compression = none, or "
                      "precision = fp32 or tf32; model.precision at line 3)");
}
END_TEST

/* A device file of one's own, written like a catalogue entry: its values, its defaults from
 * the catalogue; every error with the file's line and key. */
START_TEST(device_files_like_catalogue_entries)
{
    tmp_file("gpu.ini", "[device gpu9]\nname = a test GPU\nfp32 = 10Tf\nbf16 = 100Tf\n"
                        "memory = 16GiB\nmemory_bandwidth = 1TBps\npower_max = 250W\n"
                        "source = made up for the test\nsource.memory = the test again\n");
    scenario_t sc;
    load_ok(&sc,
            tmp_file("t.ini", "[model]\narch = profile:bert_large\nprecision = bf16\n"
                              "[cluster]\ndevice = gpu.ini\n"),
            NULL, 0);
    const sim_device_profile_t *d = scenario_device(&sc);
    ck_assert_ptr_nonnull(d);
    ck_assert_str_eq(d->title, "a test GPU");
    ck_assert(d->value[SIM_DEV_MEMORY] == 16.0 * 1024 * 1024 * 1024);
    ck_assert(d->value[SIM_DEV_MEMORY_BANDWIDTH] == 1e12);
    ck_assert(isnan(d->value[SIM_DEV_POWER_IDLE]) && isnan(d->value[SIM_DEV_FP8]));
    ck_assert_str_eq(d->source[SIM_DEV_FP32], "made up for the test");
    ck_assert_str_eq(d->source[SIM_DEV_MEMORY], "the test again");
    ck_assert(d->value[SIM_DEV_TENSOR_EFFICIENCY] == 0.5); /* [defaults] */
    ck_assert(sc.device_flops == 100e12 * 0.5);
    static const struct {
        const char *file, *want;
    } bad[] = {
        {"[device]\nfp32 = 1Tf\nmemory = 80\n",
         "b.ini:3: device.memory: missing unit in size \"80\""},
        {"[device]\nfp32 = 1Tf\nmemry = 80GB\n", "b.ini:3: device.memry: unknown key"},
        {"[device]\nfp32 = 1Tf\nflops = 2Tf\n",
         "b.ini:3: device.flops: fp32 given at line 2 (flops is a measured speed, fp32 a "
         "peak: give one of them)"},
        {"[device]\nfp32 = 1Tf\nefficiency = 1.5\n",
         "b.ini:3: device.efficiency: bad fraction \"1.5\" (expected a number in (0, 1])"},
        {"[device]\nfp32 = 1Tf\nsource.fp8 = x\n",
         "b.ini:3: device.source.fp8: a source for fp8, which the device does not give"},
        {"[device a]\nfp32 = 1Tf\n[device b]\nfp32 = 2Tf\n",
         "b.ini:3: [device b]: a device file holds one device (its first section is at line 1)"},
        {"[gpu]\nfp32 = 1Tf\n", "b.ini:1: [gpu]: unknown section"},
        {"[device]\nbf16 = 1Tf\n", "b.ini:1: device.fp32: missing"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tmp_file("b.ini", bad[i].file);
        dt_err_t err = {""};
        ck_assert_int_eq(
            scenario_load(&sc, tmp_file("t.ini", "[cluster]\nworkers = 2\ndevice = b.ini\n"), NULL,
                          0, &err),
            DT_ERR_INPUT);
        ck_assert_msg(strstr(err.msg, ":3: cluster.device: ") && strstr(err.msg, bad[i].want),
                      "%zu: %s", i, err.msg);
    }
}
END_TEST

/* ---- the full fixture and the round trip ------------------------------------------------ */

START_TEST(full_fixture_values)
{
    scenario_t sc;
    load_ok(&sc, FIXTURE("full.ini"), NULL, 0);
    ck_assert_str_eq(sc.name, "full-fixture");
    ck_assert_uint_eq(sc.seed, 42);
    ck_assert_int_eq(sc.steps, 500);
    ck_assert(sc.max_time == 120.0);
    ck_assert_int_eq(sc.eval_every, 25);
    ck_assert(sc.target_accuracy == 0.9);
    ck_assert_int_eq(sc.time_model, SIM_TIME_MEASURED);
    ck_assert_str_eq(sc.db, "results/test.db");
    ck_assert_int_eq(sc.model.arch, TRAINER_ARCH_LOGREG);
    ck_assert_int_eq(sc.model.n_hidden, 3);
    ck_assert_int_eq(sc.model.hidden[2], 64);
    ck_assert_int_eq(sc.model.conv[0], 8);
    ck_assert_int_eq(sc.model.conv[1], 16);
    ck_assert_int_eq(sc.model.kernel, 3);
    ck_assert_int_eq(sc.model.fc, 64);
    ck_assert_int_eq(sc.batch, 32);
    ck_assert(sc.sgd.lr == 0.1f);
    ck_assert(sc.sgd.momentum == 0.9f);
    ck_assert(sc.sgd.weight_decay == 0.0005f);
    ck_assert_int_eq(sc.schedule, TRAINER_LR_COSINE);
    ck_assert_int_eq(sc.threads, 2);
    ck_assert_str_eq(sc.data_source, "synthetic");
    ck_assert_int_eq(sc.train_samples, 6000);
    ck_assert_int_eq(sc.test_samples, 1000);
    ck_assert_int_eq(sc.synthetic_dim, 100);
    ck_assert_int_eq(sc.synthetic_classes, 5);
    ck_assert(sc.synthetic_noise == 0.5);
    ck_assert_int_eq(sc.partition.kind, TRAINER_PARTITION_DIRICHLET);
    ck_assert(sc.partition.alpha == 0.3);
    ck_assert_int_eq(sc.platform, SIM_PLATFORM_FILE);
    char real[PATH_MAX];
    ck_assert_ptr_nonnull(realpath(FIXTURE("tiny.xml"), real));
    ck_assert_str_eq(sc.platform_file, real);
    ck_assert_int_eq(sc.workers, 4);
    ck_assert(sc.bandwidth == 3.125e9);
    ck_assert(sc.latency == 2.5e-6);
    ck_assert(sc.uplink_bandwidth == 1.25e10);
    ck_assert(sc.uplink_latency == 1e-3);
    ck_assert_int_eq(sc.racks, 2);
    ck_assert_int_eq(sc.network_model, SIM_NET_CM02);
    ck_assert_int_eq(sc.crosstraffic, 0);
    ck_assert_str_eq(sc.device, "a100");
    ck_assert(sc.device_flops == 13.65e12);
    ck_assert_str_eq(sc.strategy->name, "allreduce");
    ck_assert_int_eq(scenario_own(&sc, "servers")->l, 2);
    ck_assert_int_eq(scenario_own(&sc, "max_lead")->l, 4);
    ck_assert_int_eq(sc.algorithm, SIM_ALLREDUCE_HIERARCHICAL);
    ck_assert_int_eq(sc.group_size, 2);
    ck_assert_int_eq(scenario_own(&sc, "local_steps")->l, 16);
    ck_assert_int_eq(scenario_own(&sc, "clients")->l, 50);
    ck_assert(scenario_own(&sc, "fraction")->d == 0.2);
    ck_assert_int_eq(scenario_own(&sc, "local_epochs")->l, 2);
    ck_assert_int_eq(scenario_own(&sc, "rounds")->l, 30);
    ck_assert(scenario_own(&sc, "prox_mu")->d == 0.01);
}
END_TEST

/* Writes sc, loads it back, and compares every byte but the file path and the lines (of
 * keys and of [sweep]). */
static void round_trip(const scenario_t *sc)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    scenario_write(sc, f);
    fclose(f);
    scenario_t back;
    load_ok(&back, tmp_file("written.ini", text), NULL, 0);
    scenario_t a = *sc;
    memset(a.path, 0, sizeof a.path);
    memset(back.path, 0, sizeof back.path);
    memset(a.key_line, 0, sizeof a.key_line);
    memset(back.key_line, 0, sizeof back.key_line);
    ck_assert_int_eq(back.resolved, 1); /* read as a resolved configuration */
    a.resolved = back.resolved = 0;
    for (int j = 0; j < SCENARIO_SWEEP_KEYS; j++) /* the [sweep] lines too */
        a.sweep.keys[j].line = back.sweep.keys[j].line = 0;
    ck_assert_msg(memcmp(&a, &back, sizeof a) == 0, "round trip differs; written:\n%s", text);
    free(text);
}

START_TEST(write_then_load_gives_the_same_struct)
{
    scenario_t sc;
    load_ok(&sc, FIXTURE("full.ini"), NULL, 0);
    round_trip(&sc);
    load_ok(&sc, NULL, NULL, 0);
    round_trip(&sc);
    /* values with no short exact spelling */
    static const char *const sets[] = {"model.lr=0.0123",
                                       "model.momentum=0.333333",
                                       "cluster.bandwidth=3.3Gbps",
                                       "cluster.latency=1.7us",
                                       "cluster.uplink_bandwidth=123456789bps",
                                       "run.max_time=0.1ns",
                                       "data.partition=dirichlet:0.37",
                                       "cluster.device_flops=12.345Tf",
                                       "strategy.fraction=0.123456789",
                                       "data.partition=shards:3",
                                       "cluster.platform=fat-tree",
                                       "run.name=x y z"};
    load_ok(&sc, FIXTURE("full.ini"), sets, (int)(sizeof sets / sizeof sets[0]));
    round_trip(&sc);
}
END_TEST

START_TEST(lenient_syntax_that_is_still_exact)
{
    /* BOM, CRLF, indented keys (not inih continuation lines), ':' separators, inline
     * comments, and the name from the file's base name */
    scenario_t sc;
    load_ok(&sc,
            tmp_file("my-run.ini", "\xEF\xBB\xBF[run]\r\n  steps = 7 ; inline\r\n"
                                   "\tseed: 9\r\n# comment\r\n[model]\n    lr = 0.2\n"),
            NULL, 0);
    ck_assert_int_eq(sc.steps, 7);
    ck_assert_uint_eq(sc.seed, 9);
    ck_assert(sc.sgd.lr == 0.2f);
    ck_assert_str_eq(sc.name, "my-run");
    /* and the lines counted under all of it are the file's lines */
    expect_file_error("\xEF\xBB\xBF[run]\r\n  steps = 7\r\n\r\n\tsteps = 8\r\n",
                      ":4: run.steps: given twice (lines 2 and 4)");
}
END_TEST

static void count_key(void *ctx, const char *key, const char *text, double number)
{
    (void)key;
    (void)text;
    (void)number;
    ++*(int *)ctx;
}

START_TEST(names_and_markdown)
{
    ck_assert_str_eq(scenario_strategy_find("async-ps")->name, "async-ps");
    ck_assert_str_eq(scenario_strategy_find("fedavg")->name, "fedavg");
    ck_assert_str_eq(scenario_algorithm_name(SIM_ALLREDUCE_HALVING_DOUBLING), "halving-doubling");
    /* every key scenario_write prints has a row in the reference */
    char *md = NULL, *ini = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&md, &len);
    scenario_write_keys_markdown(f);
    fclose(f);
    scenario_t sc;
    scenario_defaults(&sc);
    f = open_memstream(&ini, &len);
    scenario_write(&sc, f);
    fclose(f);
    int keys = 0;
    for (char *line = strtok(ini, "\n"); line; line = strtok(NULL, "\n")) {
        char *eq = strstr(line, " = ");
        if (!eq)
            continue;
        char row[128];
        snprintf(row, sizeof row, "| `%.*s` |", (int)(eq - line), line);
        ck_assert_msg(strstr(md, row), "no row %s", row);
        keys++;
    }
    /* as many as the key table holds (its built-in keys and every registered strategy's
     * own), each strategy's own keys among them: counted from the table and the registry,
     * so that a new strategy's keys need no number changed here */
    int table = 0;
    scenario_foreach_key(&sc, count_key, &table);
    ck_assert_int_eq(keys, table);
    ck_assert_int_ge(keys, 150);
    for (const sim_strategy_t *const *st = scenario_strategies(); *st; st++)
        for (const sim_strategy_key_t *k = (*st)->own_keys; k && k->key; k++) {
            char row[128];
            snprintf(row, sizeof row, "| `%s` |", k->key);
            ck_assert_msg(strstr(md, row), "%s: no row for its key %s", (*st)->name, k->key);
        }
    ck_assert_ptr_nonnull(strstr(md, "| `steps` | `200` | an integer in [1, 1000000000] |"));
    ck_assert_ptr_nonnull(strstr(md, "| `a100` | NVIDIA A100 SXM4 40 GB | 19.5 | 156 | 312 | - "
                                     "| 40 | 1555 | 40 | 400 | 0.7 | 0.5 | 108 | 0.64425 | 0.5 | "
                                     "0.8 | 235 | - | 0.96 | - | 13.65Tf |"));
    free(md);
    free(ini);
}
END_TEST

/* ---- [faults] ---------------------------------------------------------------------------- */

static const char *const faults_good =
    "[strategy]\n"
    "kind = fedavg\n"
    "[faults]\n"
    "crash = worker-3 at 2s for 1s, server-0 at 5s\n"
    "link_down = node-2 at 1s until 3s\n"
    "link_degrade =   star_link_1 at 1s to 1Gbps for 2s   ; trailing blanks and a comment\n"
    "straggler = worker-1 x4, worker-2 x2 at 1s for 3s\n"
    "slowdown = uniform:1:3\n"
    "availability = 10s:0.5\n"
    "client_speed = 2Gf:0.3, 20Gf:0.7\n"
    "dropout = 0.3\n"
    "deadline = 5s\n"
    "over_select = 1.3\n"
    "mtbf = 100s\n"
    "mttr = 10s\n"
    "checkpoint_every = 50\n"
    "timeout = 2s\n";

START_TEST(faults_values_load_and_round_trip)
{
    scenario_t sc;
    load_ok(&sc, tmp_file("t.ini", faults_good), NULL, 0);
    /* event lists and distributions are kept as written, trimmed */
    ck_assert_str_eq(sc.crash, "worker-3 at 2s for 1s, server-0 at 5s");
    ck_assert_str_eq(sc.link_down, "node-2 at 1s until 3s");
    ck_assert_str_eq(sc.link_degrade, "star_link_1 at 1s to 1Gbps for 2s");
    ck_assert_str_eq(sc.straggler, "worker-1 x4, worker-2 x2 at 1s for 3s");
    ck_assert_str_eq(sc.slowdown, "uniform:1:3");
    ck_assert_str_eq(sc.availability, "10s:0.5");
    ck_assert_str_eq(sc.client_speed, "2Gf:0.3, 20Gf:0.7");
    ck_assert(sc.dropout == 0.3);
    ck_assert(sc.deadline == 5.0);
    ck_assert(sc.over_select == 1.3);
    ck_assert(sc.mtbf == 100.0);
    ck_assert(sc.mttr == 10.0);
    ck_assert_int_eq(sc.checkpoint_every, 50);
    ck_assert(sc.fault_timeout == 2.0);
    ck_assert_int_eq(scenario_has_faults(&sc), 1);
    ck_assert_int_eq(scenario_key_given(&sc, "faults.crash"), 1);
    ck_assert_int_eq(scenario_key_given(&sc, "faults.timeout"), 1);
    char *text = write_to_string(&sc);
    static const char *const lines[] = {
        "\ntimeout = 2s\ncrash = worker-3 at 2s for 1s, server-0 at 5s\n",
        "\nlink_down = node-2 at 1s until 3s\nlink_degrade = star_link_1 at 1s to 1Gbps for 2s\n",
        "\nstraggler = worker-1 x4, worker-2 x2 at 1s for 3s\nslowdown = uniform:1:3\n",
        "\nmtbf = 100s\nmttr = 10s\ncheckpoint_every = 50\ndropout = 0.3\ndeadline = 5s\n",
        "\nover_select = 1.3\navailability = 10s:0.5\nclient_speed = 2Gf:0.3, 20Gf:0.7\n",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        ck_assert_msg(strstr(text, lines[i]), "missing \"%s\" in:\n%s", lines[i], text);
    free(text);
    round_trip(&sc);

    /* each key alone makes a run a faulty one; an empty list is none */
    static const char *const one[] = {"faults.crash=worker-0 at 1s",
                                      "faults.link_down=node-0 at 1s",
                                      "faults.link_degrade=node-0 at 0s to 1Mbps",
                                      "faults.straggler=worker-0 x2",
                                      "faults.slowdown=lognormal:0.5",
                                      "faults.mtbf=1h",
                                      "faults.dropout=0.1",
                                      "faults.deadline=1s",
                                      "faults.over_select=1.5",
                                      "faults.availability=24h:0.3"};
    for (size_t i = 0; i < sizeof one / sizeof one[0]; i++) {
        load_ok(&sc, NULL, &one[i], 1);
        ck_assert_msg(scenario_has_faults(&sc), "%s", one[i]);
        round_trip(&sc);
    }
    static const char *const quiet[] = {"faults.crash=", "faults.link_down= none ",
                                        "faults.mttr=5s", "faults.checkpoint_every=10",
                                        "faults.timeout=3s"};
    load_ok(&sc, NULL, quiet, (int)(sizeof quiet / sizeof quiet[0]));
    ck_assert_str_eq(sc.crash, "none");
    ck_assert_str_eq(sc.link_down, "none");
    ck_assert_int_eq(scenario_has_faults(&sc), 0); /* nothing here fails by itself */
    round_trip(&sc);
}
END_TEST

/* Client devices: traces read relative to the scenario file and kept absolute, their
 * columns counted; each client's speed from the trace (row c mod rows), from FedScale's
 * time per sample, from classes or from a distribution (deterministic per client, with the
 * distribution's median); links per client only where the platform has them. */
START_TEST(client_devices_from_traces_and_distributions)
{
    tmp_file("devices.csv", "client,speed,up,down,latency\n"
                            "7,2Gf,1MBps,4MBps,40ms\n"
                            "3,8Gf,2MBps,8MBps,10ms\n");
    tmp_file("avail.csv", "client,start,end,period\n0,1h,2h,24h\n1,0s,30min,24h\n");
    const char *path = tmp_file("t.ini", "[cluster]\nplatform = edge\nworkers = 5\n"
                                         "[strategy]\nkind = fedavg\nclients = 5\nfraction = 0.2\n"
                                         "[faults]\ndevice_trace = devices.csv\n"
                                         "availability = trace:avail.csv\n");
    scenario_t sc;
    load_ok(&sc, path, NULL, 0);
    ck_assert_msg(sc.device_trace[0] == '/' && strstr(sc.device_trace, "/devices.csv"), "%s",
                  sc.device_trace);
    ck_assert_msg(!strncmp(sc.availability, "trace:/", 7), "%s", sc.availability);
    ck_assert_uint_eq(sc.device_trace_has,
                      SIM_DEVICE_SPEED | SIM_DEVICE_UP | SIM_DEVICE_DOWN | SIM_DEVICE_LATENCY);
    ck_assert_int_eq(scenario_has_client_devices(&sc), 1);
    ck_assert_int_eq(scenario_has_faults(&sc), 1); /* the availability trace */
    round_trip(&sc);
    sim_client_devices_t d;
    dt_err_t err = {""};
    ck_assert_int_eq(sim_client_devices_open(&d, &sc, 0, &err), DT_OK);
    /* rows in id order (3, 7), client c takes row c mod 2 */
    ck_assert(sim_client_speed(&d, 0) == 8e9 && sim_client_speed(&d, 1) == 2e9);
    ck_assert(sim_client_speed(&d, 4) == 8e9);
    double up, down, lat;
    ck_assert_uint_eq(sim_client_link(&d, 1, &up, &down, &lat),
                      SIM_DEVICE_UP | SIM_DEVICE_DOWN | SIM_DEVICE_LATENCY);
    ck_assert(up == 1e6 && down == 4e6 && fabs(lat - 0.04) < 1e-15);
    sim_client_devices_close(&d);

    /* FedScale's layout: speed = training FLOPs / (3 x ms per sample) */
    char fs[PATH_MAX + 64];
    snprintf(fs, sizeof fs, "faults.device_trace=%s",
             tmp_file("fs.csv", "client_id,computation,communication\n5,200,1000\n"));
    const char *fs_set[] = {fs};
    load_ok(&sc, path, fs_set, 1);
    ck_assert_int_eq(sim_client_devices_open(&d, &sc, 3e6, &err), DT_OK);
    ck_assert(fabs(sim_client_speed(&d, 2) - 1e6 / 0.2) < 1e-6);
    ck_assert_uint_eq(sim_client_link(&d, 0, &up, &down, &lat), SIM_DEVICE_UP | SIM_DEVICE_DOWN);
    ck_assert(up == 1000 * 128.0 && down == up);
    sim_client_devices_close(&d);

    /* distributions, without a trace: the same draws on every open, a median of 10 Gf */
    static const char *const dist[] = {
        "faults.device_trace=none", "faults.client_speed=lognormal:10Gf:1",
        "faults.client_up=uniform:1MBps:3MBps", "faults.client_latency=choice:10ms@0.5,90ms@0.5"};
    load_ok(&sc, path, dist, 4);
    sim_client_devices_t d2;
    ck_assert_int_eq(sim_client_devices_open(&d, &sc, 0, &err), DT_OK);
    ck_assert_int_eq(sim_client_devices_open(&d2, &sc, 0, &err), DT_OK);
    enum { N = 4001 };
    static double v[N];
    int fast = 0, near = 0;
    for (long c = 0; c < N; c++) {
        v[c] = sim_client_speed(&d, c);
        ck_assert(v[c] == sim_client_speed(&d2, c));
        fast += v[c] > 10e9;
        ck_assert_uint_eq(sim_client_link(&d, c, &up, &down, &lat),
                          SIM_DEVICE_UP | SIM_DEVICE_LATENCY);
        ck_assert(up >= 1e6 && up <= 3e6);
        ck_assert(lat == 0.01 || lat == 0.09);
        near += lat == 0.01;
    }
    ck_assert_msg(fast > N / 2 - 100 && fast < N / 2 + 100, "%d of %d above the median", fast, N);
    ck_assert_msg(near > N / 2 - 100 && near < N / 2 + 100, "%d of %d at 10ms", near, N);
    sim_client_devices_close(&d);
    sim_client_devices_close(&d2);

    /* device classes: a share of 0.3 at 2 Gf */
    static const char *const cls[] = {"faults.client_speed=2Gf:0.3, 20Gf:0.7"};
    load_ok(&sc, NULL, cls, 0);
    scenario_t sc2;
    static const char *const cls2[] = {"strategy.kind=fedavg",
                                       "faults.client_speed=2Gf:0.3, 20Gf:0.7"};
    load_ok(&sc2, NULL, cls2, 2);
    ck_assert_int_eq(scenario_has_faults(&sc2), 0); /* devices are not faults */
    ck_assert_int_eq(sim_client_devices_open(&d, &sc2, 0, &err), DT_OK);
    int slow = 0;
    for (long c = 0; c < N; c++)
        slow += sim_client_speed(&d, c) == 2e9;
    ck_assert_msg(abs(slow - 3 * N / 10) < 100, "%d of %d at 2 Gf", slow, N);
    sim_client_devices_close(&d);
}
END_TEST

START_TEST(client_devices_bad_input_names_file_line_and_key)
{
    tmp_file("bad.csv", "client,speed,up\n0,1Gf,2Mbps\n1,1Gf,5MB\n");
    tmp_file("ok.csv", "client,speed,up\n0,1Gf,2Mbps\n");
    tmp_file("av.csv", "client,start,end\n0,1h,2h\n0,90min,3h\n");
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"[strategy]\nkind = fedavg\n[faults]\ndevice_trace = bad.csv\n",
         ":4: faults.device_trace: "},
        {"[strategy]\nkind = fedavg\n[faults]\ndevice_trace = bad.csv\n",
         "/bad.csv:3: column up: unknown unit \"MB\" in bandwidth \"5MB\""},
        {"[strategy]\nkind = fedavg\n[faults]\navailability = trace:av.csv\n",
         "/av.csv:3: column start: client 0's window [1.5h, 3h) overlaps"},
        {"[strategy]\nkind = fedavg\n[faults]\ndevice_trace = missing.csv\n",
         ":4: faults.device_trace: cannot read \"missing.csv\""},
        {"[faults]\nclient_speed = lognormal:1Gf:0.5\n",
         ":2: faults.client_speed: client devices describe federated clients: client_speed "
         "needs fedavg, fedbuff or hierfl, not sync-ps"},
        {"[strategy]\nkind = fedavg\n[faults]\nclient_up = lognormal:5Mbps:9\n",
         ":4: faults.client_up: lognormal SIGMA \"9\" is not a number in [0, 5]"},
        {"[strategy]\nkind = fedavg\n[faults]\nclient_latency = 5Mbps\n",
         ":4: faults.client_latency: "},
        {"[strategy]\nkind = fedavg\n[faults]\nclient_up = 5Mbps\n",
         ":4: faults.client_up: per-client links need the edge platform"},
        {"[cluster]\nplatform = edge\nworkers = 4\n[strategy]\nkind = fedavg\nclients = 8\n"
         "fraction = 0.5\n[faults]\nclient_down = 5Mbps\n",
         ":3: cluster.workers: per-client links need a host per client (client c trains on "
         "host c mod workers): 4 hosts for 8 clients (expected workers >= clients; "
         "faults.client_down at line 9)"},
        {"[cluster]\nplatform = edge\nworkers = 8\n[strategy]\nkind = fedbuff\nclients = 8\n"
         "concurrency = 4\nfraction = 0.5\n[faults]\ndevice_trace = ok.csv\n",
         ":10: faults.device_trace: per-client links need fedavg or hierfl"},
        {"[cluster]\nplatform = edge\nworkers = 8\n[strategy]\nkind = fedavg\nclients = 8\n"
         "fraction = 0.5\n[faults]\ndevice_trace = ok.csv\nclient_speed = 2Gf:1\n",
         ":10: faults.client_speed: faults.device_trace ("},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_load_error(cases[i].text, cases[i].want);
}
END_TEST

START_TEST(faults_bad_values_name_line_and_key)
{
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"[faults]\ncrash = worker-3 at 2s until 1s\n",
         ":2: faults.crash: crash item 1 \"worker-3 at 2s until 1s\": \"until 1s\": the interval "
         "ends before it starts (at 2s)"},
        {"[faults]\ntimeout = 2s\nlink_down = node-1 at 1s for 0s\n",
         ":3: faults.link_down: link_down item 1 \"node-1 at 1s for 0s\": \"for 0s\": the "
         "interval must last more than 0 s"},
        {"[faults]\ndropout = 1.5\n",
         ":2: faults.dropout: 1.5 is out of range (expected a number in [0, 1])"},
        {"[faults]\ndropout = -0.1\n",
         ":2: faults.dropout: -0.1 is out of range (expected a number in [0, 1])"},
        {"[faults]\ncrash = worker-3 at 2parsecs\n",
         ":2: faults.crash: crash item 1 \"worker-3 at 2parsecs\": unknown unit \"parsecs\" in "
         "time \"2parsecs\" (expected one of ns, us, ms, s, min, h)"},
        /* the item is numbered and quoted trimmed */
        {"[faults]\ncrash = worker-0 at 1s,  worker-3 for 1s \n",
         ":2: faults.crash: crash item 2 \"worker-3 for 1s\": \"worker-3\" lacks \"at TIME\" "
         "(expected TARGET at TIME [for DURATION | until TIME])"},
        {"[faults]\nlink_degrade = node-1 at 1s for 2s\n",
         ":2: faults.link_degrade: link_degrade item 1 \"node-1 at 1s for 2s\": \"node-1\" lacks "
         "\"to BANDWIDTH\" or \"to LATENCY\" (expected LINK at TIME to BANDWIDTH|LATENCY [for "
         "DURATION | until TIME])"},
        /* "to" a latency: a time; neither a bandwidth nor a time */
        {"[faults]\nlink_degrade = node-1 at 1s to 1e9s\n",
         ":2: faults.link_degrade: link_degrade item 1 \"node-1 at 1s to 1e9s\": latency 1e9s is "
         "beyond what SimGrid's solver computes with (expected 0, or 1ns to 1000s)"},
        {"[faults]\nlink_degrade = node-1 at 1s to fast\n",
         ":2: faults.link_degrade: link_degrade item 1 \"node-1 at 1s to fast\": \"fast\" is "
         "neither a bandwidth such as 100Mbps nor a latency such as 50ms"},
        {"[faults]\nlink_degrade = node-1 at 1s to 0Gbps\n",
         ":2: faults.link_degrade: link_degrade item 1 \"node-1 at 1s to 0Gbps\": bandwidth 0Gbps "
         "must be > 0 (use link_down for a dead link)"},
        {"[faults]\nlink_degrade = node-1 at 1s to 1e-300Bps\n",
         ":2: faults.link_degrade: link_degrade item 1 \"node-1 at 1s to 1e-300Bps\": bandwidth "
         "1e-300Bps is beyond what SimGrid's solver computes with (expected 1kbps to 1000TBps)"},
        {"[faults]\nstraggler = worker-1 x0\n",
         ":2: faults.straggler: straggler item 1 \"worker-1 x0\": \"x0\" is not a slowdown "
         "factor (expected xFACTOR with FACTOR in (0, 1e6], e.g. x4 or x0.5)"},
        {"[faults]\nstraggler = worker-1 xabc\n",
         ":2: faults.straggler: straggler item 1 \"worker-1 xabc\": \"xabc\" is not a slowdown "
         "factor (expected xFACTOR with FACTOR in (0, 1e6], e.g. x4 or x0.5)"},
        {"[faults]\nstraggler = worker-1 4\n",
         ":2: faults.straggler: straggler item 1 \"worker-1 4\": \"4\" is not a slowdown factor "
         "(expected xFACTOR, e.g. x4)"},
        {"[faults]\nstraggler = worker-1 x2 at 1s until 3s for 1s\n",
         ":2: faults.straggler: straggler item 1 \"worker-1 x2 at 1s until 3s for 1s\": "
         "unexpected \"for\" (expected TARGET xFACTOR [at TIME] [for DURATION | until TIME])"},
        {"[faults]\nclient_speed = 2Gf:0.3, 20Gf:0.6\n",
         ":2: faults.client_speed: shares sum to 0.9, not 1"},
        {"[faults]\nclient_speed = 2Gf:0.5, 20G:0.5\n",
         ":2: faults.client_speed: class 2: unknown unit \"G\" in speed \"20G\" (expected one of "
         "f, kf, Mf, Gf, Tf, Pf, flops, kflops, Mflops, Gflops, Tflops, Pflops)"},
        {"[faults]\navailability = 10s:0\n",
         ":2: faults.availability: availability fraction \"0\" is not in (0, 1]"},
        {"[faults]\navailability = 10:0.5\n",
         ":2: faults.availability: availability period: missing unit in time \"10\" (expected "
         "one of ns, us, ms, s, min, h)"},
        {"[faults]\nslowdown = uniform:3:1\n",
         ":2: faults.slowdown: uniform:3:1 needs 0 < LO <= HI"},
        {"[faults]\nslowdown = lognormal:6\n",
         ":2: faults.slowdown: lognormal:6 needs 0 < SIGMA <= 5"},
        {"[faults]\nslowdown = gauss\n",
         ":2: faults.slowdown: \"gauss\" is not a slowdown distribution (expected none, "
         "uniform:LO:HI or lognormal:SIGMA)"},
        {"[faults]\ntimeout = 0s\n", ":2: faults.timeout: \"0s\" is out of range (expected > 0)"},
        {"[faults]\nover_select = 0.5\n",
         ":2: faults.over_select: 0.5 is out of range (expected a number in [1, 10])"},
        {"[faults]\ndeadline = 5\n",
         ":2: faults.deadline: missing unit in time \"5\" (expected one of ns, us, ms, s, min, "
         "h)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_file_error(cases[i].text, cases[i].want);
}
END_TEST

START_TEST(faults_bad_values_by_set)
{
    expect_set_error("faults.crash=worker-3 at 2s until 1s",
                     "--set faults.crash: crash item 1 \"worker-3 at 2s until 1s\": \"until 1s\": "
                     "the interval ends before it starts (at 2s)");
    expect_set_error("faults.link_down=node-1 at 1s for 0s",
                     "--set faults.link_down: link_down item 1 \"node-1 at 1s for 0s\": \"for "
                     "0s\": the interval must last more than 0 s");
    expect_set_error("faults.dropout=1.5",
                     "--set faults.dropout: 1.5 is out of range (expected a number in [0, 1])");
    expect_set_error("faults.dropout=-0.1",
                     "--set faults.dropout: -0.1 is out of range (expected a number in [0, 1])");
    expect_set_error("faults.crash=worker-3 at 2parsecs",
                     "--set faults.crash: crash item 1 \"worker-3 at 2parsecs\": unknown unit "
                     "\"parsecs\" in time \"2parsecs\" (expected one of ns, us, ms, s, min, h)");
    expect_set_error("faults.crash=worker-3",
                     "--set faults.crash: crash item 1 \"worker-3\": \"worker-3\" lacks \"at "
                     "TIME\" (expected TARGET at TIME [for DURATION | until TIME])");
    expect_set_error("faults.straggler=worker-1 x0",
                     "--set faults.straggler: straggler item 1 \"worker-1 x0\": \"x0\" is not a "
                     "slowdown factor (expected xFACTOR with FACTOR in (0, 1e6], e.g. x4 or x0.5)");
    expect_set_error(
        "faults.straggler=worker-1 xabc",
        "--set faults.straggler: straggler item 1 \"worker-1 xabc\": \"xabc\" is not "
        "a slowdown factor (expected xFACTOR with FACTOR in (0, 1e6], e.g. x4 or x0.5)");
    expect_set_error("faults.client_speed=2Gf:0.3, 20Gf:0.8",
                     "--set faults.client_speed: shares sum to 1.1, not 1");
    expect_set_error("faults.availability=10s:0",
                     "--set faults.availability: availability fraction \"0\" is not in (0, 1]");
    expect_set_error("faults.slowdown=uniform:3:1",
                     "--set faults.slowdown: uniform:3:1 needs 0 < LO <= HI");
    /* through scenario_load: a bad --set over a good file names the --set */
    static const char *const sets[] = {"faults.timeout=3s", "faults.crash=worker-0 at 1s,"};
    scenario_t sc;
    dt_err_t err;
    ck_assert_int_eq(scenario_load(&sc, tmp_file("t.ini", faults_good), sets, 2, &err),
                     DT_ERR_INPUT);
    ck_assert_str_eq(err.msg, "--set faults.crash: crash item 2 \"\": empty item (expected "
                              "TARGET at TIME [for DURATION | until TIME])");
}
END_TEST

/* Parses text as one event list, expecting DT_OK; returns the item count. */
static size_t specs_ok(sim_fault_kind_t kind, const char *text, sim_fault_spec_t *out, size_t cap)
{
    size_t n = 99;
    dt_err_t err = {""};
    dt_status st = sim_fault_spec_parse(kind, text, out, cap, &n, &err);
    ck_assert_msg(st == DT_OK, "%s: %s", text, err.msg);
    return n;
}

START_TEST(fault_spec_parse_fields)
{
    sim_fault_spec_t s[SIM_FAULT_MAX];
    ck_assert_int_eq(specs_ok(SIM_FAULT_CRASH, "worker-3 at 2s for 1s, server-0 at 5s", s, 8), 2);
    ck_assert_int_eq(s[0].kind, SIM_FAULT_CRASH);
    ck_assert_str_eq(s[0].target, "worker-3");
    ck_assert(s[0].at == 2.0 && s[0].until == 3.0);
    ck_assert_str_eq(s[1].target, "server-0");
    ck_assert(s[1].at == 5.0);
    ck_assert(isinf(s[1].until) && s[1].until > 0); /* no for/until: never recovers */

    ck_assert_int_eq(specs_ok(SIM_FAULT_LINK_DOWN, "node-2 at 1500ms until 3s", s, 8), 1);
    ck_assert_int_eq(s[0].kind, SIM_FAULT_LINK_DOWN);
    ck_assert_str_eq(s[0].target, "node-2");
    ck_assert(s[0].at == 1.5 && s[0].until == 3.0);

    ck_assert_int_eq(specs_ok(SIM_FAULT_LINK_DEGRADE,
                              "star_link_1 at 1s to 1Gbps for 2s, "
                              "node-0_UP at 0s to 800MBps",
                              s, 8),
                     2);
    ck_assert_str_eq(s[0].target, "star_link_1");
    ck_assert(s[0].at == 1.0 && s[0].until == 3.0);
    ck_assert(s[0].value == 1.25e8); /* bytes/s */
    ck_assert_str_eq(s[1].target, "node-0_UP");
    ck_assert(s[1].at == 0.0 && isinf(s[1].until) && s[1].value == 8e8);

    ck_assert_int_eq(specs_ok(SIM_FAULT_STRAGGLER,
                              "worker-1 x4, worker-2 x2 at 1s for 3s, "
                              "host-7 x0.5 until 2min",
                              s, 8),
                     3);
    ck_assert_int_eq(s[0].kind, SIM_FAULT_STRAGGLER);
    ck_assert_str_eq(s[0].target, "worker-1");
    ck_assert(s[0].value == 4.0 && s[0].at == 0.0 && isinf(s[0].until)); /* always */
    ck_assert_str_eq(s[1].target, "worker-2");
    ck_assert(s[1].value == 2.0 && s[1].at == 1.0 && s[1].until == 4.0);
    ck_assert_str_eq(s[2].target, "host-7");
    ck_assert(s[2].value == 0.5 && s[2].at == 0.0 && s[2].until == 120.0);

    /* "none", empty and blank lists have no items */
    ck_assert_int_eq(specs_ok(SIM_FAULT_CRASH, "none", s, 8), 0);
    ck_assert_int_eq(specs_ok(SIM_FAULT_LINK_DOWN, "", s, 8), 0);
    ck_assert_int_eq(specs_ok(SIM_FAULT_STRAGGLER, "  none", s, 8), 0);
    /* exactly cap items fit */
    ck_assert_int_eq(specs_ok(SIM_FAULT_CRASH, "a at 1s, b at 2s", s, 2), 2);
    ck_assert_str_eq(s[1].target, "b");
}
END_TEST

START_TEST(fault_spec_parse_errors)
{
    sim_fault_spec_t s[4];
    size_t n;
    dt_err_t err;
    ck_assert_int_eq(
        sim_fault_spec_parse(SIM_FAULT_CRASH, "a at 1s, b at 2s, c at 3s", s, 2, &n, &err),
        DT_ERR_INPUT);
    ck_assert_str_eq(err.msg, "more than 2 items");
    ck_assert_int_eq(sim_fault_spec_parse(SIM_FAULT_CRASH, "none, a at 1s", s, 4, &n, &err),
                     DT_ERR_INPUT);
    ck_assert_str_eq(err.msg, "crash item 1 \"none\": \"none\" lacks \"at TIME\" (expected TARGET "
                              "at TIME [for DURATION | until TIME])");
    ck_assert_int_eq(sim_fault_spec_parse(SIM_FAULT_LINK_DOWN, "a at 2s until 2s", s, 4, &n, &err),
                     DT_ERR_INPUT);
    ck_assert_str_eq(err.msg, "link_down item 1 \"a at 2s until 2s\": \"until 2s\": the interval "
                              "ends when it starts (at 2s)");
    ck_assert_int_eq(sim_fault_spec_parse(SIM_FAULT_CRASH, "a at", s, 4, &n, &err), DT_ERR_INPUT);
    ck_assert_str_eq(err.msg, "crash item 1 \"a at\": \"at\" needs a time (expected TARGET at TIME "
                              "[for DURATION | until TIME])");
    ck_assert_int_eq(sim_fault_spec_parse(SIM_FAULT_CRASH, "a at -1s", s, 4, &n, &err),
                     DT_ERR_INPUT);
    ck_assert_str_eq(err.msg, "crash item 1 \"a at -1s\": negative time \"-1s\"");
    ck_assert_int_eq(sim_fault_spec_parse(SIM_FAULT_STRAGGLER, "w", s, 4, &n, &err), DT_ERR_INPUT);
    ck_assert_str_eq(err.msg, "straggler item 1 \"w\": \"w\" lacks its factor (expected TARGET "
                              "xFACTOR [at TIME] [for DURATION | until TIME])");
    char name[SIM_FAULT_TARGET + 1], text[SIM_FAULT_TARGET + 16], want[256];
    memset(name, 'n', SIM_FAULT_TARGET);
    name[SIM_FAULT_TARGET] = '\0';
    snprintf(text, sizeof text, "%s at 1s", name);
    ck_assert_int_eq(sim_fault_spec_parse(SIM_FAULT_CRASH, text, s, 4, &n, &err), DT_ERR_INPUT);
    snprintf(want, sizeof want, "crash item 1 \"%s\": name \"%s\" is longer than %d characters",
             text, name, SIM_FAULT_TARGET - 1);
    ck_assert_str_eq(err.msg, want);
    name[SIM_FAULT_TARGET - 1] = '\0'; /* the longest name that fits */
    snprintf(text, sizeof text, "%s at 1s", name);
    ck_assert_int_eq(specs_ok(SIM_FAULT_CRASH, text, s, 4), 1);
    ck_assert_str_eq(s[0].target, name);
}
END_TEST

START_TEST(fault_distributions_parse)
{
    dt_err_t err;
    sim_slowdown_t sd;
    ck_assert_int_eq(sim_slowdown_parse("uniform:1:3", &sd, &err), DT_OK);
    ck_assert(sd.kind == SIM_SLOWDOWN_UNIFORM && sd.a == 1.0 && sd.b == 3.0);
    ck_assert_int_eq(sim_slowdown_parse("lognormal:0.25", &sd, &err), DT_OK);
    ck_assert(sd.kind == SIM_SLOWDOWN_LOGNORMAL && sd.a == 0.25);
    ck_assert_int_eq(sim_slowdown_parse("none", &sd, &err), DT_OK);
    ck_assert_int_eq(sd.kind, SIM_SLOWDOWN_NONE);
    ck_assert_int_eq(sim_slowdown_parse("uniform:1", &sd, &err), DT_ERR_INPUT);
    ck_assert_str_eq(err.msg, "\"uniform:1\" is not a slowdown distribution (expected none, "
                              "uniform:LO:HI or lognormal:SIGMA)");

    sim_availability_t av;
    ck_assert_int_eq(sim_availability_parse("10s:0.5", &av, &err), DT_OK);
    ck_assert(av.period == 10.0 && av.fraction == 0.5);
    ck_assert_int_eq(sim_availability_parse("24h:1", &av, &err), DT_OK);
    ck_assert(av.period == 86400.0 && av.fraction == 1.0);
    ck_assert_int_eq(sim_availability_parse("always", &av, &err), DT_OK);
    ck_assert(av.period == 0.0);
    ck_assert_int_eq(sim_availability_parse("0s:0.5", &av, &err), DT_ERR_INPUT);
    ck_assert_str_eq(err.msg, "availability period must be > 0");
    ck_assert_int_eq(sim_availability_parse("10s", &av, &err), DT_ERR_INPUT);
    ck_assert_str_eq(err.msg, "\"10s\" is not an availability (expected always, "
                              "PERIOD:FRACTION, e.g. 24h:0.3, or trace:PATH)");

    sim_client_classes_t cc;
    ck_assert_int_eq(sim_client_classes_parse("2Gf:0.3, 20Gf:0.7", &cc, &err), DT_OK);
    ck_assert_int_eq(cc.n, 2);
    ck_assert(cc.speed[0] == 2e9 && cc.share[0] == 0.3);
    ck_assert(cc.speed[1] == 2e10 && cc.share[1] == 0.7);
    ck_assert_int_eq(sim_client_classes_parse("same", &cc, &err), DT_OK);
    ck_assert_int_eq(cc.n, 0);
    /* 0.1 ten times is not exactly 1 in binary: the sum is compared with a tolerance */
    ck_assert_int_eq(sim_client_classes_parse("1Gf:0.1,2Gf:0.1,3Gf:0.1,4Gf:0.1,5Gf:0.1,6Gf:0.1,"
                                              "7Gf:0.1,8Gf:0.1,9Gf:0.1,10Gf:0.1",
                                              &cc, &err),
                     DT_OK);
    ck_assert_int_eq(cc.n, 10);
    ck_assert_int_eq(sim_client_classes_parse("2Gf:0.5, 2Gf", &cc, &err), DT_ERR_INPUT);
    ck_assert_str_eq(err.msg, "class \"2Gf\" is not SPEED:SHARE (e.g. 20Gf:0.5)");
    ck_assert_int_eq(sim_client_classes_parse("0Gf:1", &cc, &err), DT_ERR_INPUT);
    ck_assert_str_eq(err.msg, "class 1: speed must be > 0");
    ck_assert_int_eq(sim_client_classes_parse("1Gf:0.5, 2Gf:1.5", &cc, &err), DT_ERR_INPUT);
    ck_assert_str_eq(err.msg, "class 2: share \"1.5\" is not in (0, 1]");
}
END_TEST

/* ---- [sweep] ---------------------------------------------------------------------------- */

static void sweep_run_ok(const scenario_t *sc, long i, scenario_t *run)
{
    dt_err_t err = {""};
    dt_status st = scenario_sweep_run(sc, i, run, &err);
    ck_assert_msg(st == DT_OK, "run %ld: %s", i, err.msg);
}

START_TEST(sweep_expands_in_nested_loop_order)
{
    scenario_t sc, run;
    load_ok(&sc, FIXTURE("sweep.ini"), NULL, 0);
    ck_assert_int_eq(sc.sweep.n_keys, 4);
    ck_assert_int_eq(scenario_sweep_count(&sc), 2 * 3 * 2 * 2);
    /* the base keeps the defaults of the swept keys */
    ck_assert_str_eq(sc.strategy->name, "sync-ps");
    ck_assert(sc.bandwidth == 1.25e9);
    ck_assert_int_eq(scenario_key_given(&sc, "cluster.bandwidth"), 0);
    char tiny[PATH_MAX];
    ck_assert_ptr_nonnull(realpath(FIXTURE("tiny.xml"), tiny));

    sweep_run_ok(&sc, 0, &run);
    ck_assert_str_eq(run.name, "demo/kind=sync-ps,bandwidth=1Gbps,platform=star,hidden=256,128");
    ck_assert_str_eq(run.strategy->name, "sync-ps");
    ck_assert(run.bandwidth == 1.25e8);
    ck_assert_int_eq(run.platform, SIM_PLATFORM_STAR);
    ck_assert_int_eq(run.model.n_hidden, 2);
    ck_assert_int_eq(run.model.hidden[0], 256);
    ck_assert_int_eq(run.model.hidden[1], 128);
    ck_assert_int_eq(scenario_key_given(&run, "cluster.bandwidth"), 1);
    ck_assert_int_eq(run.workers, 4); /* the rest from the base */
    ck_assert_int_eq(run.steps, 20);

    sweep_run_ok(&sc, 1, &run); /* the last key varies fastest */
    ck_assert_str_eq(run.name, "demo/kind=sync-ps,bandwidth=1Gbps,platform=star,hidden=64");
    ck_assert_int_eq(run.model.n_hidden, 1);
    ck_assert_int_eq(run.model.hidden[0], 64);
    ck_assert_int_eq(run.model.hidden[1], 0);

    sweep_run_ok(&sc, 2, &run); /* a path is named by its last component */
    ck_assert_str_eq(run.name,
                     "demo/kind=sync-ps,bandwidth=1Gbps,platform=tiny.xml,hidden=256,128");
    ck_assert_int_eq(run.platform, SIM_PLATFORM_FILE);
    ck_assert_str_eq(run.platform_file, tiny);

    sweep_run_ok(&sc, 4, &run);
    ck_assert_str_eq(run.name, "demo/kind=sync-ps,bandwidth=10Gbps,platform=star,hidden=256,128");
    ck_assert(run.bandwidth == 1.25e9);

    sweep_run_ok(&sc, 12, &run);
    ck_assert_str_eq(run.name, "demo/kind=allreduce,bandwidth=1Gbps,platform=star,hidden=256,128");
    ck_assert_str_eq(run.strategy->name, "allreduce");

    sweep_run_ok(&sc, 23, &run);
    ck_assert_str_eq(run.name, "demo/kind=allreduce,bandwidth=100Gbps,platform=tiny.xml,hidden=64");
    ck_assert_str_eq(run.strategy->name, "allreduce");
    ck_assert(run.bandwidth == 1.25e10);
    ck_assert_int_eq(run.platform, SIM_PLATFORM_FILE);
    ck_assert_int_eq(run.model.hidden[0], 64);

    /* a run is written as a plain scenario: its values in their sections, no [sweep] */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    scenario_write(&run, f);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(text, "\nkind = allreduce\n"));
    ck_assert_ptr_nonnull(strstr(text, "\nbandwidth = 100Gbps\n"));
    ck_assert_ptr_nonnull(strstr(text, "\nhidden = 64\n"));
    ck_assert_ptr_null(strstr(text, "[sweep]"));
    scenario_t back;
    load_ok(&back, tmp_file("run.ini", text), NULL, 0);
    ck_assert_str_eq(back.name, run.name);
    ck_assert(back.bandwidth == run.bandwidth);
    ck_assert_int_eq(scenario_sweep_count(&back), 1);
    free(text);

    /* without [sweep]: one run, the scenario itself */
    load_ok(&sc, FIXTURE("full.ini"), NULL, 0);
    ck_assert_int_eq(scenario_sweep_count(&sc), 1);
    sweep_run_ok(&sc, 0, &run);
    ck_assert_int_eq(memcmp(&sc, &run, sizeof sc), 0);
}
END_TEST

START_TEST(sweep_values_quoted_trimmed_and_named)
{
    scenario_t sc, run;
    /* the name comes from the file; values are named as scenario_write writes them */
    load_ok(&sc,
            tmp_file("grid.ini", "[sweep]\nmodel.conv = \"8,16\" , \" 4 , 8 \"\n"
                                 "cluster.latency = 1e3 ms,  5us\n"
                                 "cluster.network_model = cm02, LV08\n"),
            NULL, 0);
    ck_assert_int_eq(scenario_sweep_count(&sc), 8);
    sweep_run_ok(&sc, 0, &run);
    ck_assert_str_eq(run.name, "grid/conv=8,16,latency=1s,network_model=CM02");
    ck_assert_int_eq(run.model.conv[0], 8);
    ck_assert_int_eq(run.model.conv[1], 16);
    ck_assert(run.latency == 1.0);
    ck_assert_int_eq(run.network_model, SIM_NET_CM02);
    sweep_run_ok(&sc, 7, &run);
    ck_assert_str_eq(run.name, "grid/conv=4,8,latency=5us,network_model=LV08");
    ck_assert_int_eq(run.model.conv[0], 4);
    ck_assert(run.latency == 5e-6);
    /* --set applies to the base, under every run */
    static const char *const sets[] = {"run.steps=7", "run.name=g"};
    load_ok(&sc, tmp_file("grid.ini", "[sweep]\nrun.seed = 1, 2\n"), sets, 2);
    sweep_run_ok(&sc, 1, &run);
    ck_assert_str_eq(run.name, "g/seed=2");
    ck_assert_uint_eq(run.seed, 2);
    ck_assert_int_eq(run.steps, 7);
    /* an empty [sweep] is no sweep */
    load_ok(&sc, tmp_file("grid.ini", "[sweep]\n; nothing yet\n"), NULL, 0);
    ck_assert_int_eq(sc.sweep.n_keys, 0);
    ck_assert_int_eq(scenario_sweep_count(&sc), 1);
}
END_TEST

START_TEST(sweep_bad_values_name_line_key_and_value)
{
    expect_file_error("[run]\nsteps = 5\n\n[sweep]\ncluster.bandwidth = 1Gbps, 10Gbps, 10Gbs\n",
                      ":5: sweep cluster.bandwidth: value 3 \"10Gbs\": unknown unit \"Gbs\" in "
                      "bandwidth \"10Gbs\" (expected one of bps, kbps, Mbps, Gbps, Tbps, Bps, "
                      "kBps, MBps, GBps, TBps)");
    expect_file_errorf("[sweep]\nstrategy.kind = sync-ps, ps\n",
                       ":2: sweep strategy.kind: value 2 \"ps\": unknown value \"ps\" "
                       "(expected one of %s)",
                       strategy_names(0, NULL));
    expect_file_error("[sweep]\ncluster.workers = 0, 4\n",
                      ":2: sweep cluster.workers: value 1 \"0\": 0 is out of range (expected an "
                      "integer in [1, 100000])");
    expect_file_error("[sweep]\nmodel.hidden = \"256,128\", \"256,,128\"\n",
                      ":2: sweep model.hidden: value 2 \"256,,128\": bad hidden sizes "
                      "\"256,,128\" (expected comma-separated integers in [1, 1048576], e.g. "
                      "256,128)");
    expect_file_error("[sweep]\ncluster.bandwidth = 1Gbps, 1000Mbps\n",
                      ":2: sweep cluster.bandwidth: value 2 \"1000Mbps\": repeats value 1 (both "
                      "are 1Gbps)");
    expect_file_error("[sweep]\nfaults.crash = \"worker-0 at 1s\", \"worker-1 at 1s until 0.5s\"\n",
                      ":2: sweep faults.crash: value 2 \"worker-1 at 1s until 0.5s\": crash item 1 "
                      "\"worker-1 at 1s until 0.5s\": \"until 0.5s\": the interval ends before "
                      "it starts (at 1s)");
    expect_file_error("[sweep]\nfaults.dropout = 0.1, 1.5\n",
                      ":2: sweep faults.dropout: value 2 \"1.5\": 1.5 is out of range (expected a "
                      "number in [0, 1])");
    expect_file_error("[sweep]\ncluster.device = a100, custom\n",
                      ":2: sweep cluster.device: value 2 \"custom\": custom needs a speed: sweep "
                      "cluster.device_flops instead (it makes the device custom)");
    /* the list itself */
    expect_file_error("[sweep]\ncluster.bandwidth =\n",
                      ":2: sweep cluster.bandwidth: empty list (expected values separated by "
                      "commas, e.g. cluster.bandwidth = 1Gbps, 10Gbps)");
    expect_file_error("[sweep]\ncluster.bandwidth = 1Gbps,, 2Gbps\n",
                      ":2: sweep cluster.bandwidth: value 2 is empty (expected values separated "
                      "by commas; quote a value that contains one: \"256,128\")");
    expect_file_error("[sweep]\ncluster.bandwidth = 1Gbps, 2Gbps,\n",
                      ":2: sweep cluster.bandwidth: value 3 is empty (expected values separated "
                      "by commas; quote a value that contains one: \"256,128\")");
    expect_file_error("[sweep]\nmodel.hidden = 64, \"256,128\n",
                      ":2: sweep model.hidden: value 2: no closing quote");
    expect_file_error("[sweep]\nmodel.hidden = \"256,128\"4, 64\n",
                      ":2: sweep model.hidden: value 1: text after the closing quote");
    expect_file_error("[sweep]\nmodel.hidden = 64, 256\"128\"\n",
                      ":2: sweep model.hidden: value 2: a quote inside a value (quote whole "
                      "values: \"256,128\")");
}
END_TEST

START_TEST(sweep_linked_keys_and_short_names)
{
    /* keys of one line move together; lines are crossed; a key name alone names its one
     * section's key */
    scenario_t sc, run;
    dt_err_t err;
    load_ok(&sc,
            tmp_file("t.ini", "[sweep]\n"
                              "kind, platform, lr = (sync-ps, star, 0.2), (fedavg,edge,0.05),"
                              " (fedavg, edge, 0.1)\n"
                              "bandwidth = 1Gbps, 10Gbps\n"),
            NULL, 0);
    ck_assert_int_eq(scenario_sweep_count(&sc), 6);
    ck_assert_int_eq(scenario_sweep_run(&sc, 0, &run, &err), DT_OK);
    ck_assert_str_eq(run.name, "t/kind=sync-ps,platform=star,lr=0.2,bandwidth=1Gbps");
    ck_assert_int_eq(scenario_sweep_run(&sc, 3, &run, &err), DT_OK);
    ck_assert_str_eq(run.strategy->name, "fedavg");
    ck_assert_int_eq(run.platform, SIM_PLATFORM_EDGE);
    ck_assert(run.sgd.lr == 0.05f && run.bandwidth == 1.25e9);
    ck_assert_int_eq(scenario_sweep_run(&sc, 4, &run, &err), DT_OK);
    ck_assert(run.sgd.lr == 0.1f && run.bandwidth == 1.25e8);
    /* written back as one linked line, which loads to the same runs */
    char *text = write_to_string(&sc);
    ck_assert_ptr_nonnull(strstr(text, "strategy.kind, cluster.platform, model.lr = (sync-ps, "
                                       "star, 0.2), (fedavg, edge, 0.05), (fedavg, edge, 0.1)"));
    scenario_t back;
    load_ok(&back, tmp_file("back.ini", text), NULL, 0);
    ck_assert_int_eq(scenario_sweep_count(&back), 6);
    ck_assert_int_eq(scenario_sweep_run(&back, 5, &run, &err), DT_OK);
    ck_assert_str_eq(run.name, "t/kind=fedavg,platform=edge,lr=0.1,bandwidth=10Gbps");
    free(text);
    expect_file_error_start("[sweep]\nkind, lr = (sync-ps, 0.1), (allreduce)\n",
                            ":2: sweep kind, lr: tuple 2 has 1 values for 2 keys");
    expect_file_error_start("[sweep]\nkind, lr = (sync-ps, 0.1, 3)\n",
                            ":2: sweep kind, lr: tuple 1 has more than 2 values");
    expect_file_error_start("[sweep]\nkind, lr = sync-ps, 0.1\n",
                            ":2: sweep kind, lr: tuple 1: expected \"(\"");
    expect_file_error_start("[sweep]\nkind, lr = (sync-ps, 0.1), (sync-ps, 0.1)\n",
                            ":2: sweep kind, lr: tuple 2 repeats tuple 1");
    expect_file_error_start("[sweep]\nkind, lr = (sync-ps, 0.1), (allreduce, -1)\n",
                            ":2: sweep model.lr: value 2 \"-1\"");
}
END_TEST

START_TEST(sweep_bad_keys)
{
    expect_file_error("[sweep]\ncluster.bandwith = 1Gbps, 10Gbps\n",
                      ":2: sweep cluster.bandwith: unknown key (did you mean bandwidth?)");
    expect_file_error("[sweep]\nmodel.workers = 2, 4\n",
                      ":2: sweep model.workers: unknown key (workers is a [cluster] key)");
    expect_file_error("[sweep]\nbandwith = 1Gbps\n",
                      ":2: sweep bandwith: expected section.key = value, value, ... (e.g. "
                      "cluster.bandwidth = 1Gbps, 10Gbps)");
    expect_file_error("[sweep]\nclustr.workers = 2, 4\n",
                      ":2: sweep clustr.workers: unknown section [clustr] (expected run, model, "
                      "data, cluster, strategy or faults; did you mean [cluster]?)");
    expect_file_error("[sweep]\nfaults.crash_at = 1s, 2s\n",
                      ":2: sweep faults.crash_at: unknown key");
    expect_file_error("[sweep]\nrun.name = a, b\n",
                      ":2: sweep run.name: cannot be swept (each run is named after its swept "
                      "values)");
    expect_file_error("[sweep]\nrun.db = a.db, b.db\n",
                      ":2: sweep run.db: cannot be swept (the runs of a sweep share one "
                      "database)");
    expect_file_error("[sweep]\ncluster.workers = 2, 4\nmodel.lr = 0.1\n\ncluster.workers = 8\n",
                      ":5: sweep cluster.workers: given twice in [sweep] (lines 2 and 5)");
    /* a swept key also given in its section, in either order */
    expect_file_error("[cluster]\nworkers = 4\nlatency = 1us\n[sweep]\ncluster.workers = 2, 8\n",
                      ":5: sweep cluster.workers: also given at line 2 (a swept key takes its "
                      "values from [sweep] only: drop one of the two)");
    expect_file_error("[sweep]\ncluster.workers = 2, 8\n[cluster]\nworkers = 4\n",
                      ":2: sweep cluster.workers: also given at line 4 (a swept key takes its "
                      "values from [sweep] only: drop one of the two)");
    /* the device pair */
    expect_file_error("[sweep]\ncluster.device = cpu, a100\ncluster.device_flops = 1Tf, 2Tf\n",
                      ":3: sweep cluster.device_flops: cluster.device is swept too, at line 2 "
                      "(each of the pair sets the other: sweep one of them)");
    expect_file_error("[cluster]\ndevice = a100\n[sweep]\ncluster.device_flops = 1Tf, 2Tf\n",
                      ":4: sweep cluster.device_flops: each value makes the device custom, but "
                      "device = a100 at line 2: write device = custom or drop device");
    scenario_t sc, run;
    load_ok(&sc,
            tmp_file("t.ini", "[cluster]\ndevice = custom\n[sweep]\n"
                              "cluster.device_flops = 1Tf, 2Tf\n"),
            NULL, 0);
    sweep_run_ok(&sc, 1, &run);
    ck_assert_str_eq(run.device, "custom");
    ck_assert(run.device_flops == 2e12);
    load_ok(&sc, tmp_file("t.ini", "[sweep]\ncluster.device = v100, h100\n"), NULL, 0);
    sweep_run_ok(&sc, 1, &run);
    ck_assert_str_eq(run.device, "h100");
    ck_assert(run.device_flops == 46.9e12);

    /* --set of a swept key */
    const char *path = tmp_file("t.ini", "[run]\nsteps = 5\n[sweep]\ncluster.bandwidth = 1Gbps, "
                                         "10Gbps\ncluster.device = cpu, a100\n");
    static const char *const set_bw[] = {"cluster.bandwidth=5Gbps"},
                             *const set_flops[] = {"cluster.device_flops=3Tf"};
    dt_err_t err;
    ck_assert_int_eq(scenario_load(&sc, path, set_bw, 1, &err), DT_ERR_INPUT);
    ck_assert_str_eq(err.msg, "--set cluster.bandwidth: swept in [sweep] at line 4 (a swept key "
                              "takes its values from [sweep] only)");
    ck_assert_int_eq(scenario_load(&sc, path, set_flops, 1, &err), DT_ERR_INPUT);
    ck_assert_str_eq(err.msg, "--set cluster.device_flops: would replace cluster.device, swept "
                              "in [sweep] at line 5 (each of the pair sets the other)");
}
END_TEST

START_TEST(sweep_limits)
{
    /* 17 keys */
    char text[4096];
    static const char *const keys17[] = {"run.seed",           "run.steps",
                                         "run.eval_every",     "model.batch",
                                         "model.lr",           "model.momentum",
                                         "model.threads",      "model.kernel",
                                         "model.fc",           "data.test_samples",
                                         "data.synthetic_dim", "cluster.racks",
                                         "strategy.max_lead",  "strategy.local_steps",
                                         "strategy.rounds",    "strategy.local_epochs",
                                         "model.weight_decay"};
    int n = snprintf(text, sizeof text, "[sweep]\n");
    for (int i = 0; i < 17; i++)
        n += snprintf(text + n, sizeof text - (size_t)n, "%s = 1\n", keys17[i]);
    text[strstr(text, "model.lr = 1") - text + 11] = '5'; /* lr 5, momentum 0.5 in range */
    n = (int)(strstr(text, "model.momentum = 1") - text);
    memcpy(text + n, "model.momentum = 0", 18);
    n = (int)(strstr(text, "model.weight_decay = 1") - text);
    memcpy(text + n, "model.weight_decay = 0", 22);
    expect_file_error(text, ":18: sweep model.weight_decay: more than 16 swept keys");
    /* 65 values (the line just fits in 198 characters) */
    n = snprintf(text, sizeof text, "[sweep]\nrun.seed=");
    for (int i = 1; i <= 65; i++)
        n += snprintf(text + n, sizeof text - (size_t)n, "%s%d", i > 1 ? "," : "", i);
    snprintf(text + n, sizeof text - (size_t)n, "\n");
    expect_file_error(text, ":2: sweep run.seed: more than 64 values");
    /* more than 10000 runs */
    expect_file_error("[sweep]\nrun.seed = 1,2,3,4,5,6,7,8,9,10\nrun.steps = 1,2,3,4,5,6,7,8,9,10\n"
                      "model.batch = 1,2,3,4,5,6,7,8,9,10\nmodel.threads = 1,2,3,4,5,6,7,8,9,10\n"
                      "model.fc = 1, 2\n",
                      ":6: sweep model.fc: 20000 runs in all (expected at most 10000)");
}
END_TEST

START_TEST(sweep_cross_key_errors_name_the_combination)
{
    /* servers = 4 holds against 8 and 4 workers, not 2: the sweep line and value are named */
    expect_file_error("[strategy]\nservers = 4\n\n[sweep]\ncluster.workers = 8, 2, 4\n",
                      ":5: sweep cluster.workers: value 2 \"2\": 4 servers for 2 workers "
                      "(expected servers <= workers for sync-ps; strategy.servers at line 2)");
    /* both swept: the first of the relation is blamed, the other names its line and value */
    expect_file_error("[sweep]\nstrategy.servers = 1, 4\ncluster.workers = 4, 2\n",
                      ":2: sweep strategy.servers: value 2 \"4\": 4 servers for 2 workers "
                      "(expected servers <= workers for sync-ps; cluster.workers = 2 from "
                      "[sweep] at line 3)");
    expect_file_errorf("[cluster]\nplatform = edge\n[sweep]\nstrategy.kind = fedavg, allreduce\n",
                       ":4: sweep strategy.kind: value 2 \"allreduce\": the edge platform "
                       "connects clients only to the server, so allreduce (which exchanges "
                       "between workers) cannot run on it (expected %s; cluster.platform at "
                       "line 2)",
                       strategy_names(SIM_NEEDS_PEER_LINKS, " or "));
    expect_file_error("[data]\nsource = synthetic\ntrain_samples = 6\n[sweep]\n"
                      "cluster.workers = 2, 4, 8\n",
                      ":5: sweep cluster.workers: value 3 \"8\": 6 samples for 8 workers "
                      "(expected at least one sample each)");
    /* an error of the base, not of the sweep: the run it was found in is named */
    expect_file_error("[strategy]\nservers = 9\n[sweep]\nmodel.lr = 0.1, 0.2\n",
                      ":2: strategy.servers: 9 servers for 8 workers (expected servers <= "
                      "workers for sync-ps; cluster.workers by default) (in run 0: t/lr=0.1)");
    /* a base that no run uses may break a relation: only the runs are checked */
    scenario_t sc;
    load_ok(&sc,
            tmp_file("t.ini", "[strategy]\nkind = allreduce\nalgorithm = hierarchical\n"
                              "group_size = 3\n[sweep]\ncluster.workers = 3, 6\n"),
            NULL, 0);
    ck_assert_int_eq(scenario_validate(&sc, NULL), DT_ERR_INPUT); /* 8 workers by default */
    ck_assert_int_eq(scenario_sweep_count(&sc), 2);
}
END_TEST

/* The strategies' checks (sim_strategy_t.check) report through scenario_fail and
 * scenario_blame: their messages must read as the loader's own. */
START_TEST(check_api_words_errors_as_the_loader_does)
{
    scenario_t sc, run;
    dt_err_t err = {""};
    char where[96], want[PATH_MAX + 256];
    const char *path = tmp_file("t.ini", "[cluster]\nworkers = 2\n[strategy]\nkind = allreduce\n");
    load_ok(&sc, path, NULL, 0);
    /* the key given is named, the other one's origin written */
    ck_assert_str_eq(
        scenario_blame(&sc, "strategy.servers", "cluster.workers", where, sizeof where),
        "cluster.workers");
    ck_assert_str_eq(where, "strategy.servers by default");
    ck_assert_str_eq(scenario_blame(&sc, "cluster.workers", "strategy.kind", where, sizeof where),
                     "cluster.workers");
    ck_assert_str_eq(where, "strategy.kind at line 4");
    ck_assert_str_eq(scenario_blame(&sc, "strategy.servers", "model.lr", NULL, 0),
                     "strategy.servers");
    ck_assert_int_eq(scenario_fail(&sc, &err, "cluster.workers", "%d is %s", 2, "odd"),
                     DT_ERR_INPUT);
    snprintf(want, sizeof want, "%s:2: cluster.workers: 2 is odd", path);
    ck_assert_str_eq(err.msg, want);
    scenario_fail(&sc, &err, "strategy.servers", "x");
    snprintf(want, sizeof want, "%s: strategy.servers: x", path);
    ck_assert_str_eq(err.msg, want);
    /* a run of a sweep: the swept key is named, with its line and value */
    path = tmp_file("s.ini", "[strategy]\nkind = allreduce\nservers = 4\n[sweep]\n"
                             "cluster.workers = 8, 2\n");
    load_ok(&sc, path, NULL, 0);
    ck_assert_int_eq(scenario_sweep_run(&sc, 1, &run, &err), DT_OK);
    ck_assert_str_eq(
        scenario_blame(&run, "strategy.servers", "cluster.workers", where, sizeof where),
        "cluster.workers");
    ck_assert_str_eq(where, "strategy.servers at line 3");
    scenario_blame(&run, "cluster.workers", "strategy.servers", where, sizeof where);
    ck_assert_str_eq(where, "strategy.servers at line 3");
    scenario_fail(&run, &err, "cluster.workers", "too few");
    snprintf(want, sizeof want, "%s:5: sweep cluster.workers: value 2 \"2\": too few", path);
    ck_assert_str_eq(err.msg, want);
    scenario_fail(&run, &err, "strategy.servers", "x");
    snprintf(want, sizeof want, "%s:3: strategy.servers: x (in run 1: s/workers=2)", path);
    ck_assert_str_eq(err.msg, want);
}
END_TEST

/* A strategy's own keys (sim_strategy_t.own_keys) join the key table at registration: read
 * with their defaults, from the file, --set and [sweep], range-checked like every key,
 * written back and listed in the key reference; the strategy reads them by name. zero's
 * zero_stage is one; a strategy made here adds one of each kind. */
static const char *const order_names[] = {"fifo", "lifo", NULL};
static const sim_strategy_key_t windowed_keys[] = {
    {.key = "window", .kind = SIM_KEY_INT, .def = "3", .min = 1, .max = 10, .doc = "window"},
    {.key = "decay", .kind = SIM_KEY_REAL, .def = "0.5", .min = 0, .max = 1, .doc = "decay"},
    {.key = "greedy", .kind = SIM_KEY_BOOL, .def = "no", .doc = "greedy"},
    {.key = "order", .kind = SIM_KEY_ENUM, .def = "fifo", .names = order_names, .doc = "order"},
    {0},
};
static const sim_strategy_t windowed = {
    .name = "windowed",
    .about = "a test",
    .worker_role = "worker",
    .own_keys = windowed_keys,
};

START_TEST(strategies_bring_their_own_keys)
{
    static const sim_strategy_t *list[16];
    int n = 0;
    for (const sim_strategy_t *const *s = scenario_strategies(); *s; s++)
        list[n++] = *s;
    list[n++] = &windowed;
    list[n] = NULL;
    scenario_strategies_use(list);

    scenario_t sc, run;
    scenario_defaults(&sc);
    ck_assert_int_eq(scenario_own(&sc, "zero_stage")->l, 1);
    ck_assert_int_eq(scenario_own(&sc, "window")->l, 3);
    ck_assert_double_eq(scenario_own(&sc, "decay")->d, 0.5);
    ck_assert_int_eq(scenario_own(&sc, "greedy")->i, 0);
    ck_assert_int_eq(scenario_own(&sc, "order")->i, 0);

    const char *path = tmp_file("w.ini", "[strategy]\nkind = windowed\nwindow = 7\n"
                                         "decay = 0.25\ngreedy = yes\n");
    const char *sets[] = {"strategy.order=lifo"};
    load_ok(&sc, path, sets, 1);
    ck_assert_str_eq(sc.strategy->name, "windowed");
    ck_assert_int_eq(scenario_own(&sc, "window")->l, 7);
    ck_assert_double_eq(scenario_own(&sc, "decay")->d, 0.25);
    ck_assert_int_eq(scenario_own(&sc, "greedy")->i, 1);
    ck_assert_int_eq(scenario_own(&sc, "order")->i, 1);
    ck_assert_int_eq(scenario_own(&sc, "zero_stage")->l, 1);
    ck_assert(scenario_key_given(&sc, "strategy.window"));
    round_trip(&sc);
    /* another strategy's key, given, is refused for a strategy that does not read it, at
     * its default too; a resolved configuration (scenario_write's: every key) may hold it at
     * its default, not at another value */
    expect_file_error("[strategy]\nkind = windowed\nzero_stage = 3\n",
                      ":3: strategy.zero_stage: zero_stage is a key of pipeline and zero, which "
                      "windowed does not read (strategy.kind at line 2)");
    expect_file_error("[strategy]\nkind = windowed\nzero_stage = 1\n",
                      ":3: strategy.zero_stage: zero_stage is a key of pipeline and zero, which "
                      "windowed does not read (strategy.kind at line 2)");
    load_ok(&run,
            tmp_file("wr.ini", "# w.ini: 1 run\n" SCENARIO_RESOLVED_MARK ": every key\n"
                               "[strategy]\nkind = windowed\nzero_stage = 1\n"),
            NULL, 0);
    expect_file_error("# w.ini: 1 run\n" SCENARIO_RESOLVED_MARK ": every key\n"
                      "[strategy]\nkind = windowed\nzero_stage = 3\n",
                      ":5: strategy.zero_stage: zero_stage is a key of pipeline and zero, which "
                      "windowed does not read (strategy.kind at line 4)");
    expect_file_error("[strategy]\nkind = fedbuff\nsecure_agg = yes\n",
                      ":3: strategy.secure_agg: secure_agg is a key of fedavg, which fedbuff "
                      "does not read (strategy.kind at line 2)");
    /* the splits' sizes: a tensor run with replicas, an all-reduce with a tensor split */
    expect_file_error("[cluster]\nworkers = 2\n[strategy]\nkind = tensor\ndata_parallel = 2\n",
                      ":5: strategy.data_parallel: data_parallel is a key of pipeline, which "
                      "tensor does not read (strategy.kind at line 4)");
    expect_file_error("[strategy]\nkind = allreduce\ntensor_parallel = 2\n",
                      ":3: strategy.tensor_parallel: tensor_parallel is a key of tensor, which "
                      "allreduce does not read (strategy.kind at line 2)");

    expect_file_error("[strategy]\nkind = windowed\nwindow = 11\n",
                      ":3: strategy.window: 11 is out of range (expected an integer in [1, 10])");
    expect_file_error("[strategy]\ndecay = x\n",
                      ":2: strategy.decay: \"x\" is not a number (expected a number in [0, 1])");
    expect_file_error("[strategy]\norder = random\n",
                      ":2: strategy.order: unknown value \"random\" (expected one of fifo, lifo)");
    expect_file_error("[strategy]\nzero_stage = 4\n",
                      ":2: strategy.zero_stage: 4 is out of range (expected an integer in [1, 3])");
    expect_file_error_start("[strategy]\nwindw = 2\n",
                            ":2: strategy.windw: unknown key (did you mean window?)");

    dt_err_t err = {""};
    path = tmp_file("ws.ini", "[strategy]\nkind = windowed\n[sweep]\nstrategy.window = 2, 9\n");
    load_ok(&sc, path, NULL, 0);
    ck_assert_int_eq(scenario_sweep_count(&sc), 2);
    ck_assert_int_eq(scenario_sweep_run(&sc, 1, &run, &err), DT_OK);
    ck_assert_int_eq(scenario_own(&run, "window")->l, 9);
    ck_assert_str_eq(run.name, "ws/window=9");

    /* listed in the key reference among the [strategy] keys, before accumulate, with the
     * strategies that read them */
    char *md = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&md, &len);
    scenario_write_keys_markdown(f);
    fclose(f);
    char *w = strstr(md, "| `window` | windowed | `3` | an integer in [1, 10] | window |");
    char *z = strstr(md, "| `zero_stage` | pipeline and zero | `1` |"),
         *acc = strstr(md, "| `accumulate` |");
    ck_assert_msg(w && z && acc && z < w && w < acc, "%s", md);
    ck_assert_ptr_nonnull(strstr(md, "| `order` | windowed | `fifo` | fifo, lifo | order |"));
    free(md);
}
END_TEST

/* Who reads each [strategy] key comes from the strategies themselves (their own keys, the
 * techniques their takes names), and the key reference and the strategy table print it:
 * a technique key's readers are the strategies taking it (the flag lists, a second way of
 * counting them), an own key's include each strategy declaring it, every row of the
 * reference's [strategy] table names some reader, and a strategy's keys column lists a key
 * exactly when it reads it. */
START_TEST(strategy_keys_name_their_readers)
{
    static const struct {
        const char *key;
        unsigned bit;
    } techniques[] = {
        {"accumulate", SIM_TAKES_ACCUMULATE},
        {"compression", SIM_TAKES_COMPRESSION},
        {"error_feedback", SIM_TAKES_COMPRESSION},
        {"algorithm", SIM_TAKES_ALLREDUCE},
        {"ring_messages", SIM_TAKES_ALLREDUCE},
        {"group_size", SIM_TAKES_GROUPS},
        {"bucket_mb", SIM_TAKES_BUCKETS},
        {"momentum_correction", SIM_TAKES_MOMENTUM_CORRECTION},
    };
    char got[1024], want[1024];
    for (size_t i = 0; i < sizeof techniques / sizeof *techniques; i++) {
        scenario_key_readers(techniques[i].key, " and ", got, sizeof got);
        scenario_strategies_taking(techniques[i].bit, " and ", want, sizeof want);
        ck_assert_msg(want[0] && !strcmp(got, want), "%s: read by \"%s\", taken by \"%s\"",
                      techniques[i].key, got, want);
    }
    for (const sim_strategy_t *const *s = scenario_strategies(); *s; s++)
        for (const sim_strategy_key_t *k = (*s)->own_keys; k && k->key; k++) {
            ck_assert(scenario_strategy_reads(*s, k->key));
            scenario_key_readers(k->key, ", ", got, sizeof got);
            snprintf(want, sizeof want, ", %s, ", (*s)->name);
            char padded[1100];
            snprintf(padded, sizeof padded, ", %s, ", got);
            ck_assert_msg(strstr(padded, want), "%s: read by %s, declared by %s", k->key, got,
                          (*s)->name);
        }

    char *md = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&md, &len);
    scenario_write_keys_markdown(f);
    fclose(f);
    char *start = strstr(md, "### [strategy]"), *end = start ? strstr(start + 1, "### ") : NULL;
    ck_assert(start && end);
    int rows = 0;
    for (char *line = strstr(start, "\n| `"); line && line < end;
         line = strstr(line + 1, "\n| `")) {
        char key[64], readers[512];
        ck_assert_int_eq(sscanf(line, "\n| `%63[^`]` | %511[^|]|", key, readers), 2);
        ck_assert_msg(strlen(readers) > 1, "%s: no reader", key);
        for (const sim_strategy_t *const *s = scenario_strategies(); *s; s++) {
            scenario_strategy_keys(*s, got, sizeof got);
            snprintf(want, sizeof want, "`%s`", key);
            int listed = strstr(got, want) != NULL;
            ck_assert_msg(listed == (strcmp(key, "kind") && scenario_strategy_reads(*s, key)),
                          "%s: %s in the keys of %s (%s)", key, listed ? "listed" : "not listed",
                          (*s)->name, got);
        }
        rows++;
    }
    ck_assert_int_gt(rows, 20);
    free(md);
}
END_TEST

START_TEST(sweep_written_and_read_back)
{
    scenario_t sc;
    load_ok(&sc, FIXTURE("sweep.ini"), NULL, 0);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    scenario_write(&sc, f);
    fclose(f);
    char tiny[PATH_MAX], want[PATH_MAX + 300];
    ck_assert_ptr_nonnull(realpath(FIXTURE("tiny.xml"), tiny));
    snprintf(want, sizeof want,
             "\n[sweep]\nstrategy.kind = sync-ps, allreduce\n"
             "cluster.bandwidth = 1Gbps, 10Gbps, 100Gbps\ncluster.platform = star, %s\n"
             "model.hidden = \"256,128\", 64\n",
             tiny);
    ck_assert_msg(strstr(text, want), "no\n%s\nin:\n%s", want, text);
    ck_assert_ptr_nonnull(strstr(text, "\n; kind: from [sweep] strategy.kind\n"));
    ck_assert_ptr_null(strstr(text, "\nkind = "));
    free(text);
    round_trip(&sc);
    /* the device pair: device_flops swept with device = custom, device swept alone */
    load_ok(&sc,
            tmp_file("t.ini", "[cluster]\ndevice = custom\n[sweep]\n"
                              "cluster.device_flops = 1Tf, 2.5Tf\nrun.seed = 3, 1\n"),
            NULL, 0);
    round_trip(&sc);
    load_ok(&sc,
            tmp_file("t.ini", "[sweep]\ncluster.device = a100, cpu\n"
                              "data.partition = iid, dirichlet:0.5, shards:2\n"),
            NULL, 0);
    round_trip(&sc);
}
END_TEST

/* hierfl's checks (sim/strategy/hierfl.c): a region needs clients, a host (a region is the
 * clients of the hosts h with h mod regions = r) and a sampled client per edge round, and
 * fedavg's techniques it does not apply are refused; each error names the key. */
START_TEST(values_that_cannot_finish_are_refused)
{
    /* random host failures more often than a step takes (the default mlp on Fashion-MNIST:
     * 32 samples of 3 x 235,146 x 2 FLOPs at the cpu device's 90 GFLOP/s) */
    expect_file_error_start("[faults]\nmtbf = 1ns\nmttr = 1ns\n",
                            ":2: faults.mtbf: 1e-09 s between failures is shorter than one step "
                            "(0.000717319 s: batch x FLOPs per sample / device speed)");
    /* a slowdown that would send the clock to infinity */
    expect_file_error("[faults]\nstraggler = worker-0 x1e308\n",
                      ":2: faults.straggler: straggler item 1 \"worker-0 x1e308\": \"x1e308\" "
                      "is not a slowdown factor (expected xFACTOR with FACTOR in (0, 1e6], e.g. "
                      "x4 or x0.5)");
    scenario_t sc;
    dt_err_t err = {""};
    scenario_defaults(&sc);
    ck_assert_int_eq(scenario_set(&sc, "faults.mtbf=1s", &err), DT_OK);
    ck_assert_int_eq(scenario_validate(&sc, &err), DT_OK);
}
END_TEST

START_TEST(secure_aggregation_is_checked)
{
    /* secure aggregation hands the server a sum: nothing that reads each update */
    expect_file_error("[strategy]\nkind = fedavg\nsecure_agg = yes\naggregator = krum\n",
                      ":4: strategy.aggregator: secure aggregation hands the server only the "
                      "sum of the updates: secure_agg = yes does not combine with aggregator, "
                      "which reads each update (strategy.secure_agg at line 3)");
    expect_file_error("[strategy]\nkind = fedavg\ncompression = topk:0.1\nsecure_agg = yes\n",
                      ":3: strategy.compression: secure aggregation hands the server only the "
                      "sum of the updates: secure_agg = yes does not combine with compression, "
                      "which reads each update (strategy.secure_agg at line 4)");
    expect_file_error("[strategy]\nkind = fedavg\nsecure_agg = yes\ndp_clip = 1\n",
                      ":4: strategy.dp_clip: secure aggregation hands the server only the sum "
                      "of the updates: secure_agg = yes does not combine with dp_clip, which "
                      "reads each update (strategy.secure_agg at line 3)");
    expect_file_error("[strategy]\nkind = fedavg\nsecagg_threshold = 0\n",
                      ":3: strategy.secagg_threshold: 0 is out of range (expected a number in "
                      "(0, 1])");
    expect_file_error("[strategy]\nkind = fedavg\nsecagg_bits = 0\n",
                      ":3: strategy.secagg_bits: 0 is out of range (expected an integer in [1, "
                      "62])");
    expect_file_error("[strategy]\nkind = hierfl\nsecure_agg = yes\n",
                      ":3: strategy.secure_agg: secure_agg is a key of fedavg, which hierfl does "
                      "not read (strategy.kind at line 2)");
}
END_TEST

START_TEST(hierfl_regions_are_checked)
{
    expect_file_error("[strategy]\nkind = hierfl\nclients = 3\nregions = 4\n",
                      ":4: strategy.regions: 4 regions for 3 clients (expected regions <= "
                      "clients; strategy.clients at line 3)");
    expect_file_error("[strategy]\nkind = hierfl\nregions = 0\n",
                      ":3: strategy.regions: 0 is out of range (expected an integer in [1, "
                      "10000])");
    expect_file_error("[cluster]\nworkers = 2\n[strategy]\nkind = hierfl\nregions = 3\n",
                      ":5: strategy.regions: 3 regions for 2 client hosts: a region is the "
                      "clients of the hosts h with h mod regions = r (expected regions <= "
                      "workers; cluster.workers at line 2)");
    /* 100 clients on 8 hosts in 3 regions: region 2 is hosts 2 and 5, 13 + 12 clients */
    expect_file_error("[strategy]\nkind = hierfl\nregions = 3\nfraction = 0.035\n",
                      ":4: strategy.fraction: region 2's 25 clients x fraction 0.035 sample no "
                      "client per edge round (expected a region's clients x fraction >= 1; "
                      "strategy.regions at line 3)");
    expect_file_error("[strategy]\nkind = hierfl\nscaffold = yes\n",
                      ":3: strategy.scaffold: hierfl keeps no control variates: scaffold = yes "
                      "is fedavg's (expected no)");
    expect_file_error("[strategy]\nkind = hierfl\n[faults]\ndropout = 0.1\n",
                      ":2: strategy.kind: hierfl with [faults] events is not supported (its "
                      "clients' dropouts, deadlines and availability are fedavg's)");
    expect_file_error("[strategy]\nkind = hierfl\ncompression = fp16\n",
                      ":3: strategy.compression: compression applies to sync-ps, allreduce and "
                      "fedavg, not hierfl (strategy.kind at line 2)");
    /* the old name of async-ps's max_lead: refused, naming the new one */
    expect_file_error("[strategy]\nkind = async-ps\nstaleness = 2\n",
                      ":3: strategy.staleness: unknown key (renamed strategy.max_lead: it bounds "
                      "how many pushes a worker runs ahead of the slowest (SSP's threshold, Ho et "
                      "al. 2013), not a gradient's staleness)");
    /* a technique's key for a strategy that does not take it: refused, not ignored */
    expect_file_error("[strategy]\nkind = sync-ps\nalgorithm = tree\n",
                      ":3: strategy.algorithm: algorithm is a key of allreduce, local-sgd and "
                      "pipeline, which sync-ps does not read (strategy.kind at line 2)");
    expect_file_error("[strategy]\nkind = fedavg\nbucket_mb = 25\n",
                      ":3: strategy.bucket_mb: bucket_mb is a key of allreduce, pipeline and "
                      "zero, which fedavg does not read (strategy.kind at line 2)");
    /* sequence parallelism with no tensor split: nothing reads it */
    expect_file_error("[strategy]\nkind = pipeline\nsequence_parallel = yes\n",
                      ":3: strategy.sequence_parallel: sequence_parallel divides a tensor "
                      "group's work, and tensor = 1 makes no group: pipeline does not read it "
                      "(strategy.tensor by default; expected tensor > 1, or sequence_parallel = "
                      "no)");
    /* and through the API a run would take: the status is DT_ERR_INPUT (exit code 2) */
    scenario_t sc;
    dt_err_t err = {""};
    scenario_defaults(&sc);
    ck_assert_int_eq(scenario_set(&sc, "strategy.kind=hierfl", &err), DT_OK);
    ck_assert_int_eq(scenario_set(&sc, "strategy.regions=9", &err), DT_OK);
    ck_assert_int_eq(scenario_validate(&sc, &err), DT_ERR_INPUT);
    ck_assert_int_eq(DT_ERR_INPUT, 2);
    ck_assert_msg(strstr(err.msg, "strategy.regions") && strstr(err.msg, "9 regions for 8"), "%s",
                  err.msg);
    /* 100 clients on 8 hosts in 4 regions: 25 each, 2 a round at fraction 0.1; one region
     * with one edge round is fedavg's check */
    ck_assert_int_eq(scenario_set(&sc, "strategy.regions=4", &err), DT_OK);
    ck_assert_int_eq(scenario_validate(&sc, &err), DT_OK);
}
END_TEST

/* ---- values SimGrid's solver computes with ----------------------------------------------- */

/* A load of t.ini under one --set: DT_OK, or the error in *err. */
static dt_status load_with(const char *text, const char *set, dt_err_t *err)
{
    scenario_t sc;
    const char *sets[] = {set};
    return scenario_load(&sc, tmp_file("t.ini", text), sets, set ? 1 : 0, err);
}

/* Latencies, bandwidths and speeds the keys' own ranges take but SimGrid's solver does
 * not (a latency of 2e-15 s crashed it, 0.19 B/s aborted it, 1e-300 flop/s made time inf)
 * are refused in validation with the range; the range's own ends load. */
START_TEST(values_beyond_the_solver_are_refused_with_the_range)
{
    static const char *const lat = "(expected 0, or 1ns to 1000s)";
    static const char *const bw = "(expected 1kbps to 1000TBps)";
    static const struct {
        const char *set, *value_text, *range;
    } bad[] = {
        {"cluster.latency=2e-09us", "2e-15s", lat}, /* the issue's, as alone.ini took it */
        {"cluster.latency=0.999ns", "0.999ns", lat},
        {"cluster.latency=1001s", "1001s", lat},
        {"cluster.uplink_latency=1e-12s", "1e-12s", lat},
        {"cluster.nvlink_latency=1e-10s", "0.1ns", lat},
        {"cluster.bandwidth=124Bps", "992bps", bw},
        {"cluster.bandwidth=1001TBps", "8008Tbps", bw},
        {"cluster.uplink_bandwidth=1bps", "1bps", bw},
        {"cluster.nvlink_bandwidth=1e-300Bps", "8e-300bps", bw},
        {"cluster.device_flops=1e-300f", "1e-300f", "(expected 1f to 1e24f)"},
        {"cluster.device_flops=2e24f", "2e+24f", "(expected 1f to 1e24f)"},
    };
    const char *text = "[run]\nsteps = 2\n";
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        dt_err_t err = {""};
        ck_assert_int_eq(load_with(text, bad[i].set, &err), DT_ERR_INPUT);
        char key[64], want[256];
        snprintf(key, sizeof key, "%.*s", (int)strcspn(bad[i].set, "="), bad[i].set);
        snprintf(want, sizeof want, "--set %s: %s is beyond what SimGrid's solver computes with %s",
                 key, bad[i].value_text, bad[i].range);
        ck_assert_str_eq(err.msg, want);
    }
    static const char *const good[] = {
        "cluster.latency=0s",         "cluster.latency=1ns",        "cluster.latency=1000s",
        "cluster.bandwidth=1kbps",    "cluster.bandwidth=1000TBps", "cluster.device_flops=1f",
        "cluster.device_flops=1e24f", "cluster.uplink_latency=0s",
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        dt_err_t err = {""};
        ck_assert_msg(load_with(text, good[i], &err) == DT_OK, "%s: %s", good[i], err.msg);
    }
    /* in a file: its line and key */
    expect_file_error("[cluster]\nbandwidth = 100bps\n",
                      ":2: cluster.bandwidth: 100bps is beyond what SimGrid's solver computes "
                      "with (expected 1kbps to 1000TBps)");
}
END_TEST

/* A device trace's values are range-checked as they are read: FedScale's kbit/s below
 * 1kbps (0.001 aborted SimGrid), a dtsim latency in (0, 1 ns), a speed below 1 flop/s;
 * the ends of the range load. */
START_TEST(device_trace_values_beyond_the_solver_are_refused)
{
    const char *ini = "[cluster]\nplatform = edge\nworkers = 4\n[strategy]\nkind = fedavg\n"
                      "clients = 4\nfraction = 1\n[faults]\ndevice_trace = d.csv\n";
    static const struct {
        const char *csv, *want; /* want NULL: loads */
    } cases[] = {
        {"client_id,computation,communication\n0,10,1000\n1,10,0.001\n",
         "/d.csv:3: column communication: \"0.001\" is beyond what SimGrid's solver computes "
         "with (expected kbit/s, a number from 0.9765625 to 7.8125e12)"},
        {"client_id,computation,communication\n1,10,1e-9\n", "/d.csv:2: column communication"},
        {"client_id,computation,communication\n1,10,1e-308\n", "/d.csv:2: column communication"},
        {"client_id,computation,communication\n1,10,0.976\n", "/d.csv:2: column communication"},
        {"client_id,computation,communication\n1,10,7.9e12\n", "/d.csv:2: column communication"},
        {"client_id,computation,communication\n1,10,0.9765625\n", NULL},
        {"client_id,computation,communication\n1,10,7.8125e12\n", NULL},
        {"client_id,computation,communication\n1,1e-7,1000\n",
         "/d.csv:2: column computation: \"1e-7\" is out of range (expected milliseconds per "
         "sample, a number from 1e-6 to 1e9)"},
        {"client_id,computation,communication\n1,2e9,1000\n", "/d.csv:2: column computation"},
        {"client,speed,up,down,latency\n0,1Gf,1Mbps,1Mbps,1e-12s\n",
         "/d.csv:2: column latency: \"1e-12s\" is beyond what SimGrid's solver computes with "
         "(expected a time with its unit, 0 or 1ns to 1000s, e.g. 40ms)"},
        {"client,speed,up,down,latency\n0,1e-300f,1Mbps,1Mbps,0s\n", "/d.csv:2: column speed"},
        {"client,speed,up,down,latency\n0,1Gf,100bps,1Mbps,0s\n", "/d.csv:2: column up"},
        {"client,speed,up,down,latency\n0,1f,1kbps,1000TBps,1000s\n", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tmp_file("d.csv", cases[i].csv);
        if (cases[i].want) {
            expect_load_error(ini, cases[i].want);
        } else {
            scenario_t sc;
            load_ok(&sc, tmp_file("t.ini", ini), NULL, 0);
        }
    }
    /* the per-client keys, drawn for every client as the run draws them: a constant of
     * 1e-300 B/s aborted SimGrid; a distribution's draws are checked too */
    static const struct {
        const char *line, *want;
    } keys[] = {
        {"client_down = 1e-300Bps\n",
         ":9: faults.client_down: client 0's bandwidth is 1e-300 B/s, beyond what SimGrid's "
         "solver computes with (expected 1kbps to 1000TBps)"},
        {"client_up = uniform:1bps:2bps\n", ":9: faults.client_up: client 0's bandwidth is 0."},
        {"client_latency = 1e-12s\n", ":9: faults.client_latency: client 0's latency is 1e-12 s"},
        {"client_speed = lognormal:1e-300f:1\n", ":9: faults.client_speed: client 0's speed is "},
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "[cluster]\nplatform = edge\nworkers = 4\n[strategy]\nkind = fedavg\n"
                 "clients = 4\nfraction = 1\n[faults]\n%s",
                 keys[i].line);
        expect_load_error(text, keys[i].want);
    }
    scenario_t sc;
    load_ok(&sc,
            tmp_file("t.ini", "[cluster]\nplatform = edge\nworkers = 4\n[strategy]\n"
                              "kind = fedavg\nclients = 4\nfraction = 1\n[faults]\n"
                              "client_up = lognormal:5Mbps:0.8\n"),
            NULL, 0);
}
END_TEST

/* Device files: an idle power above the full power, and peaks beyond what the solver
 * computes with (fp32 = 1e-300f made simulated time inf), refused with the line. */
START_TEST(device_file_values_are_range_checked)
{
    static const struct {
        const char *dev, *want;
    } cases[] = {
        {"[device]\nfp32 = 10Tf\npower_idle = 500W\npower_max = 100W\n",
         "/dev.ini:3: device.power_idle: power_idle 500 W above power_max 100 W (expected "
         "power_idle <= power_max)"},
        {"[device]\nfp32 = 1e-300f\n",
         "/dev.ini:2: device.fp32: \"1e-300f\" is beyond what SimGrid's solver computes with "
         "(expected 1f to 1e24f)"},
        {"[device]\nflops = 1e-300f\n", "/dev.ini:2: device.flops: \"1e-300f\" is beyond"},
        {"[device]\nfp32 = 10Tf\nbf16 = 2e24f\n", "/dev.ini:3: device.bf16: \"2e24f\" is beyond"},
        {"[device]\nfp32 = 10Tf\npower_idle = 100W\npower_max = 100W\n", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tmp_file("dev.ini", cases[i].dev);
        const char *ini = "[cluster]\ndevice = dev.ini\n";
        if (cases[i].want) {
            expect_load_error(ini, cases[i].want);
        } else {
            scenario_t sc;
            load_ok(&sc, tmp_file("t.ini", ini), NULL, 0);
        }
    }
}
END_TEST

static Suite *scenario_suite(void)
{
    Suite *s = suite_create("scenario");
    TCase *tc = tcase_create("scenario");
    tcase_add_test(tc, defaults_are_the_documented_values);
    tcase_add_test(tc, defaults_are_written_in_their_documented_form);
    tcase_add_test(tc, units_convert_to_hand_values);
    tcase_add_test(tc, bad_units_are_errors);
    tcase_add_test(tc, unknown_unit_names_line_and_key);
    tcase_add_test(tc, missing_unit_names_line_and_key);
    tcase_add_test(tc, out_of_range_values);
    tcase_add_test(tc, bad_enum_value);
    tcase_add_test(tc, tcp_keys_need_the_tcp_model);
    tcase_add_test(tc, unknown_section);
    tcase_add_test(tc, unknown_key_with_suggestion);
    tcase_add_test(tc, duplicate_key_names_both_lines);
    tcase_add_test(tc, syntax_errors_name_their_line);
    tcase_add_test(tc, long_line_is_an_error_not_two_lines);
    tcase_add_test(tc, missing_file);
    tcase_add_test(tc, platform_so_is_refused);
    tcase_add_test(tc, platform_xml_must_exist);
    tcase_add_test(tc, relative_paths_resolve_against_the_scenario_file);
    tcase_add_test(tc, text_data_keys);
    tcase_add_test(tc, set_overrides_the_file);
    tcase_add_test(tc, set_errors);
    tcase_add_test(tc, cross_key_errors_name_the_line_at_fault);
    tcase_add_test(tc, device_profiles_and_device_flops);
    tcase_add_test(tc, device_profile_files);
    tcase_add_test(tc, builtin_model_profiles);
    tcase_add_test(tc, model_profile_files_and_errors);
    tcase_add_test(tc, jobs_files_lines_append);
    tcase_add_test(tc, shipped_scenarios_load);
    tcase_add_test(tc, full_fixture_values);
    tcase_add_test(tc, write_then_load_gives_the_same_struct);
    tcase_add_test(tc, lenient_syntax_that_is_still_exact);
    tcase_add_test(tc, names_and_markdown);
    tcase_add_test(tc, device_catalogue_values_and_sources);
    tcase_add_test(tc, precision_and_efficiency_set_the_speed);
    tcase_add_test(tc, device_files_like_catalogue_entries);
    tcase_add_test(tc, faults_values_load_and_round_trip);
    tcase_add_test(tc, faults_bad_values_name_line_and_key);
    tcase_add_test(tc, client_devices_from_traces_and_distributions);
    tcase_add_test(tc, client_devices_bad_input_names_file_line_and_key);
    tcase_add_test(tc, faults_bad_values_by_set);
    tcase_add_test(tc, fault_spec_parse_fields);
    tcase_add_test(tc, fault_spec_parse_errors);
    tcase_add_test(tc, fault_distributions_parse);
    tcase_add_test(tc, sweep_expands_in_nested_loop_order);
    tcase_add_test(tc, sweep_values_quoted_trimmed_and_named);
    tcase_add_test(tc, sweep_bad_values_name_line_key_and_value);
    tcase_add_test(tc, sweep_linked_keys_and_short_names);
    tcase_add_test(tc, sweep_bad_keys);
    tcase_add_test(tc, sweep_limits);
    tcase_add_test(tc, sweep_cross_key_errors_name_the_combination);
    tcase_add_test(tc, check_api_words_errors_as_the_loader_does);
    tcase_add_test(tc, strategies_bring_their_own_keys);
    tcase_add_test(tc, strategy_keys_name_their_readers);
    tcase_add_test(tc, sweep_written_and_read_back);
    tcase_add_test(tc, hierfl_regions_are_checked);
    tcase_add_test(tc, secure_aggregation_is_checked);
    tcase_add_test(tc, values_that_cannot_finish_are_refused);
    tcase_add_test(tc, values_beyond_the_solver_are_refused_with_the_range);
    tcase_add_test(tc, device_trace_values_beyond_the_solver_are_refused);
    tcase_add_test(tc, device_file_values_are_range_checked);
    suite_add_tcase(s, tc);
    return s;
}

/* Removes the files the tests left in tmpdir (one level, plus sub/ if a test failed). */
static void remove_tmpdir(void)
{
    static const char *const subdirs[] = {"/sub", ""};
    for (int i = 0; i < 2; i++) {
        char dir[PATH_MAX + 8];
        snprintf(dir, sizeof dir, "%s%s", tmpdir, subdirs[i]);
        DIR *d = opendir(dir);
        if (!d)
            continue;
        struct dirent *e;
        while ((e = readdir(d))) {
            char p[PATH_MAX * 2];
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
                unlink(p);
        }
        closedir(d);
        rmdir(dir);
    }
}

int main(void)
{
    sim_strategies_register();
    snprintf(tmpdir, sizeof tmpdir, "/tmp/dtsim-scenario-XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    SRunner *sr = srunner_create(scenario_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    remove_tmpdir();
    return failed == 0 ? 0 : 1;
}
