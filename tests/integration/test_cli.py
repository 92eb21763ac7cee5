#!/usr/bin/env python3
"""gpu-metrics end to end: the real binary, the real NVML loader, the NVML
stand-in (libnvml-sim.so) driven by scenario files.

Environment (set by CTest): GPU_METRICS, NVML_SIM_LIBRARY, KGS_SOURCE_DIR.
"""
import csv
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest

from kgs_sim import Sim, device
from kgs_util import SOURCE_DIR, child_env

GPU_METRICS = os.environ["GPU_METRICS"]
SIM = os.environ["NVML_SIM_LIBRARY"]
SRC = SOURCE_DIR
SCENARIOS = os.path.join(SRC, "sim", "scenarios")

def run(args, scenario_path=None, env_extra=None, timeout=30, library=SIM):
    # ASan's options must survive the clean environment.
    env = child_env(os.environ.get("PATH", "/usr/bin:/bin"), scenario_path or None,
                    **(env_extra or {}))
    cmd = [GPU_METRICS]
    if library:
        cmd += ["--nvml-library", library]
    cmd += args
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)


def shipped(name):
    return os.path.join(SCENARIOS, name + ".json")


class OneShotJson(unittest.TestCase):
    def setUp(self):
        self.sim = Sim({"driver_version": "560.35.03", "devices": [device(0), device(1)]})

    def tearDown(self):
        self.sim.close()

    def test_json_has_schema_units_and_values(self):
        r = run(["--format", "json"], self.sim.path)
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        self.assertEqual(doc["schema_version"], 1)
        self.assertEqual(doc["driver_version"], "560.35.03")
        self.assertRegex(doc["collected_at"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
        self.assertEqual(doc["environment"]["orchestrator"], "standalone")
        devs = doc["devices"]
        self.assertEqual(len(devs), 2)
        d0, d1 = devs
        self.assertEqual(d0["index"], 0)
        self.assertEqual(d0["name"], "NVIDIA H100 80GB HBM3")
        self.assertEqual(d0["health"], "ok")
        self.assertEqual(d0["gpu_utilization_percent"], 10)
        self.assertEqual(d1["gpu_utilization_percent"], 20)
        self.assertEqual(d1["memory_used_bytes"], 2 * 1073741824)
        self.assertEqual(d0["memory_total_bytes"], 85520809984)
        self.assertEqual(d0["memory_reserved_bytes"], 536870912)
        self.assertAlmostEqual(d1["power_draw_watts"], 101.0)
        self.assertAlmostEqual(d0["power_limit_watts"], 700.0)
        self.assertEqual(d0["temperature_celsius"], 40)
        self.assertEqual(d0["pcie_tx_bytes_per_second"], 1000 * 1024)
        self.assertEqual(d0["sm_clock_mhz"], 1980)
        self.assertEqual(d0["clock_event_reasons"], ["gpu_idle"])
        self.assertAlmostEqual(d0["memory_used_percent"], 100.0 * 1073741824 / 85520809984, 6)
        # Rates need two readings: the one-shot CLI takes them 150 ms apart.
        self.assertIsNotNone(d0["nvlink_tx_bytes_per_second"])
        self.assertAlmostEqual(d0["nvlink_tx_bytes_per_second"], 1024 * 1024, delta=1024 * 1024 * 0.2)
        self.assertAlmostEqual(d0["sm_active_percent"], 25.0)
        self.assertAlmostEqual(d0["dram_bandwidth_utilization_percent"], 7.0)
        self.assertFalse(d0["mig_enabled"])
        self.assertEqual(d0["mig_instances"], [])

    def test_absent_fields_are_null_not_zero(self):
        d = device(0)
        for k in ("temperature_c", "sm_active", "sm_occupancy", "dram_bw_util", "power_mw"):
            del d["values"][k]
        d["gpm_supported"] = False
        self.sim.rewrite({"devices": [d]})
        r = run(["--format", "json"], self.sim.path)
        self.assertEqual(r.returncode, 0, r.stderr)
        g = json.loads(r.stdout)["devices"][0]
        for k in ("temperature_celsius", "power_draw_watts", "sm_active_percent",
                  "sm_occupancy_percent", "dram_bandwidth_utilization_percent"):
            self.assertIn(k, g)
            self.assertIsNone(g[k], k)
        self.assertEqual(g["health"], "ok")  # NOT_SUPPORTED is not a sickness

    def test_field_error_other_than_not_supported_is_reported(self):
        d = device(0)
        d["errors"] = {"nvmlDeviceGetTemperatureV": "UNKNOWN", "nvmlDeviceGetTemperature": "UNKNOWN"}
        self.sim.rewrite({"devices": [d]})
        r = run(["--format", "json"], self.sim.path)
        self.assertEqual(r.returncode, 3, r.stderr)  # an erroring GPU
        g = json.loads(r.stdout)["devices"][0]
        self.assertIsNone(g["temperature_celsius"])
        self.assertEqual(g["field_errors"].get("temperature_celsius"), "UNKNOWN")
        self.assertEqual(g["health"], "error")


    def test_error_named_for_the_base_call_reaches_the_variant_tried_first(self):
        # DESIGN's example names nvmlDeviceGetTemperature; the collector asks
        # nvmlDeviceGetTemperatureV (and MemoryInfo_v2) first. The scenario
        # must mean what it says: those fields error, whichever variant.
        d = device(0)
        d["errors"] = {"nvmlDeviceGetTemperature": "UNKNOWN",
                       "nvmlDeviceGetMemoryInfo": "NO_PERMISSION"}
        self.sim.rewrite({"devices": [d]})
        r = run(["--format", "json"], self.sim.path)
        self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
        g = json.loads(r.stdout)["devices"][0]
        self.assertIsNone(g["temperature_celsius"])
        self.assertEqual(g["field_errors"].get("temperature_celsius"), "UNKNOWN", g)
        self.assertIsNone(g["memory_used_bytes"])
        self.assertEqual(g["field_errors"].get("memory_used_bytes"), "NO_PERMISSION", g)
        # An explicit entry for a variant wins: SUCCESS keeps TemperatureV working.
        d["errors"] = {"nvmlDeviceGetTemperature": "UNKNOWN",
                       "nvmlDeviceGetTemperatureV": "SUCCESS"}
        self.sim.rewrite({"devices": [d]})
        r = run(["--format", "json"], self.sim.path)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        g = json.loads(r.stdout)["devices"][0]
        self.assertEqual(g["temperature_celsius"], 40)


class Scenarios(unittest.TestCase):
    """Every shipped scenario loads and reports what it describes."""

    def load(self, name, args=("--format", "json")):
        r = run(list(args), shipped(name))
        return r, (json.loads(r.stdout) if r.stdout.strip().startswith("{") else None)

    def test_idle_4xh100(self):
        r, doc = self.load("idle-4xh100")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(doc["devices"]), 4)
        uuids = {d["uuid"] for d in doc["devices"]}
        self.assertEqual(len(uuids), 4)
        for d in doc["devices"]:
            self.assertIn("H100", d["name"])
            self.assertEqual(d["gpu_utilization_percent"], 0)
            self.assertIsNotNone(d["sm_active_percent"])  # Hopper: GPM present
            self.assertEqual(d["health"], "ok")

    def test_inference_burst_changes_over_time(self):
        r, doc = self.load("inference-burst")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(doc["devices"]), 2)

    def test_mig_a100_nests_instances_with_profiles_and_no_fake_utilisation(self):
        r, doc = self.load("mig-a100")
        self.assertEqual(r.returncode, 0, r.stderr)
        mig_gpus = [d for d in doc["devices"] if d["mig_enabled"]]
        self.assertEqual(len(mig_gpus), 1)
        g = mig_gpus[0]
        profiles = sorted(m["profile"] for m in g["mig_instances"])
        self.assertEqual(profiles, ["1g.10gb", "2g.20gb", "3g.40gb"])
        # NVML reports no utilisation on MIG-enabled GPUs: absent, not 0.
        self.assertIsNone(g["gpu_utilization_percent"])
        for m in g["mig_instances"]:
            self.assertTrue(m["uuid"].startswith("MIG-"))
            self.assertIsNotNone(m["memory_total_bytes"])
            self.assertIsNone(m["sm_active_percent"])  # A100: no GPM
            self.assertIsNotNone(m["gpu_instance_id"])

    def test_gpu_lost_after_start(self):
        # The shipped scenario loses GPU 1 at 5 s; a one-shot run sees it healthy.
        r, doc = self.load("gpu-lost")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(doc["devices"]), 2)

    def test_old_driver_reports_absent_for_missing_symbols(self):
        r, doc = self.load("old-driver")
        self.assertEqual(r.returncode, 0, r.stderr)
        d = doc["devices"][0]
        self.assertIsNone(d["memory_reserved_bytes"])  # only nvmlDeviceGetMemoryInfo_v2 has it
        self.assertIsNotNone(d["memory_used_bytes"])  # v1 fallback
        self.assertIsNotNone(d["temperature_celsius"])  # GetTemperature fallback
        self.assertIsNone(d["sm_active_percent"])  # no GPM symbols
        self.assertEqual(d["health"], "ok")


class GpuLostMidRun(unittest.TestCase):
    def test_gpu_lost_mid_run_turns_health_lost_and_exit_3(self):
        d1 = device(1)
        d1["error_timeline"] = [{"at_s": 0.6, "call": "*", "error": "GPU_IS_LOST"}]
        sim = Sim({"devices": [device(0), d1]})
        try:
            r = run(["--format", "jsonl", "--interval", "200ms", "--count", "8"], sim.path)
            lines = [json.loads(l) for l in r.stdout.splitlines()]
            self.assertEqual(len(lines), 8)
            first, last = lines[0]["devices"], lines[-1]["devices"]
            self.assertEqual(first[1]["health"], "ok")
            self.assertEqual(last[1]["health"], "lost")
            self.assertEqual(last[1]["health_error"], "GPU_IS_LOST")
            # Its identity is the last one read, so the operator knows which GPU it was.
            self.assertEqual(last[1]["uuid"], d1["uuid"])
            self.assertEqual(last[1]["name"], d1["name"])
            self.assertEqual(last[1]["pci_bus_id"], d1["pci_bus_id"])
            # A lost GPU's values are unknown, not 0.
            self.assertIsNone(last[1]["gpu_utilization_percent"])
            self.assertIsNone(last[1]["memory_used_bytes"])
            self.assertEqual(last[0]["health"], "ok")
            self.assertEqual(r.returncode, 3, r.stderr)
        finally:
            sim.close()

    def test_selecting_only_the_healthy_gpu_exits_0(self):
        d1 = device(1)
        d1["errors"] = {"nvmlDeviceGetUUID": "GPU_IS_LOST"}
        d1["error_timeline"] = [{"at_s": 0, "call": "*", "error": "GPU_IS_LOST"}]
        sim = Sim({"devices": [device(0), d1]})
        try:
            r = run(["--format", "json"], sim.path)
            self.assertEqual(r.returncode, 3)
            r = run(["--format", "json", "--device", "0"], sim.path)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual([d["index"] for d in json.loads(r.stdout)["devices"]], [0])
        finally:
            sim.close()


class Formats(unittest.TestCase):
    def setUp(self):
        d = device(0)
        d["name"] = "NVIDIA H100, \"special\" edition"
        self.sim = Sim({"devices": [d, device(1)]})

    def tearDown(self):
        self.sim.close()

    def test_jsonl_is_one_compact_object_per_line(self):
        r = run(["--format", "jsonl", "--interval", "200ms", "--count", "3"], self.sim.path)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertEqual(len(lines), 3)
        seen = set()
        for l in lines:
            doc = json.loads(l)
            self.assertEqual(len(doc["devices"]), 2)
            seen.add(doc["collected_at"])
        self.assertEqual(len(seen), 3)

    def test_csv_header_once_and_every_row_the_same_width(self):
        r = run(["--format", "csv", "--interval", "200ms", "--count", "3"], self.sim.path)
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = list(csv.reader(io.StringIO(r.stdout)))
        header = rows[0]
        self.assertEqual(sum(1 for row in rows if row == header), 1)
        self.assertEqual(len(rows), 1 + 3 * 2)
        for row in rows[1:]:
            self.assertEqual(len(row), len(header))
        names = {row[header.index("name")] for row in rows[1:]}
        self.assertIn("NVIDIA H100, \"special\" edition", names)
        self.assertIn("gpu_utilization_percent", header)

    def test_table_shows_every_gpu_with_units(self):
        r = run([], self.sim.path)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("Environment", r.stdout)
        self.assertEqual(len(re.findall(r"^\s*[01]\s", r.stdout, re.M)), 2, r.stdout)

    def test_output_file_template_expands_job_node_and_rank(self):
        with tempfile.TemporaryDirectory() as d:
            tmpl = os.path.join(d, "gpu-%j-%n-%t.jsonl")
            r = run(["--format", "jsonl", "--output", tmpl], self.sim.path,
                    {"SLURM_JOB_ID": "4242", "SLURMD_NODENAME": "gpu-a07", "SLURM_PROCID": "3"})
            self.assertEqual(r.returncode, 0, r.stderr)
            path = os.path.join(d, "gpu-4242-gpu-a07-3.jsonl")
            self.assertTrue(os.path.exists(path), os.listdir(d))
            doc = json.loads(open(path).read())
            self.assertEqual(doc["environment"]["orchestrator"], "slurm")
            self.assertEqual(doc["environment"]["job_id"], "4242")
            self.assertEqual(doc["environment"]["task_rank"], 3)
            self.assertEqual(doc["environment"]["node"], "gpu-a07")
            self.assertEqual(r.stdout, "")


class Selection(unittest.TestCase):
    def setUp(self):
        self.sim = Sim({"devices": [device(i) for i in range(4)]})

    def tearDown(self):
        self.sim.close()

    def indexes(self, r):
        self.assertEqual(r.returncode, 0, r.stderr)
        return [d["index"] for d in json.loads(r.stdout)["devices"]]

    def test_slurm_step_gpus_restricts_devices(self):
        r = run(["--format", "json"], self.sim.path,
                {"SLURM_JOB_ID": "1", "SLURM_STEP_GPUS": "1,3", "CUDA_VISIBLE_DEVICES": "0"})
        self.assertEqual(self.indexes(r), [1, 3])

    def test_gpu_uuid_prefix_selects_one_gpu(self):
        uuid2 = device(2)["uuid"]
        r = run(["--format", "json"], self.sim.path, {"CUDA_VISIBLE_DEVICES": uuid2[:14]})
        self.assertEqual(self.indexes(r), [2])

    def test_nvidia_visible_devices_all(self):
        r = run(["--format", "json"], self.sim.path, {"NVIDIA_VISIBLE_DEVICES": "all"})
        self.assertEqual(self.indexes(r), [0, 1, 2, 3])

    def test_unknown_entry_is_an_error_naming_it_never_all_gpus(self):
        r = run(["--format", "json"], self.sim.path, {"SLURM_STEP_GPUS": "GPU-deadbeef"})
        self.assertEqual(r.returncode, 2)
        self.assertIn("GPU-deadbeef", r.stderr)
        self.assertIn("SLURM_STEP_GPUS", r.stderr)
        self.assertEqual(r.stdout, "")

    def test_cuda_visible_devices_minus_one_is_no_gpu_as_cuda_reads_it(self):
        r = run(["--format", "json"], self.sim.path, {"CUDA_VISIBLE_DEVICES": "-1"})
        self.assertEqual(self.indexes(r), [])
        self.assertIn('note: CUDA_VISIBLE_DEVICES entry "-1"', r.stderr)
        self.assertIn("no GPU is visible", r.stderr)
        r = run([], self.sim.path, {"CUDA_VISIBLE_DEVICES": "-1"})  # the table says so too
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("No GPU selected", r.stdout)

    def test_cuda_visible_devices_stops_at_the_first_invalid_entry(self):
        for value, want in (("0,-1,1", [0]), ("2,GPU-deadbeef,1", [2]), ("3,9,0", [3])):
            r = run(["--format", "json"], self.sim.path, {"CUDA_VISIBLE_DEVICES": value})
            self.assertEqual(self.indexes(r), want, value)
            self.assertIn("CUDA stops reading the list", r.stderr)
        r = run(["--format", "json"], self.sim.path, {"CUDA_VISIBLE_DEVICES": ""})
        self.assertEqual(self.indexes(r), [])
        self.assertIn('CUDA_VISIBLE_DEVICES="" selects no GPU', r.stderr)
        r = run(["--format", "json", "--quiet"], self.sim.path, {"CUDA_VISIBLE_DEVICES": "-1"})
        self.assertEqual(self.indexes(r), [])
        self.assertEqual(r.stderr, "")

    def test_device_flag_overrides_environment(self):
        r = run(["--format", "json", "--device", "2"], self.sim.path, {"CUDA_VISIBLE_DEVICES": "0"})
        self.assertEqual(self.indexes(r), [2])

    def test_device_out_of_range(self):
        r = run(["--format", "json", "--device", "7"], self.sim.path)
        self.assertEqual(r.returncode, 2)
        self.assertIn("7", r.stderr)


class Usage(unittest.TestCase):
    def test_unknown_format_is_exit_2_naming_valid_values(self):
        r = run(["--format", "xml"], None)
        self.assertEqual(r.returncode, 2)
        self.assertIn("xml", r.stderr)
        for v in ("table", "json", "jsonl", "csv"):
            self.assertIn(v, r.stderr)

    def test_unknown_env_is_exit_2(self):
        r = run(["--env", "pbs"], None)
        self.assertEqual(r.returncode, 2)
        self.assertIn("pbs", r.stderr)

    def test_interval_below_100ms_is_rejected(self):
        r = run(["--interval", "50ms"], None)
        self.assertEqual(r.returncode, 2)
        self.assertIn("100ms", r.stderr)

    def test_bad_duration_is_rejected(self):
        r = run(["--interval", "5"], None)
        self.assertEqual(r.returncode, 2)

    def test_unknown_flag(self):
        r = run(["--colour"], None)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--colour", r.stderr)

    def test_typos_get_did_you_mean_and_exit_2(self):
        for args, meant in ((["--formt", "json"], "did you mean --format?"),
                            (["--format", "jsn"], "did you mean 'json'?"),
                            (["--env", "slrum"], 'did you mean "slurm"?')):
            r = run(args, None)
            self.assertEqual(r.returncode, 2, args)
            self.assertIn(meant, r.stderr)
            self.assertEqual(r.stdout, "")

    def test_help_and_version(self):
        r = run(["--help"], None)
        self.assertEqual(r.returncode, 0)
        self.assertIn("--format table|json|jsonl|csv", r.stdout)
        r = run(["--version"], None)
        self.assertEqual(r.returncode, 0)
        self.assertRegex(r.stdout, r"^gpu-metrics \d+\.\d+\.\d+ \(")

    def test_dry_run_touches_no_nvml(self):
        r = run(["--dry-run", "--format", "csv", "--interval", "5s"], None,
                {"FLUX_JOB_ID": "f123", "FLUX_TASK_RANK": "2"},
                library="/nonexistent/libnvidia-ml.so.1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("flux", r.stdout)
        self.assertIn("f123", r.stdout)
        self.assertIn("csv", r.stdout)

    def test_missing_nvml_library_is_exit_1_with_hint(self):
        r = run([], None, library="/nonexistent/libnvidia-ml.so.1")
        self.assertEqual(r.returncode, 1)
        self.assertIn("/nonexistent/libnvidia-ml.so.1", r.stderr)
        self.assertIn("hint", r.stderr)

    def test_nvml_init_error_is_exit_1_naming_nvml_error(self):
        sim = Sim({"init_error": "DRIVER_NOT_LOADED", "devices": []})
        try:
            r = run([], sim.path)
            self.assertEqual(r.returncode, 1)
            self.assertIn("DRIVER_NOT_LOADED", r.stderr)
        finally:
            sim.close()

    def test_nvml_init_error_names_nvml_error_once_with_the_driver_hint(self):
        sim = Sim({"init_error": "DRIVER_NOT_LOADED", "devices": []})
        try:
            r = run([], sim.path)
            self.assertEqual(r.returncode, 1)
            # No "initialisation failed ...; retrying" warning before the
            # message: NVML's error once, and no promise of a retry.
            self.assertEqual(r.stderr.count("Driver Not Loaded"), 1, r.stderr)
            self.assertEqual(r.stderr.count("NVML unavailable"), 1, r.stderr)
            self.assertNotIn("retrying", r.stderr)
            self.assertIn("NVIDIA driver", r.stderr)  # the scenario plays a driver failure
        finally:
            sim.close()

    def test_bad_scenario_blames_the_scenario_not_the_driver(self):
        with tempfile.TemporaryDirectory() as tmp:
            bad = os.path.join(tmp, "bad.json")
            with open(bad, "w") as f:
                f.write("{bad")
            for path in (os.path.join(tmp, "missing.json"), bad):
                r = run([], path)
                self.assertEqual(r.returncode, 1)
                self.assertIn("from the NVML stand-in: scenario " + path, r.stderr)
                self.assertIn("is the NVML stand-in, not a driver", r.stderr)
                self.assertIn("NVML_SIM_SCENARIO", r.stderr)
                # the hint is the same for any library; the library's words say the rest
                self.assertIn("hint: %s could not initialise" % SIM, r.stderr)

    def test_zero_gpus_is_not_an_error(self):
        sim = Sim({"devices": []})
        try:
            r = run(["--format", "json"], sim.path)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(json.loads(r.stdout)["devices"], [])
        finally:
            sim.close()

    def test_sigterm_stops_continuous_mode_promptly(self):
        sim = Sim({"devices": [device(0)]})
        try:
            env = child_env(scenario=sim.path)
            p = subprocess.Popen([GPU_METRICS, "--nvml-library", SIM, "--format", "jsonl",
                                  "--interval", "1s"], env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
            first = p.stdout.readline()
            self.assertTrue(json.loads(first))
            t0 = time.monotonic()
            p.terminate()
            p.wait(timeout=5)
            self.assertLess(time.monotonic() - t0, 1.5)
            self.assertEqual(p.returncode, 0)
            p.stdout.close()
            p.stderr.close()
        finally:
            sim.close()



def host_pid_namespace():
    """True when this process's /proc counts process ids as NVML does."""
    try:
        return os.readlink("/proc/self/ns/pid") == "pid:[4026531836]"
    except OSError:
        return False


class CudaIndex(unittest.TestCase):
    """cuda_index: the ordinal the job's own CUDA code uses, beside NVML's index."""

    def setUp(self):
        self.devs = [device(i) for i in range(4)]
        self.sim = Sim({"driver_version": "560.35.03", "devices": self.devs})

    def tearDown(self):
        self.sim.close()

    def json(self, env, args=()):
        r = run(["--format", "json"] + list(args), self.sim.path, env)
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)

    def test_slurm_job_with_uuids_maps_nvml_index_2_to_cuda_0(self):
        # Slurm gave the step GPUs 2 and 0 (its ids) and CUDA their UUIDs, 2 first.
        doc = self.json({"SLURM_JOB_ID": "77", "SLURM_STEP_GPUS": "0,2",
                         "CUDA_VISIBLE_DEVICES": "%s,%s" % (self.devs[2]["uuid"], self.devs[0]["uuid"])})
        got = {d["index"]: (d["cuda_index"], d["cuda_visible"]) for d in doc["devices"]}
        self.assertEqual(got, {0: (1, True), 2: (0, True)})
        self.assertIsNone(doc["cuda_index_note"])
        self.assertEqual(doc["environment"]["cuda_visible_devices"],
                         "%s,%s" % (self.devs[2]["uuid"], self.devs[0]["uuid"]))
        self.assertIsNone(doc["environment"]["cuda_device_order"])

    def test_integer_list_needs_pci_bus_order(self):
        env = {"SLURM_JOB_ID": "77", "SLURM_STEP_GPUS": "2", "CUDA_VISIBLE_DEVICES": "2"}
        doc = self.json(env)
        d = doc["devices"]
        self.assertEqual([x["index"] for x in d], [2])
        self.assertIsNone(d[0]["cuda_index"])  # FASTEST_FIRST: never a guess
        self.assertIn("CUDA_DEVICE_ORDER=PCI_BUS_ID", doc["cuda_index_note"])
        env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
        doc = self.json(env)
        self.assertEqual(doc["devices"][0]["cuda_index"], 0)
        self.assertIsNone(doc["cuda_index_note"])
        self.assertEqual(doc["environment"]["cuda_device_order"], "PCI_BUS_ID")

    def test_other_gpus_of_the_node_are_hidden_from_cuda(self):
        doc = self.json({"CUDA_VISIBLE_DEVICES": self.devs[1]["uuid"][:12]}, ["--device", "all"])
        got = [(d["index"], d["cuda_index"], d["cuda_visible"]) for d in doc["devices"]]
        self.assertEqual(got, [(0, None, False), (1, 0, True), (2, None, False), (3, None, False)])
        doc = self.json({"CUDA_VISIBLE_DEVICES": ""}, ["--device", "all"])
        self.assertEqual({d["cuda_visible"] for d in doc["devices"]}, {False})
        self.assertEqual(doc["environment"]["cuda_visible_devices"], "")

    def test_csv_has_the_column_and_the_note_once_on_stderr(self):
        r = run(["--format", "csv", "--interval", "200ms", "--count", "3"], self.sim.path,
                {"CUDA_VISIBLE_DEVICES": "1,0"})
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = list(csv.DictReader(io.StringIO(r.stdout)))
        self.assertEqual(len(rows), 3 * 2)
        self.assertEqual({row["cuda_index"] for row in rows}, {""})
        self.assertEqual(r.stderr.count("note: cuda_index unknown:"), 1, r.stderr)
        r = run(["--format", "csv", "--quiet"], self.sim.path,
                {"CUDA_VISIBLE_DEVICES": "1,0", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"})
        self.assertEqual(r.stderr, "")
        rows = list(csv.DictReader(io.StringIO(r.stdout)))
        self.assertEqual([(x["index"], x["cuda_index"]) for x in rows], [("0", "1"), ("1", "0")])

    def test_table_has_a_cuda_column_and_says_why_one_is_unknown(self):
        r = run([], self.sim.path, {"CUDA_VISIBLE_DEVICES": "3,1"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("GPU  CUDA  Name", r.stdout)
        self.assertIn("CUDA index unknown (-): CUDA_VISIBLE_DEVICES entry 1 (\"3\")", r.stdout)
        r = run([], self.sim.path, {"CUDA_VISIBLE_DEVICES": "3,1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"})
        rows = re.findall(r"^([0-9]+)\s+(\S+)\s+NVIDIA", r.stdout, re.M)
        self.assertEqual(rows, [("1", "1"), ("3", "0")])
        self.assertNotIn("CUDA index unknown", r.stdout)

    def test_dry_run_shows_what_cuda_reads(self):
        r = run(["--dry-run"], None, {"CUDA_VISIBLE_DEVICES": "0,1"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('CUDA_VISIBLE_DEVICES "0,1", CUDA_DEVICE_ORDER unset (FASTEST_FIRST)', r.stdout)

    def test_mig_instance_named_alone_is_cuda_0(self):
        r = run(["--format", "json"], shipped("mig-a100"))
        doc = json.loads(r.stdout)
        mig = doc["devices"][0]["mig_instances"][1]["uuid"]
        self.assertIn("MIG mode", doc["cuda_index_note"])  # no list: up to the driver
        r = run(["--format", "json"], shipped("mig-a100"), {"CUDA_VISIBLE_DEVICES": mig})
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        insts = doc["devices"][0]["mig_instances"]
        self.assertEqual([m["cuda_index"] for m in insts], [0])
        self.assertIsNone(doc["devices"][0]["cuda_index"])  # the parent is not a CUDA device
        self.assertFalse(doc["devices"][0]["cuda_visible"])
        self.assertIsNone(doc["cuda_index_note"])


class Processes(unittest.TestCase):
    """Per-process use, where NVML gives it, in every format."""

    def scenario(self):
        d0 = device(0)
        d0["processes"] = [
            {"pid": os.getpid(), "sm_util": 35, "mem_util": 7, "used_memory_bytes": 2147483648},
            {"pid": 4194301, "used_memory_bytes": 67108864},
        ]
        d1 = device(1)  # runs nothing
        d2 = device(2)
        d2["errors"] = {"nvmlDeviceGetComputeRunningProcesses": "NOT_SUPPORTED"}
        return {"devices": [d0, d1, d2]}

    def setUp(self):
        self.sim = Sim(self.scenario())

    def tearDown(self):
        self.sim.close()

    def test_json_lists_processes_and_tells_absent_from_none(self):
        r = run(["--format", "json"], self.sim.path)
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        d0, d1, d2 = doc["devices"]
        procs = {p["pid"]: p for p in d0["processes"]}
        self.assertEqual(set(procs), {os.getpid(), 4194301})
        me = procs[os.getpid()]
        self.assertEqual(me["used_memory_bytes"], 2147483648)
        self.assertAlmostEqual(me["sm_utilization_percent"], 35.0)
        self.assertAlmostEqual(me["memory_utilization_percent"], 7.0)
        idle = procs[4194301]
        self.assertEqual(idle["sm_utilization_percent"], 0)  # listed, no sample: idle
        self.assertIsNone(idle["command"])  # no such process here: unknown
        self.assertEqual(d0["processes_dropped"], 0)
        self.assertEqual(d1["processes"], [])
        self.assertIsNone(d1["processes_error"])
        self.assertIsNone(d2["processes"])
        self.assertEqual(d2["processes_error"], "NOT_SUPPORTED")
        if host_pid_namespace():
            # NVML's ids are the host's, and so are this /proc's: the name is real.
            with open("/proc/self/comm") as f:
                self.assertEqual(me["command"], f.read().strip())
            self.assertIsNone(doc["process_info_note"])
        else:
            self.assertIsNone(me["command"])
            self.assertIn("not the host's", doc["process_info_note"])

    def test_csv_device_rows_count_processes_and_processes_mode_lists_them(self):
        r = run(["--format", "csv"], self.sim.path)
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = list(csv.DictReader(io.StringIO(r.stdout)))
        self.assertEqual([(x["process_count"], x["processes_error"]) for x in rows],
                         [("2", ""), ("0", ""), ("", "NOT_SUPPORTED")])
        r = run(["--format", "csv", "--processes", "--interval", "200ms", "--count", "2"],
                self.sim.path)
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = list(csv.DictReader(io.StringIO(r.stdout)))
        self.assertEqual(len(rows), 2 * 2)  # one row per process per sample
        self.assertEqual({x["pid"] for x in rows}, {str(os.getpid()), "4194301"})
        self.assertEqual({x["uuid"] for x in rows}, {device(0)["uuid"]})
        self.assertEqual({x["is_mig_instance"] for x in rows}, {"false"})
        mine = [x for x in rows if x["pid"] == str(os.getpid())]
        self.assertEqual(mine[0]["sm_utilization_percent"], "35.0")

    def test_table_lists_processes_only_with_the_flag(self):
        r = run([], self.sim.path)
        self.assertNotIn("pid 4194301", r.stdout)
        r = run(["--processes"], self.sim.path)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("pid 4194301", r.stdout)
        self.assertIn("no processes", r.stdout)
        self.assertIn("processes unknown (NOT_SUPPORTED)", r.stdout)

    def test_mig_instances_list_their_own_processes(self):
        with open(shipped("mig-a100")) as f:
            scen = json.load(f)
        scen["devices"][0]["processes"] = [{"pid": 4194302, "mig_index": 1,
                                            "used_memory_bytes": 1073741824}]
        self.sim.rewrite(scen)
        r = run(["--format", "json"], self.sim.path)
        self.assertEqual(r.returncode, 0, r.stderr)
        g = json.loads(r.stdout)["devices"][0]
        self.assertIsNone(g["processes"])
        self.assertEqual(g["processes_error"], "MIG_ENABLED")
        lists = [[p["pid"] for p in m["processes"]] for m in g["mig_instances"]]
        self.assertEqual(lists, [[], [4194302], []])
        p = g["mig_instances"][1]["processes"][0]
        self.assertEqual(p["used_memory_bytes"], 1073741824)
        self.assertIsNone(p["sm_utilization_percent"])  # NVML has none on MIG

    def test_old_driver_without_v3_lists_still_lists_processes(self):
        r = run(["--format", "json"], shipped("old-driver"))
        self.assertEqual(r.returncode, 0, r.stderr)
        d = json.loads(r.stdout)["devices"][0]
        self.assertIsInstance(d["processes"], list)
        self.assertIsNone(d["processes_error"])


class Install(unittest.TestCase):
    """make install's tree (cmake --install): both programs in bin, the
    stand-in beside its scenarios, and they run from there."""

    def test_installed_tree_runs(self):
        build = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(GPU_METRICS))))
        with tempfile.TemporaryDirectory() as tmp:
            prefix = os.path.join(tmp, "usr")
            subprocess.run(["cmake", "--install", build, "--prefix", prefix], check=True,
                           capture_output=True, timeout=60)
            gm = os.path.join(prefix, "bin", "gpu-metrics")
            sim = os.path.join(prefix, "lib", "keda-gpu-scaler", "libnvml-sim.so")
            scen = os.path.join(prefix, "share", "keda-gpu-scaler", "scenarios", "idle-4xh100.json")
            for f in (gm, sim, scen, os.path.join(prefix, "bin", "keda-gpu-scaler")):
                self.assertTrue(os.path.exists(f), f)
            env = dict(os.environ, NVML_SIM_SCENARIO=scen)
            p = subprocess.run([gm, "--nvml-library", sim, "--format", "json"], env=env,
                               capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(len(json.loads(p.stdout)["devices"]), 4)
            h = subprocess.run([os.path.join(prefix, "bin", "keda-gpu-scaler"), "--help"],
                               capture_output=True, text=True, timeout=30)
            self.assertIn("keda-gpu-scaler validate", h.stdout)
            self.assertIn("keda-gpu-scaler query", h.stdout)

if __name__ == "__main__":
    unittest.main(verbosity=2)
