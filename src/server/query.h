/*
 * query.h - the `keda-gpu-scaler query` subcommand: a KEDA-shaped client.
 */
#ifndef KGS_SERVER_QUERY_H
#define KGS_SERVER_QUERY_H

/* argv[0] is "query". Returns the process exit status: 0 ok, 1 an RPC or
 * connection failed, 2 usage. */
int query_main(int argc, char **argv);

extern const char query_usage_text[];

#endif
