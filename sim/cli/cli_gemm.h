/* `dtsim calibrate --gemm` (cli_gemm.c), which `dtsim calibrate` hands over to. */
#ifndef DTSIM_CLI_GEMM_H
#define DTSIM_CLI_GEMM_H

/** The backend's GEMM curve as a device profile's [gemm] section. */
int cli_calibrate_gemm(int argc, char **argv);

#endif
