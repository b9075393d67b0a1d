/* The key table: one row per scenario key (section, key, type, default text, field, range,
 * doc) drives everything: defaults (each default text parsed like a user's value), the
 * file and --set, scenario_write and the key reference. Below it, the parsers of the keys
 * with a syntax of their own (model.arch, paths, strategy.kind, the [faults] texts, ...)
 * and the names of enum values. */
#define _XOPEN_SOURCE 700 /* POSIX 2008 with realpath */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fault_spec.h"
#include "keys_impl.h"
#include "model_profile.h"
#include "profile_memory.h"

/* Field offsets checked against the field's type at compile time: _Generic has no match,
 * and the build fails, when the table says long and the field is an int. */
#define OFF(field, type) _Generic(((scenario_t *)0)->field, type : offsetof(scenario_t, field))

#define K_NUM(sec_, key_, type_, def_, off_, st_, lo_, hi_, fl_, doc_)                             \
    {                                                                                              \
        .section = sec_, .key = key_, .type = type_, .def = def_, .off = off_, .store = st_,       \
        .min = lo_, .max = hi_, .flags = fl_, .doc = doc_                                          \
    }
#define K_LONG(sec_, key_, def_, field, lo_, hi_, doc_)                                            \
    K_NUM(sec_, key_, KEY_INT, def_, OFF(field, long), ST_LONG, lo_, hi_, 0, doc_)
#define K_INTF(sec_, key_, def_, field, lo_, hi_, doc_)                                            \
    K_NUM(sec_, key_, KEY_INT, def_, OFF(field, int), ST_INT, lo_, hi_, 0, doc_)
#define K_DOUBLE(sec_, key_, def_, field, lo_, hi_, fl_, doc_)                                     \
    K_NUM(sec_, key_, KEY_REAL, def_, OFF(field, double), ST_DOUBLE, lo_, hi_, fl_, doc_)
#define K_FLOAT(sec_, key_, def_, field, lo_, hi_, fl_, doc_)                                      \
    K_NUM(sec_, key_, KEY_REAL, def_, OFF(field, float), ST_FLOAT, lo_, hi_, fl_, doc_)
#define K_UNIT(sec_, key_, type_, def_, field, lo_, fl_, doc_)                                     \
    K_NUM(sec_, key_, type_, def_, OFF(field, double), ST_DOUBLE, lo_, INFINITY, fl_, doc_)
#define K_BOOL(sec_, key_, def_, field, doc_)                                                      \
    K_NUM(sec_, key_, KEY_BOOL, def_, OFF(field, int), ST_INT, 0, 1, 0, doc_)
#define K_ENUM(sec_, key_, def_, field, etype, names_, fl_, doc_)                                  \
    {                                                                                              \
        .section = sec_, .key = key_, .type = KEY_ENUM, .def = def_, .off = OFF(field, etype),     \
        .store = ST_INT, .flags = fl_, .names = names_, .doc = doc_                                \
    }
#define K_STRING(sec_, key_, def_, field, accepted_, defdoc_, doc_)                                \
    {                                                                                              \
        .section = sec_, .key = key_, .type = KEY_STRING, .def = def_,                             \
        .off = offsetof(scenario_t, field), .size = sizeof(((scenario_t *)0)->field),              \
        .accepted = accepted_, .defdoc = defdoc_, .doc = doc_                                      \
    }
#define K_CUSTOM(sec_, key_, def_, parse_, format_, accepted_, doc_)                               \
    {                                                                                              \
        .section = sec_, .key = key_, .type = KEY_CUSTOM, .def = def_, .parse = parse_,            \
        .format = format_, .accepted = accepted_, .doc = doc_                                      \
    }

/* Enums are stored through an int: they must be int-sized. */
_Static_assert(sizeof(sim_allreduce_algo_t) == sizeof(int), "enum size");
_Static_assert(sizeof(sim_time_model_t) == sizeof(int), "enum size");
_Static_assert(sizeof(sim_net_model_t) == sizeof(int), "enum size");
_Static_assert(sizeof(sim_tcp_cc_t) == sizeof(int), "enum size");
_Static_assert(sizeof(sim_backend_t) == sizeof(int), "enum size");
_Static_assert(sizeof(sim_attack_t) == sizeof(int), "enum size");
_Static_assert(sizeof(sim_precision_t) == sizeof(int), "enum size");
_Static_assert(sizeof(sim_fp8_scaling_t) == sizeof(int), "enum size");
_Static_assert(sizeof(trainer_optimizer_t) == sizeof(int), "enum size");
_Static_assert(sizeof(sim_recompute_t) == sizeof(int), "enum size");
_Static_assert(sizeof(sim_placement_t) == sizeof(int), "enum size");
_Static_assert(sizeof(sim_compute_model_t) == sizeof(int), "enum size");
_Static_assert(sizeof(sim_group_rows_t) == sizeof(int), "enum size");

static const char *const ring_message_names[] = {"steps", "phases", NULL};
static const char *const algorithm_names[] = {"ring",         "tree", "halving-doubling",
                                              "hierarchical", "2d",   NULL};
static const char *const time_model_names[] = {"flops", "measured", NULL};
static const char *const backend_names[] = {"cpu", "cuda", "auto", NULL};
static const char *const side_names[] = {"auto", "yes", "no", NULL};
static const char *const attack_names[] = {"sign_flip", "noise", "label_flip", NULL};
static const char *const net_model_names[] = {"LV08", "CM02", "SMPI", "tcp", "auto", NULL};
static const char *const tcp_cc_names[] = {"cubic", "bbr", "reno", NULL};
const char *const scn_precision_names[] = {"fp32", "tf32", "bf16", "fp8", NULL};
static const char *const fp8_scaling_names[] = {"tensor", "block", NULL};
static const char *const optimizer_names[] = {"sgd", "adam", "adamw", NULL};
static const char *const recompute_names[] = {"none", "selective", "full", NULL};
static const char *const placement_names[] = {"packed", "interleaved", NULL};
static const char *const compute_model_names[] = {"shape", "flat", NULL};

static dt_status parse_kind(scenario_t *, const char *, const parse_ctx_t *, dt_err_t *);
static void format_kind(const scenario_t *, char *, size_t);

static const key_desc_t builtin_keys[] = {
    /* [run] */
    K_STRING("run", "name", "scenario", name, "text",
             "the file's base name without .ini (\"scenario\" without a file)",
             "run name in the results"),
    K_NUM("run", "seed", KEY_INT, "1", OFF(seed, uint64_t), ST_U64, 0, 2147483647, 0,
          "seed of every random stream (data split, initialisation, sampling)"),
    K_LONG("run", "steps", "200", steps, 1, 1e9,
           "steps (per worker where workers step at their own pace; federated strategies count "
           "strategy.rounds instead)"),
    K_UNIT("run", "max_time", KEY_TIME, "0s", max_time, 0, 0, "simulated-time limit; 0 = none"),
    K_LONG("run", "collapse_after", "5", collapse_after, 0, 1e6,
           "a run whose last N evaluations all sit at chance (accuracy <= 1.5 / classes) ends "
           "recorded `collapsed` rather than `finished` (exit code 1); 0 = never"),
    K_DOUBLE("run", "divergence_factor", "3", divergence_factor, 0, 1e6, 0,
             "a run whose test loss exceeds this many times ln classes (the loss of uniform "
             "guesses, where an untrained model starts) stops there, recorded `diverged` with "
             "the step and the loss in a faults row (exit code 1), as one whose loss is NaN or "
             "Inf always does; 3 x ln classes puts the right class at classes^-3 on average, a "
             "model confidently wrong; 0 = only NaN / Inf"),
    K_UNIT("run", "stall_after", KEY_TIME, "5min", stall_after, 0, 0,
           "watchdog: a run with faults that writes fault rows for this long (wall-clock time) "
           "without finishing a step is stalled (a livelock of recoveries): it ends, recorded "
           "`stalled` with a fault row saying why; 0 = never"),
    K_LONG("run", "eval_every", "50", eval_every, 0, 1e9,
           "evaluate on the test set every N steps (rounds for federated strategies); 0 = no "
           "step marks"),
    K_UNIT("run", "eval_interval", KEY_TIME, "0s", eval_interval, 0, 0,
           "also evaluate at the first step boundary after every multiple of this simulated "
           "time; 0 = no time marks"),
    K_LONG("run", "eval_samples", "0", eval_samples, 0, 1e15,
           "also evaluate at the first step boundary after every multiple of this many "
           "training samples (all workers or clients together): the same points for every "
           "strategy of a sweep, where eval_every counts steps for some and rounds for "
           "others; 0 = no sample marks"),
    K_DOUBLE("run", "target_accuracy", "0.85", target_accuracy, 0, 1, 0,
             "test accuracy for \"time to target\""),
    K_ENUM("run", "time_model", "flops", time_model, sim_time_model_t, time_model_names, 0,
           "compute time: counted FLOPs / device speed (deterministic) or measured wall time "
           "of the real kernels"),
    K_BOOL("run", "shared_replicas", "yes", shared_replicas,
           "all-reduce workers keep one shared parameter and momentum copy, updated once per "
           "step, since their replicas are identical by construction (no for one copy each: "
           "same results, N times the memory and update work)"),
    K_CUSTOM("run", "timeline_steps", "all", scn_parse_timeline_steps, scn_format_timeline_steps,
             "all, or an integer in [0, 1000000]",
             "record who computes, sends and waits (the timeline figure, dtsim export --trace): "
             "all = the whole run, N = until the first node has computed N gradients; 0 = "
             "none"),
    K_CUSTOM("run", "timeline", "auto", scn_parse_timeline, scn_format_timeline,
             "auto, sampled, whole",
             "what of that timeline and its messages the database keeps: sampled = the first "
             "step (whatever timeline_steps above 0) of at most 16 hosts spread over the "
             "ranks, boxes too short to see merged, within about 700 KB (a plan's 128-GPU "
             "runs wrote 35 MB each); whole = every host (200,000 rows at most); auto (a run "
             "stores it resolved) = sampled for a timing-only model, whole for a real one"),
    K_ENUM("run", "group_rows", "auto", group_rows, sim_group_rows_t, side_names, 0,
           "the workers, memory and links tables' rows whose figures are all the same (the "
           "hosts a strategy simulates as one, strategy.tensor_members or data_members = one; "
           "symmetric replicas; links alike): yes = one row for them, its weight their number, "
           "under the first one's rank or name; no = a row per host and link; auto = yes for a "
           "run of more than 256 hosts (a step of Llama 3 405B on 16,384 GPUs stores 233 KB, "
           "not 3.9 MB: results/README.md)"),
    K_BOOL("run", "allow_oversubscribed_memory", "no", allow_oversubscribed_memory,
           "a layout whose parameters, gradients, optimizer state and activations exceed a "
           "host's device memory is refused by check and run (\"does not fit: ... on worker "
           "N\"); yes times it anyway and records it (a `memory` row in the faults table)"),
    K_STRING("run", "db", "results/dtsim.db", db, "path", NULL,
             "results database (relative to the current directory)"),

    /* [model] */
    K_CUSTOM("model", "arch", "mlp", scn_parse_arch, scn_format_arch,
             "logreg, mlp, cnn, gpt, profile:NAME, profile:FILE.ini",
             "model architecture; a profile (resnet50, resnet101, inception_v3, vgg16, "
             "bert_large, gpt2_xl) is timed, not trained"),
    K_CUSTOM("model", "hidden", "256,128", scn_parse_hidden, scn_format_hidden,
             "comma-separated sizes in [1, 1048576], at most 8",
             "mlp hidden layer sizes; gpt: its width, one size"),
    K_CUSTOM("model", "conv", "16,32", scn_parse_conv, scn_format_conv,
             "C1,C2: two integers in [1, 4096]", "cnn output channels of the two convolutions"),
    K_INTF("model", "kernel", "5", model.kernel, 1, 15, "cnn convolution kernel size"),
    K_INTF("model", "fc", "128", model.fc, 1, 1048576, "cnn dense hidden size"),
    K_INTF("model", "layers", "2", model.layers, 1, 1024, "gpt transformer blocks"),
    K_INTF("model", "heads", "4", model.heads, 1, 1024,
           "gpt attention heads (they divide model.hidden)"),
    K_INTF("model", "seq", "64", model.seq, 1, TRAINER_GPT_MAX_SEQ,
           "gpt tokens per window: a sample is seq + 1 tokens, the last seq of them targets"),
    K_LONG("model", "batch", "64", batch, 1, 65536,
           "batch size per worker (per client for federated strategies)"),
    K_ENUM("model", "optimizer", "sgd", sgd.kind, trainer_optimizer_t, optimizer_names, 0,
           "the optimizer, as PyTorch's: sgd (torch.optim.SGD, with model.momentum), adam "
           "(torch.optim.Adam: weight_decay added to the gradient) or adamw (torch.optim.AdamW: "
           "weight_decay decoupled); adam and adamw keep two FP32 moments a parameter (with "
           "bf16, 16 bytes a parameter in all); the memory of a timing-only model counts them"),
    K_FLOAT("model", "lr", "0.05", sgd.lr, 0, 100, OPEN_MIN,
            "learning rate (the peak, after "
            "model.warmup)"),
    K_FLOAT("model", "momentum", "0", sgd.momentum, 0, 1, OPEN_MAX, "SGD momentum"),
    K_FLOAT("model", "weight_decay", "0", sgd.weight_decay, 0, 1, 0,
            "weight decay: L2 (added to the gradient) for sgd and adam, decoupled (w *= 1 - lr "
            "x weight_decay) for adamw"),
    K_DOUBLE("model", "beta1", "0.9", sgd.beta1, 0, 1, OPEN_MAX,
             "adam, adamw: the first moment's decay per step"),
    K_DOUBLE("model", "beta2", "0.999", sgd.beta2, 0, 1, OPEN_MAX,
             "adam, adamw: the second moment's decay per step"),
    K_DOUBLE("model", "eps", "1e-8", sgd.eps, 0, 1, OPEN_MIN,
             "adam, adamw: added to the root of the second moment"),
    K_FLOAT("model", "clip_norm", "0", sgd.clip_norm, 0, 1e9, 0,
            "gradient clipping by global norm (torch.nn.utils.clip_grad_norm_): the gradient "
            "over all parameters is scaled by clip_norm / (norm + 1e-6) when its 2-norm is "
            "larger; 0: off"),
    K_CUSTOM("model", "schedule", "constant", scn_parse_schedule, scn_format_schedule,
             "constant, cosine, linear",
             "learning rate after model.warmup: constant, or cosine or linear decay to "
             "model.lr_min at the end of the run (steps; rounds for federated strategies)"),
    K_LONG("model", "warmup", "0", warmup, 0, 1000000000,
           "steps (rounds for federated strategies) of linear warmup: lr x (s + 1) / warmup at "
           "step s; 0: none"),
    K_FLOAT("model", "lr_min", "0", lr_min, 0, 100, 0,
            "the floor model.schedule = cosine or linear decays to"),
    K_LONG("model", "threads", "1", threads, 1, 1024, "OpenBLAS threads of the real kernels"),
    K_ENUM("model", "device", "cpu", backend, sim_backend_t, backend_names, 0,
           "where the real kernels run: cpu (OpenBLAS), cuda (cuBLAS and CUDA kernels; an "
           "error without a usable GPU) or auto (cuda when usable, else cpu)"),
    K_ENUM("model", "side_by_side", "auto", side_by_side, sim_side_by_side_t, side_names, 0,
           "train a federated round's clients (local SGD: a period's workers) side by side "
           "as replicas, one launch per op for all of them (same results up to float "
           "rounding; auto: on the cuda device only)"),
    K_ENUM("model", "precision", "fp32", precision, sim_precision_t, scn_precision_names, 0,
           "the simulated number format: it picks the device's peak (cluster.device) and the "
           "bytes of parameters, gradients and activations on the wire and in memory: fp32 "
           "and tf32 (TF32 tensor cores) 4 bytes, bf16 (mixed precision, FP32 master weights; "
           "FP16 on the V100) and fp8 (FP8 GEMMs, BF16 storage) 2; anything but fp32 needs a "
           "timing-only model (real training is FP32)"),
    K_ENUM("model", "fp8_scaling", "tensor", fp8_scaling, sim_fp8_scaling_t, fp8_scaling_names, 0,
           "with precision = fp8, how the GEMMs scale their operands, which sets the fraction "
           "of the FP8 peak they reach in the compute model by shape: tensor (a scale per "
           "tensor, Transformer Engine: the device's gemm_efficiency) or block (1 x 128 "
           "activation and 128 x 128 weight blocks with FP32 promotion, DeepSeek-V3's "
           "DeepGEMM: its fp8_block_gemm_efficiency)"),
    K_ENUM("model", "recompute", "none", recompute, sim_recompute_t, recompute_names, 0,
           "activation recomputation of a timing-only model with a [forward] section: "
           "selective recomputes the attention cores (layers named *.scores) in the backward "
           "pass, full the numbered blocks' layers (NAME.N.*: not the embedding nor the "
           "output layer, as Megatron-LM checkpoints its transformer layers; every layer of "
           "a profile without numbered blocks), keeping only the inputs at the profile's "
           "cuts (one more forward pass of those layers' FLOPs per step)"),

    /* [data] */
    K_CUSTOM("data", "source", "fashion-mnist", scn_parse_source, scn_format_source,
             "fashion-mnist, synthetic, text (byte tokens from data.text, cut into windows "
             "of model.seq + 1), or a directory of MNIST-format IDX files (relative to the "
             "scenario file)",
             "data set"),
    K_CUSTOM("data", "text", "fortunes", scn_parse_text, scn_format_text,
             "fortunes (Debian's fortunes: a source per English topic file), "
             "fortunes-languages (a source per language: en, de, es, it), or a text file or "
             "folder of text files, a source each (relative to the scenario file)",
             "data.source = text: the corpus; each source's last tenth is the validation "
             "set"),
    K_LONG("data", "train_samples", "0", train_samples, 0, 1e9,
           "training samples used; 0 = all (synthetic: 60000 are made)"),
    K_LONG("data", "test_samples", "0", test_samples, 0, 1e9,
           "test samples used; 0 = all (images: the first N; a text set: N windows drawn from "
           "every source, in proportion, seeded by run.seed)"),
    K_LONG("data", "synthetic_dim", "784", synthetic_dim, 1, 1048576,
           "synthetic: features per sample"),
    K_LONG("data", "synthetic_classes", "10", synthetic_classes, 2, 256,
           "synthetic: number of classes"),
    K_DOUBLE("data", "synthetic_noise", "1", synthetic_noise, 0, 100, OPEN_MIN,
             "synthetic: standard deviation of the noise around each class centre"),
    K_CUSTOM("data", "partition", "iid", scn_parse_partition, scn_format_partition,
             "iid, dirichlet:ALPHA (ALPHA > 0), shards:K (K >= 1), by-source (text: a "
             "client per source)",
             "how the training set is split across workers or clients"),
    K_DOUBLE("data", "client_holdout", "0", client_holdout, 0, 0.9, 0,
             "federated: share of each client's samples kept out of its training; the "
             "final model's accuracy on them is the client's row of the clients table "
             "(fairness across clients); 0 = none"),

    /* [cluster] */
    K_CUSTOM("cluster", "platform", "star", scn_parse_platform, scn_format_platform,
             "star, fat-tree, multi-rack, edge, torus, dragonfly, rail, or a path to a SimGrid "
             ".xml file (relative to the scenario file)",
             "simulated cluster"),
    K_LONG("cluster", "workers", "8", workers, 1, 100000,
           "trainer hosts (federated: the hosts clients train on; a strategy that lays out its own "
           "hosts, one or a host per stage, sets or checks it)"),
    K_UNIT("cluster", "bandwidth", KEY_BANDWIDTH, "10Gbps", bandwidth, 0, OPEN_MIN,
           "bandwidth of each host's link"),
    K_UNIT("cluster", "latency", KEY_TIME, "5us", latency, 0, 0, "latency of each host's link"),
    K_UNIT("cluster", "uplink_bandwidth", KEY_BANDWIDTH, "40Gbps", uplink_bandwidth, 0, OPEN_MIN,
           "bandwidth of rack and fat-tree uplinks"),
    K_UNIT("cluster", "uplink_latency", KEY_TIME, "5us", uplink_latency, 0, 0,
           "latency of rack and fat-tree uplinks"),
    K_LONG("cluster", "racks", "2", racks, 1, 100000, "multi-rack: number of racks"),
    K_CUSTOM("cluster", "torus", "auto", scn_parse_torus, scn_format_torus,
             "auto, or dimensions AxBxC (1 to 4 of them, each 1 to 1024)",
             "torus: the torus's shape (auto: about a cube that holds the hosts; spare positions "
             "are idle hosts)"),
    K_CUSTOM("cluster", "dragonfly", "auto", scn_parse_dragonfly, scn_format_dragonfly,
             "auto, or G,C,R,N: groups, chassis per group, routers per chassis, hosts per router",
             "dragonfly: the shape (auto: routers of 4 hosts, chassis of 4 routers, one chassis "
             "per group, enough groups); one link between each pair of connected routers"),
    K_LONG("cluster", "gpus_per_server", "8", gpus_per_server, 1, 1024,
           "rail: GPUs (hosts) per server, joined by the server's NVLink switch; GPU r of "
           "every server has its NIC on rail r"),
    K_UNIT("cluster", "nvlink_bandwidth", KEY_BANDWIDTH, "450GBps", nvlink_bandwidth, 0, OPEN_MIN,
           "rail: each GPU's NVLink bandwidth each way (H100 NVLink 4: 900 GB/s both ways)"),
    K_UNIT("cluster", "nvlink_latency", KEY_TIME, "1us", nvlink_latency, 0, 0,
           "rail: latency of each GPU's NVLink port"),
    K_ENUM("cluster", "network_model", "auto", network_model, sim_net_model_t, net_model_names,
           NOCASE,
           "SimGrid network model: LV08 (calibrated TCP), CM02 (max-min sharing; with "
           "crosstraffic = no, pure latency + size/bandwidth), SMPI, tcp (CM02's sharing, each "
           "message charged TCP's window as Linux opens it: the tcp_* keys; for links of "
           "milliseconds), auto (tcp on the edge platform and where latency or "
           "uplink_latency is 1 ms or more, else LV08: dtsim validate found LV08 and tcp within "
           "5% at 0.1 ms links, only tcp within 10% from 5 ms)"),
    K_BOOL("cluster", "crosstraffic", "yes", crosstraffic,
           "model the acknowledgement traffic flowing back on each link"),
    K_ENUM("cluster", "tcp_congestion", "cubic", tcp.congestion, sim_tcp_cc_t, tcp_cc_names, 0,
           "tcp: the congestion control (net.ipv4.tcp_congestion_control; Linux's default "
           "cubic): cubic and reno restart slow start after an idle, then grow half the "
           "window (cubic) or one segment (reno) a round trip; bbr keeps its window"),
    K_LONG("cluster", "tcp_initial_window", "10", tcp.initial_window, 1, 1000,
           "tcp: segments a connection's window starts at (RFC 6928; Linux's TCP_INIT_CWND)"),
    K_LONG("cluster", "tcp_mss", "1448", tcp.mss, 88, 65495,
           "tcp: payload bytes of a full segment (a 1500-byte MTU less 20 bytes of IP and 32 "
           "of TCP with timestamps, net.ipv4.tcp_timestamps = 1)"),
    K_LONG("cluster", "tcp_header", "66", tcp.header, 0, 1000,
           "tcp: bytes each segment adds on the wire: Ethernet 14, IP 20, TCP 32 (as Linux's "
           "queues count a frame; a physical link adds 24 more: preamble, FCS, gap)"),
    K_LONG("cluster", "tcp_wmem_max", "4194304", tcp.wmem_max, 4096, 1L << 40,
           "tcp: send buffer cap, bytes (net.ipv4.tcp_wmem's third value); the window keeps "
           "0.68 of it in flight"),
    K_LONG("cluster", "tcp_rmem_max", "6291456", tcp.rmem_max, 4096, 1L << 40,
           "tcp: receive buffer cap, bytes (net.ipv4.tcp_rmem's third value); the receiver "
           "offers half of it as window (net.ipv4.tcp_adv_win_scale = 1)"),
    K_BOOL("cluster", "tcp_slow_start_after_idle", "yes", tcp.slow_start_after_idle,
           "tcp: cubic and reno halve the window per retransmission timeout of idle, down to "
           "the initial window (net.ipv4.tcp_slow_start_after_idle, RFC 2861)"),
    K_UNIT("cluster", "tcp_rto_min", KEY_TIME, "200ms", tcp.rto_min, 0, OPEN_MIN,
           "tcp: the retransmission timeout's floor: the timeout is the round trip plus it "
           "(Linux's TCP_RTO_MIN)"),
    K_LONG("cluster", "tcp_handshake", "1", tcp.handshake, 0, 10,
           "tcp: round trips a connection's first message waits (the three-way handshake); "
           "0: connections opened before the run"),
    K_CUSTOM("cluster", "device", "cpu", scn_parse_device, scn_format_device,
             "a device of the catalogue (below; dtsim devices), FILE.ini (a profile as dtsim "
             "calibrate writes it, or a catalogue entry of your own, relative to the scenario "
             "file) or custom",
             "simulated device of every host: its peak at model.precision x its achieved "
             "fraction becomes device_flops, its memory bounds what a host may hold"),
    {.section = "cluster",
     .key = "device_flops",
     .type = KEY_FLOPS,
     .def = NULL,
     .off = OFF(device_flops, double),
     .store = ST_DOUBLE,
     .min = 0,
     .max = INFINITY,
     .flags = OPEN_MIN | DERIVED,
     .defdoc = "the device's speed",
     .doc = "simulated device speed; given without device it makes the device custom"},
    K_DOUBLE("cluster", "device_efficiency", "0", device_efficiency, 0, 1, 0,
             "achieved fraction of the device's peak at model.precision, replacing the "
             "catalogue's (efficiency for fp32, tensor_efficiency for the others); 0 = the "
             "device's"),
    K_ENUM("cluster", "compute_model", "shape", compute_model, sim_compute_model_t,
           compute_model_names, 0,
           "how a timing-only model's layers are timed: shape times those its profile's "
           "[shape] section describes by operation and shape on the device (GEMMs by tiles, "
           "waves and the roofline at gemm_efficiency, flash attention at "
           "attention_efficiency, memory-bound layers at memory_bandwidth x "
           "memory_efficiency), the others at device_flops; flat times every FLOP at "
           "device_flops. A profile without [shape], a device without sms (cpu, custom) or "
           "cluster.device_efficiency given: flat"),
    K_DOUBLE("cluster", "link_power", "15", link_power, 0, 1e6, 0,
             "W drawn by each network port (a NIC and the switch port it plugs into are two "
             "ports), busy or idle; the default is a 400G port: a QSFP-DD optical module "
             "(power class up to 12 W, QSFP-DD MSA 6.0) plus a share of the switch ASIC"),
    K_DOUBLE("cluster", "price_per_device_hour", "0", price_per_device_hour, 0, 1e9, 0,
             "$ per host (one device) per hour of simulated time: the run's cost, per sample "
             "and to run.target_accuracy in the energy table; 0 = no cost (NULL)"),
    K_DOUBLE("cluster", "price_per_port_hour", "0", price_per_port_hour, 0, 1e9, 0,
             "$ per network port per hour of simulated time, added to the devices' price: "
             "the platform's ports (two per host link and per switch-to-switch link, as "
             "cluster.link_power counts them) priced as a share of the NICs, switches and "
             "optics; 0 = none"),

    /* [strategy] */
    K_CUSTOM("strategy", "kind", "sync-ps", parse_kind, format_kind, NULL, "training strategy"),
    K_ENUM("strategy", "algorithm", "ring", algorithm, sim_allreduce_algo_t, algorithm_names, 0,
           "the all-reduce's algorithm (the strategy table says what each does)"),
    K_ENUM("strategy", "ring_messages", "steps", ring_messages, sim_ring_messages_t,
           ring_message_names, 0,
           "ring all-reduce: steps = one message per step, 2 (p-1) per member; phases = one "
           "per phase after a zero-byte latency probe, the other latencies waited out "
           "(timing-only runs of thousands of workers; same time when the ring has its links "
           "to itself)"),
    K_DOUBLE("strategy", "bucket_mb", "0", bucket_mb, 0, 1e6, 0,
             "gradient buckets of this many MB (1e6 bytes), each reduced across the replicas "
             "while the backward pass goes on (over micro-batches: during the step's last); "
             "PyTorch DDP's bucket_cap_mb, Horovod's fusion buffer; 0 = one collective after "
             "the backward pass (a sharded optimizer's: its own default)"),
    K_LONG("strategy", "group_size", "4", group_size, 1, 100000,
           "hierarchical and 2d all-reduce: workers per group (consecutive ranks); must "
           "divide workers; on a multi-rack platform the racks are the groups, on the rail "
           "platform the servers"),
    /* (the strategies' own keys go here: scn_keys_use_strategies) */
    K_LONG("strategy", "accumulate", "1", accumulate, 1, 100000,
           "gradient accumulation, micro-batches of model.batch summed before each exchange "
           "and update (a step then takes accumulate x batch samples per worker; a "
           "federated client's local step likewise)"),
    K_CUSTOM("strategy", "compression", "none", scn_parse_compression, scn_format_compression,
             "none, fp16, qsgd8, topk:F (0 < F <= 1)",
             "what gradients (a federated client's: model updates) travel as: "
             "fp16 halves, qsgd8 8-bit stochastic quantization with a scale per 512, topk:F "
             "the largest F of them as index + value pairs; bytes on the wire are the "
             "encoding's (Compression below)"),
    K_BOOL("strategy", "error_feedback", "yes", error_feedback,
           "with a lossy compression: each sender keeps what its encoding left out and adds "
           "it to its next gradient (federated: per client)"),
    K_BOOL("strategy", "momentum_correction", "yes", momentum_correction,
           "with topk, error feedback and model.momentum > 0: each worker "
           "keeps the momentum of its own gradients, accumulates that, and clears what it sent "
           "(DGC, Lin et al. 2018); the update is then plain SGD"),

    /* [faults] */
    K_UNIT("faults", "timeout", KEY_TIME, "1s", fault_timeout, 0, OPEN_MIN,
           "with any fault below: a node waits this long for a peer before it presumes it "
           "dead (must exceed the longest healthy wait)"),
    K_CUSTOM("faults", "crash", "none", scn_parse_crash, scn_format_crash,
             "none, or TARGET at TIME [for DURATION | until TIME], ... (TARGET: worker-N, "
             "server-N, client-N or a host)",
             "host crashes (SimGrid host off); with for/until the host comes back and its node "
             "rejoins"),
    K_CUSTOM("faults", "link_down", "none", scn_parse_link_down, scn_format_link_down,
             "none, or LINK at TIME [for DURATION | until TIME], ... (LINK: a link name, with "
             "or without _UP/_DOWN, or a node or host for its own links)",
             "links that carry nothing for an interval (traffic stalls as TCP's does; peers "
             "notice by timeout)"),
    K_CUSTOM("faults", "link_degrade", "none", scn_parse_link_degrade, scn_format_link_degrade,
             "none, or LINK at TIME to BANDWIDTH [for DURATION | until TIME], ...",
             "links whose bandwidth drops for an interval"),
    K_BOOL("faults", "live_links", "no", live_links,
           "the run takes link bandwidth and latency changes from dtsim serve's page while it "
           "runs (dtsim run --publish); it is set up as a run with link faults is, and each "
           "change is a faults row naming the link_degrade item that replays it"),
    K_BOOL("faults", "live_hosts", "no", live_hosts,
           "the run takes host crashes and stragglers from dtsim serve's page while it runs "
           "(dtsim run --publish); it is set up as a run with faults is, and each change is a "
           "faults row naming the crash or straggler item that replays it"),
    K_CUSTOM("faults", "straggler", "none", scn_parse_straggler, scn_format_straggler,
             "none, or TARGET xFACTOR [at TIME] [for DURATION | until TIME], ...",
             "compute slowdown of a node or host (x4: four times slower; at most x1e6), always "
             "or for an interval"),
    K_CUSTOM("faults", "slowdown", "none", scn_parse_slowdown, scn_format_slowdown,
             "none, uniform:LO:HI, lognormal:SIGMA",
             "slowdown factor drawn once per worker host (seeded)"),
    K_UNIT("faults", "mtbf", KEY_TIME, "0s", mtbf, 0, 0,
           "mean time between failures of each worker host (exponential, seeded); 0 = none"),
    K_UNIT("faults", "mttr", KEY_TIME, "0s", mttr, 0, 0,
           "mean time to repair after a random failure (exponential); 0 = never back"),
    K_LONG("faults", "checkpoint_every", "0", checkpoint_every, 0, 1000000000,
           "parameter servers and a lone worker checkpoint every N steps and restart from "
           "it after a crash; 0 = restart from the initial weights"),
    K_DOUBLE("faults", "dropout", "0", dropout, 0, 1, 0,
             "federated rounds: probability that a sampled client drops out of its round"),
    K_UNIT(
        "faults", "deadline", KEY_TIME, "0s", deadline, 0, 0,
        "federated rounds: the server aggregates what arrived this long after the round started; "
        "0 = waits for every client (at most faults.timeout of silence)"),
    K_DOUBLE("faults", "over_select", "1", over_select, 1, 10, 0,
             "federated rounds: sample this many times the clients needed and keep the first to "
             "answer"),
    K_CUSTOM("faults", "availability", "always", scn_parse_availability, scn_format_availability,
             "always, PERIOD:FRACTION (e.g. 24h:0.3), trace:PATH (relative to the scenario file)",
             "federated: each client is online FRACTION of every PERIOD (phase drawn per client), "
             "or in its windows of an availability trace (scenarios/traces/README.md: dtsim's "
             "or FedScale's layout); only online clients are sampled"),
    K_CUSTOM("faults", "client_speed", "same", scn_parse_client_speed, scn_format_client_speed,
             "same, SPEED:SHARE, ... (shares sum to 1), or a distribution of speeds "
             "(uniform:LO:HI, lognormal:MEDIAN:SIGMA, choice:V1@P1,...)",
             "federated: each client's compute speed: a device class drawn per client, "
             "or a speed drawn per client (same = cluster.device)"),
    K_CUSTOM("faults", "device_trace", "none", scn_parse_device_trace, scn_format_device_trace,
             "none, or a device trace FILE.csv (relative to the scenario file)",
             "federated: each client's speed, uplink, downlink and latency from a trace "
             "(dtsim's or FedScale's layout, scenarios/traces/README.md; client c takes row c "
             "mod rows); its link columns need the edge platform and a host per client"),
    K_CUSTOM("faults", "client_up", "platform", scn_parse_client_up, scn_format_client_up,
             "platform, or a distribution of bandwidths (e.g. lognormal:5Mbps:0.8)",
             "federated, on the edge platform: each client's uplink bandwidth, drawn per client "
             "(platform = the edge platform's access classes); needs a host per client"),
    K_CUSTOM("faults", "client_down", "platform", scn_parse_client_down, scn_format_client_down,
             "platform, or a distribution of bandwidths (e.g. uniform:20Mbps:100Mbps)",
             "federated, on the edge platform: each client's downlink bandwidth, drawn per client"),
    K_CUSTOM("faults", "client_latency", "platform", scn_parse_client_latency,
             scn_format_client_latency,
             "platform, or a distribution of times (e.g. choice:10ms@0.7,80ms@0.3)",
             "federated, on the edge platform: each client's one-way access latency, drawn per "
             "client (platform = its access class's plus cluster.latency)"),
    K_DOUBLE("faults", "byzantine", "0", byzantine, 0, 1, OPEN_MAX,
             "federated: fraction of the clients that are Byzantine (floor(fraction x "
             "clients), drawn once per run from the seed); they send faults.attack's update"),
    K_ENUM("faults", "attack", "sign_flip", attack, sim_attack_t, attack_names, 0,
           "Byzantine clients: sign_flip sends x - attack_scale (y - x) for its trained model "
           "y, noise sends x + N(0, attack_scale^2) per parameter, label_flip trains on labels "
           "classes - 1 - y"),
    K_DOUBLE("faults", "attack_scale", "4", attack_scale, 0, 1e6, 0,
             "sign_flip: how far the negated update reaches; noise: its standard deviation"),

    /* [jobs] */
    K_STRING("jobs", "files", "none", jobs_files, "none, or comma-separated paths", NULL,
             "several jobs on this file's platform: scenario files (relative to this file), "
             "each its own run with its own strategy, model and hosts, simulated together so "
             "that their traffic shares the fabric; cluster.workers is then the platform's "
             "host count (see sim/docs/fabrics.md, Several jobs on one platform)"),
    K_ENUM("jobs", "placement", "packed", jobs_placement, sim_placement_t, placement_names, 0,
           "which hosts each job gets: packed (job 1 the first hosts, job 2 the next) or "
           "interleaved (one host each in turn, so jobs share racks and uplinks)"),
};
#define N_BUILTIN (sizeof builtin_keys / sizeof builtin_keys[0])
_Static_assert(N_BUILTIN + SCENARIO_OWN_KEYS <= SCENARIO_MAX_KEYS, "grow SCENARIO_MAX_KEYS");

const key_desc_t *scn_key_table = builtin_keys;
int scn_key_count = (int)N_BUILTIN;

/* The [strategy] keys of no strategy's own, which the engine reads for every strategy that
 * takes their technique, and the SIM_TAKES_* bit (strategy_def.h) that says which do. */
static const struct {
    const char *key;
    unsigned takes;
} technique_keys[] = {
    {"algorithm", SIM_TAKES_ALLREDUCE},
    {"ring_messages", SIM_TAKES_ALLREDUCE},
    {"bucket_mb", SIM_TAKES_BUCKETS},
    {"group_size", SIM_TAKES_GROUPS},
    {"accumulate", SIM_TAKES_ACCUMULATE},
    {"compression", SIM_TAKES_COMPRESSION},
    {"error_feedback", SIM_TAKES_COMPRESSION},
    {"momentum_correction", SIM_TAKES_MOMENTUM_CORRECTION},
};

unsigned scn_keys_technique(const char *key)
{
    for (size_t i = 0; i < sizeof technique_keys / sizeof *technique_keys; i++)
        if (!strcmp(technique_keys[i].key, key))
            return technique_keys[i].takes;
    return 0;
}

/* The row of a strategy's own key, its value in sc->own[slot]. */
static key_desc_t own_row(const sim_strategy_key_t *k, int slot)
{
    static const key_type_t types[] = {KEY_INT, KEY_REAL, KEY_BOOL, KEY_ENUM};
    static const key_store_t stores[] = {ST_LONG, ST_DOUBLE, ST_INT, ST_INT};
    DT_ASSERT(k->kind >= SIM_KEY_INT && k->kind <= SIM_KEY_ENUM && k->def && k->doc);
    DT_ASSERT(k->kind != SIM_KEY_ENUM || k->names);
    return (key_desc_t){.section = "strategy",
                        .key = k->key,
                        .type = types[k->kind],
                        .def = k->def,
                        .off = offsetof(scenario_t, own) + (size_t)slot * sizeof(sim_own_value_t),
                        .store = stores[k->kind],
                        .min = k->kind == SIM_KEY_BOOL ? 0 : k->min,
                        .max = k->kind == SIM_KEY_BOOL ? 1 : k->max,
                        .names = k->names,
                        .flags = (k->open & SIM_KEY_OPEN_MIN ? OPEN_MIN : 0) |
                                 (k->open & SIM_KEY_OPEN_MAX ? OPEN_MAX : 0),
                        .doc = k->doc};
}

void scn_keys_use_strategies(const sim_strategy_t *const *list)
{
    static key_desc_t table[SCENARIO_MAX_KEYS];
    int n = 0, slot = 0, placed = 0;
    for (size_t b = 0; b < N_BUILTIN; b++) {
        const key_desc_t *d = &builtin_keys[b];
        if (!placed && !strcmp(d->section, "strategy") && !strcmp(d->key, "accumulate")) {
            for (const sim_strategy_t *const *s = list; *s; s++)
                for (const sim_strategy_key_t *k = (*s)->own_keys; k && k->key; k++) {
                    /* two strategies may share a key (fedavg's and fedbuff's server_lr)
                     * when they declare it alike: one row, one value */
                    int shared = 0;
                    for (int j = 0; j < n && !shared; j++)
                        if (!strcmp(table[j].key, k->key) &&
                            !strcmp(table[j].section, "strategy")) {
                            key_desc_t a = own_row(k, 0), *b = &table[j];
                            DT_ASSERT(a.type == b->type && a.min == b->min && a.max == b->max &&
                                      a.flags == b->flags && a.names == b->names &&
                                      !strcmp(a.def, b->def));
                            shared = 1;
                        }
                    if (shared)
                        continue;
                    for (size_t j = 0; j < N_BUILTIN; j++)
                        DT_ASSERT(strcmp(builtin_keys[j].key, k->key) ||
                                  strcmp(builtin_keys[j].section, "strategy"));
                    DT_ASSERT(slot < SCENARIO_OWN_KEYS); /* grow SCENARIO_OWN_KEYS */
                    table[n++] = own_row(k, slot++);
                }
            placed = 1;
        }
        table[n++] = *d;
    }
    DT_ASSERT(placed);
    /* every built-in [strategy] key but kind is some technique's */
    for (size_t b = 0; b < N_BUILTIN; b++)
        DT_ASSERT(strcmp(builtin_keys[b].section, "strategy") ||
                  !strcmp(builtin_keys[b].key, "kind") || scn_keys_technique(builtin_keys[b].key));
    scn_key_table = table;
    scn_key_count = n;
}

/* strategy.kind: a name from the registry (strategy_def.h), listed in its order */
void scn_kind_names(char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    const sim_strategy_t *const *s = scenario_strategies();
    for (int i = 0; s[i] && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? ", " : "", s[i]->name);
}

static dt_status parse_kind(scenario_t *sc, const char *v, const parse_ctx_t *ctx, dt_err_t *err)
{
    (void)ctx;
    const sim_strategy_t *st = scenario_strategy_find(v);
    if (st) {
        sc->strategy = st;
        return DT_OK;
    }
    char list[256], hint[96];
    scn_kind_names(list, sizeof list);
    const char *names[65];
    int k = 0;
    for (const sim_strategy_t *const *s = scenario_strategies(); *s && k < 64; s++)
        names[k++] = (*s)->name;
    names[k] = NULL;
    scn_value_hint(v, names, hint, sizeof hint);
    return dt_err_input(err, "unknown value \"%s\" (expected one of %s)%s", v, list, hint);
}

static void format_kind(const scenario_t *sc, char *buf, size_t n)
{
    snprintf(buf, n, "%s", sc->strategy->name);
}

const char *scenario_backend_name(sim_backend_t b)
{
    DT_ASSERT((int)b >= 0 && (int)b <= SIM_BACKEND_AUTO);
    return backend_names[b];
}

const char *scenario_algorithm_name(sim_allreduce_algo_t a)
{
    DT_ASSERT((int)a >= 0 && (int)a <= SIM_ALLREDUCE_2D);
    return algorithm_names[a];
}
