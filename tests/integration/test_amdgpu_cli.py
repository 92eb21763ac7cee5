#!/usr/bin/env python3
"""gpu-metrics on AMD GPUs end to end: the real binary and the real amdgpu
sysfs reader against the fake node in tests/fixtures/amdgpu (its README
says where every value comes from). Values the fixture does not hold must
come out null, never 0.

Environment (set by CTest): GPU_METRICS, KGS_SOURCE_DIR.
"""
import csv
import io
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from kgs_util import SOURCE_DIR, child_env

GPU_METRICS = os.environ["GPU_METRICS"]
FIXTURE = os.path.join(SOURCE_DIR, "tests", "fixtures", "amdgpu")
SYS = os.path.join(FIXTURE, "sys")
PROC = os.path.join(FIXTURE, "proc")


def run(args, sys_root=SYS, proc_root=PROC, backend="amdgpu-sysfs"):
    cmd = [GPU_METRICS]
    if backend:
        cmd += ["--gpu-backend", backend]
    if sys_root:
        cmd += ["--sys-root", sys_root]
    if proc_root:
        cmd += ["--proc-root", proc_root]
    cmd += args
    env = child_env(os.environ.get("PATH", "/usr/bin:/bin"))
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=30)


class AmdgpuJson(unittest.TestCase):
    def setUp(self):
        r = run(["--format", "json"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.doc = json.loads(r.stdout)
        self.devs = self.doc["devices"]

    def test_cards_in_pci_order_with_identity_and_vendor(self):
        self.assertEqual(self.doc["status"], "ok")
        self.assertEqual([d["index"] for d in self.devs], [0, 1])
        self.assertEqual([d["pci_bus_id"] for d in self.devs], ["0000:19:00.0", "0000:c1:00.0"])
        self.assertEqual([d["vendor"] for d in self.devs], ["amd", "amd"])
        self.assertEqual(self.devs[0]["name"], "AMD Instinct MI300X")
        self.assertEqual(self.devs[0]["uuid"], "5a1f0c2e7b3d9e41")
        self.assertIsNone(self.devs[1]["name"])
        self.assertIsNone(self.devs[1]["uuid"])
        self.assertEqual([d["health"] for d in self.devs], ["ok", "ok"])

    def test_no_cuda_index_or_cuda_note_for_amd_gpus(self):
        for d in self.devs:
            self.assertIsNone(d["cuda_index"])
            self.assertIsNone(d["cuda_visible"])
        self.assertIsNone(self.doc["cuda_index_note"])

    def test_values_from_sysfs_and_hwmon(self):
        d = self.devs[0]
        self.assertEqual(d["gpu_utilization_percent"], 37)
        self.assertEqual(d["memory_utilization_percent"], 12)
        self.assertEqual(d["memory_used_bytes"], 21474836480)
        self.assertEqual(d["memory_total_bytes"], 206158430208)
        self.assertEqual(d["power_draw_watts"], 312.0)
        self.assertEqual(d["power_limit_watts"], 750.0)
        self.assertEqual(d["temperature_celsius"], 51)
        self.assertEqual(d["sm_clock_mhz"], 2100)
        self.assertEqual(d["energy_joules"], 123456.0)  # gpu_metrics v1_5
        d = self.devs[1]
        self.assertEqual(d["gpu_utilization_percent"], 0)  # a real 0
        self.assertEqual(d["memory_used_bytes"], 1073741824)
        self.assertEqual(d["power_draw_watts"], 45.0)
        self.assertEqual(d["temperature_celsius"], 38)

    def test_what_sysfs_cannot_tell_is_null_not_zero(self):
        nvidia_only = ["memory_reserved_bytes", "pcie_tx_bytes_per_second",
                       "pcie_rx_bytes_per_second", "nvlink_tx_bytes_per_second",
                       "nvlink_rx_bytes_per_second", "clock_event_reasons",
                       "sm_active_percent", "sm_occupancy_percent",
                       "dram_bandwidth_utilization_percent"]
        for d in self.devs:
            for k in nvidia_only:
                self.assertIsNone(d[k], k)
            self.assertEqual(d["field_errors"], {})  # absent files are not errors
        d = self.devs[1]  # no mem_busy_percent, power1_cap, freq1_input, gpu_metrics
        self.assertIsNone(d["energy_joules"])
        self.assertIsNone(d["memory_utilization_percent"])
        self.assertIsNone(d["power_limit_watts"])
        self.assertIsNone(d["sm_clock_mhz"])

    def test_processes_from_fdinfo(self):
        p0 = self.devs[0]["processes"]
        self.assertEqual([p["pid"] for p in p0], [4242])
        self.assertEqual(p0[0]["used_memory_bytes"], 21474836480)  # fd and its dup: once
        # Two sweeps 150 ms apart and the fixture's engine time did not move.
        self.assertEqual(p0[0]["sm_utilization_percent"], 0.0)
        self.assertIsNone(p0[0]["memory_utilization_percent"])
        p1 = self.devs[1]["processes"]
        self.assertEqual([p["pid"] for p in p1], [4343])
        self.assertEqual(p1[0]["used_memory_bytes"], 536870912)
        self.assertIsNone(self.devs[0]["processes_error"])


class AmdgpuOtherFormatsAndErrors(unittest.TestCase):
    def test_csv_rows_and_device_selection(self):
        r = run(["--format", "csv", "--device", "1"])
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = list(csv.DictReader(io.StringIO(r.stdout)))
        self.assertEqual(len(rows), 1)
        self.assertEqual(rows[0]["pci_bus_id"], "0000:c1:00.0")
        self.assertEqual(rows[0]["memory_used_bytes"], "1073741824")
        self.assertEqual(rows[0]["memory_utilization_percent"], "")  # absent

    def test_table_prints_both_cards(self):
        r = run([])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("AMD Instinct MI300X", r.stdout)

    def test_no_amdgpu_card_is_exit_1_naming_the_folder(self):
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, "class", "drm"))
            r = run([], sys_root=tmp)
            self.assertEqual(r.returncode, 1)
            self.assertIn("no amdgpu card under " + tmp + "/class/drm", r.stderr)
            self.assertNotIn("NVML unavailable", r.stderr)

    def test_auto_without_nvml_falls_back_to_amdgpu_sysfs(self):
        # No libnvidia-ml.so.1 on the library path of a test machine; where
        # one is installed, auto rightly picks NVML and there is nothing to see.
        probe = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True)
        if "libnvidia-ml.so.1" in probe.stdout:
            self.skipTest("this machine has NVML: auto picks it")
        r = run(["--format", "json"], backend="auto")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual([d["vendor"] for d in json.loads(r.stdout)["devices"]], ["amd", "amd"])

    def test_bad_backend_name_is_a_usage_error(self):
        r = run([], backend="rocm")
        self.assertEqual(r.returncode, 2)
        self.assertIn("expected auto, nvml, amdsmi, amdgpu-sysfs, nvml+amdsmi or nvml+amdgpu-sysfs", r.stderr)

    def test_changed_files_are_read_live(self):
        with tempfile.TemporaryDirectory() as tmp:
            sys_copy = os.path.join(tmp, "sys")
            shutil.copytree(SYS, sys_copy, symlinks=True)
            busy = os.path.join(sys_copy, "class", "drm", "card1", "device", "gpu_busy_percent")
            with open(busy, "w") as f:
                f.write("93\n")
            os.remove(os.path.join(sys_copy, "class", "drm", "card1", "device",
                                   "mem_info_vram_used"))
            r = run(["--format", "json"], sys_root=sys_copy)
            self.assertEqual(r.returncode, 0, r.stderr)
            d = json.loads(r.stdout)["devices"][0]
            self.assertEqual(d["gpu_utilization_percent"], 93)
            self.assertIsNone(d["memory_used_bytes"])
            self.assertIsNone(d["memory_used_percent"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
