/* What `dtsim goodput` (cli_goodput.c) shares with the other commands. */
#ifndef DTSIM_CLI_GOODPUT_H
#define DTSIM_CLI_GOODPUT_H

#include "cli_util.h" /* cli_parse_duration, which dtsim plan's --mtbf and --restart take */

#endif
