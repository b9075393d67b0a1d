/* A lesson's text as HTML (see report.h, results_report_lesson): the small part of Markdown
 * that scenarios/lessons/NAME.md uses, everything else escaped. A file of its own beside
 * report.c, which stays under 40 KB. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "report.h"

/* One line's text with `code` and [text](#id) links; everything else escaped. */
static void lesson_inline(FILE *f, const char *s, size_t len)
{
    char *line = dt_malloc(len + 1);
    memcpy(line, s, len);
    line[len] = '\0';
    char *p = line;
    while (*p) {
        char *tick = strchr(p, '`');
        char *open = strchr(p, '[');
        char *next = tick && (!open || tick < open) ? tick : open;
        if (!next) {
            results_report_escape(f, p);
            break;
        }
        char c = *next;
        *next = '\0';
        results_report_escape(f, p);
        *next = c;
        if (c == '`') {
            char *end = strchr(next + 1, '`');
            if (!end) {
                results_report_escape(f, next);
                break;
            }
            *end = '\0';
            fputs("<code>", f);
            results_report_escape(f, next + 1);
            fputs("</code>", f);
            p = end + 1;
            continue;
        }
        /* [text](#id): the id of letters, digits, '-' and '_' only */
        char *close = strstr(next, "](#");
        char *id = close ? close + 3 : NULL;
        size_t id_len = id ? strspn(id, "abcdefghijklmnopqrstuvwxyz"
                                        "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")
                           : 0;
        if (!close || strcspn(next + 1, "]`") != (size_t)(close - next - 1) || id_len == 0 ||
            id[id_len] != ')') {
            fputc('[', f);
            p = next + 1;
            continue;
        }
        *close = '\0';
        fprintf(f, "<a href=\"#%.*s\">", (int)id_len, id);
        results_report_escape(f, next + 1);
        fputs("</a>", f);
        p = id + id_len + 1;
    }
    free(line);
}

/* What a line of a lesson is, and what block is open. */
typedef enum { BLOCK_NONE, BLOCK_P, BLOCK_UL, BLOCK_OL, BLOCK_H2, BLOCK_H3 } block_t;

/* Closes the open block (a list's last item with it). */
static void block_close(FILE *f, block_t b)
{
    static const char *const ends[] = {"", "</p>\n", "</li>\n</ul>\n", "</li>\n</ol>\n"};
    if (b <= BLOCK_OL)
        fputs(ends[b], f);
}

/* The kind of the line t (blanks before it skipped), and how many characters its marker
 * takes ("## ", "- ", "12. "). */
static block_t line_kind(const char *t, size_t len, size_t *skip)
{
    size_t digits = strspn(t, "0123456789");
    *skip = 0;
    if (len == 0)
        return BLOCK_NONE;
    if (len > 2 && !strncmp(t, "# ", 2))
        return *skip = 2, BLOCK_H2;
    if (len > 3 && !strncmp(t, "## ", 3))
        return *skip = 3, BLOCK_H3;
    if (len > 2 && !strncmp(t, "- ", 2))
        return *skip = 2, BLOCK_UL;
    if (digits > 0 && len > digits + 2 && !strncmp(t + digits, ". ", 2))
        return *skip = digits + 2, BLOCK_OL;
    return BLOCK_P;
}

void results_report_lesson(FILE *f, const char *text)
{
    block_t open = BLOCK_NONE;
    for (const char *s = text ? text : ""; *s;) {
        size_t len = strcspn(s, "\n");
        const char *next = s + len + (s[len] == '\n');
        while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\r'))
            len--;
        size_t indent = strspn(s, " ");
        const char *t = s + (indent < len ? indent : len);
        size_t tl = len > indent ? len - indent : 0, skip;
        block_t kind = line_kind(t, tl, &skip);
        s = next;
        if (kind == BLOCK_P && open != BLOCK_NONE) {
            /* a line that goes on with the paragraph or the list item above */
            fputc('\n', f);
            lesson_inline(f, t, tl);
            continue;
        }
        if ((kind == BLOCK_UL || kind == BLOCK_OL) && kind == open) {
            fputs("</li>\n<li>", f);
            lesson_inline(f, t + skip, tl - skip);
            continue;
        }
        block_close(f, open);
        open = kind <= BLOCK_OL ? kind : BLOCK_NONE;
        static const char *const starts[] = {"", "<p>", "<ul>\n<li>", "<ol>\n<li>", "<h2>", "<h3>"};
        fputs(starts[kind], f);
        lesson_inline(f, t + skip, tl - skip);
        if (kind == BLOCK_H2 || kind == BLOCK_H3)
            fputs(kind == BLOCK_H2 ? "</h2>\n" : "</h3>\n", f);
    }
    block_close(f, open);
}

