/* Helpers shared by the commands: usage errors, strict number parsing, /proc settings, and
 * the option parser and help printer that a command's option table (cli_spec) drives. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "scenario.h"

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "dtsim %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see dtsim %s --help)\n", cmd);
    return CLI_EXIT_USAGE;
}

int cli_parse_long(const char *text, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (end == text || *end || errno || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int cli_parse_double(const char *text, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || *end || errno || !isfinite(v) || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int cli_parse_duration(const char *text, double *out)
{
    size_t n = strlen(text);
    if (n > 1 && text[n - 1] == 'd') {
        char num[64];
        if (n - 1 >= sizeof num)
            return -1;
        memcpy(num, text, n - 1);
        num[n - 1] = 0;
        if (cli_parse_double(num, 0, 1e12, out))
            return -1;
        *out *= 86400.0;
        return 0;
    }
    dt_err_t err;
    return scenario_parse_time(text, out, &err) || !isfinite(*out) || *out < 0 ? -1 : 0;
}

int cli_proc_word(const char *path, int field, char *out, size_t n)
{
    FILE *f = fopen(path, "r");
    char line[256];
    int ok = f && fgets(line, sizeof line, f);
    if (f)
        fclose(f);
    if (!ok)
        return -1;
    char *save = NULL, *w = strtok_r(line, " \t\n", &save);
    for (int i = 0; w && i < field; i++)
        w = strtok_r(NULL, " \t\n", &save);
    if (!w || strlen(w) >= n)
        return -1;
    snprintf(out, n, "%s", w);
    return 0;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double cli_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, by_value);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- the option parser ------------------------------------------------------------------ */

/* The help's width: no line of an option's help passes this column. */
#define CLI_HELP_WIDTH 80
/* Option labels longer than this stand on a line of their own, their help under them. */
#define CLI_LABEL_MAX 23

static int option_ends(const cli_option *o)
{
    return !o->name && !o->help;
}

void cli_option_label(const cli_option *o, char *out, size_t n)
{
    char alias[8] = "";
    if (o->alias)
        snprintf(alias, sizeof alias, "-%c, ", o->alias);
    snprintf(out, n, "%s--%s%s%s", alias, o->name, o->metavar ? " " : "",
             o->metavar ? o->metavar : "");
}

void cli_wrap(FILE *out, const char *text, int first, int indent, int width)
{
    int col = first;
    int line_start = 1;
    for (const char *w = text; *w;) {
        if (*w == ' ') {
            w++;
            continue;
        }
        if (*w == '\n') { /* a break the text asks for */
            fprintf(out, "\n%*s", indent, "");
            col = indent;
            line_start = 1;
            w++;
            continue;
        }
        int len = (int)strcspn(w, " \n");
        if (!line_start && col + 1 + len > width) {
            fprintf(out, "\n%*s", indent, "");
            col = indent;
            line_start = 1;
        }
        if (!line_start) {
            fputc(' ', out);
            col++;
        }
        fprintf(out, "%.*s", len, w);
        col += len;
        line_start = 0;
        w += len;
    }
    fputc('\n', out);
}

/* Prints text (a paragraph as printed) ending it with a newline when it lacks one. */
static void print_block(FILE *out, const char *text)
{
    size_t n = strlen(text);
    fputs(text, out);
    if (n && text[n - 1] != '\n')
        fputc('\n', out);
}

void cli_help_print(FILE *out, const char *cmd, const cli_spec *spec)
{
    /* the usage: its first line after "usage: dtsim CMD ", other forms under it */
    int cont = (int)(strlen("usage: dtsim ") + strlen(cmd) + 1);
    const char *u = spec->usage ? spec->usage : "";
    fprintf(out, "usage: dtsim %s%s", cmd, *u ? " " : "");
    for (int first = 1; *u; first = 0) {
        size_t len = strcspn(u, "\n");
        if (!first)
            fprintf(out, "%*s", !strncmp(u, "dtsim ", 6) ? 7 : cont, "");
        fprintf(out, "%.*s\n", (int)len, u);
        u += len + (u[len] == '\n');
    }
    if (!spec->usage || !*spec->usage)
        fputc('\n', out);
    if (spec->about && *spec->about) {
        fputc('\n', out);
        print_block(out, spec->about);
    }
    if (spec->more)
        spec->more(out);
    /* the options: a label column as wide as the longest label (up to CLI_LABEL_MAX) */
    static const cli_option help = {0, "help", 'h', CLI_VALUE_NONE, NULL, "this text", NULL,
                                    0, 0,      0};
    int widest = 10; /* "-h, --help" */
    char label[128];
    for (const cli_option *o = spec->options; o && !option_ends(o); o++) {
        if (!o->name)
            continue;
        cli_option_label(o, label, sizeof label);
        int len = (int)strlen(label);
        if (len <= CLI_LABEL_MAX && len > widest)
            widest = len;
    }
    int column = 2 + widest + 3;
    fputc('\n', out);
    const char *title = spec->options_title ? spec->options_title : "options:";
    if (*title)
        fprintf(out, "%s\n", title);
    for (const cli_option *o = spec->options;; o++) {
        int end = !o || option_ends(o);
        if (end)
            o = &help;
        if (!o->name) {
            fprintf(out, "%s\n", o->help);
            continue;
        }
        cli_option_label(o, label, sizeof label);
        fprintf(out, "  %s", label);
        int col = 2 + (int)strlen(label);
        if (col + 2 > column) {
            fprintf(out, "\n%*s", column, "");
        } else {
            fprintf(out, "%*s", column - col, "");
        }
        cli_wrap(out, o->help, column, column, CLI_HELP_WIDTH);
        if (end)
            break;
    }
    if (spec->footer && *spec->footer) {
        fputc('\n', out);
        print_block(out, spec->footer);
    }
}

void cli_parse_init(cli_parser *p, const char *cmd, const cli_spec *spec, int argc, char **argv)
{
    memset(p, 0, sizeof *p);
    p->cmd = cmd;
    p->spec = spec;
    p->argc = argc;
    p->argv = argv;
    p->next = 1;
    p->args = argv + 1;
}

/* Fails the parse: one line naming the option, the exit code of a usage error. */
__attribute__((format(printf, 2, 3))) static int parse_fail(cli_parser *p, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    p->status = cli_usage_error(p->cmd, "%s", msg);
    return -1;
}

/* "in [1, 256]" for a range the option gives, "" for none. */
static void range_text(const cli_option *o, char *out, size_t n)
{
    if (o->lo == 0 && o->hi == 0)
        out[0] = '\0';
    else if (o->kind == CLI_VALUE_INT && o->hi >= (double)LONG_MAX)
        snprintf(out, n, " >= %.0f", o->lo);
    else if (o->kind == CLI_VALUE_INT)
        snprintf(out, n, " in [%.0f, %.0f]", o->lo, o->hi);
    else
        snprintf(out, n, " in [%g, %g]%s", o->lo, o->hi,
                 o->kind == CLI_VALUE_SIZE        ? " bytes"
                 : o->kind == CLI_VALUE_DURATION  ? " seconds"
                 : o->kind == CLI_VALUE_BANDWIDTH ? " bytes/s"
                                                  : "");
}

/* Is word one of the comma-separated choices? */
static int is_choice(const char *choices, const char *word, size_t len)
{
    for (const char *c = choices; *c;) {
        size_t n = strcspn(c, ",");
        if (n == len && !strncmp(c, word, len))
            return 1;
        c += n + (c[n] == ',');
    }
    return 0;
}

/* Checks p->value against p->option's kind into p->integer or p->number. */
static int check_value(cli_parser *p, const char *typed)
{
    const cli_option *o = p->option;
    const char *v = p->value;
    char range[96];
    range_text(o, range, sizeof range);
    int ranged = o->lo != 0 || o->hi != 0;
    dt_err_t err;
    dt_status st = DT_OK;
    double x = 0;
    switch (o->kind) {
    case CLI_VALUE_NONE:
    case CLI_VALUE_TEXT:
        return 0;
    case CLI_VALUE_PATH:
    case CLI_VALUE_DIR:
        if (!*v)
            return parse_fail(p, "%s needs a %s (an empty one names nothing)", typed,
                              o->kind == CLI_VALUE_DIR ? "folder" : "path");
        return 0;
    case CLI_VALUE_INT: {
        /* (double)LONG_MAX is 2^63, past what a long holds */
        long lo = !ranged || o->lo <= (double)LONG_MIN ? LONG_MIN : (long)o->lo;
        long hi = !ranged || o->hi >= (double)LONG_MAX ? LONG_MAX : (long)o->hi;
        if (cli_parse_long(v, lo, hi, &p->integer))
            return parse_fail(p, "%s %s: expected an integer%s", typed, v, range);
        return 0;
    }
    case CLI_VALUE_FLOAT:
        if (cli_parse_double(v, ranged ? o->lo : -HUGE_VAL, ranged ? o->hi : HUGE_VAL, &p->number))
            return parse_fail(p, "%s %s: expected a number%s", typed, v, range);
        return 0;
    case CLI_VALUE_SIZE:
        st = scenario_parse_size(v, &x, &err);
        break;
    case CLI_VALUE_DURATION:
        if (cli_parse_duration(v, &x))
            return parse_fail(p, "%s %s: expected a time (10min, 6.2s, 54d)", typed, v);
        break;
    case CLI_VALUE_BANDWIDTH:
        st = scenario_parse_bandwidth(v, &x, &err);
        break;
    case CLI_VALUE_CHOICE:
        for (const char *w = v;;) {
            size_t n = (o->flags & CLI_OPT_LIST) ? strcspn(w, ",") : strlen(w);
            if (!is_choice(o->choices, w, n))
                return parse_fail(p, "%s %s: expected %s%s", typed, v,
                                  (o->flags & CLI_OPT_LIST) ? "a comma list of " : "one of ",
                                  o->choices);
            if (!w[n])
                return 0;
            w += n + 1;
        }
    }
    if (st)
        return parse_fail(p, "%s %s: %s", typed, v, err.msg);
    if (ranged && !(x >= o->lo && x <= o->hi))
        return parse_fail(p, "%s %s: expected a value%s", typed, v, range);
    p->number = x;
    return 0;
}

/* What a value of each kind is, for "--opt needs ...". */
static const char *const kind_noun[] = {
    [CLI_VALUE_NONE] = "no value",         [CLI_VALUE_TEXT] = "a value",
    [CLI_VALUE_INT] = "an integer",        [CLI_VALUE_FLOAT] = "a number",
    [CLI_VALUE_SIZE] = "a size",           [CLI_VALUE_DURATION] = "a time",
    [CLI_VALUE_BANDWIDTH] = "a bandwidth", [CLI_VALUE_PATH] = "a path",
    [CLI_VALUE_DIR] = "a folder",          [CLI_VALUE_CHOICE] = "a value",
};

int cli_parse_next(cli_parser *p)
{
    while (p->next < p->argc) {
        char *w = p->argv[p->next++];
        if (!strcmp(w, "--")) { /* the rest are arguments */
            while (p->next < p->argc)
                p->args[p->n_args++] = p->argv[p->next++];
            break;
        }
        if (w[0] != '-' || !w[1]) { /* an argument ("-" too: stdout) */
            p->args[p->n_args++] = w;
            continue;
        }
        if (!strcmp(w, "--help") || !strcmp(w, "-h")) {
            cli_help_print(stdout, p->cmd, p->spec);
            p->status = CLI_EXIT_OK;
            return -1;
        }
        const char *inline_value = NULL;
        size_t name_len;
        const cli_option *o = p->spec->options;
        if (w[1] == '-') {
            name_len = strcspn(w + 2, "=");
            if (w[2 + name_len] == '=')
                inline_value = w + 2 + name_len + 1;
            for (; o && !option_ends(o); o++)
                if (o->name && strlen(o->name) == name_len && !strncmp(o->name, w + 2, name_len))
                    break;
        } else {
            name_len = 1;
            if (w[2])
                inline_value = w + 2; /* -j4 */
            for (; o && !option_ends(o); o++)
                if (o->name && o->alias == w[1])
                    break;
        }
        if (!o || option_ends(o))
            return parse_fail(p, "unknown option \"%.*s\"", (int)(name_len + (w[1] == '-' ? 2 : 1)),
                              w);
        char typed[80];
        snprintf(typed, sizeof typed, "%.*s", (int)(name_len + (w[1] == '-' ? 2 : 1)), w);
        p->option = o;
        p->value = NULL;
        snprintf(typed, sizeof typed, "--%s", o->name); /* -j 0 is named --jobs 0 */
        if (o->kind == CLI_VALUE_NONE) {
            if (inline_value)
                return parse_fail(p, "%s takes no value (\"%s\")", typed, w);
            return o->id;
        }
        if (!inline_value) {
            if (p->next >= p->argc)
                return parse_fail(p, "%s needs %s (%s)", typed, kind_noun[o->kind],
                                  o->metavar ? o->metavar : "");
            inline_value = p->argv[p->next++];
        }
        p->value = inline_value;
        if (check_value(p, typed))
            return -1;
        return o->id;
    }
    return 0;
}
