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
    for (const char *c = text; *c && len < size; c++) /* a quote: end, \', begin again */
        len += (size_t)(*c == '\'' && !plain ? snprintf(buf + len, size - len, "'\\''")
                                              : snprintf(buf + len, size - len, "%c", *c));
    if (!plain && len < size)
        snprintf(buf + len, size - len, "'");
}

/* The options that plan the same again on db (what --resume and the PARTIAL line take). */
void plan_again(const plan_info_t *in, const char *db, char *buf, size_t size)
{
    snprintf(buf, size, "%s", in->options);
    append_word(buf, size, "--db");
    append_word(buf, size, db);
}

/* The options that decide a plan's layouts and runs as a command line (-j, --top, --db,
 * --time-limit and --tokens do not): the profile and a device file by their absolute paths. */
void plan_options_text(const plan_opts_t *o, const char *profile, char *buf, size_t size)
{
    char num[32];
    buf[0] = '\0';
    const char *pairs[][2] = {{"--profile", profile}, {"--device", o->device},
                              {"--precision", o->precision}};
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
        append_word(buf, size, pairs[i][0]);
        append_word(buf, size, pairs[i][1]);
    }
    const struct {
        const char *name;
        long v;
    } nums[] = {{"--devices", o->devices},       {"--per-server", o->per_server},
                {"--global-batch", o->global_batch}, {"--heads", o->heads},
                {"--steps", o->steps},           {"--max-runs", o->max_runs}};
    for (size_t i = 0; i < sizeof nums / sizeof *nums; i++) {
        if (!nums[i].v) /* --heads not given */
            continue;
        snprintf(num, sizeof num, "%ld", nums[i].v);
        append_word(buf, size, nums[i].name);
        append_word(buf, size, num);
    }
    for (int k = 0; k < 2; k++) { /* --tensor and --stages when given */
        const long *v = k ? o->stages : o->tensor;
        int n = k ? o->n_stages : o->n_tensor;
        char list[PLAN_MAX_LIST * 4] = "";
        for (int i = 0, len = 0; i < n; i++)
            len += snprintf(list + len, sizeof list - (size_t)len, "%s%ld", i ? "," : "", v[i]);
        if (n) {
            append_word(buf, size, k ? "--stages" : "--tensor");
            append_word(buf, size, list);
        }
    }
    for (int i = 0; i < o->n_sets; i++) {
        append_word(buf, size, "--set");
        append_word(buf, size, o->sets[i]);
    }
}

/* The plan.* params of info, into p (PLAN_PARAMS; numbers' text in texts). */
void plan_params(const plan_info_t *in, cli_param_t *p, char texts[][32])
{
    const struct {
        const char *key;
        double v;
    } nums[] = {{"plan.flops_per_sample", in->flops_per_sample},
                {"plan.tokens_per_sample", in->tokens_per_sample},
                {"plan.global_batch", in->global_batch},
                {"plan.devices", in->devices},
                {"plan.peak_flops", in->peak_flops},
                {"plan.memory", in->capacity},
                {"plan.ckpt_bytes", in->ckpt_bytes},
                {"plan.runs", (double)in->runs}};
    int n = 0;
    p[n++] = (cli_param_t){"plan.options", in->options, NAN};
    p[n++] = (cli_param_t){"plan.title", in->title, NAN};
    p[n++] = (cli_param_t){"plan.precision", in->precision, NAN};
    for (size_t i = 0; i < sizeof nums / sizeof *nums; i++) {
        snprintf(texts[i], 32, isnan(nums[i].v) ? "-" : "%.17g", nums[i].v);
        p[n++] = (cli_param_t){nums[i].key, texts[i], nums[i].v};
    }
    DT_ASSERT(n == PLAN_PARAMS);
}
