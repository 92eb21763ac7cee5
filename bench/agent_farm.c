/*
 * agent_farm - many simulated agents in one process, for the aggregator
 * benchmark: each is a real grpc_server + agent_service on loopback
 * speaking the Agent/Watch protocol, publishing a fresh NodeSnapshot of G
 * GPUs every interval, with P pods (namespace "bench", pod "w-<agent>-<k>")
 * holding its GPUs round-robin.
 *
 *   agent_farm AGENTS GPUS PODS_PER_AGENT INTERVAL_MS ADDR_FILE BUMP_FILE [dra]
 *              [first=N] [listen=ADDR]
 *
 * first=N numbers this farm's agents N .. N+AGENTS-1 (default 0), so that
 * several farm processes, each under its own descriptor limit, simulate one
 * fleet (bench/aggregator-load.py starts one per 2,500 agents); the agents'
 * node names, GPU UUIDs and pods follow the number. listen=ADDR is the
 * numeric address the agents listen on (default 127.0.0.1; ::1 writes
 * "[::1]:PORT", 4 bytes shorter an entry, for lists near the kernel's
 * 128 KiB limit on one argument).
 *
 * With "dra", every odd-numbered agent reports its pods' GPUs as DRA
 * devices (driver gpu.nvidia.com, pool farm-node-<agent>, device gpu-<g>)
 * instead of device-plugin UUIDs, as a kubelet does for resource claims;
 * the aggregator must resolve them through ResourceSlices (the benchmark
 * serves one per such node).
 *
 * Writes the agents' IP:PORT list (comma separated) to ADDR_FILE once all
 * listen (written to ADDR_FILE.part, then renamed). When BUMP_FILE exists
 * at a tick, agent 0's GPUs read 100 % from that tick on, and the farm
 * holding agent 0 (first=0) prints
 * {"bump_publish_unix_ms": T} once — the moment the changed snapshot left,
 * for freshness measurements; the others never read BUMP_FILE. Runs until
 * SIGTERM/SIGINT.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "cluster/agent_service.h"
#include "cluster/node_pods.h"
#include "net/grpc_server.h"
#include "net/loop.h"

typedef struct farm farm_t;

typedef struct {
    farm_t *farm;
    unsigned id;
    grpc_server_t *server;
    agent_service_t *svc;
    snapshot_t *snap;
    node_pods_t *pods;
} fake_agent_t;

struct farm {
    loop_t *loop;
    fake_agent_t *agents;
    unsigned n, gpus, pods_per_agent, first;
    bool dra; /* odd agents report DRA devices */
    uint64_t interval_ns, seq;
    const char *bump_file;
    bool bumped, bump_reported;
    loop_timer_t tick;
};

static snapshot_t *agent_snapshot(void *ud) {
    return snapshot_ref(((fake_agent_t *)ud)->snap);
}

static const node_pods_t *agent_pods(void *ud) {
    return ((fake_agent_t *)ud)->pods;
}

static void on_request(grpc_call_t *call, const char *path, const uint8_t *msg, size_t len,
                       void *ud) {
    fake_agent_t *a = ud;
    if (agent_service_handles(path))
        agent_service_on_request(call, path, msg, len, a->svc);
    else
        grpc_call_finish(call, 12, "agent_farm serves Agent/Watch only");
}

static void on_call_gone(grpc_call_t *call, void *cud, void *ud) {
    fake_agent_t *a = ud;
    agent_service_on_call_gone(call, cud, a->svc);
}

static void build_snapshot(farm_t *f, fake_agent_t *a, mono_ns_t now) {
    snapshot_t *s = snapshot_new(f->gpus, 0);
    if (!s)
        return;
    s->seq = f->seq;
    s->taken_mono = now;
    s->taken_wall_ms = clock_wall_ms();
    snprintf(s->node_name, sizeof s->node_name, "farm-node-%u", a->id);
    snprintf(s->driver_version, sizeof s->driver_version, "560.35.03");
    for (unsigned g = 0; g < f->gpus; g++) {
        gpu_record_t *r = &s->gpus[g];
        r->index = g;
        snprintf(r->uuid, sizeof r->uuid, "GPU-farm-%05u-%02u", a->id, g);
        snprintf(r->name, sizeof r->name, "NVIDIA H100 80GB HBM3");
        r->gpu_util_pct = (a->id == 0 && f->bumped) ? 100 : (a->id * 7 + g * 13 + f->seq) % 60;
        r->mem_util_pct = 10;
        r->memory_used_bytes = 40ull << 30;
        r->memory_total_bytes = 80ull << 30;
        r->valid = (1u << GPU_F_GPU_UTIL) | (1u << GPU_F_MEM_UTIL) | (1u << GPU_F_MEM_USED) |
                   (1u << GPU_F_MEM_TOTAL);
    }
    snapshot_unref(a->snap);
    a->snap = s;
}

static void build_pods(farm_t *f, fake_agent_t *a) {
    node_pod_entry_t entries[64];
    char names[64][32];
    char uuids[64][40];
    const char *ids[64];
    node_pod_dra_t dra[64];
    char pool[32], devs[64][16];
    unsigned n = f->gpus < 64 ? f->gpus : 64;
    bool use_dra = f->dra && a->id % 2 == 1;
    snprintf(pool, sizeof pool, "farm-node-%u", a->id);
    for (unsigned g = 0; g < n; g++) {
        unsigned k = f->pods_per_agent ? g % f->pods_per_agent : 0;
        snprintf(names[g], sizeof names[g], "w-%u-%u", a->id, k);
        snprintf(uuids[g], sizeof uuids[g], "GPU-farm-%05u-%02u", a->id, g);
        ids[g] = uuids[g];
        if (use_dra) {
            snprintf(devs[g], sizeof devs[g], "gpu-%u", g);
            dra[g] = (node_pod_dra_t){"gpu.nvidia.com", pool, devs[g], "", "", false};
            entries[g] = (node_pod_entry_t){"bench", names[g], "main", NULL, 0, &dra[g], 1, 1};
        } else {
            entries[g] = (node_pod_entry_t){"bench", names[g], "main", &ids[g], 1, NULL, 0, 0};
        }
    }
    char err[256];
    if (node_pods_new(entries, f->pods_per_agent ? n : 0, &a->pods, err, sizeof err) != 0)
        fprintf(stderr, "agent_farm: %s\n", err);
}

static void on_tick(loop_t *loop, loop_timer_t *t, void *ud) {
    farm_t *f = ud;
    f->seq++;
    if (f->first == 0 && !f->bumped && access(f->bump_file, F_OK) == 0)
        f->bumped = true;
    mono_ns_t now = loop_now(loop);
    int64_t first_publish_ms = clock_wall_ms(); /* agent 0 goes out first */
    for (unsigned i = 0; i < f->n; i++) {
        build_snapshot(f, &f->agents[i], now);
        agent_service_publish(f->agents[i].svc);
    }
    if (f->bumped && !f->bump_reported) {
        printf("{\"bump_publish_unix_ms\": %lld}\n", (long long)first_publish_ms);
        fflush(stdout);
        f->bump_reported = true;
    }
    loop_timer_start(loop, t, clock_add_sat(now, f->interval_ns));
}

static void on_signal(loop_t *loop, int fd, uint32_t events, void *ud) {
    (void)events;
    (void)ud;
    struct signalfd_siginfo si;
    while (read(fd, &si, sizeof si) > 0) {
    }
    loop_stop(loop);
}

static void usage(void) {
    fprintf(stderr, "usage: agent_farm AGENTS GPUS PODS_PER_AGENT INTERVAL_MS ADDR_FILE "
                    "BUMP_FILE [dra] [first=N] [listen=ADDR]\n");
}

/* Descriptors besides the agents': stdio, the epoll, the signalfd, the
 * address file while it is written, and a margin. */
#define FARM_FD_MARGIN 16u

int main(int argc, char **argv) {
    if (argc < 7) {
        usage();
        return 2;
    }
    farm_t f = {.n = (unsigned)atoi(argv[1]),
                .gpus = (unsigned)atoi(argv[2]),
                .pods_per_agent = (unsigned)atoi(argv[3]),
                .interval_ns = (uint64_t)atoi(argv[4]) * NS_PER_MS,
                .bump_file = argv[6]};
    const char *listen_address = "127.0.0.1";
    for (int i = 7; i < argc; i++) {
        char *end = NULL;
        if (strcmp(argv[i], "dra") == 0) {
            f.dra = true;
        } else if (strncmp(argv[i], "first=", 6) == 0) {
            unsigned long v = strtoul(argv[i] + 6, &end, 10);
            if (end == argv[i] + 6 || *end || v > 99999) {
                fprintf(stderr, "agent_farm: invalid \"%s\": first= takes 0..99999\n", argv[i]);
                return 2;
            }
            f.first = (unsigned)v;
        } else if (strncmp(argv[i], "listen=", 7) == 0 && argv[i][7]) {
            listen_address = argv[i] + 7;
        } else {
            fprintf(stderr,
                    "agent_farm: unknown argument \"%s\": expected dra, first=N or "
                    "listen=ADDR\n",
                    argv[i]);
            usage();
            return 2;
        }
    }
    if (f.n == 0 || f.gpus == 0 || f.gpus > 64 || f.interval_ns == 0 || f.first + f.n > 100000) {
        fprintf(stderr, "agent_farm: AGENTS >= 1, 1 <= GPUS <= 64, INTERVAL_MS >= 1, "
                        "first + AGENTS <= 100000 (the UUIDs' five digits)\n");
        return 2;
    }
    /* Two descriptors per agent (listener + the aggregator's connection):
     * refuse at start, naming the limit, rather than die half-way. */
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    uint64_t need = 2ull * f.n + FARM_FD_MARGIN;
    if (rl.rlim_max != RLIM_INFINITY && need > (uint64_t)rl.rlim_max) {
        fprintf(stderr,
                "agent_farm: %u agents need %llu descriptors (2 an agent + %u) and the hard "
                "RLIMIT_NOFILE is %llu: run at most %llu agents a process (several farms "
                "with first=N) or raise the hard limit\n",
                f.n, (unsigned long long)need, FARM_FD_MARGIN, (unsigned long long)rl.rlim_max,
                (unsigned long long)((rl.rlim_max - FARM_FD_MARGIN) / 2));
        return 1;
    }

    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    signal(SIGPIPE, SIG_IGN);

    char err[512];
    if (loop_new(&f.loop, err, sizeof err) != 0) {
        fprintf(stderr, "agent_farm: %s\n", err);
        return 1;
    }
    int sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    loop_io_t *sio = loop_io_add(f.loop, sfd, EPOLLIN, on_signal, &f);
    f.agents = calloc(f.n, sizeof *f.agents);
    /* Written aside and renamed once complete: a reader never sees part of it. */
    char part[4096];
    snprintf(part, sizeof part, "%s.part", argv[5]);
    FILE *out = fopen(part, "w");
    if (!f.agents || !out) {
        fprintf(stderr, "agent_farm: cannot start\n");
        return 1;
    }
    for (unsigned i = 0; i < f.n; i++) {
        fake_agent_t *a = &f.agents[i];
        a->farm = &f;
        a->id = f.first + i;
        build_snapshot(&f, a, loop_now(f.loop));
        build_pods(&f, a);
        agent_service_opts_t ao = {.loop = f.loop,
                                   .current_snapshot = agent_snapshot,
                                   .current_pods = agent_pods,
                                   .user_data = a,
                                   .sample_interval_ms = (uint32_t)(f.interval_ns / NS_PER_MS)};
        grpc_server_opts_t go = {.listen_address = listen_address, .max_connections = 16};
        grpc_server_handlers_t gh = {.on_request = on_request, .on_call_gone = on_call_gone};
        if (agent_service_new(&ao, &a->svc) != 0 ||
            grpc_server_start(f.loop, &go, &gh, a, &a->server, err, sizeof err) != 0) {
            fprintf(stderr, "agent_farm: agent %u: %s\n", f.first + i, err);
            return 1;
        }
        bool v6 = strchr(listen_address, ':') != NULL;
        fprintf(out, "%s%s%s%s:%u", i ? "," : "", v6 ? "[" : "", listen_address, v6 ? "]" : "",
                grpc_server_port(a->server));
    }
    if (fclose(out) != 0 || rename(part, argv[5]) != 0) {
        fprintf(stderr, "agent_farm: cannot write %s: %s\n", argv[5], strerror(errno));
        return 1;
    }
    loop_timer_init(&f.tick, on_tick, &f);
    loop_timer_start(f.loop, &f.tick, clock_add_sat(loop_now(f.loop), f.interval_ns));
    loop_run(f.loop);

    for (unsigned i = 0; i < f.n; i++) {
        grpc_server_free(f.agents[i].server);
        agent_service_free(f.agents[i].svc);
        snapshot_unref(f.agents[i].snap);
        node_pods_free(f.agents[i].pods);
    }
    free(f.agents);
    loop_timer_stop(f.loop, &f.tick);
    loop_io_remove(f.loop, sio);
    close(sfd);
    loop_free(f.loop);
    return 0;
}
