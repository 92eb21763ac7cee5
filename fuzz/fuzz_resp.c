/*
 * fuzz_resp.c - resp_parse(), resp_child(), resp_xinfo_group() and
 * resp_encode() on arbitrary bytes (the whole input is offered as one
 * reply, possibly followed by more bytes).
 *
 * Checked:
 *   - incomplete or failed: *consumed and count are 0, and a failure is
 *     KGS_EINVAL with a non-empty message;
 *   - success: consumed <= size, 1 <= count <= RESP_MAX_NODES, every node's
 *     next lies in (index, count], leaves end at index + 1, walking an
 *     array's children with next (and resp_child) ends exactly at its next,
 *     nesting stays within RESP_MAX_DEPTH, and strings lie inside the reply;
 *   - the reply alone, copied to an exact-size block, parses to the same
 *     nodes, and its strict prefixes are all incomplete (all of them for
 *     short replies, a sample for long ones);
 *   - resp_xinfo_group() on the reply returns 0, KGS_ENOTFOUND or
 *     KGS_EINVAL with a message, and sane values on success;
 *   - resp_encode() of the input cut into arguments parses back to an array
 *     of exactly those bulk strings, and never writes past its capacity;
 *   - resp_scan() fed the input in growing prefixes (steps the input's
 *     first bytes choose), each a fresh copy (a receive buffer that moves),
 *     answers what resp_parse() answers on the same prefix: incomplete until
 *     the reply is whole, then complete with the same length, or the same
 *     error with the same message.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "sources/resp.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static resp_reply_t reply, again; /* 160 KiB each: keep them off the stack */

/* Parses buf[0..n) into r and expects RESP_INCOMPLETE. */
static void expect_incomplete(const char *buf, size_t n, resp_reply_t *r) {
    char err[256];
    size_t used = 99;
    int rc = resp_parse(buf, n, r, &used, err, sizeof err);
    FUZZ_CHECK(rc == RESP_INCOMPLETE);
    FUZZ_CHECK(used == 0 && r->count == 0);
}

/* Structural invariants of a parsed reply whose bytes are base[0..len). */
static void check_tree(const resp_reply_t *r, const char *base, size_t len) {
    uint32_t n = r->count;
    FUZZ_CHECK(n >= 1 && n <= RESP_MAX_NODES);
    FUZZ_CHECK(r->nodes[0].next == n);
    uint32_t ends[RESP_MAX_DEPTH + 1]; /* next of each open array on the path */
    unsigned depth = 0;
    for (uint32_t i = 0; i < n; i++) {
        const resp_node_t *nd = &r->nodes[i];
        while (depth > 0 && ends[depth - 1] == i)
            depth--;
        FUZZ_CHECK(nd->next > i && nd->next <= n);
        FUZZ_CHECK(depth == 0 || nd->next <= ends[depth - 1]);
        switch (nd->type) {
        case RESP_SIMPLE:
        case RESP_ERROR:
        case RESP_BULK:
            FUZZ_CHECK(nd->str != NULL && nd->str >= base && nd->len <= len);
            FUZZ_CHECK((size_t)(nd->str - base) <= len - nd->len);
            if (nd->type != RESP_BULK)
                FUZZ_CHECK(memchr(nd->str, '\r', nd->len) == NULL &&
                           memchr(nd->str, '\n', nd->len) == NULL);
            else
                FUZZ_CHECK(nd->len <= RESP_MAX_BULK);
            FUZZ_CHECK(nd->next == i + 1);
            break;
        case RESP_INTEGER:
        case RESP_NULL:
            FUZZ_CHECK(nd->str == NULL && nd->len == 0);
            FUZZ_CHECK(nd->next == i + 1);
            break;
        case RESP_ARRAY: {
            uint32_t j = i + 1;
            for (uint32_t k = 0; k < nd->count; k++) {
                FUZZ_CHECK(j < nd->next);
                FUZZ_CHECK(resp_child(r, nd, k) == &r->nodes[j]);
                j = r->nodes[j].next;
            }
            FUZZ_CHECK(j == nd->next);
            FUZZ_CHECK(resp_child(r, nd, nd->count) == NULL);
            depth++;
            FUZZ_CHECK(depth <= RESP_MAX_DEPTH);
            ends[depth - 1] = nd->next;
            if (nd->count == 0)
                depth--;
            break;
        }
        default:
            FUZZ_CHECK(!"unknown node type");
        }
        if (nd->type != RESP_ARRAY)
            FUZZ_CHECK(resp_child(r, nd, 0) == NULL);
    }
}

/* The same tree over a different copy of the same bytes. */
static void check_same(const resp_reply_t *a, const char *abase, const resp_reply_t *b,
                       const char *bbase) {
    FUZZ_CHECK(a->count == b->count);
    for (uint32_t i = 0; i < a->count; i++) {
        const resp_node_t *x = &a->nodes[i], *y = &b->nodes[i];
        FUZZ_CHECK(x->type == y->type && x->integer == y->integer && x->len == y->len &&
                   x->count == y->count && x->next == y->next);
        FUZZ_CHECK((x->str == NULL) == (y->str == NULL));
        if (x->str)
            FUZZ_CHECK(x->str - abase == y->str - bbase);
    }
}

static void check_xinfo(const resp_reply_t *r, const char *group) {
    char err[1024];
    int64_t pending = -5, lag = -5;
    bool known = true;
    err[0] = 'x';
    int rc = resp_xinfo_group(r, group, &pending, &lag, &known, err, sizeof err);
    if (rc == 0) {
        FUZZ_CHECK(err[0] == '\0');
        FUZZ_CHECK(pending >= 0 && lag >= 0);
        FUZZ_CHECK(known || lag == 0);
    } else {
        FUZZ_CHECK(rc == KGS_ENOTFOUND || rc == KGS_EINVAL);
        FUZZ_CHECK(err[0] != '\0' && strlen(err) < sizeof err);
        FUZZ_CHECK(pending == -5 && lag == -5 && known);
    }
}

/* Cuts data at 0xff bytes into at most 16 arguments, encodes them and parses them back. */
static void check_encode(const uint8_t *data, size_t size) {
    enum { MAXARGS = 16 };
    const char *argv[MAXARGS];
    size_t lens[MAXARGS];
    unsigned argc = 0;
    size_t start = 0;
    for (size_t i = 0; i <= size && argc < MAXARGS; i++) {
        if (i == size || data[i] == 0xff) {
            argv[argc] = (const char *)data + start;
            lens[argc] = i - start;
            argc++;
            start = i + 1;
        }
    }
    size_t need = resp_encode(NULL, 0, argc, argv, lens);
    FUZZ_CHECK(need >= 4);
    char *buf = malloc(need + 1);
    FUZZ_CHECK(buf != NULL);
    buf[need] = 'Z';
    /* One byte short writes nothing. */
    memset(buf, 'Z', need);
    FUZZ_CHECK(resp_encode(buf, need - 1, argc, argv, lens) == need);
    for (size_t i = 0; i < need; i++)
        FUZZ_CHECK(buf[i] == 'Z');
    FUZZ_CHECK(resp_encode(buf, need, argc, argv, lens) == need);
    FUZZ_CHECK(buf[need] == 'Z');
    size_t used = 0;
    char err[256];
    FUZZ_CHECK(resp_parse(buf, need, &again, &used, err, sizeof err) == RESP_COMPLETE);
    FUZZ_CHECK(used == need);
    FUZZ_CHECK(again.nodes[0].type == RESP_ARRAY && again.nodes[0].count == argc);
    FUZZ_CHECK(again.count == argc + 1);
    for (unsigned i = 0; i < argc; i++) {
        const resp_node_t *a = resp_child(&again, &again.nodes[0], i);
        FUZZ_CHECK(a->type == RESP_BULK && a->len == lens[i]);
        FUZZ_CHECK(lens[i] == 0 || memcmp(a->str, argv[i], lens[i]) == 0);
    }
    free(buf);
}

/* resp_scan over growing prefixes against resp_parse on each. */
static void check_scan(const uint8_t *data, size_t size) {
    resp_scan_t st;
    resp_scan_init(&st);
    size_t k = 0, step = 0;
    int rc = RESP_INCOMPLETE;
    while (rc == RESP_INCOMPLETE && k < size) {
        k += 1 + (size_t)data[step++ % (size < 8 ? size : 8)] % 32;
        if (k > size)
            k = size;
        char *copy = malloc(k);
        FUZZ_CHECK(copy != NULL);
        memcpy(copy, data, k);
        char e1[512] = "", e2[512] = "";
        size_t u1 = 7, u2 = 7;
        rc = resp_scan(&st, copy, k, &u1, e1, sizeof e1);
        int whole = resp_parse(copy, k, &again, &u2, e2, sizeof e2);
        free(copy);
        FUZZ_CHECK(rc == whole && u1 == u2);
        if (rc == KGS_EINVAL)
            FUZZ_CHECK(strcmp(e1, e2) == 0);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *buf = (const char *)data;
    if (size <= 65536)
        check_scan(data, size);
    char err[512];
    size_t used = 99;
    err[0] = 'x';
    int rc = resp_parse(buf, size, &reply, &used, err, sizeof err);
    if (rc != RESP_COMPLETE) {
        FUZZ_CHECK(rc == RESP_INCOMPLETE || rc == KGS_EINVAL);
        FUZZ_CHECK(used == 0 && reply.count == 0);
        if (rc == KGS_EINVAL)
            FUZZ_CHECK(err[0] != '\0' && strlen(err) < sizeof err);
        if (size <= 4096)
            check_encode(data, size);
        return 0;
    }
    FUZZ_CHECK(err[0] == '\0');
    FUZZ_CHECK(used >= 3 && used <= size);
    check_tree(&reply, buf, used);

    /* The reply alone, in a block of its exact size. */
    char *copy = malloc(used);
    FUZZ_CHECK(copy != NULL);
    memcpy(copy, buf, used);
    size_t used2 = 0;
    FUZZ_CHECK(resp_parse(copy, used, &again, &used2, NULL, 0) == RESP_COMPLETE);
    FUZZ_CHECK(used2 == used);
    check_same(&reply, buf, &again, copy);

    /* Strict prefixes, each in an exact-size block so an over-read is caught. */
    if (used <= 512) {
        for (size_t k = 0; k < used; k++) {
            char *pre = malloc(k ? k : 1);
            FUZZ_CHECK(pre != NULL);
            memcpy(pre, buf, k);
            expect_incomplete(k ? pre : NULL, k, &again);
            free(pre);
        }
    } else {
        size_t picks[] = {0, 1, used / 3, used / 2, used - 2, used - 1};
        for (size_t p = 0; p < sizeof picks / sizeof picks[0]; p++)
            expect_incomplete(copy, picks[p], &again);
    }
    free(copy);

    /* XINFO GROUPS reading: a fixed name, the empty name, and the first group's name. */
    check_xinfo(&reply, "workers");
    check_xinfo(&reply, "");
    const resp_node_t *root = &reply.nodes[0];
    if (root->type == RESP_ARRAY && root->count > 0) {
        const resp_node_t *g = resp_child(&reply, root, 0);
        if (g->type == RESP_ARRAY && g->count >= 2) {
            const resp_node_t *v = resp_child(&reply, g, 1);
            if ((v->type == RESP_BULK || v->type == RESP_SIMPLE) && v->len < 64 &&
                !memchr(v->str, '\0', v->len)) {
                char name[64];
                memcpy(name, v->str, v->len);
                name[v->len] = '\0';
                check_xinfo(&reply, name);
            }
        }
    }
    if (size <= 4096)
        check_encode(data, size);
    return 0;
}
