#!/usr/bin/env python3
"""The amd-smi backend end to end: the real loader and backend, in the real
gpu-metrics and keda-gpu-scaler binaries, against libamdsmi-sim.so (the
amd-smi stand-in, sim/amdsmi/) and its scenarios sim/amdsmi/scenarios/amd-*.json.
The stand-in is found as amd-smi is on a node: a file named libamd_smi.so
on the library path.

Environment (set by CTest): GPU_METRICS, KEDA_GPU_SCALER, KGS_GO_CLIENT,
AMDSMI_SIM_LIBRARY, AMDSMI_SIM_NOPROC_LIBRARY, AMDSMI_SIM_NOREQ_LIBRARY,
KGS_SOURCE_DIR.
"""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from kgs_util import (SOURCE_DIR, ServerProcess, child_env, free_port, http_get, md_args,
                      scaler_command, wait_for)

GPU_METRICS = os.environ["GPU_METRICS"]
SERVER = os.environ.get("KEDA_GPU_SCALER", "")
CLIENT = os.environ.get("KGS_GO_CLIENT", "")
SIM = os.environ["AMDSMI_SIM_LIBRARY"]
SIM_NOPROC = os.environ["AMDSMI_SIM_NOPROC_LIBRARY"]
SIM_NOREQ = os.environ["AMDSMI_SIM_NOREQ_LIBRARY"]
# Not in sim/scenarios: every scenario there is an NVML one that make run
# demonstrates (tests/deploy/make/test_make.py).
SCENARIOS = os.path.join(SOURCE_DIR, "sim", "amdsmi", "scenarios")
MI300X_8 = os.path.join(SCENARIOS, "amd-mi300x-8.json")
CPX = os.path.join(SCENARIOS, "amd-mi300x-cpx.json")
LOST = os.path.join(SCENARIOS, "amd-gpu-lost.json")
EXIT_NO_BACKEND = 1  # gpu-metrics: no GPU backend could be opened
EXIT_GPU_ERROR = 3  # gpu-metrics: a GPU is lost or in error


def lib_dir(library):
    """A folder holding `library` as libamd_smi.so (removed at exit)."""
    d = tempfile.mkdtemp(prefix="kgs-amdsmi-")
    os.symlink(library, os.path.join(d, "libamd_smi.so"))
    return d


def gpu_metrics(args, scenario=MI300X_8, library=SIM, backend="amdsmi"):
    d = lib_dir(library) if library else None
    try:
        env = child_env(os.environ.get("PATH", "/usr/bin:/bin"), AMDSMI_SIM_SCENARIO=scenario)
        if d:
            env["LD_LIBRARY_PATH"] = d
        cmd = [GPU_METRICS, "--gpu-backend", backend, "--sys-root", "/nonexistent-kgs"] + args
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=30)
    finally:
        if d:
            shutil.rmtree(d)


def devices(scenario=MI300X_8, library=SIM):
    r = gpu_metrics(["--format", "json"], scenario, library)
    if r.returncode not in (0, EXIT_GPU_ERROR):
        raise AssertionError("gpu-metrics exit %d: %s" % (r.returncode, r.stderr))
    return json.loads(r.stdout)["devices"]


def scenario_copy(path, edit):
    """A temporary copy of scenario `path` changed by edit(doc)."""
    with open(path) as f:
        doc = json.load(f)
    edit(doc)
    fd, out = tempfile.mkstemp(prefix="kgs-amdsmi-", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(doc, f)
    return out


class EightMi300x(unittest.TestCase):
    def setUp(self):
        self.devs = devices()
        with open(MI300X_8) as f:
            self.sc = json.load(f)["gpus"]

    def test_every_gpu_with_its_identity_and_vendor_amd(self):
        self.assertEqual(len(self.devs), 8)
        self.assertEqual([d["pci_bus_id"] for d in self.devs], [g["bdf"] for g in self.sc])
        self.assertEqual({d["vendor"] for d in self.devs}, {"amd"})
        self.assertEqual([d["uuid"] for d in self.devs], [g["uuid"] for g in self.sc])
        self.assertEqual({d["name"] for d in self.devs}, {"AMD Instinct MI300X"})
        self.assertEqual({d["health"] for d in self.devs}, {"ok"})

    def test_values_in_the_schemas_units(self):
        for d, g in zip(self.devs, self.sc):
            v = g["values"]
            self.assertEqual(d["gpu_utilization_percent"], v["gfx_activity"])
            self.assertEqual(d["memory_utilization_percent"], v["umc_activity"])
            self.assertEqual(d["memory_used_bytes"], v["vram_used_mib"] * 1048576)
            self.assertEqual(d["memory_total_bytes"], v["vram_total_mib"] * 1048576)
            self.assertEqual(d["power_draw_watts"], float(v["socket_power_w"]))
            self.assertEqual(d["power_limit_watts"], 750.0)  # power1_cap µW
            self.assertEqual(d["temperature_celsius"], v["temp_hotspot_c"])  # no edge sensor
            self.assertEqual(d["sm_clock_mhz"], v["gfx_clock_mhz"])

    def test_what_amd_smi_cannot_tell_is_null_not_zero(self):
        for d in self.devs:
            for k in ("memory_reserved_bytes", "pcie_tx_bytes_per_second",
                      "nvlink_tx_bytes_per_second", "sm_active_percent", "sm_occupancy_percent",
                      "dram_bandwidth_utilization_percent", "clock_event_reasons",
                      "energy_joules"):
                self.assertIsNone(d[k], k)

    def test_processes_with_their_vram(self):
        d = self.devs[1]
        want = sorted((p["pid"], p["vram_bytes"]) for p in self.sc[1]["processes"])
        got = sorted((p["pid"], p["used_memory_bytes"]) for p in d["processes"])
        self.assertEqual(got, want)
        # gfx engine time between the CLI's two sweeps: the stand-in's
        # process keeps gfx_percent of the engine busy
        for p in d["processes"]:
            want = next(x["gfx_percent"] for x in self.sc[1]["processes"] if x["pid"] == p["pid"])
            self.assertAlmostEqual(p["sm_utilization_percent"], want, delta=5)
            self.assertIsNone(p["memory_utilization_percent"])
        self.assertEqual(self.devs[2]["processes"], [])
        self.assertIsNone(self.devs[2]["processes_error"])


class CpxPartitions(unittest.TestCase):
    def test_each_partition_is_a_device(self):
        devs = devices(CPX)
        self.assertEqual(len(devs), 16)  # 2 MI300X x 8 XCDs
        self.assertEqual([d["pci_bus_id"] for d in devs], ["0000:0c:00.0"] * 8 + ["0000:22:00.0"] * 8)
        self.assertEqual(len({d["uuid"] for d in devs}), 16)
        self.assertIn("[cpx_nps4 partition 3]", devs[3]["name"])
        self.assertEqual(devs[2]["memory_total_bytes"], 24576 * 1048576)
        self.assertEqual(devs[2]["memory_used_bytes"], 12288 * 1048576)

    def test_each_partition_has_its_own_busy_figure_from_the_xcp_table(self):
        with open(CPX) as f:
            sc = json.load(f)["gpus"]
        devs = devices(CPX)
        for i, d in enumerate(devs):
            want = sc[i // 8]["partition_values"][i % 8]["gfx_activity"]
            self.assertEqual(d["gpu_utilization_percent"], want, i)
            if i % 8 == 0:
                self.assertIsNotNone(d["power_draw_watts"])
                self.assertIsNotNone(d["memory_utilization_percent"])
            else:
                # no per-partition figure exists for these: null, not partition 0's
                self.assertIsNone(d["memory_utilization_percent"], i)
                self.assertIsNone(d["power_draw_watts"], i)

    def test_without_the_xcp_table_only_partition_0_has_activity_never_a_copy(self):
        def unfill(doc):
            for g in doc["gpus"]:
                for pv in g["partition_values"][1:]:
                    pv.pop("gfx_activity")
        path = scenario_copy(CPX, unfill)
        try:
            devs = devices(path)
        finally:
            os.unlink(path)
        for i, d in enumerate(devs):
            if i % 8 == 0:
                self.assertEqual(d["gpu_utilization_percent"], 64 if i == 0 else 20)
            else:
                # the stand-in answers partition 0's 64 here, as amd-smi does
                self.assertIsNone(d["gpu_utilization_percent"], i)

    def test_without_partition_ids_no_partition_claims_the_activity(self):
        path = scenario_copy(CPX, lambda doc: [g.update(kfd_info=False) for g in doc["gpus"]])
        try:
            devs = devices(path)
        finally:
            os.unlink(path)
        self.assertEqual(len(devs), 16)
        self.assertEqual({d["gpu_utilization_percent"] for d in devs}, {None})
        self.assertIn("[cpx_nps4 partition]", devs[0]["name"])


class Errors(unittest.TestCase):
    def test_a_lost_gpu_is_lost_and_the_other_still_reads(self):
        path = scenario_copy(LOST, lambda doc: doc["gpus"][1].update(
            error_timeline=[{"at_s": 0, "error": "NOT_FOUND"}]))
        try:
            devs = devices(path)
        finally:
            os.unlink(path)
        self.assertEqual(devs[0]["health"], "ok")
        self.assertEqual(devs[0]["gpu_utilization_percent"], 70)
        self.assertEqual(devs[1]["health"], "lost")
        self.assertEqual(devs[1]["health_error"], "GPU_IS_LOST")
        self.assertIsNone(devs[1]["gpu_utilization_percent"])
        self.assertEqual(devs[1]["field_errors"]["gpu_utilization_percent"], "GPU_IS_LOST")

    def test_missing_library_names_every_name_tried(self):
        r = gpu_metrics([], library=None)
        self.assertEqual(r.returncode, EXIT_NO_BACKEND, r.stderr)
        self.assertIn("load amd-smi: libamd_smi.so: cannot open shared object file", r.stderr)
        self.assertIn("libamd_smi.so.24", r.stderr)

    def test_missing_required_symbol_is_named(self):
        r = gpu_metrics([], library=SIM_NOREQ)
        self.assertEqual(r.returncode, EXIT_NO_BACKEND, r.stderr)
        self.assertIn("required symbol amdsmi_get_processor_handles is missing", r.stderr)

    def test_missing_optional_symbol_leaves_only_its_field_unknown(self):
        r = gpu_metrics(["--format", "json"], library=SIM_NOPROC)
        self.assertEqual(r.returncode, 0, r.stderr)
        devs = json.loads(r.stdout)["devices"]
        self.assertEqual(len(devs), 8)
        self.assertIsNone(devs[1]["processes"])
        self.assertEqual(devs[1]["gpu_utilization_percent"], 92)

    def test_init_failure_names_amd_smis_status(self):
        path = scenario_copy(MI300X_8, lambda doc: doc.update(init_error="DRIVER_NOT_LOADED"))
        try:
            r = gpu_metrics([], scenario=path)
        finally:
            os.unlink(path)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("amd-smi: amdsmi_init: DRIVER_NOT_LOADED (34)", r.stdout + r.stderr)

    def test_auto_takes_amd_smi_when_nvml_does_not_load(self):
        r = gpu_metrics(["--format", "json"], backend="auto")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(json.loads(r.stdout)["devices"]), 8)

    def test_a_typo_in_a_scenario_fails_loudly(self):
        path = scenario_copy(MI300X_8, lambda doc: doc["gpus"][0]["values"].update(gfx_activty=5))
        try:
            r = gpu_metrics([], scenario=path)
        finally:
            os.unlink(path)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('gpus[0].values: unknown key "gfx_activty"', r.stderr)


MD = {"metricType": "gpu_utilization", "targetValue": "50"}


@unittest.skipUnless(SERVER and CLIENT, "KEDA_GPU_SCALER or KGS_GO_CLIENT not set")
class Scaler(unittest.TestCase):
    def start(self, scenario):
        self.libdir = lib_dir(SIM)
        self.addCleanup(shutil.rmtree, self.libdir)
        self.port, self.probe, self.metrics = free_port(), free_port(), free_port()
        env = child_env(os.environ.get("PATH", "/usr/bin:/bin"), AMDSMI_SIM_SCENARIO=scenario,
                        LD_LIBRARY_PATH=self.libdir, NODE_NAME="amd-node")
        cmd = scaler_command(SERVER, self.port, self.probe, self.metrics,
                             extra=["--gpu-backend", "amdsmi"])
        self.server = ServerProcess(cmd, env)
        self.addCleanup(self.server.close_log)
        self.addCleanup(self.server.stop)
        self.server.wait_http_ready(self.probe, 15)

    def poll(self):
        cmd = [CLIENT, "poll", "-addr", "127.0.0.1:%d" % self.port, "-max-time", "10s"]
        p = subprocess.run(cmd + md_args(MD), capture_output=True, text=True, timeout=20)
        return json.loads(p.stdout.splitlines()[-1])

    def test_standalone_sums_the_amd_gpus_and_says_which_backend(self):
        self.start(MI300X_8)
        r = self.poll()
        self.assertEqual(r.get("metricValueFloat"), 37 + 92 + 0 + 55 + 8 + 100 + 0 + 12, r)
        code, body = http_get(self.metrics, "/metrics")
        self.assertEqual(code, 200)
        self.assertIn('gpu_backend_info{backend="amdsmi"', body)

    def test_a_gpu_lost_mid_run_is_unavailable_never_zero(self):
        self.start(LOST)  # GPU 1 answers NOT_FOUND from 5 s after amdsmi_init
        first = self.poll()
        self.assertEqual(first.get("metricValueFloat"), 70 + 56, first)
        seen = []

        def unavailable():
            r = self.poll()
            seen.append(r)
            return r if "error" in r and r["call"] == "GetMetrics" else None
        r = wait_for(unavailable, timeout=15)
        self.assertIsNotNone(r, "never UNAVAILABLE: %r" % seen[-3:])
        self.assertEqual(r["error"]["code"], "UNAVAILABLE", r)
        for x in seen:
            self.assertNotEqual(x.get("metricValueFloat"), 0, seen)
            if "error" not in x:
                self.assertEqual(x["metricValueFloat"], 126, seen)


if __name__ == "__main__":
    unittest.main()
