/* What `dtsim goodput` (cli_goodput.c) shares with the other commands. */
#ifndef DTSIM_CLI_GOODPUT_H
#define DTSIM_CLI_GOODPUT_H

/* A time of at least 0 in scenario units (ns to h) or days (54d): 0, or -1. */
int cli_parse_duration(const char *text, double *out);

#endif
