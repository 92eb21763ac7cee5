/*
 * resp.h - the Redis protocol (RESP2), just enough for the queue sources:
 * a reply parser that turns one reply into a flat array of nodes, a command
 * encoder, and the reading of an XINFO GROUPS reply. The Redis source polls
 * LLEN, XLEN and XINFO GROUPS with its own client on the event loop, since
 * Debian 12's hiredis (0.14) has no TLS; this module is the part of that
 * client that never sees a socket.
 *
 * Pure: no I/O, no allocation, no globals. Any thread may call any function;
 * a parsed reply is read-only and may be shared while its buffer lives.
 */
#ifndef KGS_SOURCES_RESP_H
#define KGS_SOURCES_RESP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    RESP_SIMPLE,  /* +OK */
    RESP_ERROR,   /* -ERR ... */
    RESP_INTEGER, /* :42 */
    RESP_BULK,    /* $3 abc */
    RESP_NULL,    /* $-1 and *-1 */
    RESP_ARRAY,   /* *2 ... */
} resp_type_t;

/* One value of a reply. All fields are public and read-only. */
typedef struct {
    resp_type_t type;
    int64_t integer; /* RESP_INTEGER; 0 otherwise */
    const char *str; /* SIMPLE, ERROR, BULK: borrowed from the parsed buffer, not NUL-terminated;
                        NULL otherwise */
    size_t len;      /* bytes at str */
    uint32_t count;  /* RESP_ARRAY: number of elements */
    uint32_t next;   /* index of the node after this node's whole subtree (pre-order layout) */
} resp_node_t;

#define RESP_MAX_NODES 4096 /* a reply with more nodes is refused */
#define RESP_MAX_DEPTH 8    /* arrays nested deeper than this are refused */
/* The largest bulk string, and the longest simple string or error line. */
#define RESP_MAX_BULK (16u * 1024 * 1024)

/* A parsed reply: nodes[0] is the root, nodes[0..count) hold the whole tree
 * in pre-order. About 160 KiB: embed it in a heap object rather than putting
 * it on the stack. Caller-owned storage; nothing to release. */
typedef struct {
    uint32_t count;
    resp_node_t nodes[RESP_MAX_NODES];
} resp_reply_t;

#define RESP_COMPLETE 0
#define RESP_INCOMPLETE 1

/*
 * Parses one RESP2 reply at buf[0..len) into *out. Stateless: after
 * RESP_INCOMPLETE, call again from the start of the reply with more bytes
 * (each call rescans what it is given). buf may be NULL when len is 0.
 *
 * Returns RESP_COMPLETE with *consumed = the reply's length (bytes after it
 * are left alone: they belong to the next reply); RESP_INCOMPLETE; or
 * KGS_EINVAL with a message in err (NULL allowed) giving the byte offset (never the bytes):
 * an unknown type byte (RESP3 types included), a bad length or integer (a
 * '+' sign, empty, non-digits, leading zeros, "-0", out of range), a line
 * not ended by CRLF, a bulk length other than -1 or 0..RESP_MAX_BULK, a
 * simple string or error longer than RESP_MAX_BULK, more than RESP_MAX_NODES
 * nodes (refused as soon as an array's count makes that certain), or arrays
 * nested deeper than RESP_MAX_DEPTH. Any strict prefix of a valid reply is
 * RESP_INCOMPLETE. On anything but RESP_COMPLETE, *consumed and out->count
 * are 0.
 *
 * A null bulk ($-1) and a null array (*-1) are RESP_NULL. Node strings are
 * borrowed from buf: valid while buf is, and unchanged.
 */
int resp_parse(const char *buf, size_t len, resp_reply_t *out, size_t *consumed, char *err,
               size_t errlen);

/*
 * Whether a reply that arrives in pieces is whole yet, without reading any
 * byte twice: the scan keeps where it stopped (the first value not yet
 * whole) and the open arrays, and the next call goes on from there. buf
 * holds the reply's bytes so far from its first byte (it may move between
 * calls; it may only grow, never change). Returns what resp_parse() would
 * return for buf[0..len): RESP_COMPLETE with *consumed (the reply's length;
 * then resp_parse() gives its nodes), RESP_INCOMPLETE (*consumed 0: call
 * again with more bytes), or KGS_EINVAL with the same message. Once whole,
 * later calls return RESP_COMPLETE again. An incomplete value costs its
 * header only (a bulk string's data is measured, not searched; a simple
 * string or error line is searched only where new bytes arrived).
 *
 * Caller-owned storage, fields private; resp_scan_init() starts a reply.
 */
typedef struct {
    size_t _pos;
    uint32_t _n, _depth;
    uint64_t _owed;
    uint32_t _node[RESP_MAX_DEPTH];
    uint32_t _unstarted[RESP_MAX_DEPTH];
    size_t _line_from; /* a line at _pos: where its bytes are still unsearched */
    bool _done;
} resp_scan_t;

void resp_scan_init(resp_scan_t *st);
int resp_scan(resp_scan_t *st, const char *buf, size_t len, size_t *consumed, char *err,
              size_t errlen);

/* The i-th element of array node `array` (borrowed from r), found by walking
 * `next`; NULL when `array` is not an array or i >= array->count. The result
 * is borrowed from r. */
const resp_node_t *resp_child(const resp_reply_t *r, const resp_node_t *array, uint32_t i);

/*
 * Encodes a command as a RESP array of bulk strings into buf[0..cap) (no NUL
 * is written). argv[i] holds argvlen[i] bytes, which may be anything (NULs,
 * CRLF); argvlen may be NULL when every argv[i] is a NUL-terminated string.
 * All pointers are borrowed for the call; buf may be NULL when cap is 0.
 *
 * Returns the full length of the encoding (like snprintf; SIZE_MAX if it
 * does not fit in a size_t). The encoding is written only when it fits
 * (return value <= cap); otherwise buf is left untouched.
 */
size_t resp_encode(char *buf, size_t cap, unsigned argc, const char *const *argv,
                   const size_t *argvlen);

/*
 * Reads an XINFO GROUPS reply (r, borrowed for the call): an array of
 * groups, each a flat array of field name / value pairs as Redis sends them
 * in RESP2 (Redis 7: name, consumers, pending, last-delivered-id,
 * entries-read, lag; Redis 6 has no entries-read or lag). For the group
 * named `group` (NUL-terminated), sets *pending, and *lag with *lag_known =
 * true; when the lag field is nil (Redis cannot tell, for instance after
 * XDEL) or absent (Redis < 7), *lag = 0 and *lag_known = false. Out
 * parameters are written only on success.
 *
 * Returns 0; KGS_ENOTFOUND with a message naming `group` and how many
 * groups the stream has (not their names: they are the server's data);
 * KGS_EINVAL when the reply is a RESP error (described with
 * resp_error_describe(), e.g. "ERR no such key" for a missing stream, never
 * quoted), or when it does not
 * have that shape: not an array of arrays of pairs with string field names
 * and a string "name", or the group's "pending" not a non-negative integer,
 * or its "lag" neither nil nor a non-negative integer (the message says
 * what was expected).
 */
int resp_xinfo_group(const resp_reply_t *r, const char *group, int64_t *pending, int64_t *lag,
                     bool *lag_known, char *err, size_t errlen);

/*
 * Messages never quote a reply: its bytes are whatever the host at the
 * configured address sends, and the message goes back to whoever named
 * that address. These say what a reply is in our own words (static
 * strings):
 *   resp_type_describe: "an integer", "a bulk string", "nil", ...;
 *   resp_error_describe: an error reply n by its code, with a word on what
 *     it usually means ("WRONGPASS (the user name or password is wrong)",
 *     "NOAUTH (...)", "ERR unknown command", ...); a code we do not know is
 *     "an error reply (the server's text is not shown)". n is borrowed;
 *     anything but an error node gives "not an error reply".
 */
const char *resp_type_describe(resp_type_t t);
const char *resp_error_describe(const resp_node_t *n);

#endif
