/*
 * matrix_cli.h - the `scalesim matrix` command line (matrix.h does the work).
 */
#ifndef SCALESIM_MATRIX_CLI_H
#define SCALESIM_MATRIX_CLI_H

#include <stdio.h>

/* The subcommand's usage text. */
void matrix_cli_usage(FILE *f);

/* Runs `scalesim matrix` with argv[0..argc) (the words after "matrix").
 * Returns the exit status: 0, 1 when a run fails (a trace that does not
 * load, a write), 2 on a usage error. */
int matrix_cli(int argc, char **argv);

#endif
