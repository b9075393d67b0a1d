/* Writing CSV (RFC 4180) for the export: text fields quoted when they need it, numbers in
 * their shortest round-trip form, a SQLite column as a field, a column's name with its unit
 * as a header field. */
#ifndef DTSIM_RESULTS_CSV_H
#define DTSIM_RESULTS_CSV_H

#include <stddef.h>
#include <stdio.h>

/* Room for any number results_csv_double writes, with its terminating NUL. */
#define RESULTS_DOUBLE_LEN 32

/* v as the shortest %.Ng (N = 1..17) that strtod reads back as exactly v: 0.1 is "0.1",
 * not "0.10000000000000001"; "nan", "inf" and "-inf" as printf writes them. Returns buf. */
char *results_csv_double(char buf[RESULTS_DOUBLE_LEN], double v);

/* One text field: as is, or quoted (with quotes doubled) when it holds a comma, a quote,
 * CR or LF; one that starts with =, +, -, @, a tab or a CR and is not a number gets a
 * leading single quote, so that a spreadsheet shows it instead of running it (OWASP's
 * advice against CSV injection: a run named =HYPERLINK(...)). */
void results_csv_text(FILE *f, const char *text);

/* A header field: column `column` of table or view `table` by its name, and " (UNIT)" after
 * it when schema.sql gives it a unit ("sim_time (s)", "host_joules (J)"), the form of the
 * tidy table's "KEY (UNIT)". */
void results_csv_header(FILE *f, const char *table, const char *column);

/* Column col of the current row of statement s as one field: NULL empty, integers as
 * integers, reals by results_csv_double, text by results_csv_text. */
struct sqlite3_stmt;
void results_csv_column(FILE *f, struct sqlite3_stmt *s, int col);

#endif
