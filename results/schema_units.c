/* The units of schema.sql's columns (see schema_units.h). The schema is read line by line: a
 * "CREATE TABLE name" or "CREATE VIEW name" line opens an object, a ';' outside a comment
 * closes it, and within one a line whose comment starts with "[UNIT]" gives the unit of the
 * column it defines: a table's line starts with the column's name, a view's ends with it
 * (its AS name, or the name after the last dot). No unit is ever looked up in a hot path:
 * scanning the 12 KB text for each header field costs nothing beside writing the file. */
#include "schema_units.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "schema.h"

const char *results_schema_text(void)
{
    return (const char *)results_schema_sql;
}

static int ident_char(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* The object a "CREATE TABLE x" or "CREATE VIEW x" line opens, into name (n bytes), and
 * whether it is a view; 0 for any other line. */
static int object_opened(const char *line, size_t len, char *name, size_t n, int *view)
{
    static const char *const heads[2] = {"CREATE TABLE ", "CREATE VIEW "};
    for (int v = 0; v < 2; v++) {
        size_t h = strlen(heads[v]);
        if (len <= h || strncmp(line, heads[v], h))
            continue;
        size_t k = 0;
        while (h + k < len && ident_char(line[h + k]))
            k++;
        snprintf(name, n, "%.*s", (int)k, line + h);
        *view = v;
        return 1;
    }
    return 0;
}

/* The column a line of code[0..len) names: a table's first word, a view's last name. */
static void column_of(const char *code, size_t len, int view, const char **name, size_t *n)
{
    const char *b = code, *e = code + len;
    if (view) {
        while (e > b && !ident_char(e[-1]))
            e--;
        b = e;
        while (b > code && ident_char(b[-1]))
            b--;
    } else {
        while (b < e && !ident_char(*b))
            b++;
        e = b;
        while (e < code + len && ident_char(*e))
            e++;
    }
    *name = b;
    *n = (size_t)(e - b);
}

/* What each_unit calls for a unit: nonzero to stop. */
typedef int (*unit_fn)(void *ctx, const char *table, const char *column, size_t column_len,
                       const char *unit, size_t unit_len);

/* Where the comment of line[0..len) begins ("--"), len when it has none: the schema holds no
 * string with "--" in it. */
static size_t code_length(const char *line, size_t len)
{
    for (size_t k = 0; k + 1 < len; k++)
        if (line[k] == '-' && line[k + 1] == '-')
            return k;
    return len;
}

/* Calls found (when not NULL) for every unit the schema gives, in order, until it returns
 * nonzero; returns how many units it went through. */
static size_t each_unit(unit_fn found, void *ctx)
{
    char object[64] = "";
    int view = 0;
    size_t units = 0;
    for (const char *line = results_schema_text(); *line;) {
        size_t len = strcspn(line, "\n"), code = code_length(line, len);
        const char *unit = line + code + 4, *close = NULL, *column = NULL;
        size_t column_len = 0;
        int opens = object_opened(line, code, object, sizeof object, &view);
        if (!opens && object[0] && code + 4 < len && !strncmp(line + code, "-- [", 4)) {
            close = memchr(unit, ']', len - code - 4);
            column_of(line, code, view, &column, &column_len);
        }
        if (close && column_len > 0) {
            units++;
            if (found && found(ctx, object, column, column_len, unit, (size_t)(close - unit)))
                return units;
        }
        if (memchr(line, ';', code))
            object[0] = '\0';
        line += len + (line[len] == '\n');
    }
    return units;
}

typedef struct lookup {
    const char *table, *column;
    char *unit;
    size_t n;
} lookup_t;

static int unit_match(void *ctx, const char *table, const char *column, size_t column_len,
                      const char *unit, size_t unit_len)
{
    lookup_t *l = ctx;
    if (strcmp(table, l->table) || strlen(l->column) != column_len ||
        strncmp(column, l->column, column_len))
        return 0;
    snprintf(l->unit, l->n, "%.*s", (int)unit_len, unit);
    return 1;
}

int results_schema_unit(const char *table, const char *column, char *unit, size_t n)
{
    lookup_t l = {table, column, unit, n};
    unit[0] = '\0';
    each_unit(unit_match, &l);
    return unit[0] != '\0';
}

size_t results_schema_units_count(void)
{
    return each_unit(NULL, NULL);
}
