/*
 * podres_client.h - polls the kubelet's pod-resources API
 * (/v1.PodResourcesLister/List on its unix socket) from the event loop and
 * hands each answer over as a pod map. Loop thread only; never blocks.
 *
 * Cadence: the first List goes out on the next loop turn after start, then
 * one every interval on a fixed grid (start + k * interval, as the sampler
 * does); a tick that finds the previous call still in flight is skipped.
 * Each call carries a 2 s deadline (PODRES_CALL_TIMEOUT_NS).
 *
 * Failures: every failed poll calls on_error once. The last map the caller
 * received is then stale (podres_client_stale() says so until the next
 * success). A failure that means the kubelet is gone or wedged (connect
 * failed, UNAVAILABLE, DEADLINE_EXCEEDED, INTERNAL: a kubelet restart
 * recreates the socket file) closes the connection, and the next attempt
 * re-dials after a backoff of 0.5 s doubling to 10 s, reset by a success.
 * Other failures (an undecodable answer, UNIMPLEMENTED, PERMISSION_DENIED,
 * ...) keep the connection and retry at the next tick.
 *
 * Callback contract: callbacks run from the loop, never from inside
 * podres_client_start() or podres_client_free(). Either may call
 * podres_client_free() on this client.
 */
#ifndef KGS_KUBE_PODRES_CLIENT_H
#define KGS_KUBE_PODRES_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kube/pod_map.h"
#include "core/clock.h"
#include "core/log.h"
#include "net/loop.h"

#define PODRES_DEFAULT_SOCKET "/var/lib/kubelet/pod-resources/kubelet.sock"
#define PODRES_DEFAULT_INTERVAL_NS (1 * NS_PER_SEC) /* the sampler's default */
#define PODRES_MIN_INTERVAL_NS (100 * NS_PER_MS)    /* the sampler's minimum */
#define PODRES_CALL_TIMEOUT_NS (2 * NS_PER_SEC)
#define PODRES_BACKOFF_MIN_NS (500 * NS_PER_MS)
#define PODRES_BACKOFF_MAX_NS (10 * NS_PER_SEC)

typedef struct podres_client podres_client_t;

typedef struct {
    /* A successful poll: `map` is taken (the callee frees it with
     * pod_map_free). Called after every successful List, changed or not;
     * compare with pod_map_equal() to act on changes only. */
    void (*on_map)(void *user_data, pod_map_t *map);
    /* A failed poll: `msg` is borrowed for the call, shaped
     * "list pod resources <socket>: <reason>". May be NULL. */
    void (*on_error)(void *user_data, const char *msg);
    void *user_data;
} podres_client_callbacks_t;

/*
 * Starts polling `socket_path` (an absolute path; copied) every
 * `interval_ns` (0 = PODRES_DEFAULT_INTERVAL_NS). `loop` and `log` (may be
 * NULL) are borrowed until podres_client_free. A socket that does not exist
 * yet is not an error here: it is reported through on_error and retried.
 * Returns 0 with the client in *out (returned: free with
 * podres_client_free), KGS_EINVAL (NULL argument, on_map NULL, a relative
 * or over-long path, interval below PODRES_MIN_INTERVAL_NS) or KGS_ENOMEM,
 * with a message; no callback runs then.
 */
int podres_client_start(loop_t *loop, const char *socket_path, uint64_t interval_ns,
                        const logger_t *log, const podres_client_callbacks_t *cbs,
                        podres_client_t **out, char *err, size_t errlen);

/* True from a failed poll until the next successful one (false before the
 * first poll has finished). */
bool podres_client_stale(const podres_client_t *c);

/* Loop time of the last successful poll; 0 before the first one. */
mono_ns_t podres_client_last_ok(const podres_client_t *c);

/* Failed polls since the last success. */
uint64_t podres_client_failures(const podres_client_t *c);

/* Stops polling, closes the connection (a call in flight is abandoned; no
 * callback follows) and frees the client. NULL does nothing. Safe from
 * inside this client's callbacks. */
void podres_client_free(podres_client_t *c);

#endif
