/* A lesson's text as HTML (see report.h, results_report_lesson and results_markdown_html):
 * CommonMark, rendered by libcmark (Debian: libcmark-dev) in its safe mode, where raw HTML
 * is left out and links to javascript:, vbscript:, file: and data: lose their target; the
 * numbers it states checked against the page's runs by lesson_numbers.c. A file of its own
 * beside report.c, which is long enough. */
#include <stdlib.h>
#include <string.h>

#include "lesson_numbers.h"
#include "report.h"

char *results_markdown_html(const char *text, int heading_shift)
{
    char *html = results_lesson_html(text, heading_shift, NULL, NULL, NULL, NULL);
    DT_ASSERT(html); /* without runs nothing is read that could fail */
    return html;
}

dt_status results_report_lesson(FILE *f, const char *text, results_query_t *q,
                                const results_runs_t *runs, size_t *contradicted, dt_err_t *err)
{
    results_lesson_check_t c;
    char *html = results_lesson_html(text, 1, q, runs, &c, err);
    if (!html)
        return DT_ERR_RUN;
    size_t shown = 0;
    for (size_t i = 0; i < c.n_issues; i++)
        shown += c.issues[i].shown[0] != '\0';
    fputs(html, f);
    free(html);
    if (contradicted)
        *contradicted = shown;
    results_lesson_check_free(&c);
    return DT_OK;
}
