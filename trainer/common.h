/* Shared by every dtsim module: status codes, the error message carrier, and the
 * two macros for failures that are not the user's fault (machine failures and bugs).
 *
 * Three tiers of failure:
 *   - expected failures (bad input): functions return dt_status and fill a dt_err_t;
 *   - machine failures (malloc, fopen of our own temp files): DT_CHECK, which names file and
 *     line and aborts;
 *   - bugs: DT_ASSERT, always on (never assert(), which NDEBUG removes). */
#ifndef DTSIM_COMMON_H
#define DTSIM_COMMON_H

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

typedef enum dt_status {
    DT_OK = 0,
    DT_ERR_INPUT = 2, /* bad file, value or option: the user can fix it */
    DT_ERR_RUN = 1,   /* a run that failed for another reason */
} dt_status;

/* One error line, ready to print: "path:line: key: what is wrong". */
typedef struct dt_err {
    char msg[512];
} dt_err_t;

/* Formats into err (which may be NULL) and returns DT_ERR_INPUT, so that
 * `return dt_err_input(err, "...", ...)` reads as one line. */
dt_status dt_err_input(dt_err_t *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Writes the control bytes of err's message as \xNN (dt_err_input does it; for messages
 * formatted elsewhere). */
void dt_err_clean(dt_err_t *err);

#define DT_CHECK(cond, ...)                                                                        \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "dtsim: %s:%d: ", __FILE__, __LINE__);                                 \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

#define DT_ASSERT(cond)                                                                            \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "dtsim: %s:%d: internal error: %s\n", __FILE__, __LINE__, #cond);      \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* malloc/calloc that never return NULL (DT_CHECK on failure). dt_calloc zeroes. */
void *dt_malloc(size_t bytes);
/* count zeroed elements of size bytes (at least one byte); never NULL. */
void *dt_calloc(size_t count, size_t size);

/* Wall-clock seconds from a monotonic clock, for benchmarks and the measured time model. */
double dt_wall_seconds(void);
/* "45 s", "3 min 10 s", "1 h 2 min": a wall-clock duration in words, for progress lines. */
void dt_duration_words(double seconds, char *buf, size_t size);

#endif
