"""Synthetic dcgm-exporter output in the exporter's own shape, for parser tests and measurements.

One exporter per node prints `# HELP`/`# TYPE` and then a line per GPU for each of 20 default
fields, with the label set of dcgm-exporter 3.x (10 labels, `Hostname` spelled with a capital H).
A scrape of many nodes is the concatenation of their outputs, as a federating collector sees it.
"""

from __future__ import annotations

import random

FIELDS: tuple[tuple[str, str, str], ...] = (
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ)."),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries."),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."),
    ("DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %)."),
    ("DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %)."),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_FB_RESERVED", "gauge", "Framebuffer memory reserved (in MiB)."),
    ("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter", "Total number of NVLink bandwidth counters for all lanes."),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active."),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active."),
    ("DCGM_FI_PROF_DRAM_ACTIVE", "gauge", "Ratio of cycles the device memory interface is active."),
    ("DCGM_FI_PROF_PCIE_TX_BYTES", "gauge", "The rate of data transmitted over the PCIe bus."),
)


def _value(name: str, rng: random.Random) -> str:
    """A value inside the field's physical range, which the readers check (docs/collectors.md, Validation)."""
    if name.endswith("_ACTIVE"):
        return f"{rng.uniform(0, 1):f}"  # DCGM_FI_PROF_* activity fields are ratios
    if name.startswith("DCGM_FI_PROF") or name == "DCGM_FI_DEV_POWER_USAGE":
        return f"{rng.uniform(0, 700):f}"
    if name.endswith("_UTIL"):
        return str(rng.randrange(0, 101))
    if name.endswith("_TEMP"):
        return str(rng.randrange(20, 95))
    if name == "DCGM_FI_DEV_XID_ERRORS":
        return str(rng.choice((0, 0, 0, 0, 0, 0, 0, 13, 48, 79)))  # mostly none; real codes otherwise
    return str(rng.randrange(0, 100_000))


def scrape(nodes: int, gpus: int = 8, *, seed: int = 0) -> str:
    """The concatenated /metrics text of `nodes` exporters (values change with `seed`)."""
    rng = random.Random(seed)
    out: list[str] = []
    for n in range(nodes):
        host = f"gpu-node-{n:04d}"
        label_sets = [
            f'gpu="{g}",UUID="GPU-{n:08x}-{g:04x}-4a6e-9c1b-{n * 8 + g:012x}",'
            f'pci_bus_id="00000000:{0x18 + g:02X}:00.0",'
            f'device="nvidia{g}",modelName="NVIDIA H100 80GB HBM3",Hostname="{host}",'
            f'DCGM_FI_DRIVER_VERSION="550.90.07",container="main",namespace="team-{n % 7}",pod="train-{n}-{g // 4}"'
            for g in range(gpus)
        ]
        for name, type_, help_ in FIELDS:
            out.append(f"# HELP {name} {help_}\n# TYPE {name} {type_}\n")
            for labels in label_sets:
                value = _value(name, rng)
                out.append(f"{name}{{{labels}}} {value}\n")
    return "".join(out)
