/* The command table: every dtsim command with its arguments, its line in `dtsim --help`,
 * its handler and its option table (cli_spec, beside the handler in its own file). main.c
 * dispatches from it; `dtsim --help`, the bash completion (dtsim __complete) and the man
 * page's commands section (man_commands.sh) are written from it. A new command is a row here
 * and its spec. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

const cli_command cli_commands[] = {
    {"run", "SCENARIO",
     "run a scenario in the simulated cluster, store it in the results database, print a summary",
     cli_run, &cli_run_spec},
    {"check", "SCENARIO", "validate a scenario, print its resolved configuration", cli_check,
     &cli_check_spec},
    {"platform", "SCENARIO", "print the SimGrid platform XML a scenario generates", cli_platform,
     &cli_platform_spec},
    {"plot", NULL,
     "draw figures of stored runs (accuracy, time breakdown, scaling, timeline) with gnuplot",
     cli_plot, &cli_plot_spec},
    {"report", NULL, "one HTML page about stored runs: summary, figures, configurations, lessons",
     cli_report, &cli_report_spec},
    {"serve", NULL, "a live web page of stored and running runs, on 127.0.0.1", cli_serve,
     &cli_serve_spec},
    {"keys", NULL, "every scenario key with its default and meaning", cli_keys, &cli_keys_spec},
    {"strategies", NULL, "every strategy, the keys it reads, what it does", cli_strategies,
     &cli_strategies_spec},
    {"devices", "[NAME]",
     "the device catalogue (cluster.device): peaks per precision, memory, power; NAME: one "
     "device with each value's source",
     cli_devices, &cli_devices_spec},
    {"runs", NULL, "list the runs of a results database", cli_runs, &cli_runs_spec},
    {"show", "RUN", "print one run whole: summary, rows, every parameter", cli_show,
     &cli_show_spec},
    {"export", NULL,
     "write runs as CSV (--csv: every table, --tidy: a row per run) or a run's timeline as a "
     "Chrome trace (--trace RUN)",
     cli_export, &cli_export_spec},
    {"merge", NULL, "join results databases (a sweep's members run apart)", cli_merge,
     &cli_merge_spec},
    {"validate", "SCENARIO",
     "real time against simulated: the scenario run real on a testbed of shaped links and "
     "simulated under CM02, LV08, SMPI and tcp; --calibrate fits tcp to your network (root, "
     "Open MPI)",
     cli_validate, &cli_validate_spec},
    {"train", NULL,
     "train a model in one process (no simulation), printing test accuracy after each epoch",
     cli_train, &cli_train_spec},
    {"bench trainer", NULL, "training speed and accuracy on this machine", cli_bench,
     &cli_bench_trainer_spec},
    {"bench sim", "SCENARIO", "the simulation's own cost against plain training", cli_bench,
     &cli_bench_sim_spec},
    {"calibrate", NULL, "measure this machine's step time: a device profile", cli_calibrate,
     &cli_calibrate_spec},
    {"plan", NULL,
     "capacity planning: every tensor x pipeline x data layout of a model profile on N devices "
     "that fits, simulated, best first (memory, TFLOP/s per device, energy, cost); "
     "--time-limit, --resume, --show",
     cli_plan, NULL},
    {"goodput", NULL,
     "what failures cost: the checkpoint interval (Young, Daly) and the share of time lost to "
     "checkpoints, rework and restarts at a device MTBF, checked by simulation",
     cli_goodput, &cli_goodput_spec},
    {"profile transformer", NULL,
     "write the model profile of a GPT, Llama or BERT of any shape, for timing-only runs "
     "(model.arch = profile:FILE)",
     cli_profile, &cli_profile_transformer_spec},
    {"profile time", NULL,
     "a profile's layers timed by operation and shape on a device: GEMMs, attention, "
     "memory-bound, TFLOP/s",
     cli_profile, &cli_profile_time_spec},
};
const size_t cli_n_commands = sizeof cli_commands / sizeof cli_commands[0];

/* The column of the commands' lines in dtsim --help, and the width they wrap to. */
#define USAGE_COLUMN 21
#define USAGE_WIDTH 80

void cli_commands_usage(FILE *out)
{
    fprintf(out, "usage: dtsim COMMAND [OPTIONS]\n"
                 "\n"
                 "Real neural-network training inside a simulated cluster.\n"
                 "\n"
                 "commands:\n");
    for (size_t i = 0; i < cli_n_commands; i++) {
        const cli_command *c = &cli_commands[i];
        char label[64];
        snprintf(label, sizeof label, "%s%s%s", c->name, c->args ? " " : "",
                 c->args ? c->args : "");
        int len = 2 + (int)strlen(label);
        fprintf(out, "  %s", label);
        if (len + 2 > USAGE_COLUMN)
            fprintf(out, "\n%*s", USAGE_COLUMN, "");
        else
            fprintf(out, "%*s", USAGE_COLUMN - len, "");
        cli_wrap(out, c->summary, USAGE_COLUMN, USAGE_COLUMN, USAGE_WIDTH);
    }
    fprintf(out, "\n"
                 "options:\n"
                 "  -h, --help         this text (COMMAND --help for a command's options)\n"
                 "  --version          dtsim and SimGrid versions, and which OpenBLAS kernels "
                 "run\n");
}

/* The length of a name's first word ("bench" of "bench sim"). */
static size_t first_word(const char *name)
{
    return strcspn(name, " ");
}

void cli_group_usage(FILE *out, const char *word)
{
    size_t n = strlen(word);
    int first = 1;
    for (size_t i = 0; i < cli_n_commands; i++) {
        const cli_command *c = &cli_commands[i];
        if (first_word(c->name) == n && !strncmp(c->name, word, n) && c->name[n]) {
            fprintf(out, "%s dtsim %s%s%s [OPTIONS]\n", first ? "usage:" : "      ", c->name,
                    c->args ? " " : "", c->args ? c->args : "");
            first = 0;
        }
    }
    fputc('\n', out);
    for (size_t i = 0; i < cli_n_commands; i++) {
        const cli_command *c = &cli_commands[i];
        if (first_word(c->name) == n && !strncmp(c->name, word, n) && c->name[n]) {
            fprintf(out, "  %-18s ", c->name + n + 1);
            cli_wrap(out, c->summary, USAGE_COLUMN, USAGE_COLUMN, USAGE_WIDTH);
        }
    }
    fprintf(out, "\ndtsim %s SUB --help: its options.\n", word);
}

const cli_command *cli_command_find(const char *word, const char *sub)
{
    const cli_command *group = NULL;
    for (size_t i = 0; i < cli_n_commands; i++) {
        const cli_command *c = &cli_commands[i];
        size_t n = first_word(c->name);
        if (strlen(word) != n || strncmp(c->name, word, n))
            continue;
        if (!c->name[n] || (sub && !strcmp(c->name + n + 1, sub)))
            return c;
        if (!group)
            group = c;
    }
    return group;
}

/* ---- dtsim __complete ------------------------------------------------------------------ */

static const char *const kind_words[] = {
    [CLI_VALUE_NONE] = "none",
    [CLI_VALUE_TEXT] = "text",
    [CLI_VALUE_INT] = "int",
    [CLI_VALUE_FLOAT] = "float",
    [CLI_VALUE_SIZE] = "size",
    [CLI_VALUE_DURATION] = "duration",
    [CLI_VALUE_BANDWIDTH] = "bandwidth",
    [CLI_VALUE_PATH] = "path",
    [CLI_VALUE_DIR] = "dir",
    [CLI_VALUE_CHOICE] = "choice",
};

/* One line per option of a table: "--name KIND [CHOICES]", and "-a KIND ..." for its alias. */
static void print_table_options(const cli_spec *spec)
{
    for (const cli_option *o = spec->options; o && (o->name || o->help); o++) {
        if (!o->name)
            continue;
        const char *kind = o->kind == CLI_VALUE_CHOICE && (o->flags & CLI_OPT_LIST)
                               ? "choice-list"
                               : kind_words[o->kind];
        const char *choices = o->kind == CLI_VALUE_CHOICE ? o->choices : NULL;
        printf("--%s %s%s%s\n", o->name, kind, choices ? " " : "", choices ? choices : "");
        if (o->alias)
            printf("-%c %s%s%s\n", o->alias, kind, choices ? " " : "", choices ? choices : "");
    }
    printf("--help none\n-h none\n");
}

/* Prints "NAME KIND" for an option of a help text (name: n bytes), once. */
static void emit(char seen[][40], int *n_seen, const char *name, size_t n, int value)
{
    char word[40];
    snprintf(word, sizeof word, "%.*s", (int)n, name);
    for (int i = 0; i < *n_seen; i++)
        if (!strcmp(seen[i], word))
            return;
    if (*n_seen < 256)
        snprintf(seen[(*n_seen)++], sizeof seen[0], "%s", word);
    printf("%s %s\n", word, value ? "text" : "none");
}

/* The options a help text names where options are listed: every --name of its usage lines
 * and of a line that begins with one ("--csv", "  --opt", "  -j, --jobs N", "  --beta1 X,
 * --beta2 X"), not those its prose mentions. Each "--name text" when a value follows it,
 * "--name none" when none does. */
static void print_help_options(const char *text)
{
    char seen[256][40];
    int n_seen = 0, usage = 0;
    for (const char *line = text; *line;) {
        size_t len = strcspn(line, "\n");
        if (!strncmp(line, "usage:", 6))
            usage = 1;
        else if (len == 0)
            usage = 0;
        size_t lead = strspn(line, " ");
        const char *end = line + len, *p = line + lead;
        if (!usage) {
            /* a line that lists an option: at most 2 blanks, then -x, or --name; its label
             * ends at two blanks */
            if (lead > 2 || p[0] != '-')
                p = end;
            const char *gap = strstr(p, "  ");
            if (gap && gap < end)
                end = gap;
        }
        while (p < end) {
            const char *o = strstr(p, "--");
            if (!o || o >= end)
                break;
            size_t n = 2 + strspn(o + 2, "abcdefghijklmnopqrstuvwxyz0123456789_-");
            if (n > 2 &&
                (o == line || o[-1] == ' ' || o[-1] == '[' || o[-1] == '|' || o[-1] == '(')) {
                /* a value: " WORD" after it that is no option and no bracket */
                int value = o + n < end && o[n] == ' ' && o[n + 1] && o[n + 1] != '-' &&
                            o[n + 1] != '[' && o[n + 1] != '|' && o[n + 1] != ' ';
                emit(seen, &n_seen, o, n, value);
                /* "-j, --jobs J": the alias too */
                if (!usage && o == line + lead + 4 && line[lead] == '-' && line[lead + 2] == ',')
                    emit(seen, &n_seen, line + lead, 2, value);
            }
            p = o + n;
        }
        line += len + (line[len] == '\n');
    }
    emit(seen, &n_seen, "--help", 6, 0);
    emit(seen, &n_seen, "-h", 2, 0);
}

/* The help a command without a table prints (its handler asked with --help), into a string
 * to free. */
static char *own_help(const cli_command *c)
{
    char word[32], sub[32] = "";
    snprintf(word, sizeof word, "%.*s", (int)first_word(c->name), c->name);
    if (c->name[strlen(word)])
        snprintf(sub, sizeof sub, "%s", c->name + strlen(word) + 1);
    char help[] = "--help";
    char *argv[] = {word, sub[0] ? sub : help, help, NULL};
    int argc = sub[0] ? 3 : 2;
    fflush(stdout);
    FILE *tmp = tmpfile();
    int saved = dup(STDOUT_FILENO);
    if (!tmp || saved < 0 || dup2(fileno(tmp), STDOUT_FILENO) < 0) {
        if (tmp)
            fclose(tmp);
        return NULL;
    }
    c->handler(argc, argv);
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    long n = ftell(tmp);
    char *text = NULL;
    if (n >= 0 && (text = calloc((size_t)n + 1, 1)) != NULL) {
        rewind(tmp);
        if (fread(text, 1, (size_t)n, tmp) != (size_t)n)
            text[0] = '\0';
    }
    fclose(tmp);
    return text;
}

int cli_complete(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "";
    if (!strcmp(what, "commands") || !strcmp(what, "names")) {
        /* commands: each first word once; names: every row's whole name */
        for (size_t i = 0; i < cli_n_commands; i++) {
            const char *name = cli_commands[i].name;
            size_t n = first_word(name);
            if (!strcmp(what, "names"))
                printf("%s\n", name);
            else if (!i || first_word(cli_commands[i - 1].name) != n ||
                     strncmp(cli_commands[i - 1].name, name, n))
                printf("%.*s\n", (int)n, name);
        }
        return CLI_EXIT_OK;
    }
    if (!strcmp(what, "subs") && argc == 3) {
        for (size_t i = 0; i < cli_n_commands; i++) {
            const char *name = cli_commands[i].name;
            size_t n = first_word(name);
            if (name[n] && strlen(argv[2]) == n && !strncmp(name, argv[2], n))
                printf("%s\n", name + n + 1);
        }
        return CLI_EXIT_OK;
    }
    if (!strcmp(what, "options") && (argc == 3 || argc == 4)) {
        const cli_command *c = cli_command_find(argv[2], argc == 4 ? argv[3] : NULL);
        if (!c || (c->name[first_word(c->name)] &&
                   (argc < 4 || strcmp(c->name + first_word(c->name) + 1, argv[3]))))
            return CLI_EXIT_USAGE; /* no such command, or a group without its sub-command */
        if (c->spec) {
            print_table_options(c->spec);
            return CLI_EXIT_OK;
        }
        char *text = own_help(c);
        if (!text)
            return CLI_EXIT_RUN;
        print_help_options(text);
        free(text);
        return CLI_EXIT_OK;
    }
    fprintf(stderr, "usage: dtsim __complete commands | names | subs CMD | options CMD [SUB]\n");
    return CLI_EXIT_USAGE;
}
