/*
 * resp.c - RESP2 reply parser, command encoder and XINFO GROUPS reader.
 *
 * The parser is stateless, like net/http_resp.c's head parser: the
 * replies we ask for (LLEN, XLEN, XINFO GROUPS) are small, so rescanning a
 * partial reply on the next read costs less than keeping a resumable state.
 * It walks the reply once, iteratively, with an explicit stack of open
 * arrays (RESP_MAX_DEPTH frames), and writes each value as a node in
 * pre-order. A node's `next` is filled in when its subtree closes.
 *
 * Every check looks only at bytes that are present, and every refusal is
 * one that no further bytes could undo (a bad byte, a number already out of
 * range, a declared count that cannot fit), so a strict prefix of a valid
 * reply is always RESP_INCOMPLETE. Declared lengths are compared with what
 * is present before any byte of the data is touched: a "$16777216" with
 * three bytes behind it is incomplete, not a read past the buffer.
 *
 * Numbers are read as Redis writes them (ll2string): an optional '-', then
 * digits without leading zeros. Redis's own string2ll() refuses "+1", "01"
 * and "-0" too, and the strict form bounds a number line: a 20th digit is
 * always out of range.
 *
 * Node budget: each array frame remembers how many of its elements have not
 * started yet, and every one of those needs at least one node, so an array
 * whose count would take the reply past RESP_MAX_NODES is refused when its
 * header arrives instead of after its elements.
 */
#include "sources/resp.h"

#include <stdio.h>
#include <string.h>

#include "core/err.h"

#define QBUF KGS_QUOTE_BUF
#define OP "parse RESP reply"

/* ---- numbers and lines ----------------------------------------------------------------------- */

/*
 * Reads a decimal number followed by CRLF at p[0..avail). `what` names it
 * for messages ("integer", "bulk length", "array count"); `at` is p's offset
 * in the reply. Returns RESP_COMPLETE with *v and *used (CRLF included),
 * RESP_INCOMPLETE, or KGS_EINVAL.
 */
static int read_number(const char *p, size_t avail, size_t at, const char *what, int64_t *v,
                       size_t *used, char *err, size_t errlen) {
    size_t i = 0;
    bool neg = false;
    if (avail > 0 && p[0] == '-') {
        neg = true;
        i = 1;
    }
    int64_t acc = 0;
    size_t digits = 0;
    for (;; i++) {
        if (i == avail)
            return RESP_INCOMPLETE;
        char c = p[i];
        if (c == '\r')
            break;
        if (c < '0' || c > '9')
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              OP ": offset %zu: %s is not a number (byte %zu of it)", at, what,
                              i + 1);
        if (digits == 1 && acc == 0)
            return kgs_seterr(err, errlen, KGS_EINVAL, OP ": offset %zu: %s has a leading zero", at,
                              what);
        int d = c - '0';
        if (neg ? acc < (INT64_MIN + d) / 10 : acc > (INT64_MAX - d) / 10)
            return kgs_seterr(err, errlen, KGS_EINVAL, OP ": offset %zu: %s is out of range", at,
                              what);
        acc = neg ? acc * 10 - d : acc * 10 + d;
        digits++;
    }
    if (digits == 0 || (neg && acc == 0))
        return kgs_seterr(err, errlen, KGS_EINVAL, OP ": offset %zu: %s is not a number", at, what);
    if (i + 1 == avail)
        return RESP_INCOMPLETE;
    if (p[i + 1] != '\n')
        return kgs_seterr(err, errlen, KGS_EINVAL, OP ": offset %zu: %s not ended by CRLF", at + i,
                          what);
    *v = acc;
    *used = i + 2;
    return RESP_COMPLETE;
}

/* Finds the CRLF ending a simple string or error line at p[0..avail).
 * Returns RESP_COMPLETE with the text length in *n and *used (CRLF
 * included), RESP_INCOMPLETE, or KGS_EINVAL (a CR or LF inside the line,
 * or a line over RESP_MAX_BULK). */
static int read_line(const char *p, size_t avail, size_t at, size_t *n, size_t *used, char *err,
                     size_t errlen) {
    if (avail == 0)
        return RESP_INCOMPLETE;
    size_t scan = avail < (size_t)RESP_MAX_BULK + 1 ? avail : (size_t)RESP_MAX_BULK + 1;
    const char *cr = memchr(p, '\r', scan);
    const char *lf = memchr(p, '\n', cr ? (size_t)(cr - p) : scan);
    if (lf)
        return kgs_seterr(err, errlen, KGS_EINVAL, OP ": offset %zu: line feed inside a line",
                          at + (size_t)(lf - p));
    if (!cr) {
        if (avail > RESP_MAX_BULK)
            return kgs_seterr(err, errlen, KGS_EINVAL, OP ": offset %zu: line longer than %u bytes",
                              at, RESP_MAX_BULK);
        return RESP_INCOMPLETE;
    }
    size_t len = (size_t)(cr - p);
    if (len + 1 == avail)
        return RESP_INCOMPLETE;
    if (p[len + 1] != '\n')
        return kgs_seterr(err, errlen, KGS_EINVAL, OP ": offset %zu: line not ended by CRLF",
                          at + len);
    *n = len;
    *used = len + 2;
    return RESP_COMPLETE;
}

/* ---- parser ---------------------------------------------------------------------------------- */

/* Parses the value starting at buf[pos] into *node (everything but `next`).
 * Returns RESP_COMPLETE with *used, RESP_INCOMPLETE, or KGS_EINVAL. */
static int read_value(const char *buf, size_t len, size_t pos, resp_node_t *node, size_t *used,
                      char *err, size_t errlen) {
    if (pos == len)
        return RESP_INCOMPLETE;
    const char *p = buf + pos + 1;
    size_t avail = len - pos - 1, n = 0, u = 0;
    int64_t v = 0;
    int rc;
    memset(node, 0, sizeof *node);
    switch (buf[pos]) {
    case '+':
    case '-':
        rc = read_line(p, avail, pos + 1, &n, &u, err, errlen);
        if (rc != RESP_COMPLETE)
            return rc;
        node->type = buf[pos] == '+' ? RESP_SIMPLE : RESP_ERROR;
        node->str = p;
        node->len = n;
        break;
    case ':':
        rc = read_number(p, avail, pos + 1, "integer", &v, &u, err, errlen);
        if (rc != RESP_COMPLETE)
            return rc;
        node->type = RESP_INTEGER;
        node->integer = v;
        break;
    case '$':
        rc = read_number(p, avail, pos + 1, "bulk length", &v, &u, err, errlen);
        if (rc != RESP_COMPLETE)
            return rc;
        if (v == -1) {
            node->type = RESP_NULL;
            break;
        }
        if (v < 0 || v > (int64_t)RESP_MAX_BULK)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              OP ": offset %zu: bulk length %lld is not -1 or 0..%u", pos + 1,
                              (long long)v, RESP_MAX_BULK);
        /* Check the declared length against what is present before touching the data:
         * avail - u is what follows the length line; the data needs v + 2 of it. */
        if (avail - u < (size_t)v + 2)
            return RESP_INCOMPLETE;
        if (p[u + (size_t)v] != '\r' || p[u + (size_t)v + 1] != '\n')
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              OP ": offset %zu: bulk string of %lld bytes not followed by CRLF",
                              pos + 1 + u + (size_t)v, (long long)v);
        node->type = RESP_BULK;
        node->str = p + u;
        node->len = (size_t)v;
        u += (size_t)v + 2;
        break;
    case '*':
        rc = read_number(p, avail, pos + 1, "array count", &v, &u, err, errlen);
        if (rc != RESP_COMPLETE)
            return rc;
        if (v == -1) {
            node->type = RESP_NULL;
            break;
        }
        if (v < 0 || v >= RESP_MAX_NODES)
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              OP ": offset %zu: array count %lld is not -1 or 0..%d", pos + 1,
                              (long long)v, RESP_MAX_NODES - 1);
        node->type = RESP_ARRAY;
        node->count = (uint32_t)v;
        break;
    default:
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          OP ": offset %zu: not a RESP2 type byte (+ - : $ *): is this a Redis "
                             "server?",
                          pos);
    }
    *used = 1 + u;
    return RESP_COMPLETE;
}

/*
 * The walk shared by resp_parse() (a fresh state, every node written to
 * out) and resp_scan() (a state kept between calls, out NULL: only the
 * shape is checked, in one small node). A value that is not whole yet
 * stops the walk at its first byte, and the next call starts again there:
 * every value before it is never read again.
 */
static int walk(resp_scan_t *st, const char *buf, size_t len, resp_reply_t *out, size_t *consumed,
                char *err, size_t errlen) {
    resp_node_t scratch;
    for (;;) {
        /* A simple string or error line not ended yet: only its new bytes
         * are looked at (a line dripped 1 KiB at a time is not searched
         * from its start after every read). When they hold no CR or LF and
         * the line is within bounds, read_value would say incomplete too;
         * otherwise it runs and decides, message included. */
        if (!out && st->_pos < len && (buf[st->_pos] == '+' || buf[st->_pos] == '-')) {
            size_t from = st->_line_from > st->_pos + 1 ? st->_line_from : st->_pos + 1;
            if (len - st->_pos - 1 <= RESP_MAX_BULK && !memchr(buf + from, '\r', len - from) &&
                !memchr(buf + from, '\n', len - from)) {
                st->_line_from = len;
                return RESP_INCOMPLETE;
            }
        }
        /* Unreachable while n + owed <= RESP_MAX_NODES holds; kept as the last guard. */
        if (st->_n == RESP_MAX_NODES)
            return kgs_seterr(err, errlen, KGS_EINVAL, OP ": offset %zu: more than %d values",
                              st->_pos, RESP_MAX_NODES);
        resp_node_t *node = out ? &out->nodes[st->_n] : &scratch;
        size_t used = 0;
        int rc = read_value(buf, len, st->_pos, node, &used, err, errlen);
        if (rc != RESP_COMPLETE)
            return rc;
        uint32_t depth = st->_depth;
        if (depth > 0) {
            st->_unstarted[depth - 1]--;
            st->_owed--;
        }
        uint32_t idx = st->_n++;
        if (node->type == RESP_ARRAY) {
            if (depth == RESP_MAX_DEPTH)
                return kgs_seterr(err, errlen, KGS_EINVAL,
                                  OP ": offset %zu: arrays nested deeper than %d", st->_pos,
                                  RESP_MAX_DEPTH);
            if (st->_n + st->_owed + node->count > RESP_MAX_NODES)
                return kgs_seterr(err, errlen, KGS_EINVAL,
                                  OP ": offset %zu: array of %u elements takes the reply over "
                                     "%d values",
                                  st->_pos, node->count, RESP_MAX_NODES);
        }
        st->_pos += used;
        if (node->type == RESP_ARRAY && node->count > 0) {
            st->_node[depth] = idx;
            st->_unstarted[depth] = node->count;
            st->_depth++;
            st->_owed += node->count;
            continue;
        }
        /* A leaf (or empty array) is done; so is every open array whose last element it was. */
        node->next = st->_n;
        while (st->_depth > 0 && st->_unstarted[st->_depth - 1] == 0) {
            st->_depth--;
            if (out)
                out->nodes[st->_node[st->_depth]].next = st->_n;
        }
        if (st->_depth == 0)
            break;
    }
    if (out)
        out->count = st->_n;
    *consumed = st->_pos;
    return RESP_COMPLETE;
}

int resp_parse(const char *buf, size_t len, resp_reply_t *out, size_t *consumed, char *err,
               size_t errlen) {
    resp_scan_t st;
    resp_scan_init(&st);
    *consumed = 0;
    out->count = 0;
    if (err && errlen)
        err[0] = '\0';
    int rc = walk(&st, buf, len, out, consumed, err, errlen);
    if (rc != RESP_COMPLETE) {
        out->count = 0;
        *consumed = 0;
    }
    return rc;
}

void resp_scan_init(resp_scan_t *st) {
    memset(st, 0, sizeof *st);
}

int resp_scan(resp_scan_t *st, const char *buf, size_t len, size_t *consumed, char *err,
              size_t errlen) {
    *consumed = 0;
    if (err && errlen)
        err[0] = '\0';
    if (st->_done) {
        *consumed = st->_pos;
        return RESP_COMPLETE;
    }
    int rc = walk(st, buf, len, NULL, consumed, err, errlen);
    if (rc == RESP_COMPLETE)
        st->_done = true;
    else
        *consumed = 0;
    return rc;
}

const resp_node_t *resp_child(const resp_reply_t *r, const resp_node_t *array, uint32_t i) {
    if (array->type != RESP_ARRAY || i >= array->count)
        return NULL;
    uint32_t j = (uint32_t)(array - r->nodes) + 1;
    while (i-- > 0)
        j = r->nodes[j].next;
    return &r->nodes[j];
}

/* ---- encoder --------------------------------------------------------------------------------- */

/* Digits of v in decimal. */
static size_t dec_len(size_t v) {
    size_t d = 1;
    while (v >= 10) {
        v /= 10;
        d++;
    }
    return d;
}

/* Writes `prefix`, v in decimal and CRLF at buf + o (room checked by the
 * caller); returns the new offset. Not snprintf: that wants room for a NUL. */
static size_t put_header(char *buf, size_t o, char prefix, size_t v) {
    size_t d = dec_len(v);
    buf[o++] = prefix;
    for (size_t k = d; k > 0; k--) {
        buf[o + k - 1] = (char)('0' + v % 10);
        v /= 10;
    }
    o += d;
    buf[o++] = '\r';
    buf[o++] = '\n';
    return o;
}

/* total += add, saturating at SIZE_MAX. */
static size_t add_sat(size_t total, size_t add) {
    return total > SIZE_MAX - add ? SIZE_MAX : total + add;
}

size_t resp_encode(char *buf, size_t cap, unsigned argc, const char *const *argv,
                   const size_t *argvlen) {
    /* "*<argc>\r\n", then "$<len>\r\n<bytes>\r\n" for each argument. */
    size_t total = 1 + dec_len(argc) + 2;
    for (unsigned i = 0; i < argc; i++) {
        size_t alen = argvlen ? argvlen[i] : strlen(argv[i]);
        total = add_sat(total, 1 + dec_len(alen) + 2);
        total = add_sat(total, alen);
        total = add_sat(total, 2);
    }
    if (total > cap)
        return total;
    size_t o = put_header(buf, 0, '*', argc);
    for (unsigned i = 0; i < argc; i++) {
        size_t alen = argvlen ? argvlen[i] : strlen(argv[i]);
        o = put_header(buf, o, '$', alen);
        if (alen)
            memcpy(buf + o, argv[i], alen);
        o += alen;
        buf[o++] = '\r';
        buf[o++] = '\n';
    }
    return total;
}

/* ---- XINFO GROUPS ---------------------------------------------------------------------------- */

#define XOP "XINFO GROUPS"

static bool is_string(const resp_node_t *n) {
    return n->type == RESP_BULK || n->type == RESP_SIMPLE;
}

static bool str_eq(const resp_node_t *n, const char *s) {
    size_t sl = strlen(s);
    return n->len == sl && (sl == 0 || memcmp(n->str, s, sl) == 0);
}

/* The value node of field `name` in group array g (already checked to be
 * pairs with string names), or NULL when absent. The first one wins. */
static const resp_node_t *field(const resp_reply_t *r, const resp_node_t *g, const char *name) {
    for (uint32_t k = 0; k + 1 < g->count; k += 2) {
        const resp_node_t *key = resp_child(r, g, k);
        if (str_eq(key, name))
            return &r->nodes[key->next];
    }
    return NULL;
}

const char *resp_type_describe(resp_type_t t) {
    switch (t) {
    case RESP_SIMPLE:
        return "a simple string";
    case RESP_ERROR:
        return "an error";
    case RESP_INTEGER:
        return "an integer";
    case RESP_BULK:
        return "a bulk string";
    case RESP_NULL:
        return "nil";
    case RESP_ARRAY:
        return "an array";
    }
    return "an unknown type";
}

/*
 * Error replies known by their first word (the error code Redis puts first)
 * or, for ERR, by the start of the text. The description is ours: the
 * server's text is whatever the host at redisAddress sends, and a message
 * goes back to whoever named that address.
 */
static const struct {
    const char *start;
    const char *says;
} known_errors[] = {
    {"WRONGPASS", "WRONGPASS (the user name or password is wrong)"},
    {"NOAUTH", "NOAUTH (the server needs a password: redisPasswordFromEnv)"},
    {"NOPERM", "NOPERM (the user may not run this command on this key)"},
    {"WRONGTYPE", "WRONGTYPE (the key holds another type: a list for redisListName, a stream "
                  "for redisStream)"},
    {"NOGROUP", "NOGROUP (no such key or consumer group)"},
    {"LOADING", "LOADING (the server is loading its data set)"},
    {"BUSY", "BUSY (the server is running a script)"},
    {"MASTERDOWN", "MASTERDOWN (the replica has lost its primary)"},
    {"MISCONF", "MISCONF (the server cannot persist its data)"},
    {"OOM", "OOM (the server is out of memory)"},
    {"READONLY", "READONLY (a read-only replica)"},
    {"CLUSTERDOWN", "CLUSTERDOWN (the cluster is down)"},
    {"MOVED", "MOVED (the key is on another cluster node: Redis Cluster is not supported)"},
    {"ASK", "ASK (the key is moving between cluster nodes: Redis Cluster is not supported)"},
    {"CROSSSLOT", "CROSSSLOT (Redis Cluster is not supported)"},
    {"ERR unknown command", "ERR unknown command"},
    {"ERR AUTH", "ERR on AUTH (does the server have a password set?)"},
    {"ERR Client sent AUTH", "ERR on AUTH (the server has no password set)"},
    {"ERR invalid password", "ERR invalid password"},
    {"ERR DB index is out of range", "ERR DB index is out of range (redisDB)"},
    {"ERR no such key", "ERR no such key"},
    {"ERR max number of clients reached", "ERR max number of clients reached"},
    {"ERR", "ERR (the server's text is not shown)"},
};

static bool is_word_byte(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

const char *resp_error_describe(const resp_node_t *n) {
    if (!n || n->type != RESP_ERROR)
        return "not an error reply";
    for (size_t k = 0; k < sizeof known_errors / sizeof *known_errors; k++) {
        size_t l = strlen(known_errors[k].start);
        if (n->len >= l && memcmp(n->str, known_errors[k].start, l) == 0 &&
            (n->len == l || !is_word_byte(n->str[l])))
            return known_errors[k].says;
    }
    return "an error reply (the server's text is not shown)";
}

/* What a field value is, for "expected ..., got %s": "none" for an absent field. */
static const char *describe(const resp_node_t *n) {
    if (!n)
        return "none";
    if (n->type == RESP_INTEGER && n->integer < 0)
        return "a negative integer";
    return resp_type_describe(n->type);
}

/* Checks that group i (node g) is an array of name/value pairs with string
 * names and a string "name"; sets *name. */
static int check_group(const resp_reply_t *r, const resp_node_t *g, uint32_t i,
                       const resp_node_t **name, char *err, size_t errlen) {
    if (g->type != RESP_ARRAY || g->count % 2 != 0)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          XOP ": group %u: expected an array of field/value pairs, got %s%s", i,
                          resp_type_describe(g->type),
                          g->type == RESP_ARRAY ? " of odd length" : "");
    for (uint32_t k = 0; k < g->count; k += 2) {
        const resp_node_t *key = resp_child(r, g, k);
        if (!is_string(key))
            return kgs_seterr(err, errlen, KGS_EINVAL,
                              XOP ": group %u: field %u: expected a string field name, got %s", i,
                              k / 2, resp_type_describe(key->type));
    }
    const resp_node_t *nm = field(r, g, "name");
    if (!nm || !is_string(nm))
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          XOP ": group %u: expected a string \"name\" field, got %s", i,
                          describe(nm));
    *name = nm;
    return 0;
}

/* Builds the "not found" message: the group (ours: from the trigger) and
 * how many the stream has. Their names are the server's data and are not
 * shown (see the top of the file). */
static int not_found(const resp_node_t *root, const char *group, char *err, size_t errlen) {
    char gq[QBUF];
    kgs_quote(gq, sizeof gq, group, strlen(group));
    if (root->count == 0)
        return kgs_seterr(err, errlen, KGS_ENOTFOUND,
                          XOP ": no group %s: the stream has no consumer groups", gq);
    return kgs_seterr(err, errlen, KGS_ENOTFOUND,
                      XOP ": no group %s: the stream has %u other consumer group%s (names not "
                          "shown)",
                      gq, root->count, root->count == 1 ? "" : "s");
}

int resp_xinfo_group(const resp_reply_t *r, const char *group, int64_t *pending, int64_t *lag,
                     bool *lag_known, char *err, size_t errlen) {
    if (err && errlen)
        err[0] = '\0';
    if (r->count == 0)
        return kgs_seterr(err, errlen, KGS_EINVAL, XOP ": empty reply");
    const resp_node_t *root = &r->nodes[0];
    if (root->type == RESP_ERROR)
        return kgs_seterr(err, errlen, KGS_EINVAL, XOP ": Redis answered %s",
                          resp_error_describe(root));
    if (root->type != RESP_ARRAY)
        return kgs_seterr(err, errlen, KGS_EINVAL, XOP ": expected an array of groups, got %s",
                          resp_type_describe(root->type));
    const resp_node_t *found = NULL;
    for (uint32_t i = 0; i < root->count; i++) {
        const resp_node_t *g = resp_child(r, root, i), *nm = NULL;
        int rc = check_group(r, g, i, &nm, err, errlen);
        if (rc != 0)
            return rc;
        if (!found && str_eq(nm, group))
            found = g;
    }
    if (!found)
        return not_found(root, group, err, errlen);

    char gq[QBUF];
    kgs_quote(gq, sizeof gq, group, strlen(group));
    const resp_node_t *pend = field(r, found, "pending");
    if (!pend || pend->type != RESP_INTEGER || pend->integer < 0)
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          XOP ": group %s: expected a non-negative integer \"pending\", got %s", gq,
                          describe(pend));
    const resp_node_t *lg = field(r, found, "lag");
    if (lg && lg->type != RESP_NULL && (lg->type != RESP_INTEGER || lg->integer < 0))
        return kgs_seterr(err, errlen, KGS_EINVAL,
                          XOP ": group %s: expected nil or a non-negative integer \"lag\", got %s",
                          gq, describe(lg));
    *pending = pend->integer;
    *lag_known = lg && lg->type == RESP_INTEGER;
    *lag = *lag_known ? lg->integer : 0;
    return 0;
}
