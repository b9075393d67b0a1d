/* The tcp network model's parameters fitted to the testbed's real TCP (cli_calibrate_tcp.c):
 * `dtsim validate --calibrate`'s measurement. */
#ifndef DTSIM_CLI_CALIBRATE_TCP_H
#define DTSIM_CLI_CALIBRATE_TCP_H

#include <stdio.h>

/** Brings up a 2-host testbed (testbed_script, links of bandwidth and latency as dtsim writes
 * them, "100Mbps" and "10ms"; congestion NULL or "": the machine's default), times tcpxfer's
 * transfers between its hosts, fits tcp_initial_window, tcp_wmem_max and tcp_handshake to them
 * and prints the table and the fitted [cluster] lines on out. Needs root. Returns 0, 1 when a
 * measurement failed (or a signal stopped it), 2 on bad input (one line on stderr); the
 * testbed is down and tcpxfer's server ended on every return. */
int cli_calibrate_tcp(const char *testbed_script, const char *tcpxfer_path, const char *bandwidth,
                      const char *latency, const char *congestion, FILE *out);

#endif
