/* The real gpt split for real (suite gpt_split), against things that could disagree:
 *   - its pipeline layers (embeddings, blocks, output layer) run one range at a time, with
 *     micro-batches accumulating, give the whole model's logits and gradient, and their
 *     FLOPs sum to the model's;
 *   - a pipeline of it (gpipe, 1f1b, interleaved; with replicas, ZeRO 1 and 2) and tensor
 *     parallelism of it (Megatron-LM's split of attention by heads and of the MLP) train
 *     single's weights, and move exactly the bytes their messages add up to;
 *   - every registered strategy runs it; those that promise single's model match it;
 *   - bad combinations are refused in one line naming the key.
 * SimGrid runs once per process: each simulation runs in a forked child (as tests/test_sim.c). */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "model.h"
#include "rng.h"
#include "run.h"
#include "scenario.h"
#include "strategy.h"

typedef struct outcome {
    int ok;
    char err[512];
    double loss, bytes, samples;
    size_t n_params;
    double compute_flops; /* the workers' compute seconds summed, times the hosts' speed */
    double step_flops;    /* forward and backward per sample, as single charges them */
} outcome_t;

static char text_path[256];

/* The text every run reads: a small file of our own, so the suite needs no corpus. */
static void make_text(void)
{
    snprintf(text_path, sizeof text_path, "/tmp/dtsim-gptsplit-%d.txt", (int)getpid());
    FILE *f = fopen(text_path, "w");
    ck_assert_ptr_nonnull(f);
    for (int i = 0; i < 200; i++)
        fprintf(f, "line %d: the quick brown fox jumps over the lazy dog %d times.\n", i,
                i * 7 % 13);
    fclose(f);
}

/* A tiny gpt: 2 blocks of width 16, 2 heads (sets may change them), 16 tokens a window. */
static const char *const base[] = {
    "data.source=text", "model.arch=gpt", "model.hidden=16",    "model.layers=2",
    "model.heads=2",    "model.seq=16",   "model.batch=8",      "data.test_samples=64",
    "run.steps=10",     "model.lr=0.05",  "model.momentum=0.9", "run.eval_every=1000",
};

static int write_all(int fd, const void *p, size_t n)
{
    for (const char *c = p; n;) {
        ssize_t w = write(fd, c, n);
        if (w <= 0)
            return -1;
        c += w, n -= (size_t)w;
    }
    return 0;
}

static int read_all(int fd, void *p, size_t n)
{
    for (char *c = p; n;) {
        ssize_t r = read(fd, c, n);
        if (r <= 0)
            return -1;
        c += r, n -= (size_t)r;
    }
    return 0;
}

static void child(int fd, const char *const *sets, int n_sets)
{
    static scenario_t sc;
    static sim_run_t run;
    outcome_t o;
    memset(&o, 0, sizeof o);
    dt_err_t err = {{0}};
    char text[300];
    snprintf(text, sizeof text, "data.text=%s", text_path);
    scenario_defaults(&sc);
    snprintf(sc.name, sizeof sc.name, "test");
    int n_base = (int)(sizeof base / sizeof base[0]);
    int bad = scenario_set(&sc, text, &err) != DT_OK;
    for (int i = 0; i < n_base + n_sets && !bad; i++)
        bad = scenario_set(&sc, i < n_base ? base[i] : sets[i - n_base], &err) != DT_OK;
    if (bad || scenario_validate(&sc, &err) || sim_run_init(&run, &sc, "test_gpt_split", &err) ||
        sim_run_execute(&run, &err)) {
        snprintf(o.err, sizeof o.err, "%s", err.msg[0] ? err.msg : "run failed");
        write_all(fd, &o, sizeof o);
        _exit(0);
    }
    o.ok = !run.failed;
    o.loss = run.last_loss;
    o.bytes = run.bytes_total;
    o.samples = run.samples;
    o.n_params = run.n_params;
    o.step_flops = run.step_flops;
    for (int i = 0; i < run.n_workers; i++)
        o.compute_flops += run.workers[i].compute_s * sim_host_speed(run.workers[i].host);
    const float *params =
        !strcmp(sc.strategy->worker_role, "client") ? run.servers[0].params : run.workers[0].params;
    write_all(fd, &o, sizeof o);
    write_all(fd, params, sizeof(float) * run.n_params);
    _exit(0);
}

/* Runs base + sets in a child; the outcome and (if params and it ran) the final weights. */
static outcome_t simulate(const char *const *sets, int n_sets, float **params)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        child(fds[1], sets, n_sets);
    }
    close(fds[1]);
    outcome_t o;
    memset(&o, 0, sizeof o);
    int got = read_all(fds[0], &o, sizeof o);
    float *w = NULL;
    if (got == 0 && o.ok) {
        w = malloc(sizeof(float) * o.n_params);
        ck_assert(read_all(fds[0], w, sizeof(float) * o.n_params) == 0);
    }
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    ck_assert_msg(got == 0, "the simulation process died (status %d)", status);
    if (params)
        *params = w;
    else
        free(w);
    return o;
}

static double max_rel_diff(const float *a, const float *b, size_t n)
{
    double d = 0, m = 0;
    for (size_t i = 0; i < n; i++) {
        d = fmax(d, fabs((double)a[i] - b[i]));
        m = fmax(m, fabs((double)b[i]));
    }
    return d / m;
}

/* single's weights with a batch of `batch` (and extra settings, e.g. the model's shape) */
static outcome_t single_of(int batch, const char *const *extra, int n_extra, float **w)
{
    char b[64];
    snprintf(b, sizeof b, "model.batch=%d", batch);
    const char *sets[12] = {"strategy.kind=single", b};
    for (int i = 0; i < n_extra; i++)
        sets[2 + i] = extra[i];
    outcome_t o = simulate(sets, 2 + n_extra, w);
    ck_assert_msg(o.ok, "single: %s", o.err);
    return o;
}

/* The run's weights against ref's: float32 sums in another order over 10 steps with
 * momentum, within 2e-5 of the largest weight, as the sim suite asks of the mlp (measured:
 * 1.1e-7 at most); twice: a second run's against the first's, to the bit. */
static void expect_same(const char *const *sets, int n, const float *ref, const outcome_t *r,
                        const char *what, int twice, outcome_t *out)
{
    float *got = NULL;
    outcome_t o = simulate(sets, n, &got);
    ck_assert_msg(o.ok, "%s: %s", what, o.err);
    ck_assert_uint_eq(o.n_params, r->n_params);
    ck_assert_msg(o.samples == r->samples, "%s: %g samples, single %g", what, o.samples,
                  r->samples);
    double d = max_rel_diff(got, ref, r->n_params);
    printf("%s: max relative difference to single %.2e\n", what, d);
    ck_assert_msg(d < 2e-5, "%s: max relative difference %g from single", what, d);
    /* training moved the weights: single's loss is below the start's log 256 = 5.55 */
    ck_assert(r->loss < 5.5 && fabs(o.loss - r->loss) < 1e-3);
    if (twice) { /* the same scenario and seed: the same run, to the bit */
        float *again = NULL;
        outcome_t p = simulate(sets, n, &again);
        ck_assert_msg(p.ok && p.loss == o.loss && p.bytes == o.bytes &&
                          !memcmp(again, got, sizeof(float) * o.n_params),
                      "%s: two runs differ", what);
        free(again);
    }
    if (out)
        *out = o;
    free(got);
}

/* ---- the layers of the pipeline, in the trainer ---------------------------------------- */

/* Forward range by range equals the whole forward pass (the same ops: to the bit), and the
 * backward pass range by range, top down, over two micro-batches accumulated, equals the
 * whole backward pass over each micro-batch summed; the layers' FLOPs sum to the model's. */
START_TEST(gpt_ranges_equal_whole)
{
    const trainer_backend_t *be = trainer_backend_cpu();
    trainer_model_config_t cfg;
    trainer_model_config_default(&cfg, TRAINER_ARCH_GPT);
    cfg.hidden[0] = 16, cfg.n_hidden = 1, cfg.layers = 3, cfg.heads = 2, cfg.seq = 8;
    cfg.classes = 64, cfg.in_channels = cfg.in_h = 1, cfg.in_w = 9;
    trainer_model_t m;
    dt_err_t err;
    ck_assert(trainer_model_build(&m, &cfg, &err) == DT_OK);
    int n_layers = trainer_gpt_n_layers(&m.gpt), B = 3;
    ck_assert_int_eq(n_layers, 5);
    double f = 0, b = 0, fl, bl, F, Bw;
    for (int i = 0; i < n_layers; i++) {
        trainer_gpt_layer_flops(&m, i, &fl, &bl);
        f += fl, b += bl;
    }
    trainer_gpt_flops(&m, &F, &Bw);
    ck_assert(fabs(f - F) <= 1e-12 * F && fabs(b - Bw) <= 1e-12 * Bw);
    ck_assert_uint_eq(trainer_gpt_range_activation_floats(&m, 0, n_layers),
                      trainer_gpt_activation_floats(&m));
    float *w = malloc(sizeof(float) * m.n_params), *x = malloc(sizeof(float) * 2 * B * 9);
    float *g_whole = calloc(m.n_params, sizeof(float)), *g1 = malloc(sizeof(float) * m.n_params);
    float *g_parts = malloc(sizeof(float) * m.n_params);
    float *g_top = malloc(sizeof(float) * m.n_params);
    uint8_t labels[6] = {0};
    trainer_model_init_params(&m, w, 7);
    trainer_rng_t r;
    trainer_rng_seed(&r, 3, TRAINER_STREAM_INIT);
    for (int i = 0; i < 2 * B * 9; i++)
        x[i] = (float)(trainer_rng_next(&r) % 64);
    trainer_workspace_t ws;
    trainer_workspace_init(&ws, be, &m, B);
    /* cuts: [0, 2) [2, 3) [3, 5): the embeddings and block 0; block 1; block 2 and the top */
    static const int cut[] = {0, 2, 3, 5};
    for (int mb = 0; mb < 2; mb++) {
        double loss_a, loss_b;
        int c;
        trainer_workspace_load(&ws, x + mb * B * 9, labels, B);
        trainer_model_forward(&ws, w, B);
        size_t nl = (size_t)B * 8 * 64;
        float *whole = malloc(sizeof(float) * nl);
        memcpy(whole, trainer_model_range_output(&ws, n_layers - 1), sizeof(float) * nl);
        trainer_model_loss(&ws, B, &loss_a, &c);
        trainer_model_backward(&ws, w, g1, B);
        for (size_t i = 0; i < m.n_params; i++)
            g_whole[i] += g1[i];
        for (int s = 0; s < 3; s++)
            trainer_model_forward_range(&ws, w, B, cut[s], cut[s + 1]);
        ck_assert(
            !memcmp(whole, trainer_model_range_output(&ws, n_layers - 1), sizeof(float) * nl));
        trainer_model_loss(&ws, B, &loss_b, &c);
        ck_assert(loss_a == loss_b);
        /* the top range on a stage of its own (its own gradient buffer, as in a pipeline) */
        trainer_model_backward_range(&ws, w, g_top, B, cut[2], cut[3], mb > 0);
        for (int s = 1; s >= 0; s--)
            trainer_model_backward_range(&ws, w, g_parts, B, cut[s], cut[s + 1], mb > 0);
        free(whole);
    }
    /* the top stage's slice, and its part of the tied wte added to the embedding's */
    size_t lo, hi;
    trainer_gpt_layer_params(&m, cut[2], &lo, &hi);
    memcpy(g_parts + lo, g_top + lo, sizeof(float) * (m.n_params - lo));
    for (size_t i = 0; i < (size_t)64 * 16; i++)
        g_parts[m.gpt.wte + i] += g_top[m.gpt.wte + i];
    double d = max_rel_diff(g_parts, g_whole, m.n_params);
    ck_assert_msg(d < 1e-6, "range gradients differ by %g", d);
    trainer_workspace_free(&ws);
    free(w);
    free(x);
    free(g_whole);
    free(g1);
    free(g_parts);
    free(g_top);
}
END_TEST

/* ---- pipeline ---------------------------------------------------------------------------- */

/* 2 stages of the 2-block gpt, M = 4 micro-batches of 2, gpipe and 1f1b; 2 x 2 chunks of a
 * 4-block one, interleaved: single's weights. Bytes: per step and cut, each micro-batch's
 * activations (2 x 16 x 16 floats) and their gradient, the tied wte's all-reduce of two
 * (V C = 4096 floats: each member sends half, twice), and the STOP down the pipe. */
START_TEST(gpt_pipeline_equals_single)
{
    float *ref = NULL;
    outcome_t r = single_of(8, NULL, 0, &ref);
    static const char *const sched[] = {"strategy.pipeline_schedule=gpipe",
                                        "strategy.pipeline_schedule=1f1b"};
    for (int k = 0; k < 2; k++) {
        const char *sets[] = {"strategy.kind=pipeline", "strategy.stages=2",
                              "strategy.micro_batches=4", sched[k]};
        outcome_t o;
        expect_same(sets, 4, ref, &r, sched[k], k == 1, &o);
        double want = 10 * (4 * 2 * (2.0 * 16 * 16 * 4) + 2 * 4096.0 * 4) + 64;
        ck_assert_msg(o.bytes == want, "%s: %.17g bytes, want %.17g", sched[k], o.bytes, want);
        /* the stages' FLOPs add up to the model's: 10 steps of 8 windows */
        ck_assert_msg(fabs(o.compute_flops - 80 * r.step_flops) < 1e-9 * o.compute_flops,
                      "%s: %.17g FLOPs charged, want %.17g", sched[k], o.compute_flops,
                      80 * r.step_flops);
    }
    free(ref);
    const char *four[] = {"model.layers=4"};
    r = single_of(8, four, 1, &ref);
    const char *inter[] = {"model.layers=4",
                           "strategy.kind=pipeline",
                           "strategy.stages=2",
                           "strategy.micro_batches=4",
                           "strategy.pipeline_schedule=interleaved",
                           "strategy.virtual_stages=2"};
    expect_same(inter, 6, ref, &r, "interleaved", 0, NULL);
    free(ref);
}
END_TEST

/* 2 replicas of a 2-stage pipeline (a batch of 8 each): single's weights with 16, with a
 * plain all-reduce over the replicas and with ZeRO 1 and 2 (the last stage's part of the
 * tied gradient kept across micro-batches while each pass's gradients are reduced). */
START_TEST(gpt_hybrid_equals_single)
{
    float *ref = NULL;
    outcome_t r = single_of(16, NULL, 0, &ref);
    static const char *const zero[][2] = {
        {"strategy.shard_optimizer=no", "strategy.zero_stage=1"},
        {"strategy.shard_optimizer=yes", "strategy.zero_stage=1"},
        {"strategy.shard_optimizer=yes", "strategy.zero_stage=2"}};
    for (int k = 0; k < 3; k++) {
        const char *sets[] = {"strategy.kind=pipeline",
                              "strategy.stages=2",
                              "strategy.data_parallel=2",
                              "strategy.micro_batches=2",
                              "strategy.pipeline_schedule=1f1b",
                              zero[k][0],
                              zero[k][1]};
        char what[128];
        snprintf(what, sizeof what, "hybrid %s %s", zero[k][0], zero[k][1]);
        expect_same(sets, 7, ref, &r, what, 0, NULL);
    }
    free(ref);
}
END_TEST

/* AdamW with warmup and a cosine decay, unclipped and clipped by the global norm the stages
 * (and ZeRO shards) sum before any of them updates: the pipeline's weights are single's
 * within the sgd tests' 2e-5, for 2 stages under gpipe and 1f1b, 2 x 2 chunks interleaved,
 * and 2 replicas with a plain all-reduce, ZeRO 1 and 2 (the tied wte updated once, by stage
 * 0, with its moments); tensor parallelism over 2 members, with and without sequence
 * parallelism, the same (its norm sums the members' split pieces and the replicated ones
 * once; 6.2e-6 clipped). Measured: 1.0e-5 at most (gpipe unclipped), above SGD's 1.1e-7 as
 * Adam divides each gradient by its own root mean square, so rounding in a near-zero
 * gradient moves its weight by up to lr. */
static const char *const adamw[] = {"model.optimizer=adamw", "model.momentum=0",
                                    "model.lr=0.01",         "model.weight_decay=0.01",
                                    "model.warmup=3",        "model.schedule=cosine"};
enum { N_ADAMW = sizeof adamw / sizeof adamw[0] };

START_TEST(gpt_adam_pipeline_equals_single)
{
    float *unclipped[3] = {NULL};
    for (int clip = 0; clip < 2; clip++) {
        const char *opt[N_ADAMW + 2];
        memcpy(opt, adamw, sizeof adamw);
        opt[N_ADAMW] = clip ? "model.clip_norm=0.5" : "model.clip_norm=0";
        /* [0] the 2-block gpt, batch 8; [1] the 4-block one; [2] batch 16 */
        float *ref[3] = {NULL};
        outcome_t r[3];
        r[0] = single_of(8, opt, N_ADAMW + 1, &ref[0]);
        opt[N_ADAMW + 1] = "model.layers=4";
        r[1] = single_of(8, opt, N_ADAMW + 2, &ref[1]);
        r[2] = single_of(16, opt, N_ADAMW + 1, &ref[2]);
        static const char *const cases[][8] = {
            {"strategy.stages=2", "strategy.micro_batches=4", "strategy.pipeline_schedule=gpipe"},
            {"strategy.stages=2", "strategy.micro_batches=4", "strategy.pipeline_schedule=1f1b"},
            {"strategy.stages=2", "strategy.micro_batches=4",
             "strategy.pipeline_schedule=interleaved", "strategy.virtual_stages=2",
             "model.layers=4"},
            {"strategy.stages=2", "strategy.micro_batches=2", "strategy.pipeline_schedule=1f1b",
             "strategy.data_parallel=2", "strategy.shard_optimizer=no"},
            {"strategy.stages=2", "strategy.micro_batches=2", "strategy.pipeline_schedule=1f1b",
             "strategy.data_parallel=2", "strategy.shard_optimizer=yes", "strategy.zero_stage=1"},
            {"strategy.stages=2", "strategy.micro_batches=2", "strategy.pipeline_schedule=1f1b",
             "strategy.data_parallel=2", "strategy.shard_optimizer=yes", "strategy.zero_stage=2"},
            /* tensor parallelism: the norm of its members' split pieces and, once, the
             * replicated ones */
            {"strategy.kind=tensor", "strategy.tensor_parallel=2", "cluster.workers=2"},
            {"strategy.kind=tensor", "strategy.tensor_parallel=2", "cluster.workers=2",
             "strategy.sequence_parallel=yes"},
            /* the three together: the norm over every stage's members */
            {"strategy.stages=2", "strategy.micro_batches=2", "strategy.pipeline_schedule=1f1b",
             "strategy.data_parallel=2", "strategy.tensor=2"},
            {"strategy.stages=2", "strategy.micro_batches=2", "strategy.data_parallel=2",
             "strategy.tensor=2", "strategy.shard_optimizer=yes", "strategy.zero_stage=2",
             "strategy.sequence_parallel=yes"},
            {"strategy.stages=2", "strategy.micro_batches=2", "strategy.data_parallel=2",
             "strategy.tensor=2", "strategy.shard_optimizer=yes", "strategy.zero_stage=1"},
        };
        static const int which[] = {0, 0, 1, 2, 2, 2, 0, 0, 2, 2, 2};
        if (clip) /* clipping moves single's weights: a clipped split equal to it clipped */
            for (int k = 0; k < 3; k++)
                ck_assert_double_gt(max_rel_diff(ref[k], unclipped[k], r[k].n_params), 1e-4);
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            const char *sets[20] = {"strategy.kind=pipeline"};
            int n = 1;
            for (int i = 0; i < N_ADAMW + 1; i++)
                sets[n++] = opt[i];
            for (int i = 0; i < 8 && cases[c][i]; i++)
                sets[n++] = cases[c][i];
            char what[256];
            int at = snprintf(what, sizeof what, "adamw%s", clip ? " clip_norm=0.5" : "");
            for (int i = 0; i < 8 && cases[c][i] && at < (int)sizeof what; i++)
                at += snprintf(what + at, sizeof what - (size_t)at, " %s", cases[c][i]);
            expect_same(sets, n, ref[which[c]], &r[which[c]], what, 0, NULL);
        }
        for (int k = 0; k < 3; k++) {
            free(unclipped[k]);
            unclipped[k] = ref[k];
        }
    }
    for (int k = 0; k < 3; k++)
        free(unclipped[k]);
}
END_TEST

/* ---- tensor parallelism --------------------------------------------------------------- */

/* T = 1, 2 (2 heads) and 4 (4 heads of 4) members: single's weights. Bytes: per step and
 * block, four ring all-reduces (two forward, two backward) of the (8 x 16, 16) activations,
 * 2 (T-1) n floats each, then the end-of-training barrier of one float. */
START_TEST(gpt_tensor_equals_single)
{
    static const char *const heads[] = {"model.heads=2", "model.heads=4"};
    for (int k = 0; k < 2; k++) {
        float *ref = NULL;
        outcome_t r = single_of(8, &heads[k], 1, &ref);
        for (int T = k ? 4 : 1; T <= (k ? 4 : 2); T++) {
            char tp[64], what[96];
            snprintf(tp, sizeof tp, "strategy.tensor_parallel=%d", T);
            snprintf(what, sizeof what, "tensor %s %s", heads[k], tp);
            const char *sets[] = {heads[k], "strategy.kind=tensor", tp};
            outcome_t o;
            expect_same(sets, 3, ref, &r, what, T == 2, &o);
            double n = 8.0 * 16 * 16;
            double want = 10 * (2 * 4 * 2.0 * (T - 1) * n * 4) + 2.0 * (T - 1) * 4;
            ck_assert_msg(o.bytes == want, "%s: %.17g bytes, want %.17g", what, o.bytes, want);
            /* every member charged its share of the split layers and the replicated ones
             * whole: the model's FLOPs and T - 1 more copies of the two norms a block, the
             * final norm and the output layer, forward and backward (3 x) */
            double norm = 4.0 * 16 * 16, top = norm + 2.0 * 16 * 16 * 256;
            double flops = 80 * (r.step_flops + (T - 1) * 3.0 * (2 * 2 * norm + top));
            ck_assert_msg(fabs(o.compute_flops - flops) < 1e-9 * flops,
                          "%s: %.17g FLOPs charged, want %.17g", what, o.compute_flops, flops);
        }
        free(ref);
    }
}
END_TEST

/* Sequence parallelism over T = 2 (2 heads) and 4 (4 heads): single's weights. Bytes: per
 * step and block, four all-gathers and four reduce-scatters of the (8 x 16, 16) activations,
 * (T-1) n floats each (the all-reduces' bytes), the all-reduce of the replicated tensors'
 * gradients and the loss (V C + seq C + 2 blocks x 6 C + 2 C + 1 = 4577 floats), and the
 * barrier. FLOPs: every member's norms and output layer on 1/T of the rows, so the members
 * together are charged the model's. */
START_TEST(gpt_sequence_parallel_equals_single)
{
    static const char *const heads[] = {"model.heads=2", "model.heads=4"};
    for (int k = 0; k < 2; k++) {
        int T = k ? 4 : 2;
        float *ref = NULL;
        outcome_t r = single_of(8, &heads[k], 1, &ref);
        char tp[64], what[96];
        snprintf(tp, sizeof tp, "strategy.tensor_parallel=%d", T);
        snprintf(what, sizeof what, "sequence parallel %s %s", heads[k], tp);
        const char *sets[] = {heads[k], "strategy.kind=tensor", tp,
                              "strategy.sequence_parallel=yes"};
        outcome_t o;
        expect_same(sets, 4, ref, &r, what, T == 2, &o);
        double n = 8.0 * 16 * 16, rep = 256 * 16 + 16 * 16 + 2 * 6 * 16 + 2 * 16 + 1;
        double want = 10 * (2 * 8 * (T - 1) * n + 2.0 * (T - 1) * rep) * 4 + 2.0 * (T - 1) * 4;
        ck_assert_msg(o.bytes == want, "%s: %.17g bytes, want %.17g", what, o.bytes, want);
        ck_assert_msg(fabs(o.compute_flops - 80 * r.step_flops) < 1e-9 * o.compute_flops,
                      "%s: %.17g FLOPs charged, want %.17g", what, o.compute_flops,
                      80 * r.step_flops);
        free(ref);
    }
}
END_TEST

/* ---- pipeline x tensor x data ----------------------------------------------------------- */

/* A tensor member's floats of the 2-block gpt (width 16, 2 heads, seq 16, V 256) split over
 * T: a block's split pieces (its rows of Q, K, V and their biases, its columns of the
 * projection, its rows of fc and their biases, its columns of fc proj) and replicated ones
 * (the two norms, the row-split projections' biases). */
static double member_block(int T)
{
    double C = 16, c = C / T, f = 4 * C / T;
    return 3 * c * C + 3 * c + C * c + f * C + f + C * f + (2 * C + 3 * C + C);
}

/* The real gpt on stages x tensor groups x replicas (Megatron-LM's 3-D split): single's
 * weights. 2 stages of 2 members (2 heads), 4 micro-batches of 2, under 1f1b and gpipe;
 * 2 x 2 chunks of the 4-block gpt interleaved; 2 stages of 4 members (4 heads); 2 replicas
 * of 2 stages of 2 (a batch of 8 each: single's with 16), also under ZeRO 1 and 2 and
 * sequence parallelism; one stage of 2 members with 2 replicas. Bytes by hand, per step: each
 * member's activations and their gradients at the cut (micro x seq x C floats each way, each
 * micro-batch), four ring all-reduces a block and micro-batch in each tensor group (2 (T-1) n
 * floats, n = micro x seq x C), each member's half of the tied wte's all-reduce of two (2 V C
 * floats a pair), the replicas' ring all-reduce of each member's pieces (2 (D-1) floats each; ZeRO
 * 1 a reduce-scatter and an all-gather, the same; ZeRO 2 a reduce-scatter a micro-batch), under
 * sequence parallelism the tensor group's sum of the replicated pieces' gradients and the loss, and
 * once the STOP from each member of stage 0 (under ZeRO each replica sums its shard of the
 * replicated pieces, the loss on its own). FLOPs: the tensor strategy's (split layers 1/T a member,
 * the norms and the output layer whole). */
START_TEST(gpt_3d_equals_single)
{
    static const struct {
        const char *sets[8];
        int batch, heads, S, T, D, M, layers, sp, zero;
    } cases[] = {
        {{"strategy.stages=2", "strategy.tensor=2", "strategy.micro_batches=4",
          "strategy.pipeline_schedule=1f1b"},
         8,
         2,
         2,
         2,
         1,
         4,
         2,
         0,
         0},
        {{"strategy.stages=2", "strategy.tensor=2", "strategy.micro_batches=4",
          "strategy.pipeline_schedule=gpipe"},
         8,
         2,
         2,
         2,
         1,
         4,
         2,
         0,
         0},
        {{"strategy.stages=2", "strategy.tensor=4", "strategy.micro_batches=4",
          "strategy.pipeline_schedule=1f1b", "model.heads=4"},
         8,
         4,
         2,
         4,
         1,
         4,
         2,
         0,
         0},
        {{"strategy.stages=2", "strategy.tensor=2", "strategy.micro_batches=2",
          "strategy.pipeline_schedule=1f1b", "strategy.data_parallel=2"},
         16,
         2,
         2,
         2,
         2,
         2,
         2,
         0,
         0},
        {{"strategy.stages=1", "strategy.tensor=2", "strategy.micro_batches=2",
          "strategy.data_parallel=2"},
         16,
         2,
         1,
         2,
         2,
         2,
         2,
         0,
         0},
        {{"strategy.stages=2", "strategy.tensor=2", "strategy.micro_batches=4",
          "strategy.pipeline_schedule=interleaved", "strategy.virtual_stages=2", "model.layers=4"},
         8,
         2,
         2,
         2,
         1,
         4,
         4,
         0,
         0},
        {{"strategy.stages=2", "strategy.tensor=2", "strategy.micro_batches=4",
          "strategy.pipeline_schedule=1f1b", "strategy.sequence_parallel=yes"},
         8,
         2,
         2,
         2,
         1,
         4,
         2,
         1,
         0},
        {{"strategy.stages=2", "strategy.tensor=2", "strategy.micro_batches=2",
          "strategy.pipeline_schedule=gpipe", "strategy.data_parallel=2",
          "strategy.sequence_parallel=yes"},
         16,
         2,
         2,
         2,
         2,
         2,
         2,
         1,
         0},
        {{"strategy.stages=2", "strategy.tensor=2", "strategy.micro_batches=2",
          "strategy.data_parallel=2", "strategy.shard_optimizer=yes", "strategy.zero_stage=1"},
         16,
         2,
         2,
         2,
         2,
         2,
         2,
         0,
         1},
        {{"strategy.stages=2", "strategy.tensor=2", "strategy.micro_batches=2",
          "strategy.data_parallel=2", "strategy.shard_optimizer=yes", "strategy.zero_stage=2"},
         16,
         2,
         2,
         2,
         2,
         2,
         2,
         0,
         2},
        {{"strategy.stages=2", "strategy.tensor=2", "strategy.micro_batches=2",
          "strategy.data_parallel=2", "strategy.shard_optimizer=yes", "strategy.zero_stage=2",
          "strategy.sequence_parallel=yes"},
         16,
         2,
         2,
         2,
         2,
         2,
         2,
         1,
         2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char heads[32], layers[32], what[256];
        snprintf(heads, sizeof heads, "model.heads=%d", cases[i].heads);
        snprintf(layers, sizeof layers, "model.layers=%d", cases[i].layers);
        const char *shape[] = {heads, layers};
        float *ref = NULL;
        outcome_t r = single_of(cases[i].batch, shape, 2, &ref);
        const char *sets[12] = {"strategy.kind=pipeline", heads, layers};
        int n = 3, at = snprintf(what, sizeof what, "3-D");
        for (int k = 0; k < 8 && cases[i].sets[k]; k++) {
            sets[n++] = cases[i].sets[k];
            at += snprintf(what + at, sizeof what - (size_t)at, " %s", cases[i].sets[k]);
        }
        outcome_t o;
        expect_same(sets, n, ref, &r, what, i == 0, &o);
        int S = cases[i].S, T = cases[i].T, D = cases[i].D, M = cases[i].M, sp = cases[i].sp;
        if (cases[i].layers == 2) {
            double micro = (double)cases[i].batch / D / M, act = micro * 16 * 16;
            /* the pieces every member of a replica holds: each group of replicas' */
            double members = T * (4352 + 2 * member_block(T) + 32);
            /* sp: the replicated pieces' gradients (as in the tensor strategy's test) and the
             * loss, summed in each tensor group */
            double rep = 256 * 16 + 16 * 16 + 2 * 6 * 16 + 2 * 16 + 1;
            double want = 10 * (4.0 * (S - 1) * D * T * M * 2 * act / (sp ? T : 1) +
                                4.0 * D * M * 2 * 4 * 2.0 * (T - 1) * act +
                                4.0 * (S > 1) * D * T * 2 * 256 * 16 +
                                4.0 * (cases[i].zero == 2 ? M + 1 : 2) * (D - 1) * members +
                                sp * 4.0 * 2 * (T - 1) * (cases[i].zero ? rep - 1 + D : D * rep)) +
                          64.0 * (S > 1) * D * T;
            ck_assert_msg(o.bytes == want, "%s: %.17g bytes, want %.17g", what, o.bytes, want);
        }
        double norm = 4.0 * 16 * 16, top = norm + 2.0 * 16 * 16 * 256;
        double flops = 10.0 * cases[i].batch *
                       (r.step_flops + !sp * (T - 1) * 3.0 * (2 * cases[i].layers * norm + top));
        ck_assert_msg(fabs(o.compute_flops - flops) < 1e-9 * flops,
                      "%s: %.17g FLOPs charged, want %.17g", what, o.compute_flops, flops);
        free(ref);
    }
}
END_TEST

/* ---- every strategy --------------------------------------------------------------------- */

/* Each registered strategy runs the gpt with its own defaults (8 workers; 3 rounds of the
 * federated ones) and no momentum (async-ps's 8 stale gradients with momentum 0.9 at this
 * rate blow the loss up to 1140): it trains (the loss of the last evaluation finite and
 * below log 256 = 5.55, the untrained model's), and where it promises single's model
 * (SIM_SAME_AS_SINGLE: single, sync-ps, allreduce, pipeline, tensor, zero) it lands on
 * single's weights with its global batch. */
START_TEST(gpt_every_strategy_runs)
{
    int same = 0;
    for (const sim_strategy_t *const *s = sim_strategies; *s; s++) {
        char kind[64];
        snprintf(kind, sizeof kind, "strategy.kind=%s", (*s)->name);
        const char *sets[] = {kind, "strategy.rounds=3", "model.momentum=0"};
        float *w = NULL;
        outcome_t o = simulate(sets, 3, &w);
        ck_assert_msg(o.ok, "%s: %s", (*s)->name, o.err);
        ck_assert_msg(o.samples > 0 && isfinite(o.loss) && o.loss < 5.55, "%s: loss %g", (*s)->name,
                      o.loss);
        if ((*s)->takes & SIM_SAME_AS_SINGLE) {
            static scenario_t sc;
            dt_err_t err;
            scenario_defaults(&sc);
            for (size_t i = 0; i < sizeof base / sizeof base[0]; i++)
                ck_assert(scenario_set(&sc, base[i], &err) == DT_OK);
            ck_assert(scenario_set(&sc, kind, &err) == DT_OK);
            int workers = (int)sc.workers, servers = 0;
            if ((*s)->hosts)
                (*s)->hosts(&sc, &workers, &servers);
            int replicas = (*s)->replicas ? (*s)->replicas(&sc, workers) : workers;
            float *ref = NULL;
            outcome_t r = single_of(8 * replicas, &sets[2], 1, &ref);
            ck_assert_msg(r.samples == o.samples, "%s: %g samples, single %g", (*s)->name,
                          o.samples, r.samples);
            double d = max_rel_diff(w, ref, r.n_params);
            ck_assert_msg(d < 2e-5, "%s: max relative difference %g from single", (*s)->name, d);
            free(ref);
            same++;
        }
        free(w);
    }
    ck_assert_int_ge(same, 6);
}
END_TEST

/* ---- bad combinations --------------------------------------------------------------------- */

/* Each refused when the scenario is checked, in one line naming the key at fault (--set
 * lines have no file line: the message starts with the key, then says what does not fit). */
START_TEST(gpt_bad_combinations_refused)
{
    static const struct {
        const char *sets[4];
        const char *key, *says;
    } bad[] = {
        {{"strategy.kind=tensor", "strategy.tensor_parallel=4", "model.heads=2", NULL},
         "strategy.tensor_parallel",
         "does not divide the gpt's 2 heads"},
        {{"strategy.kind=tensor", "strategy.sequence_parallel=yes", "model.batch=1",
          "model.seq=15"},
         "strategy.sequence_parallel",
         "tensor_parallel must divide batch x seq"},
        {{"strategy.kind=pipeline", "strategy.stages=3", "model.layers=2", NULL},
         "strategy.stages",
         "the gpt has 2 blocks"},
        {{"strategy.kind=pipeline", "strategy.pipeline_schedule=interleaved",
          "strategy.virtual_stages=2", NULL},
         "strategy.virtual_stages",
         "the gpt has 2 blocks"},
        {{"strategy.kind=pipeline", "strategy.data_parallel=2", "strategy.bucket_mb=1", NULL},
         "strategy.bucket_mb",
         "bucket_mb must be 0"},
        {{"strategy.kind=pipeline", "strategy.tensor=2", "model.arch=mlp", "data.source=synthetic"},
         "strategy.tensor",
         "splits the real gpt's blocks"},
        {{"strategy.kind=pipeline", "strategy.tensor=4", "strategy.stages=2", NULL},
         "strategy.tensor",
         "does not divide the gpt's 2 heads"},
        {{"strategy.kind=pipeline", "strategy.tensor=2", "strategy.tensor_comm=formula", NULL},
         "strategy.tensor_comm",
         "expected messages"},
        {{"strategy.kind=tensor", "strategy.sequence_parallel=yes", "model.arch=mlp",
          "data.source=synthetic"},
         "strategy.sequence_parallel",
         "token rows"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int n = bad[i].sets[3] ? 4 : 3;
        outcome_t o = simulate(bad[i].sets, n, NULL);
        ck_assert_msg(!o.ok && strstr(o.err, bad[i].key) && strstr(o.err, bad[i].says) &&
                          !strchr(o.err, '\n'),
                      "%s %s: \"%s\"", bad[i].sets[0], bad[i].sets[1], o.err);
    }
}
END_TEST

/* ---- suite ------------------------------------------------------------------------------ */

static void setup(void)
{
    make_text();
}
static void teardown(void)
{
    unlink(text_path);
}

static Suite *suite(void)
{
    Suite *s = suite_create("gpt_split");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, gpt_ranges_equal_whole);
    tcase_add_test(tc, gpt_pipeline_equals_single);
    tcase_add_test(tc, gpt_hybrid_equals_single);
    tcase_add_test(tc, gpt_adam_pipeline_equals_single);
    tcase_add_test(tc, gpt_tensor_equals_single);
    tcase_add_test(tc, gpt_sequence_parallel_equals_single);
    tcase_add_test(tc, gpt_3d_equals_single);
    tcase_add_test(tc, gpt_every_strategy_runs);
    tcase_add_test(tc, gpt_bad_combinations_refused);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    sim_strategies_register();
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
