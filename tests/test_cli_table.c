/* The command table and the option parser it drives (sim/cli/commands.c, cli_util.c):
 * the parser against values worked out by hand (units, ranges, --opt=VALUE, aliases, the
 * arguments between options), each wrong value one line naming the option and exit 2; the
 * help printed from a table; and the built dtsim's completion, help and man page against
 * each other: every command of the table and every option its help lists completes. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_checks.h"
#include "cli_util.h"

static char dir[] = "/tmp/dtsim-cli-table-XXXXXX";
static char out_path[256], err_path[256];

static void setup(void)
{
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(out_path, sizeof out_path, "%s/stdout", dir);
    snprintf(err_path, sizeof err_path, "%s/stderr", dir);
}

/* ---- the parser ------------------------------------------------------------------------ */

enum { T_FLAG = 1, T_TEXT, T_INT, T_FLOAT, T_SIZE, T_TIME, T_RATE, T_PATH, T_DIR, T_ONE, T_LIST };

static const cli_option table[] = {
    {.help = "switches:"},
    {.id = T_FLAG, .name = "flag", .alias = 'f', .help = "a switch"},
    {.help = "values:"},
    {.id = T_TEXT, .name = "text", .kind = CLI_VALUE_TEXT, .metavar = "T", .help = "any word"},
    {.id = T_INT,
     .name = "int",
     .alias = 'n',
     .kind = CLI_VALUE_INT,
     .metavar = "N",
     .help = "an integer from 1 to 256",
     .lo = 1,
     .hi = 256},
    {.id = T_FLOAT,
     .name = "float",
     .kind = CLI_VALUE_FLOAT,
     .metavar = "X",
     .help = "a number from 0 to 1",
     .lo = 0,
     .hi = 1},
    {.id = T_SIZE, .name = "size", .kind = CLI_VALUE_SIZE, .metavar = "S", .help = "a size"},
    {.id = T_TIME,
     .name = "time",
     .kind = CLI_VALUE_DURATION,
     .metavar = "T",
     .help = "a time, days too"},
    {.id = T_RATE, .name = "rate", .kind = CLI_VALUE_BANDWIDTH, .metavar = "BW", .help = "a rate"},
    {.id = T_PATH, .name = "path", .kind = CLI_VALUE_PATH, .metavar = "FILE", .help = "a file"},
    {.id = T_DIR, .name = "dir", .kind = CLI_VALUE_DIR, .metavar = "DIR", .help = "a folder"},
    {.id = T_ONE,
     .name = "one",
     .kind = CLI_VALUE_CHOICE,
     .metavar = "W",
     .choices = "a,b,c",
     .help = "a, b or c"},
    {.id = T_LIST,
     .name = "list",
     .kind = CLI_VALUE_CHOICE,
     .metavar = "LIST",
     .choices = "png,svg,pdf",
     .flags = CLI_OPT_LIST,
     .help = "png, svg, pdf or several: a help long enough to be wrapped by the code onto a "
             "second line and a third, each starting under the first"},
    {0},
};

static const cli_spec spec = {
    .usage = "[OPTIONS] ARG ...\ndtsim test --other",
    .about = "A command of the test.\n",
    .options = table,
    .options_title = "",
    .footer = "The end.\n",
};

/* Parses args (NULL-terminated, after the command's word) against spec: "ID=VALUE;" per
 * option (VALUE the integer, the number or the text the parser made of it), then "|" and
 * the arguments joined by ","; stderr into err_path, stdout into out_path. Returns 0 when
 * the options were all read, else the parser's exit status. */
static int parse(const char *const *args, char *got, size_t n)
{
    char *argv[32] = {"test"};
    int argc = 1;
    for (; args[argc - 1]; argc++)
        argv[argc] = (char *)args[argc - 1];
    fflush(NULL);
    int saved_out = dup(1), saved_err = dup(2);
    FILE *o = fopen(out_path, "w"), *e = fopen(err_path, "w");
    dup2(fileno(o), 1);
    dup2(fileno(e), 2);
    cli_parser p;
    cli_parse_init(&p, "test", &spec, argc, argv);
    int id;
    size_t len = 0;
    got[0] = '\0';
    while ((id = cli_parse_next(&p)) > 0) {
        const cli_option *opt = p.option;
        if (opt->kind == CLI_VALUE_INT)
            len += (size_t)snprintf(got + len, n - len, "%d=%ld;", id, p.integer);
        else if (opt->kind == CLI_VALUE_FLOAT || opt->kind == CLI_VALUE_SIZE ||
                 opt->kind == CLI_VALUE_DURATION || opt->kind == CLI_VALUE_BANDWIDTH)
            len += (size_t)snprintf(got + len, n - len, "%d=%.17g;", id, p.number);
        else
            len += (size_t)snprintf(got + len, n - len, "%d=%s;", id, p.value ? p.value : "");
    }
    len += (size_t)snprintf(got + len, n - len, "|");
    for (int i = 0; id == 0 && i < p.n_args; i++)
        len += (size_t)snprintf(got + len, n - len, "%s%s", i ? "," : "", p.args[i]);
    fflush(NULL);
    dup2(saved_out, 1);
    dup2(saved_err, 2);
    close(saved_out);
    close(saved_err);
    fclose(o);
    fclose(e);
    return id == 0 ? 0 : p.status;
}

START_TEST(parser_reads_each_kind_of_value)
{
    static const struct {
        const char *args[8];
        const char *want;
    } cases[] = {
        /* --opt VALUE, --opt=VALUE, -a VALUE and -aVALUE are one */
        {{"--int", "4"}, "3=4;|"},
        {{"--int=4"}, "3=4;|"},
        {{"-n", "256"}, "3=256;|"},
        {{"-n1"}, "3=1;|"},
        {{"--flag", "-f"}, "1=;1=;|"},
        {{"--float", "0.25"}, "4=0.25;|"},
        /* units worked out by hand: 5 GB = 5e9 bytes, 64 KiB = 65536 */
        {{"--size", "5GB", "--size=64KiB"}, "5=5000000000;5=65536;|"},
        /* 10 min = 600 s; 2 d = 172800 s */
        {{"--time", "10min", "--time=2d"}, "6=600;6=172800;|"},
        /* 8 Gbps = 1e9 bytes/s; 122 MBps = 1.22e8 */
        {{"--rate", "8Gbps", "--rate=122MBps"}, "7=1000000000;7=122000000;|"},
        /* a value that begins with - is a value */
        {{"--text", "-x", "--path", "-"}, "2=-x;8=-;|"},
        {{"--text=a=b"}, "2=a=b;|"},
        {{"--one", "b", "--list", "svg,png"}, "10=b;11=svg,png;|"},
        /* arguments among the options, in their order; - is one; -- ends the options */
        {{"x", "--flag", "y", "-", "--", "--int", "z"}, "1=;|x,y,-,--int,z"},
    };
    char got[512];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ck_assert_int_eq(parse(cases[i].args, got, sizeof got), 0);
        ck_assert_msg(!strcmp(got, cases[i].want), "case %zu: got %s, want %s", i, got,
                      cases[i].want);
        char *e = cli_slurp(err_path);
        ck_assert_msg(!e[0], "case %zu: %s", i, e);
        free(e);
    }
}
END_TEST

START_TEST(parser_refuses_with_one_line_naming_the_option)
{
    static const struct {
        const char *args[4];
        const char *line;
    } cases[] = {
        {{"--int", "0"}, "dtsim test: --int 0: expected an integer in [1, 256]"},
        {{"--int=257"}, "dtsim test: --int 257: expected an integer in [1, 256]"},
        {{"-n", "2.5"}, "dtsim test: --int 2.5: expected an integer in [1, 256]"},
        {{"--float", "1.5"}, "dtsim test: --float 1.5: expected a number in [0, 1]"},
        {{"--float", "nan"}, "dtsim test: --float nan: expected a number in [0, 1]"},
        {{"--size", "5XB"}, "dtsim test: --size 5XB: "},
        {{"--time", "soon"}, "dtsim test: --time soon: expected a time (10min, 6.2s, 54d)"},
        {{"--time", "-1s"}, "dtsim test: --time -1s: expected a time"},
        {{"--rate=fast"}, "dtsim test: --rate fast: "},
        {{"--one", "d"}, "dtsim test: --one d: expected one of a,b,c"},
        {{"--list", "png,gif"}, "dtsim test: --list png,gif: expected a comma list of png,svg,pdf"},
        {{"--list", "png,"}, "dtsim test: --list png,: expected a comma list of png,svg,pdf"},
        {{"--path="}, "dtsim test: --path needs a path (an empty one names nothing)"},
        {{"--dir", ""}, "dtsim test: --dir needs a folder (an empty one names nothing)"},
        {{"--flag=yes"}, "dtsim test: --flag takes no value (\"--flag=yes\")"},
        {{"--int"}, "dtsim test: --int needs an integer (N)"},
        {{"x", "--rate"}, "dtsim test: --rate needs a bandwidth (BW)"},
        {{"--nope"}, "dtsim test: unknown option \"--nope\""},
        {{"--nope=3"}, "dtsim test: unknown option \"--nope\""},
        {{"-x"}, "dtsim test: unknown option \"-x\""},
        /* no abbreviations: --in is not --int */
        {{"--in", "3"}, "dtsim test: unknown option \"--in\""},
    };
    char got[512];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ck_assert_msg(parse(cases[i].args, got, sizeof got) == CLI_EXIT_USAGE, "case %zu", i);
        char *e = cli_slurp(err_path);
        ck_assert_msg(!strncmp(e, cases[i].line, strlen(cases[i].line)) &&
                          strstr(e, " (see dtsim test --help)\n") && strchr(e, '\n')[1] == '\0',
                      "case %zu: got \"%s\", want one line \"%s...\"", i, e, cases[i].line);
        free(e);
        char *o = cli_slurp(out_path);
        ck_assert_msg(!o[0], "case %zu printed %s", i, o);
        free(o);
    }
}
END_TEST

/* --help prints the table: the usage with its second form under the first, the about, the
 * headings, a label column as wide as the longest label, the help wrapped under it, -h last,
 * the footer; nothing on stderr, status 0. */
START_TEST(help_is_printed_from_the_table)
{
    char got[512];
    ck_assert_int_eq(parse((const char *[]){"--int", "3", "--help", NULL}, got, sizeof got),
                     CLI_EXIT_OK);
    char *o = cli_slurp(out_path);
    const char *want_head = "usage: dtsim test [OPTIONS] ARG ...\n"
                            "       dtsim test --other\n"
                            "\n"
                            "A command of the test.\n"
                            "\n"
                            "switches:\n"
                            "  -f, --flag    a switch\n"
                            "values:\n"
                            "  --text T      any word\n"
                            "  -n, --int N   an integer from 1 to 256\n";
    ck_assert_msg(!strncmp(o, want_head, strlen(want_head)), "%s", o);
    /* "--list LIST" and "-h, --help" are the longest labels (11 and 10): column 2 + 11 + 3 */
    const char *list = strstr(o, "  --list LIST   png, svg, pdf or several:");
    ck_assert_msg(list, "%s", o);
    int lines = 0;
    for (const char *l = strchr(list, '\n') + 1;
         !strncmp(l, "                ", 16) && l[16] != ' '; l = strchr(l, '\n') + 1)
        lines++;
    ck_assert_int_ge(lines, 1); /* the help wrapped onto more lines, under the first */
    for (const char *l = o; *l; l = strchr(l, '\n') + 1)
        ck_assert_msg(strcspn(l, "\n") <= 80, "a line past 80 columns: %.*s", (int)strcspn(l, "\n"),
                      l);
    const char *tail = "  -h, --help    this text\n\nThe end.\n";
    ck_assert_msg(strlen(o) > strlen(tail) && !strcmp(o + strlen(o) - strlen(tail), tail), "%s", o);
    free(o);
}
END_TEST

/* ---- the built dtsim: its table, its help, its completion, its man page --------------- */

static int dtsim(const char *const *args)
{
    return cli_run(DTSIM_BINARY, out_path, err_path, args);
}

/* What the completion script offers for `dtsim typed` (cursor at its end), a line each. */
static char *complete(const char *typed)
{
    static const char *const body =
        "source \"$1\" || exit 3\n"
        "COMP_LINE=$2 COMP_POINT=${#2} COMP_WORDBREAKS=$' \\t\\n\"\\'><=;|&(:'\n"
        "COMP_WORDS=($2) COMP_CWORD=${#COMP_WORDS[@]}\n"
        "_dtsim\n"
        "printf '%s\\n' \"${COMPREPLY[@]}\"\n";
    char line[512];
    snprintf(line, sizeof line, "%s %s", DTSIM_BINARY, typed);
    ck_assert_int_eq(
        cli_run("/bin/bash", out_path, err_path,
                (const char *[]){"-c", body, "bash", DTSIM_SOURCE "/sim/cli/dtsim-completion.bash",
                                 line, NULL}),
        0);
    return cli_slurp(out_path);
}

/* Is word a line of text? */
static int has_line(const char *text, const char *word)
{
    size_t n = strlen(word);
    for (const char *l = text; *l; l = strchr(l, '\n') + 1) {
        if (!strncmp(l, word, n) && l[n] == '\n')
            return 1;
        if (!strchr(l, '\n'))
            break;
    }
    return 0;
}

/* The long options a help lists in its option lists: "  --name", "  -x, --name" lines. */
static int help_options(const char *help, char names[][48], int max)
{
    int n = 0;
    for (const char *l = help; *l && n < max; l = strchr(l, '\n') + 1) {
        const char *p = l;
        if (!strncmp(p, "  -", 3) && p[3] != '-' && p[4] == ',')
            p += 6;
        else if (!strncmp(p, "  --", 4))
            p += 2;
        else
            p = NULL;
        if (p) {
            size_t len = strspn(p + 2, "abcdefghijklmnopqrstuvwxyz0123456789-") + 2;
            snprintf(names[n++], sizeof names[0], "%.*s", (int)len, p);
        }
        if (!strchr(l, '\n'))
            break;
    }
    return n;
}

/* Every command of the table completes after `dtsim `, and after `dtsim CMD [SUB] --` every
 * option that CMD's help lists, and nothing its help does not name. */
START_TEST(completion_offers_every_command_and_option_of_the_table)
{
    ck_assert_int_eq(dtsim((const char *[]){"__complete", "names", NULL}), 0);
    char *names = cli_slurp(out_path);
    ck_assert_int_eq(dtsim((const char *[]){"--help", NULL}), 0);
    char *usage = cli_slurp(out_path);
    char *commands = complete("");
    int n_commands = 0;
    for (char *name = names; *name; name = strchr(name, '\n') + 1) {
        char cmd[64];
        snprintf(cmd, sizeof cmd, "%.*s", (int)strcspn(name, "\n"), name);
        n_commands++;
        /* its first word completes; dtsim --help lists the whole name */
        char first[64];
        snprintf(first, sizeof first, "%.*s", (int)strcspn(cmd, " "), cmd);
        ck_assert_msg(has_line(commands, first), "dtsim <TAB> lacks %s: %s", first, commands);
        char listed[80];
        snprintf(listed, sizeof listed, "\n  %s", cmd);
        ck_assert_msg(strstr(usage, listed), "dtsim --help lacks %s", cmd);
        /* its options: those of its help, each completing, and no other */
        char typed[96];
        snprintf(typed, sizeof typed, "%s --", cmd);
        char *offered = complete(typed);
        const char *args[4] = {first, NULL, NULL, NULL};
        int a = 1;
        if (cmd[strlen(first)])
            args[a++] = cmd + strlen(first) + 1;
        args[a] = "--help";
        ck_assert_int_eq(dtsim(args), 0);
        char *help = cli_slurp(out_path);
        char opts[128][48];
        int n = help_options(help, opts, 128);
        ck_assert_msg(has_line(offered, "--help"), "dtsim %s --<TAB>: %s", cmd, offered);
        for (int i = 0; i < n; i++)
            ck_assert_msg(has_line(offered, opts[i]), "dtsim %s --<TAB> lacks %s: %s", cmd, opts[i],
                          offered);
        for (char *o = offered; *o; o = strchr(o, '\n') + 1) {
            char word[64];
            snprintf(word, sizeof word, "%.*s", (int)strcspn(o, "\n"), o);
            ck_assert_msg(strstr(help, word),
                          "dtsim %s --<TAB> offers %s, which its help does "
                          "not name",
                          cmd, word);
        }
        free(help);
        free(offered);
        /* a sub-command completes after its group */
        if (cmd[strlen(first)]) {
            snprintf(typed, sizeof typed, "%s ", first);
            char *subs = complete(typed);
            ck_assert_msg(has_line(subs, cmd + strlen(first) + 1), "dtsim %s <TAB>: %s", first,
                          subs);
            free(subs);
        }
    }
    ck_assert_int_ge(n_commands, 20);
    free(commands);
    free(usage);
    free(names);
}
END_TEST

/* An option's value completes by its kind in the table: the words of a choice (a comma
 * list's after its last comma), files after a path, nothing after a number or a time. */
START_TEST(completion_completes_values_by_their_kind)
{
    static const struct {
        const char *typed, *want;
    } cases[] = {
        {"plot --format ", "png\nsvg\npdf\n"},
        {"plot --format png,s", "png,svg\n"},
        /* bash replaces what follows the = (a word break): the answer is that part */
        {"plot --format=s", "svg\n"},
        {"run x.ini -j ", "\n"},
        {"goodput --mtbf ", "\n"},
        {"goodput --devices 8 --ckpt-size ", "\n"},
        /* the value of an option is no argument: --db's path is skipped, show's RUN comes */
        {"runs --wi", "--wide\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *got = complete(cases[i].typed);
        ck_assert_msg(!strcmp(got, cases[i].want), "dtsim %s<TAB>: got \"%s\", want \"%s\"",
                      cases[i].typed, got, cases[i].want);
        free(got);
    }
    /* a path's value: the files there */
    char typed[512], file[400];
    snprintf(file, sizeof file, "%s/results-x.db", dir);
    cli_write_file(file, "");
    snprintf(typed, sizeof typed, "export --csv --out %s/results-", dir);
    char *got = complete(typed);
    snprintf(file, sizeof file, "%s/results-x.db\n", dir);
    ck_assert_str_eq(got, file);
    free(got);
}
END_TEST

/* The man page's commands section: a heading per command of the table with its help. */
START_TEST(man_page_has_every_command_of_the_table)
{
    if (!DTSIM_MAN_PAGE) {
        fprintf(stderr, "cli_table: help2man was not found at configure time: no man page\n");
        return;
    }
    char *man = cli_slurp(DTSIM_BUILD "/dtsim-commands.h2m");
    ck_assert_int_eq(dtsim((const char *[]){"__complete", "names", NULL}), 0);
    char *names = cli_slurp(out_path);
    for (char *name = names; *name; name = strchr(name, '\n') + 1) {
        char heading[96];
        snprintf(heading, sizeof heading, ".SS \"dtsim %.*s\"\n.nf\nusage: dtsim %.*s",
                 (int)strcspn(name, "\n"), name, (int)strcspn(name, "\n"), name);
        ck_assert_msg(strstr(man, heading), "the man page lacks %s", heading);
    }
    /* an option of a table, as roff writes it */
    ck_assert_msg(strstr(man, "\\-\\-timeline\\-run ID"), "no --timeline-run in the man page");
    free(names);
    free(man);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("cli_table");
    TCase *tc = tcase_create("table");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, parser_reads_each_kind_of_value);
    tcase_add_test(tc, parser_refuses_with_one_line_naming_the_option);
    tcase_add_test(tc, help_is_printed_from_the_table);
    tcase_add_test(tc, completion_offers_every_command_and_option_of_the_table);
    tcase_add_test(tc, completion_completes_values_by_their_kind);
    tcase_add_test(tc, man_page_has_every_command_of_the_table);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
