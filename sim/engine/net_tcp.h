/* The tcp network model (cluster.network_model = tcp) on SimGrid: CM02's sharing, each
 * message charged TCP's window (tcp_model.h) through SimGrid 3.32's per-communication factor
 * callbacks. The one C++ file of dtsim (net_tcp.cc); this is its C face. */
#ifndef DTSIM_ENGINE_NET_TCP_H
#define DTSIM_ENGINE_NET_TCP_H

#include "scenario.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Installs the model for this simulation, after the platform is loaded and before any
 * communication: the factor callbacks, the window cap as SimGrid's TCP-gamma, every
 * connection closed. */
void sim_net_tcp_install(const sim_tcp_t *tcp);

#ifdef __cplusplus
}
#endif

#endif
