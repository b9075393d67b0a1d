/* What results/schema.sql says besides its SQL: the unit of each column that has one, written
 * first in the column's comment ("-- [s] simulated seconds"), read back from the schema text
 * that is built into dtsim, so that the schema stays the one place a unit is written. */
#ifndef DTSIM_RESULTS_SCHEMA_UNITS_H
#define DTSIM_RESULTS_SCHEMA_UNITS_H

#include <stddef.h>

/** schema.sql's text, NUL-terminated (the SQL that creates a database's schema). */
const char *results_schema_text(void);

/** The unit schema.sql gives column `column` of table or view `table` ("s", "B/s"), copied
 *  into unit (n bytes); 0, unit empty, when it gives none. */
int results_schema_unit(const char *table, const char *column, char *unit, size_t n);

/** Units schema.sql writes in all (every table and view), for checking that each names a
 *  column. */
size_t results_schema_units_count(void);

#endif
