/* Rows alike (see rows_alike.h): items sorted by class, figures (their bits) and index, each
 * run of equal ones weighted onto its first. O(n log n): 16,384 hosts or 40,000 links in a
 * few milliseconds. */
#include "rows_alike.h"

#include <stdlib.h>
#include <string.h>

#include "run.h"

int sim_rows_grouped(const sim_run_t *run)
{
    sim_group_rows_t g = run->sc->group_rows;
    return g == SIM_GROUP_ROWS_YES ||
           (g == SIM_GROUP_ROWS_AUTO && run->n_workers + run->n_servers > SIM_GROUP_ROWS_HOSTS);
}

typedef struct alike {
    const double *fig; /* (k) */
    const char *cls;
    int k;
    size_t i;
} alike_t;

static int alike_cmp(const void *pa, const void *pb)
{
    const alike_t *a = pa, *b = pb;
    int c = strcmp(a->cls ? a->cls : "", b->cls ? b->cls : "");
    if (!c)
        c = memcmp(a->fig, b->fig, sizeof(double) * (size_t)a->k);
    return c ? c : (a->i > b->i) - (a->i < b->i);
}

long *sim_rows_alike(const double *fig, int k, const char *const *cls, size_t n, int grouped)
{
    long *weight = dt_malloc(sizeof(long) * (n ? n : 1));
    for (size_t i = 0; i < n; i++)
        weight[i] = 1;
    if (!grouped || n < 2)
        return weight;
    alike_t *a = dt_malloc(sizeof *a * n);
    for (size_t i = 0; i < n; i++)
        a[i] = (alike_t){fig + i * (size_t)k, cls ? cls[i] : NULL, k, i};
    qsort(a, n, sizeof *a, alike_cmp);
    for (size_t lo = 0, hi; lo < n; lo = hi) {
        alike_t key = a[lo];
        for (hi = lo + 1; hi < n; hi++) {
            key.i = a[hi].i; /* the same but for the index */
            if (alike_cmp(&key, &a[hi]))
                break;
            weight[a[hi].i] = 0;
        }
        weight[a[lo].i] = (long)(hi - lo); /* the lowest index of the run: sorted by it last */
    }
    free(a);
    return weight;
}
