/*
 * flags.h - command-line flag matching shared by gpu-metrics and the server.
 */
#ifndef KGS_CORE_FLAGS_H
#define KGS_CORE_FLAGS_H

#include <stdbool.h>

/* True when arg is "--name", "-name", "--name=v" or "-name=v" (the forms
 * Go's flag package accepts, so scripts written for the Go tools work).
 * *inline_value gets the text after '=' (borrowed from arg) or NULL. */
bool flag_match(const char *arg, const char *name, const char **inline_value);

#endif
