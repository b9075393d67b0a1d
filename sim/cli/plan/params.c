/* What a plan stores with each of its runs for its ranking (params plan.*: plan_params),
 * and its options as a command line (plan_options_text, plan_again). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "plan_impl.h"

/* Appends text to buf (size) as a shell word: as it is when it is plain, else in single
 * quotes. */
static void append_word(char *buf, size_t size, const char *text)
{
    size_t len = strlen(buf);
    int plain = text[0] && strspn(text, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                        "0123456789_./=:,+-@%") == strlen(text);
    len += (size_t)snprintf(buf + len, len < size ? size - len : 0, "%s%s", len ? " " : "",
                            plain ? "" : "'");
    for (const char *at = text; *at && len < size; at++) /* a quote: end, \', begin again */
        len += (size_t)(*at == '\'' && !plain ? snprintf(buf + len, size - len, "'\\''")
                                              : snprintf(buf + len, size - len, "%c", *at));
    if (!plain && len < size)
        snprintf(buf + len, size - len, "'");
}

/* The options that plan the same again on opts->db (what --resume and the PARTIAL line
 * take), with the ranking's --tokens and --top where this command has them. */
void plan_again(const plan_info_t *in, const plan_opts_t *opts, char *buf, size_t size)
{
    snprintf(buf, size, "%s", in->options);
    append_word(buf, size, "--db");
    append_word(buf, size, opts->db);
    if (opts->tokens_text) {
        append_word(buf, size, "--tokens");
        append_word(buf, size, opts->tokens_text);
    }
    if (opts->top != PLAN_DEFAULT_TOP) {
        char num[32];
        snprintf(num, sizeof num, "%ld", opts->top);
        append_word(buf, size, "--top");
        append_word(buf, size, num);
    }
}

/* The options that decide a plan's layouts and runs as a command line (-j, --top, --db,
 * --time-limit and --tokens do not): the profile and a device file by their absolute paths. */
void plan_options_text(const plan_opts_t *opts, const char *profile, char *buf, size_t size)
{
    char num[32];
    buf[0] = '\0';
    const char *pairs[][2] = {
        {"--profile", profile}, {"--device", opts->device}, {"--precision", opts->precision}};
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
        append_word(buf, size, pairs[i][0]);
        append_word(buf, size, pairs[i][1]);
    }
    const struct {
        const char *name;
        long value;
    } nums[] = {{"--devices", opts->devices},
                {"--per-server", opts->per_server},
                {"--global-batch", opts->global_batch},
                {"--heads", opts->heads},
                {"--steps", opts->steps},
                {"--max-runs", opts->max_runs}};
    for (size_t i = 0; i < sizeof nums / sizeof *nums; i++) {
        if (!nums[i].value) /* --heads not given */
            continue;
        snprintf(num, sizeof num, "%ld", nums[i].value);
        append_word(buf, size, nums[i].name);
        append_word(buf, size, num);
    }
    for (int stages = 0; stages < 2; stages++) { /* --tensor and --stages when given */
        const long *values = stages ? opts->stages : opts->tensor;
        int n = stages ? opts->n_stages : opts->n_tensor;
        char list[PLAN_MAX_LIST * 4] = "";
        for (int i = 0, len = 0; i < n; i++)
            len +=
                snprintf(list + len, sizeof list - (size_t)len, "%s%ld", i ? "," : "", values[i]);
        if (n) {
            append_word(buf, size, stages ? "--stages" : "--tensor");
            append_word(buf, size, list);
        }
    }
    if (opts->margin_text) { /* it decides which layouts fit: --resume keeps it */
        append_word(buf, size, "--memory-margin");
        append_word(buf, size, opts->margin_text);
    }
    for (int i = 0; i < opts->n_sets; i++) {
        append_word(buf, size, "--set");
        append_word(buf, size, opts->sets[i]);
    }
}

/* The plan.* params of in, into params (PLAN_PARAMS; numbers' text in texts). */
void plan_params(const plan_info_t *in, cli_param_t *params, char texts[][32])
{
    const struct {
        const char *key;
        double value;
    } nums[] = {{"plan.flops_per_sample", in->flops_per_sample},
                {"plan.tokens_per_sample", in->tokens_per_sample},
                {"plan.global_batch", in->global_batch},
                {"plan.devices", in->devices},
                {"plan.peak_flops", in->peak_flops},
                {"plan.memory", in->capacity},
                {"plan.ckpt_bytes", in->ckpt_bytes},
                {"plan.margin", in->margin},
                {"plan.runs", (double)in->runs}};
    int n = 0;
    params[n++] = (cli_param_t){"plan.options", in->options, NAN};
    params[n++] = (cli_param_t){"plan.title", in->title, NAN};
    params[n++] = (cli_param_t){"plan.precision", in->precision, NAN};
    for (size_t i = 0; i < sizeof nums / sizeof *nums; i++) {
        snprintf(texts[i], 32, isnan(nums[i].value) ? "-" : "%.17g", nums[i].value);
        params[n++] = (cli_param_t){nums[i].key, texts[i], nums[i].value};
    }
    DT_ASSERT(n == PLAN_PARAMS);
}
