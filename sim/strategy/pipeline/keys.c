/* The pipeline's own keys (scenario_own): the key table of strategy.kind = pipeline, every
 * key's values and its documentation as dtsim keys prints it. */
#include "pipeline_impl.h"

/* strategy.tensor_comm's values, in the order of PIPE_TP_* (check.c names them too) */
const char *const pipe_tensor_comm_names[] = {"messages", "formula", "nccl", NULL};
static const char *const nccl_links_names[] = {"device", "platform", NULL};
static const char *const tensor_members_names[] = {"all", "one", NULL};
static const char *const expert_dispatch_names[] = {"model", "fp8", NULL};

static const char *const schedule_names[] = {"gpipe", "1f1b", "interleaved", NULL};

const sim_strategy_key_t pipe_own_keys[] = {
    {.key = "stages",
     .kind = SIM_KEY_INT,
     .def = "2",
     .min = 1,
     .max = 64,
     .doc = "stages, each a run of consecutive layers on its own host (cut where the FLOPs "
            "balance best, at layers with weights; a model profile: at its [forward] cuts); "
            "cluster.workers, if given, must equal it",
     .ignored_elsewhere = 1},
    {.key = "micro_batches",
     .kind = SIM_KEY_INT,
     .def = "4",
     .min = 1,
     .max = 4096,
     .doc = "micro-batches each step's model.batch is cut into (must divide it)",
     .ignored_elsewhere = 1},
    {.key = "pipeline_schedule",
     .kind = SIM_KEY_ENUM,
     .def = "1f1b",
     .names = schedule_names,
     .doc = "gpipe (all forwards, then all backwards; every micro-batch's activations held "
            "at once), 1f1b (PipeDream-Flush: one forward, one backward; at most stages "
            "micro-batches in flight) or interleaved (Megatron-LM: 1f1b over virtual_stages "
            "chunks of layers a stage, bubble divided by virtual_stages); all flush and "
            "update once per step",
     .ignored_elsewhere = 1},
    {.key = "data_parallel",
     .kind = SIM_KEY_INT,
     .def = "1",
     .min = 1,
     .max = 4096,
     .doc = "replicas of the whole pipeline (hybrid data + pipeline parallelism: "
            "data_parallel x stages workers, each replica on its own batch of model.batch, "
            "each stage's gradients all-reduced with `algorithm` across the replicas before "
            "its update); cluster.workers, if given, must equal data_parallel x stages"},
    {.key = "tensor",
     .kind = SIM_KEY_INT,
     .def = "1",
     .min = 1,
     .max = 1024,
     .doc = "of the real gpt or a model profile with a [tensor] section: hosts every stage "
            "is split across (Megatron-LM tensor parallelism: the gpt's heads and MLP, or the "
            "profile's column, row, heads and vocab layers divided, an all-reduce per split "
            "in the tensor group; the gpt's weights split for real, as the tensor strategy "
            "splits them); workers = tensor x stages x data_parallel",
     .ignored_elsewhere = 1},
    SIM_KEY_SEQUENCE_PARALLEL,
    {.key = "shard_optimizer",
     .kind = SIM_KEY_BOOL,
     .def = "no",
     .doc = "with data_parallel > 1: ZeRO over the replicas, stage zero_stage (1: each "
            "stage's gradients reduce-scattered, each replica updating 1/data_parallel of "
            "them with that share of the optimizer state, the weights all-gathered; ring)",
     .ignored_elsewhere = 1},
    SIM_KEY_ZERO_STAGE,
    SIM_KEY_ZERO_GRAD_OVERLAP,
    SIM_KEY_ZERO_PREFETCH,
    {.key = "tensor_comm",
     .kind = SIM_KEY_ENUM,
     .def = "messages",
     .names = pipe_tensor_comm_names,
     .doc = "of a profile with tensor > 1: how a tensor group's all-reduces are "
            "simulated; messages: a ring of real messages, each layer's in turn; formula: "
            "each member's pass is one charge of its layers' FLOPs and one wait of its "
            "all-reduces' ring time in closed form (a tensor group in one cluster of a star "
            "or multi-rack platform, CM02 or LV08, no faults; else messages), far cheaper to "
            "simulate, exact while the group's links carry nothing else (dtsim plan uses it); "
            "nccl: the same, each all-reduce (reduce-scatter and all-gather under "
            "sequence_parallel) taking the time NCCL takes inside a server, by "
            "nccl_algorithm and nccl_protocol on nccl_links (no faults; else messages)"},
    {.key = "tensor_members",
     .kind = SIM_KEY_ENUM,
     .def = "all",
     .names = tensor_members_names,
     .doc = "with tensor > 1 and tensor_comm = formula or nccl: which members of a "
            "tensor group are simulated; all: every member, an actor each; one: member 0 of "
            "each group for all T (they do the same work), its messages to the next stage and "
            "its all-reduces over the replicas carrying the group's bytes, the others' rows "
            "copied from it: T times fewer actors and activities, within 0.5% of all where "
            "the members' flows share a rack's uplink (multi-rack, a rack per tensor group, "
            "host links at least as fast as the uplink) or have links of their own (star); "
            "elsewhere all, and the summary says why"},
    {.key = "data_members",
     .kind = SIM_KEY_ENUM,
     .def = "all",
     .names = tensor_members_names,
     .doc = "with data_parallel > 1 (timing only): which replicas are simulated; "
            "all: every replica; one: replica 0 for all of them (they do the same work at the "
            "same times), the others' rows copied from it and its bytes counted for each: "
            "data_parallel times fewer actors, the same times to the digit, where nothing "
            "passes between replicas as a message (dp_comm = formula or nccl, the ring "
            "algorithm, no expert parallelism) and no link carries two replicas' flows (a "
            "star, or multi-rack with each rack's hosts in one replica); elsewhere all, and "
            "the summary says why; the timeline and the links' traffic show replica 0"},
    SIM_KEY_NCCL_ALGORITHM,
    SIM_KEY_NCCL_PROTOCOL,
    {.key = "nccl_links",
     .kind = SIM_KEY_ENUM,
     .def = "device",
     .names = nccl_links_names,
     .doc = "tensor_comm = nccl: what the tensor group's collectives run on; device: the "
            "server's NVLink as cluster.device gives it (nvlink_busbw, nvls_busbw), with "
            "NCCL's latencies; platform: the platform's ring step in closed form (as formula "
            "times it) as every step's latency and the bus bandwidth, no base latency, no NVLS"},
    SIM_KEY_DP_COMM,
    {.key = "tensor_overlap",
     .kind = SIM_KEY_BOOL,
     .def = "no",
     .doc = "tensor_comm = formula or nccl: each layer's tensor all-reduce (reduce-scatter "
            "and all-gather under sequence_parallel) overlapped with the layer's own compute, "
            "as Megatron-LM's tp-comm-overlap splits both into tensor chunks: the pass waits "
            "only for the first chunk's transfer and whatever of the rest the compute does "
            "not hide (c/T + (T-1)/T max(c, m) + m/T for compute c and communication m); no: "
            "the all-reduce follows the layer's compute (Megatron-LM's default)"},
    {.key = "expert",
     .kind = SIM_KEY_INT,
     .def = "1",
     .min = 1,
     .max = 65536,
     .doc = "of a profile with an [experts] section (dtsim profile transformer "
            "--experts): expert parallelism; each MoE layer's routed experts split over "
            "groups of `expert` consecutive replicas (it divides data_parallel and the "
            "routed experts), its tokens dispatched and combined by all-to-all inside the "
            "group in the forward and the backward pass (in closed form where tensor_comm "
            "is formula or nccl and the group lies in one cluster, else messages); the "
            "experts' gradients all-reduced over the data_parallel / expert replicas holding "
            "them; 1: none"},
    {.key = "expert_imbalance",
     .kind = SIM_KEY_REAL,
     .def = "1",
     .min = 1,
     .max = 1000,
     .doc = "expert > 1: the busiest member's routed-expert FLOPs over the mean (the load "
            "imbalance of the router), charged to every member as the step waits for the "
            "busiest; 1: balanced"},
    {.key = "expert_overlap",
     .kind = SIM_KEY_BOOL,
     .def = "no",
     .doc = "expert > 1, tensor_comm = formula or nccl, no tensor groups: DeepSeek-V3's "
            "DualPipe overlap; a forward pass that the schedule follows with a backward pass "
            "runs beside it, the pair's all-to-alls behind the pair's compute (the pair takes "
            "the longer of its compute and its all-to-alls); the warm-up forwards and the last "
            "backwards, with no partner, wait theirs; no: each all-to-all follows its "
            "block's compute"},
    {.key = "expert_comm_sms",
     .kind = SIM_KEY_INT,
     .def = "0",
     .min = 0,
     .max = 1024,
     .doc = "expert_overlap, a device with sms (fewer than them): the multiprocessors the "
            "all-to-all kernels hold while they run beside the pair's compute (DeepSeek-V3: "
            "20 of the H800's 132), that share of the compute lost for as long as they run: "
            "the pair takes max(m, c + expert_comm_sms / sms x m) for compute c and "
            "all-to-alls m; 0: the all-to-alls take no compute"},
    {.key = "expert_nodes",
     .kind = SIM_KEY_INT,
     .def = "0",
     .min = 0,
     .max = 65536,
     .doc = "expert > 1, tensor_comm = formula or nccl: node-limited routing (DeepSeek-V3: 4); "
            "each token goes to at most this many servers of its expert group, crossing the "
            "network once to each (min(top_k, expert_nodes) of the group's servers, all but "
            "1/servers of them remote) and forwarded inside the server to its experts (not "
            "timed); the all-to-all is servers - 1 shifts between members of the same index; "
            "0: every copy of a token goes to its expert's member"},
    {.key = "expert_node_size",
     .kind = SIM_KEY_INT,
     .def = "8",
     .min = 1,
     .max = 1024,
     .doc = "expert_nodes > 0: members of an expert group per server (consecutive in the "
            "group; it divides expert)"},
    {.key = "expert_dispatch",
     .kind = SIM_KEY_ENUM,
     .def = "model",
     .names = expert_dispatch_names,
     .doc = "expert > 1, tensor_comm = formula or nccl: the bytes of a value the dispatch "
            "all-to-alls move (forward: the tokens; backward: the gradients of the combine's "
            "outputs); fp8: one (DeepSeek-V3, the combines staying in BF16); model: "
            "model.precision's"},
    {.key = "context",
     .kind = SIM_KEY_INT,
     .def = "1",
     .min = 1,
     .max = 1024,
     .doc = "of a transformer profile (timing only): context parallelism, each "
            "micro-batch's sequence split over a context group of this many hosts (Megatron-LM's "
            "load-balanced chunks: 1/context of every layer's FLOPs, attention included, and "
            "of the activations), ring attention's key/value exchange per attention layer "
            "overlapped with the attention (forward: K, V; backward: K, V and dK, dV), the "
            "gradients all-reduced over data_parallel x context; hosts stages x data_parallel "
            "x tensor x context, worker ((d context + k) stages + s) tensor + r being member "
            "k of its context group (members stages x tensor hosts apart); star or "
            "multi-rack platform"},
    {.key = "virtual_stages",
     .kind = SIM_KEY_INT,
     .def = "1",
     .min = 1,
     .max = 64,
     .doc = "with pipeline_schedule = interleaved: chunks of layers each stage holds "
            "(Megatron-LM's virtual pipeline stages): the model is cut into stages x "
            "virtual_stages chunks, chunk c on stage c mod stages, which divides the bubble by "
            "virtual_stages for as many more messages; micro_batches must be a multiple of "
            "stages; 1 is 1f1b"},
    {0},
};
