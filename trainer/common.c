/* Error carrier, checked allocation and the monotonic clock (see common.h). */
#define _POSIX_C_SOURCE 200809L
#include "common.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

void dt_err_clean(dt_err_t *err)
{
    /* control bytes a message echoes from its input (a key, a value, a path with a newline)
     * would break the one line or drive the terminal: written as \xNN */
    char out[sizeof err->msg];
    size_t k = 0;
    for (const unsigned char *c = (const unsigned char *)err->msg; *c && k + 1 < sizeof out; c++) {
        if (*c < 0x20 || *c == 0x7f) {
            if (k + 4 >= sizeof out)
                break;
            k += (size_t)snprintf(out + k, sizeof out - k, "\\x%02x", *c);
        } else {
            out[k++] = (char)*c;
        }
    }
    out[k] = '\0';
    memcpy(err->msg, out, k + 1);
}

dt_status dt_err_input(dt_err_t *err, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        dt_err_clean(err);
    }
    return DT_ERR_INPUT;
}

void *dt_malloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    DT_CHECK(p, "out of memory allocating %zu bytes", bytes);
    return p;
}

void *dt_calloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    DT_CHECK(p, "out of memory allocating %zu x %zu bytes", count, size);
    return p;
}

double dt_wall_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void dt_duration_words(double seconds, char *buf, size_t size)
{
    long t = seconds > 0 ? (long)(seconds + 0.5) : 0;
    if (t < 60)
        snprintf(buf, size, "%ld s", t);
    else if (t < 3600)
        snprintf(buf, size, "%ld min %ld s", t / 60, t % 60);
    else
        snprintf(buf, size, "%ld h %ld min", t / 3600, t % 3600 / 60);
}
