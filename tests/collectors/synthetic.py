"""Small synthetic inputs in the simulator's shapes: Prometheus dumps in OpenMetrics, second timestamps.

`dcgm_dump` writes dcgm-exporter series (one sample per GPU and field per minute) with the labels
Prometheus adds (`instance`, `job`, `cluster`) and `hpc_job`. `Replica` keeps a vLLM server's
cumulative counters so a test can advance it, restart it and scrape it into dump lines.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field

GPU_FIELDS = (
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
    "DCGM_FI_DEV_FB_USED",
    "DCGM_FI_DEV_FB_FREE",
    "DCGM_FI_DEV_POWER_USAGE",
    "DCGM_FI_DEV_GPU_TEMP",
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
    "DCGM_FI_DEV_XID_ERRORS",
)


def gpu_labels(host: str, gpu: int, *, job: str = "", cluster: str = "c1", extra: str = "") -> str:
    labels = (
        f'gpu="{gpu}",UUID="GPU-{host}-{gpu}",pci_bus_id="00000000:{gpu:02X}:00.0",device="nvidia{gpu}",'
        f'modelName="NVIDIA H100 80GB HBM3",Hostname="{host}",DCGM_FI_DRIVER_VERSION="550.90.07"'
    )
    if job:
        labels += f',hpc_job="{job}"'
    labels += f',instance="{host}:9400",job="dcgm",cluster="{cluster}"'
    return labels + extra


def dump(series: Iterable[tuple[str, str, Iterable[tuple[float | str, float]]]], *, metadata: bool = True) -> str:
    """OpenMetrics text: (name, labels, [(value, seconds)]) per series, families kept together."""
    lines: list[str] = []
    family = ""
    for name, labels, points in series:
        if metadata and name != family:
            lines.append(f"# TYPE {name} gauge")
            family = name
        lines.extend(f"{name}{{{labels}}} {value} {ts:.3f}" for value, ts in points)
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


def dcgm_dump(hosts: int, gpus: int, minutes: int, *, start: int = 1_793_491_200, seed: int = 0) -> str:
    """Every field of every GPU once a minute; GPU g of host h runs job `100h+g//2`."""
    rng = random.Random(seed)
    series = []
    for name in GPU_FIELDS:
        for h in range(hosts):
            for g in range(gpus):
                labels = gpu_labels(f"node-{h:02d}", g, job=str(100 * h + g // 2))
                # A DCGM_FI_PROF_* field is a ratio 0..1; the others take 0..99 as they come.
                scale = 100 if name.startswith("DCGM_FI_PROF_") else 1
                points = [(rng.randrange(0, 100) / scale, start + 60 * i) for i in range(minutes)]
                series.append((name, labels, points))
    return dump(series)


BUCKETS = ("0.5", "1.0", "2.5", "+Inf")


@dataclass
class Replica:
    """A vLLM replica's cumulative counters (one engine)."""

    model: str = "meta-llama/Llama-3.1-8B-Instruct"
    instance: str = "10.0.0.1:8000"
    cluster: str = "c1"
    reasons: dict[str, float] = field(default_factory=lambda: {"stop": 0.0, "length": 0.0})
    e2e: list[float] = field(default_factory=lambda: [0.0] * len(BUCKETS))
    e2e_sum: float = 0.0
    ttft: list[float] = field(default_factory=lambda: [0.0] * len(BUCKETS))
    ttft_sum: float = 0.0
    prompt: float = 0.0
    generation: float = 0.0
    running: float = 0.0
    waiting: float = 0.0
    kv: float = 0.0

    def serve(self, latencies: list[float], *, aborted: int = 0, running: float = 0, waiting: float = 0) -> None:
        """Finish one request per latency (the first `aborted` of them aborted)."""
        for i, lat in enumerate(latencies):
            reason = "abort" if i < aborted else "stop"
            self.reasons[reason] = self.reasons.get(reason, 0.0) + 1
            for b, le in enumerate(BUCKETS):
                if lat <= float(le):
                    self.e2e[b] += 1
                if lat / 10 <= float(le):
                    self.ttft[b] += 1
            self.e2e_sum += lat
            self.ttft_sum += lat / 10
            self.prompt += 100
            self.generation += 20
        self.running, self.waiting, self.kv = running, waiting, min(1.0, running / 100)

    def restart(self) -> None:
        fresh = Replica(self.model, self.instance, self.cluster)
        self.__dict__.update(fresh.__dict__)

    def scrape(self, ts: float, *, rng: random.Random | None = None, inf: str = "+Inf") -> list[tuple[str, str, float]]:
        """(name, labels, value) lines of one scrape, in a shuffled order when `rng` is given."""
        base = f'model_name="{self.model}",instance="{self.instance}",job="vllm",cluster="{self.cluster}"'
        out = [("vllm:request_success_total", f'finished_reason="{r}",{base}', v) for r, v in self.reasons.items()]
        for name, counts, total in (
            ("vllm:e2e_request_latency_seconds", self.e2e, self.e2e_sum),
            ("vllm:time_to_first_token_seconds", self.ttft, self.ttft_sum),
        ):
            for le, count in zip(BUCKETS, counts, strict=True):
                out.append((f"{name}_bucket", f'le="{inf if le == "+Inf" else le}",{base}', count))
            out.append((f"{name}_sum", base, total))
            out.append((f"{name}_count", base, counts[-1]))
        out.append(("vllm:prompt_tokens_total", base, self.prompt))
        out.append(("vllm:generation_tokens_total", base, self.generation))
        out.append(("vllm:num_requests_running", base, self.running))
        out.append(("vllm:num_requests_waiting", base, self.waiting))
        out.append(("vllm:kv_cache_usage_perc", base, self.kv))
        if rng is not None:
            rng.shuffle(out)
        return out


def vllm_dump(scrapes: list[tuple[float, list[tuple[str, str, float]]]]) -> str:
    """A dump of several scrapes: bare families (no metadata), each series' samples in time order."""
    series: dict[tuple[str, str], list[tuple[float | str, float]]] = {}
    for ts, lines in scrapes:
        for name, labels, value in lines:
            series.setdefault((name, labels), []).append((value, ts))
    return dump(((name, labels, points) for (name, labels), points in series.items()), metadata=False)
