"""`gpusteward quota whatif` (a month's jobs replayed under limits a person tries) and `quota approve`
of a plan its replay flags (refused without an override), over a real warehouse."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from gpusteward.domain import Month
from gpusteward.tables import JOBS, QUOTA_SNAPSHOTS
from quota.plan import Plan, PlanItem
from service.cli import cli
from tests.sla.builders import T0, frame, job
from warehouse import control, open_warehouse

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
    # observed p95 of waits 0, 0, 0, 0, 1h is 48m; the replay under 4 GPUs agrees (error 0); under 5 nobody waits.
    rows = [line.split() for line in lines if line.startswith("east ")]
    assert rows[0] == ["east", "team", "nlp", "5", "48m", "48m", "0s", "0s"]
    assert rows[1] == ["east", "queue", "east/train", "5", "48m", "48m", "0s", "0s"]


def test_whatif_refuses_what_it_cannot_replay(tmp_path: Path) -> None:
    config, db = _warehouse(tmp_path)
    args = ["quota", "whatif", "--config", str(config), "--db", str(db), "--month", "2026-03"]
    bad = CliRunner().invoke(cli, [*args, "--set", "east-nlp=5"])
    assert bad.exit_code != 0
    assert "expected CLUSTER/ACCOUNT=GPUS" in bad.output
    unknown = CliRunner().invoke(cli, [*args, "--set", "east/vision=5"])
    assert unknown.exit_code != 0
    assert "no account limit stored for east/vision in 2026-03" in unknown.output


FLAG = {"objective": "scenario_wait", "cluster": "east", "subject": "interactive", "current": 0.0, "plan": 6600.0,
        "threshold": None, "summary": "interactive on east: replayed wait p95 110 min instead of 0 min",
        "message": '[{"key":"quota.protected.scenario_wait","params":{"scenario":{"t":"interactive"},'
                   '"cluster":{"t":"east"},"current":{"q":0.0,"kind":"duration"},"plan":{"q":6600.0,"kind":"duration"}}}]'}


def _flagged_plan(db: Path) -> str:
    item = PlanItem("east", "account", "nlp", "nlp", 4, 5, "[]", "[]", "[]")
    plan = Plan("2026-03-flagged", "2026-03", T0, (item,), protected=(FLAG,))
    with open_warehouse(db) as wh:
        wh.store_plan(plan.id, Month(2026, 3), T0, plan.status, dry_run=True, body=plan.to_dict(),
                      items=plan.to_frame())
    return plan.id


def test_a_plan_flagged_by_its_replay_is_approved_only_with_an_override(tmp_path: Path) -> None:
    config, db = _warehouse(tmp_path)
    plan_id = _flagged_plan(db)
    base = ["--config", str(config), "--db", str(db)]
    refused = CliRunner().invoke(cli, ["quota", "approve", plan_id, *base, "--by", "alice"])
    assert refused.exit_code != 0
    assert "makes 1 protected objective(s) worse in its replay (interactive on east" in refused.output
    assert "--override" in refused.output
    assert "Not approvable without an override" in refused.output  # the plan printed first says so
    with open_warehouse(db) as wh:
        assert control.actions(wh).is_empty()  # nothing recorded
    approved = CliRunner().invoke(cli, ["quota", "approve", plan_id, *base, "--by", "alice",
                                        "--override", "release week: notebooks move to west"])
    assert approved.exit_code == 0, approved.output
    with open_warehouse(db) as wh:
        row = control.actions(wh).row(0, named=True)
    assert (row["action"], row["actor"], row["override"]) == ("plan.approve", "alice",
                                                               "release week: notebooks move to west")
    assert row["acted_at"] is not None
    shown = CliRunner().invoke(cli, ["quota", "show", plan_id, *base, "--lang", "zh"])
    assert shown.exit_code == 0, shown.output
    assert "越过保护的理由：release week: notebooks move to west" in shown.output
    assert "未经越过保护的批准不得执行" in shown.output
    assert "状态：已批准" in shown.output


def test_plan_tables_speak_chinese(tmp_path: Path) -> None:
    config, db = _warehouse(tmp_path)
    args = ["quota", "whatif", "--config", str(config), "--db", str(db), "--month", "2026-03", "--lang", "zh"]
    result = CliRunner().invoke(cli, [*args, "--set", "east/nlp=5"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == "east/nlp：4 -> 5 块 GPU"
    for header in ("实测 p95", "回放误差", "方案 GPU 小时"):
        assert header in result.output
    assert "Observed" not in result.output
