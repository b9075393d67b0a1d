/* CSV fields (see csv.h). The shortest round-trip form makes a file both exact (reading it
 * back gives the stored double, bit for bit) and readable (0.1, not 0.10000000000000001,
 * which %.17g writes): tables meant for pandas, R or a spreadsheet lose nothing and carry no
 * noise digits. */
#include "csv.h"

#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "schema_units.h"

char *results_csv_double(char buf[RESULTS_DOUBLE_LEN], double v)
{
    if (isnan(v)) {
        snprintf(buf, RESULTS_DOUBLE_LEN, "nan"); /* strtod reads a NaN, never the same one */
        return buf;
    }
    /* 17 significant digits always suffice for a binary64 double */
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(buf, RESULTS_DOUBLE_LEN, "%.*g", digits, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    return buf;
}

/* A field a spreadsheet would run as a formula: it starts with =, +, -, @, a tab or a CR
 * (OWASP's CSV-injection list) and is not simply a number ("-0.5" stays as it is). */
static int formula_like(const char *t)
{
    if (!*t || !strchr("=+-@\t\r", *t))
        return 0;
    char *end;
    strtod(t, &end);
    return end == t || *end;
}

void results_csv_text(FILE *f, const char *t)
{
    int guard = formula_like(t);
    if (!strpbrk(t, ",\"\r\n")) {
        if (guard)
            fputc('\'', f);
        fputs(t, f);
        return;
    }
    fputc('"', f);
    if (guard)
        fputc('\'', f);
    for (; *t; t++) {
        if (*t == '"')
            fputc('"', f);
        fputc(*t, f);
    }
    fputc('"', f);
}

void results_csv_header(FILE *f, const char *table, const char *column)
{
    char unit[32], name[256];
    if (results_schema_unit(table, column, unit, sizeof unit))
        snprintf(name, sizeof name, "%s (%s)", column, unit);
    else
        snprintf(name, sizeof name, "%s", column);
    results_csv_text(f, name);
}

void results_csv_column(FILE *f, sqlite3_stmt *s, int col)
{
    char num[RESULTS_DOUBLE_LEN];
    switch (sqlite3_column_type(s, col)) {
    case SQLITE_NULL:
        return;
    case SQLITE_INTEGER:
        fprintf(f, "%lld", (long long)sqlite3_column_int64(s, col));
        return;
    case SQLITE_FLOAT:
        fputs(results_csv_double(num, sqlite3_column_double(s, col)), f);
        return;
    default:
        results_csv_text(f, (const char *)sqlite3_column_text(s, col));
    }
}
