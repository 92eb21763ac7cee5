"""The NVML stand-in as the integration tests drive it: realistic H100
devices for scenario files, and a scenario file that can be rewritten live
(the stand-in re-reads it when its mtime changes)."""
import json
import os
import tempfile

H100 = {
    "name": "NVIDIA H100 80GB HBM3",
    "memory_total_bytes": 85520809984,
    "power_limit_mw": 700000,
    "gpm_supported": True,
    "nvlink_links": 18,
}


def device(i, **values):
    d = dict(H100)
    d["uuid"] = "GPU-%08x-1111-2222-3333-44445555666%d" % (0xABC00000 + i, i)
    d["pci_bus_id"] = "00000000:%02X:00.0" % (0x17 + i)
    v = {
        "gpu_util": 10 * (i + 1),
        "mem_util": 5,
        "memory_used_bytes": 1073741824 * (i + 1),
        "memory_reserved_bytes": 536870912,
        "temperature_c": 40 + i,
        "power_mw": 100000 + 1000 * i,
        "sm_clock_mhz": 1980,
        "clock_event_reasons": 1,
        "pcie_tx_kbps": 1000,
        "pcie_rx_kbps": 2000,
        "nvlink_tx_kib_per_s": 1024,
        "nvlink_rx_kib_per_s": 2048,
        "sm_active": 25.0,
        "sm_occupancy": 12.5,
        "dram_bw_util": 7.0,
    }
    v.update(values)
    d["values"] = v
    return d


class Sim:
    """A scenario file the stand-in reads; rewrite() steers it live."""

    def __init__(self, scenario):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "scenario.json")
        self.scenario = None
        self.rewrite(scenario)

    def rewrite(self, scenario):
        self.scenario = scenario
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(scenario, f)
        os.replace(tmp, self.path)

    def close(self):
        self.dir.cleanup()
