"""`gpusteward quota whatif`: a month's jobs replayed under limits a person tries, over a real warehouse."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from gpusteward.tables import JOBS, QUOTA_SNAPSHOTS
from service.cli import cli
from tests.sla.builders import T0, frame, job
from warehouse import open_warehouse

CONFIG = """
[[clusters]]
name = "east"
gpus = 16

[teams.nlp]
entitled_share = 0.5
accounts = ["nlp"]

[[rules]]
scenario = "training"
match = { partition = "train" }
"""


def _warehouse(tmp_path: Path) -> tuple[Path, Path]:
    config = tmp_path / "gpusteward.toml"
    config.write_text(CONFIG, encoding="utf-8")
    db = tmp_path / "gpusteward.duckdb"
    # nlp may run 4 GPUs and submits five 1-GPU jobs of an hour at once: the fifth waits an hour.
    jobs = [job(n, submit=0, start=0 if n < 5 else 60, end=60 if n < 5 else 120) for n in range(1, 6)]
    quotas = [{"cluster": "east", "ts": T0, "kind": "account", "name": "nlp", "gpu_limit": 4}]
    with open_warehouse(db) as wh:
        wh.ingest("test", {"jobs": frame(jobs, JOBS), "quota_snapshots": frame(quotas, QUOTA_SNAPSHOTS)})
    return config, db


def test_whatif_replays_the_month_under_the_limits_given(tmp_path: Path) -> None:
    config, db = _warehouse(tmp_path)
    args = ["quota", "whatif", "--config", str(config), "--db", str(db), "--month", "2026-03"]
    result = CliRunner().invoke(cli, [*args, "--set", "east/nlp=5"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "east/nlp: 4 -> 5 GPUs"
    # observed p95 of waits 0, 0, 0, 0, 1h is 48m; the replay under 4 GPUs agrees; under 5 nobody waits.
    assert lines[-1].split() == ["east", "nlp", "5", "48m", "48m", "0s", "0s", "0s", "5", "5"]


def test_whatif_refuses_what_it_cannot_replay(tmp_path: Path) -> None:
    config, db = _warehouse(tmp_path)
    args = ["quota", "whatif", "--config", str(config), "--db", str(db), "--month", "2026-03"]
    bad = CliRunner().invoke(cli, [*args, "--set", "east-nlp=5"])
    assert bad.exit_code != 0
    assert "expected CLUSTER/ACCOUNT=GPUS" in bad.output
    unknown = CliRunner().invoke(cli, [*args, "--set", "east/vision=5"])
    assert unknown.exit_code != 0
    assert "no account limit stored for east/vision in 2026-03" in unknown.output
