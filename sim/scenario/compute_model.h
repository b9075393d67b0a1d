/* The compute model by operation and shape (cluster.compute_model = shape): a timing-only
 * model's layers timed by what they compute, as a profile's [shape] section says
 * (model_profile.h), on a device of the catalogue that gives its multiprocessors (sms):
 *
 *   GEMM of M x N x K: the roofline, max(compute, memory), where compute is the GEMM's
 *     output tiles of 128 x 128 (fewer rows or columns when the matrix has fewer) spread over
 *     the device's multiprocessors in whole waves, ceil(ceil(M/128) ceil(N/128) / sms)
 *     waves of 2 x 128 x 128 x K FLOPs each at the per-multiprocessor peak x
 *     gemm_efficiency, and memory is its operands and result,
 *     (M K + K N + M N) values, at memory_bandwidth x memory_efficiency; the backward pass is
 *     the input gradient's M x K x N and the weight gradient's K x N x M; a GEMM's fused
 *     elementwise work moves its elements at that bandwidth after it;
 *   attention (flash attention): max(its FLOPs at the 16-bit peak x attention_efficiency,
 *     its inputs and output, (2 QUERIES + 2 KEYS) x HEADS x HEAD_DIM values, at the
 *     bandwidth; twice those values backward);
 *   a MoE layer's routed experts (grouped GEMM): a member's E_local = experts / expert
 *     experts, each of M_e = its share of the group's token copies, the member's M x
 *     expert / experts rows, padded to whole 128-row tiles (DeepGEMM's contiguous layout
 *     aligns each expert's rows so), all experts' tiles in one set of waves; memory counts
 *     every local expert's weights;
 *   memory-bound layers: their elements at the bandwidth;
 *   layers without a shape: their FLOPs at cluster.device_flops, as before.
 *
 * The time is what the run charges: each layer's FLOPs become the FLOPs that take that time
 * at the host's speed (cluster.device_flops), so the simulation engine and the strategies
 * charge FLOPs as before. Values are model.precision's bytes (2 in bf16 and fp8, whose
 * storage is 16-bit); fp32 GEMMs and attention run at the FP32 peak x efficiency (no tensor
 * cores), fp8 attention at the BF16 peak (Transformer Engine runs it in BF16), and so do
 * fp8's output head and MoE routers (the layers marked wide, model_profile.h), at the
 * device's gemm_efficiency; fp8's other GEMMs reach gemm_efficiency of the FP8 peak with a
 * scale per tensor, fp8_block_gemm_efficiency with block scaling (model.fp8_scaling). */
#ifndef DTSIM_COMPUTE_MODEL_H
#define DTSIM_COMPUTE_MODEL_H

#include "model_profile.h"
#include "scenario.h"

/* The tile a GEMM's output is cut into, one per multiprocessor at a time (why 128 x 128:
 * the smallest of the tiles cuBLAS and CUTLASS run at the full tensor-core rate on Ampere
 * and Hopper; their 256 x 128 tiles only make the waves coarser, so the best of them is
 * bounded by this one). */
#define SIM_GEMM_TILE 128.0

typedef struct sim_compute {
    double peak;        /* FLOP/s of the GEMMs at model.precision */
    double attn_peak;   /* FLOP/s of the attention kernel's precision */
    double sms;         /* multiprocessors */
    double gemm_eff;    /* sustained fraction of peak, large GEMMs */
    double wide_peak;   /* FLOP/s of the GEMMs kept in 16 bits under fp8 (else peak) */
    double wide_eff;    /* their sustained fraction */
    double attn_eff;    /* of attn_peak, flash attention */
    double bandwidth;   /* bytes/s sustained: memory_bandwidth x memory_efficiency */
    double value_bytes; /* bytes of a value at model.precision */
} sim_compute_t;

/* What a run computes at once: samples per compute call (a pipeline's micro-batch, or
 * model.batch), and a member's share of a tensor group of T (sp: sequence parallelism). */
typedef struct sim_compute_call {
    double samples;
    int T, sp;
    int E; /* the expert-parallel group a member's routed experts take tokens from (1: none) */
} sim_compute_call_t;

/** 1 with c filled when sc's layers of p are timed by shape: cluster.compute_model = shape,
 * no cluster.device_efficiency (an override of the flat fraction: the flat model), a device
 * with sms and a peak at model.precision, and p with a [shape] section; 0 otherwise (c
 * untouched): every layer at cluster.device_flops. */
int sim_compute_by_shape(const scenario_t *sc, const sim_model_profile_t *p, sim_compute_t *c);
/** The compute parameters of device d at sc's precision (sim_compute_by_shape's); 0 when d
 * has no sms or no peak at that precision. */
int sim_compute_of_device(const sim_device_profile_t *d, const scenario_t *sc, sim_compute_t *c);
/** Seconds of one M x N x K GEMM (2 M N K FLOPs). */
double sim_compute_gemm(const sim_compute_t *c, double m, double n, double k);
/** Seconds of a grouped GEMM: `groups` products of M x N x K each, every group's rows in
 * whole 128-row tiles, all tiles in one set of waves. */
double sim_compute_grouped_gemm(const sim_compute_t *c, double groups, double m, double n,
                                double k);
/** Seconds of a memory-bound kernel moving `elements` values. */
double sim_compute_memory(const sim_compute_t *c, double elements);
/** Seconds of flash attention of `flops` FLOPs reading and writing `elements` values. */
double sim_compute_attention(const sim_compute_t *c, double flops, double elements);
/** Layer l's forward and backward seconds for a call (a tensor group member's share);
 * a layer without a shape at speed, the flat FLOP/s. */
void sim_compute_layer(const sim_compute_t *c, const sim_profile_layer_t *l,
                       const sim_compute_call_t *call, double speed, double *fwd, double *bwd);
/** The charge: replaces p's per-sample FLOPs, each layer's and the totals, with those that
 * take the time sim_compute_layer says at speed, as the run charges them (a pipeline's
 * plan multiplies a split layer's by 1/T again). *flops (the model's FLOPs a member
 * computes per sample) over *seconds (its time per sample) is the sustained speed. */
void sim_compute_charge(sim_model_profile_t *p, const sim_compute_t *c,
                        const sim_compute_call_t *call, double speed, double *flops,
                        double *seconds);
/** The call a run of sc makes: a pipeline's micro-batch and tensor group, or model.batch. */
sim_compute_call_t sim_compute_call_of(const scenario_t *sc);
/** p's layers charged as a run of sc charges them: where sc times p by shape
 * (sim_compute_by_shape), sim_compute_charge at sc's call and device speed, returning the
 * sustained speed (FLOP/s); 0 and p untouched otherwise. */
double sim_compute_charge_run(sim_model_profile_t *p, const scenario_t *sc);

#endif
