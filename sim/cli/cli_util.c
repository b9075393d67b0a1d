/* Helpers shared by the commands: usage errors, strict number parsing, /proc settings. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"

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
