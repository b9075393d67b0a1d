/* A lesson's text as HTML (see report.h, results_report_lesson and results_markdown_html):
 * CommonMark, rendered by libcmark (Debian: libcmark-dev) in its safe mode, where raw HTML
 * is left out and links to javascript:, vbscript:, file: and data: lose their target. A file
 * of its own beside report.c, which stays under 40 KB. */
#include <stdlib.h>
#include <string.h>

#include <cmark.h>

#include "report.h"

char *results_markdown_html(const char *text, int heading_shift)
{
    const char *md = text ? text : "";
    cmark_node *doc = cmark_parse_document(md, strlen(md), CMARK_OPT_DEFAULT);
    DT_CHECK(doc, "out of memory parsing a lesson");
    if (heading_shift) {
        cmark_iter *it = cmark_iter_new(doc);
        for (cmark_event_type ev; (ev = cmark_iter_next(it)) != CMARK_EVENT_DONE;) {
            cmark_node *n = cmark_iter_get_node(it);
            if (ev == CMARK_EVENT_ENTER && cmark_node_get_type(n) == CMARK_NODE_HEADING) {
                int level = cmark_node_get_heading_level(n) + heading_shift;
                cmark_node_set_heading_level(n, level < 1 ? 1 : level > 6 ? 6 : level);
            }
        }
        cmark_iter_free(it);
    }
    char *html = cmark_render_html(doc, CMARK_OPT_DEFAULT);
    cmark_node_free(doc);
    DT_CHECK(html, "out of memory rendering a lesson");
    return html;
}

void results_report_lesson(FILE *f, const char *text)
{
    char *html = results_markdown_html(text, 1);
    fputs(html, f);
    free(html);
}
