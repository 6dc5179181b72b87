"""Build `simulator/realism_reference.json` from the public traces in ../shared/traces (run once).

`python -m bench._realism_reference /path/to/shared/traces` rewrites the file. What it copies:
- `acme/cluster_summary.csv`: the Acme authors' (NSDI'24, InternLM/AcmeTrace @ 6d6ac9cd, CC-BY-4.0)
  per-cluster GPU-job table for Seren, Kalos, Philly and Helios (PAI is left out: its mean of
  0.68 GPUs is fractional GPU sharing and it has no final-state columns);
- `helios/helios_cluster_summary.csv`: the Helios authors' (SC'21, S-Lab-System-Group/HeliosData
  @ 159f0cae, CC-BY-4.0) per-cluster table for Venus, Earth, Saturn and Uranus;
- from `acme/util_cdfs.csv` (converted from the Acme utilisation pickles), the 1000-point CDFs of
  DCGM GPU_UTIL, SM_ACTIVE and FB_USED (% of 80 GB) for Seren and Kalos.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "simulator" / "realism_reference.json"
CDF_SERIES = {
    "gpu_util": ("seren_gpu_util_pct", "kalos_gpu_util_pct"),
    "sm_active": ("seren_sm_active_pct", "kalos_sm_active_pct"),
    "fb_used": ("seren_gpu_fb_used_pct_of_80GB", "kalos_gpu_fb_used_pct_of_80GB"),
}


def _f(value: str) -> float | None:
    return float(value) if value not in ("", None) else None


# reference key -> the column both tables name it by (None: only the Acme table has it)
_COLUMNS = {
    "run_median_s": "med_run_time_gpu",
    "run_mean_s": "avg_run_time_gpu",
    "run_max_s": "max_run_time_gpu",
    "queue_median_s": "med_que_time_gpu",
    "queue_mean_s": "avg_que_time_gpu",
    "gpus_mean": "avg_gpu_num",
    "gpus_median": "med_gpu_num",
    "gpus_max": "max_gpu",
    "completed_share": "complete_rate_gpu",
    "cancelled_share": "cancel_rate_gpu",
    "failed_share": "fail_rate_gpu",
}
_GPU_TIME = {"completed": "complete_gpu_time", "cancelled": "cancel_gpu_time", "failed": "fail_gpu_time"}


def _row(r: dict[str, str], cluster: str, source: str) -> dict[str, object]:
    row: dict[str, object] = {"cluster": cluster, "source": source}
    row.update({key: _f(r[col]) for key, col in _COLUMNS.items() if col in r})
    total = sum(_f(r[col]) or 0.0 for col in _GPU_TIME.values())
    row.update({f"{name}_gpu_time_share": (_f(r[col]) or 0.0) / total for name, col in _GPU_TIME.items()})
    return row


def _clusters(traces: Path) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    with (traces / "acme" / "cluster_summary.csv").open() as f:
        for r in csv.DictReader(f):
            if r["id"] != "PAI":
                rows.append(_row(r, r["id"], "acme/cluster_summary.csv (Acme authors, NSDI'24)"))
    with (traces / "helios" / "helios_cluster_summary.csv").open() as f:
        for r in csv.DictReader(f):
            if r["id"] != "total":  # the Acme table's Helios row is the same total
                source = "helios/helios_cluster_summary.csv (Helios authors, SC'21)"
                rows.append(_row(r, f"Helios-{r['id']}", source))
    return rows


def _cdfs(traces: Path) -> dict[str, dict[str, list[list[float]]]]:
    wanted = {s: k for k, pair in CDF_SERIES.items() for s in pair}
    points: dict[str, list[tuple[float, float]]] = {s: [] for s in wanted}
    with (traces / "acme" / "util_cdfs.csv").open() as f:
        for r in csv.DictReader(f):
            if r["series"] in points:
                points[r["series"]].append((float(r["cdf_pct"]) / 100, float(r["value"])))
    out: dict[str, dict[str, list[list[float]]]] = {k: {} for k in CDF_SERIES}
    for series, pts in points.items():
        pts.sort()
        cluster = series.split("_", 1)[0]
        out[wanted[series]][cluster] = [[round(p, 6) for p, _ in pts], [round(v, 4) for _, v in pts]]
    return out


def main(argv: list[str]) -> int:
    traces = Path(argv[0] if argv else "../shared/traces")
    doc = {
        "about": __doc__,
        "clusters": _clusters(traces),
        "cdfs": _cdfs(traces),
    }
    OUT.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
