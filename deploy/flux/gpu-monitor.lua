--
-- gpu-monitor.lua - a Flux job shell drop-in that samples GPU metrics for
-- the whole life of a job with gpu-metrics (keda-gpu-scaler).
--
-- What it does
-- ------------
-- When a job is run with `-o gpu-monitor`, every job shell (one per node)
-- starts `gpu-metrics` next to the job's tasks and stops it when the tasks
-- are done. It uses flux-core's builtin `coprocess` shell plugin
-- (flux-framework/flux-core#7723, designed in #7680 after #7679): the shell
-- launches the helper at shell start, sends it SIGTERM when the tasks exit,
-- and SIGKILL after the `coprocess-kill-timeout` shell option. gpu-metrics
-- exits 0 on SIGTERM, so a normal job end is not reported as an error.
--
-- Output is JSON Lines: one JSON object per line, one line per sample
-- (`--format jsonl`). Every line carries an `environment` block with
-- `orchestrator: "flux"`, the job id, and the `node` (the host name of the
-- shell's node), plus `task_rank` when the shell exports FLUX_TASK_RANK to
-- its helpers (null otherwise). With the default output template all shells
-- write into one file on the leader shell, line by line, so lines from
-- different nodes are interleaved but each stays whole; split them with
-- e.g. `jq -c 'select(.environment.node == "node12")'`.
--
-- (The Go version of this plugin ran `--format json`, which prints
-- multi-line, indented documents into a file named .jsonl and left the node
-- name empty; both are fixed here.)
--
-- Requirements
-- ------------
--  * flux-core with the builtin `coprocess` shell plugin (the release that
--    contains flux-core#7723 or later). Older flux-core will fail to load
--    this file with an error about `coprocess` being undefined.
--  * `gpu-metrics` in the PATH of the job's environment on every node (or
--    change `command` below to an absolute path).
--
-- Installing
-- ----------
-- Copy this file into the job shell's Lua drop-in directory on every node,
-- where the system initrc loads `*.lua` files (see flux-shell-initrc(5);
-- the directory is `$sysconfdir/flux/shell/lua.d`, /etc/flux/shell/lua.d
-- for a standard install):
--
--   install -m 0644 gpu-monitor.lua /etc/flux/shell/lua.d/gpu-monitor.lua
--
-- Nothing else is needed: the definition below only takes effect for jobs
-- that ask for it. Users without root can load it for their own jobs with
-- `-o userrc=/path/to/gpu-monitor.lua` instead.
--
-- Enabling it for a job
-- ---------------------
--   flux run -o gpu-monitor -N2 -g1 ./train.sh
--   flux batch -o gpu-monitor -N4 -g4 job.sh
--
-- Fields can be overridden per job with the usual shell-option convention
-- `-o gpu-monitor.<key>=<value>`, for example one file per node instead of
-- one file per job:
--
--   flux run -o gpu-monitor -o gpu-monitor.output=gpu-{{id}}-{{node.name}}.jsonl ...
--
-- A template that differs per node ({{node.id}} or {{node.name}}) makes each
-- shell write its own file directly instead of forwarding to the leader.
--
-- Which GPUs are shown
-- --------------------
-- gpu-metrics restricts itself to the GPUs named by CUDA_VISIBLE_DEVICES
-- (or SLURM_*/GPU_DEVICE_ORDINAL/NVIDIA_VISIBLE_DEVICES) in its environment
-- and never silently falls back to every GPU of the node. Run
-- `flux run -o gpu-monitor ... gpu-metrics --env flux --dry-run` once to see
-- what it resolves on your site; to pin a list explicitly, append
-- "--device", "<list>" to `command` (same syntax as CUDA_VISIBLE_DEVICES;
-- prefer GPU UUIDs). See docs/hpc.md.
--
coprocess.define {
    name = "gpu-monitor",
    command = {
        "gpu-metrics",
        "--env", "flux",        -- do not guess: this is a Flux job
        "--interval", "5s",     -- one sample every 5 seconds
        "--format", "jsonl",    -- one JSON object per line, on stdout
        -- Logs and errors go to stderr, never into the JSON Lines stream.
    },
    output = "gpu-metrics-{{id}}.jsonl",
}
