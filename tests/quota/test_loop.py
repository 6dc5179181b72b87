"""The loop closed on the simulated fleet (issue 21, item 6).

Month 1 (February 2026) is simulated, imported, evaluated and planned; the plan is approved and applied
to the simulated fleet's limits through the product's QuotaWriter protocol; month 2 (March 2026, which
starts on the same weekday) is simulated with the same seed, so the same demand, under the new limits,
imported and reviewed. Its follow-up section shows the replay's prediction beside the measurement, with
the calibration error, for every team and queue the plan's replay moves; the waits it shortens beyond
that error (its targets) were shorter in month 2. The test log prints prediction against measurement;
where the measurement falls outside the calibration error the review says so (better or worse than
predicted), and docs/quota.md reports the figures.

The pool's time zone is UTC here, so each simulated run is exactly one review month. The scheduler's
files are imported (job records, sacctmgr snapshots) and the first and last day of GPU telemetry, for
the GPU inventory the replay packs jobs on and the month's end: the simulated fleet writes only those
(the days between answer no question of the loop's). Month 1's records
still running or pending at its end stay open in the warehouse (the simulator's month ends there); the
measurement reads only the records submitted in month 2, which they are not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from gpusteward.config import example_config_path, load_config
from gpusteward.domain import Month
from quota.plan import Plan
from quota.workflow import apply_plan
from service.importer import ignore_patterns, import_files
from service.pipeline import evaluate, produce_review
from simulator import IMPORT_IGNORE, simulate
from simulator.limits import FleetLimits
from sla.followup import MIN_TOLERANCE_S, ReplayCheck, replay_checks
from tests.quota.fleet_writer import FleetWriter
from warehouse import control, open_warehouse
from warehouse.quota_store import WarehouseQuotaStore, applied_changes, plan_body

pytestmark = pytest.mark.slow  # two simulated months of the 64-GPU fleet (CI runs slow tests too)

SEED = 7
NODES = 8  # the example config's clusters: 32 GPUs each
DAYS = 28  # February 2026; March 2026 starts on the same weekday (a Sunday)
FIRST, SECOND = Month(2026, 2), Month(2026, 3)
APPROVED = datetime(2026, 2, 28, 20, 0, tzinfo=UTC)
APPLIED = datetime(2026, 2, 28, 21, 0, tzinfo=UTC)


def first_and_last_day_of_dcgm(path: str) -> bool:
    """The telemetry the loop's fleet writes: DCGM's first and last day. The loop is about waits and limits: job
    records, sacctmgr snapshots, and the GPU inventory (the nodes the replay packs jobs on) and where the data ends
    (the month's window); the days between and inference answer no question of its."""
    return path.startswith("dcgm/") and path.endswith(("-01.om.gz", f"-{DAYS}.om.gz"))


@dataclass(frozen=True)
class Loop:
    plan: Plan
    override: str | None  # stored on the approval's audit row
    applied: dict[tuple[str, str], int]
    checks: tuple[ReplayCheck, ...]
    review: dict[str, str]  # language -> month 2's review (Markdown)


def _config(root: Path) -> Path:
    text = Path(example_config_path()).read_text(encoding="utf-8")
    head, tables = text.split("\n[", 1)  # the pool's own keys come before the first table
    text = re.sub(r'(?m)^timezone = "[^"]*"$', 'timezone = "UTC"', head) + "\n[" + tables
    path = root / "gpusteward.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def loop(tmp_path_factory: pytest.TempPathFactory) -> Loop:
    root = tmp_path_factory.mktemp("loop")
    config = load_config(_config(root))
    assert config.timezone == "UTC"
    ignore = ignore_patterns(config, IMPORT_IGNORE)
    limits = FleetLimits(root / "limits.json", NODES)
    simulate(root / "month1", date(2026, 2, 1), DAYS, SEED, nodes=NODES, telemetry=first_and_last_day_of_dcgm)
    with open_warehouse(root / "w.duckdb") as wh:
        assert not import_files(wh, [root / "month1"], config=config, ignore=ignore).errors
        evaluate(wh, config, FIRST)
        plan = Plan.from_dict(plan_body(wh, str(wh.plans(FIRST)["plan_id"][-1])) or {})
        override = "loop test: month 2 measures what the flagged objectives do" if plan.protected else None
        control.record(wh, "lead", "plan.approve", plan.id, at=APPROVED, reason="loop test", override=override)
        record = apply_plan(WarehouseQuotaStore(wh), FleetWriter(limits), plan.id, actor="ops", clock=lambda: APPLIED)
        assert record.result == "applied", record.detail
        simulate(root / "month2", date(2026, 3, 1), DAYS, SEED, nodes=NODES, account_limits=limits.overrides(),
                 telemetry=first_and_last_day_of_dcgm)
        assert not import_files(wh, [root / "month2"], config=config, ignore=ignore).errors
        outputs = evaluate(wh, config, SECOND)
        checks = replay_checks(SECOND, applied_changes(wh), outputs.plan_replay)
        stored = control.plan_decisions(wh).filter(plan_id=plan.id)["override"][0]
        _review, paths = produce_review(wh, config, SECOND, root / "reports", formats=["md"], langs=["en", "zh"])
    texts = {p.name.split(".")[-2]: p.read_text(encoding="utf-8") for p in paths if p.suffix == ".md"}
    return Loop(plan, stored, limits.overrides(), checks, texts)


def _report(checks: tuple[ReplayCheck, ...]) -> str:
    def m(value: float | None) -> str:
        return "-" if value is None else f"{value / 60:7.1f}"

    lines = ["target                          observed  replay-now  error  predicted  measured  (min)  verdict"]
    lines += [f"{c.cluster}/{c.group}/{c.subject:20s} {m(c.observed_before)} {m(c.replay_before)} {m(c.error)} "
              f"{m(c.predicted)} {m(c.measured)}  {c.verdict}" for c in checks]
    return "\n".join(lines)


def test_the_plan_changes_limits_and_the_fleet_runs_month_two_under_them(loop: Loop) -> None:
    changes = {(i.cluster, i.name): i.proposed_gpus for i in loop.plan.changes}
    assert changes, "the simulated month gives the recommender nothing to change"
    assert loop.applied == changes


def _moves(check: ReplayCheck) -> tuple[float, float, float]:
    """(predicted move, measured move, calibration error) of a wait p95, in seconds."""
    assert check.observed_before is not None
    assert check.measured is not None
    assert check.predicted is not None
    assert check.replay_before is not None
    assert check.error is not None
    return check.predicted - check.replay_before, check.measured - check.observed_before, abs(check.error)


def test_the_waits_the_plan_targets_fall_as_the_replay_predicted(loop: Loop) -> None:
    """Every wait the replay says the plan shortens by more than its calibration error (the plan's
    targets) was shorter in month 2 than in month 1: it moved toward its objective."""
    report = _report(loop.checks)
    print("\n" + report)  # prediction against measurement, in the test log
    targets = [c for c in loop.checks if (m := _moves(c))[0] < -max(m[2], MIN_TOLERANCE_S)]
    assert targets, "the plan's replay shortens no wait beyond its calibration error\n" + report
    for check in targets:
        assert _moves(check)[1] < 0, report


def test_a_plan_its_replay_flags_is_applied_only_with_the_override_recorded(loop: Loop) -> None:
    assert (loop.override is not None) == bool(loop.plan.protected)
    if loop.plan.protected:  # on this month: the */eval queue-wait line (more records past 8h in the replay)
        assert {f["objective"] for f in loop.plan.protected} <= {"inference_reserve", "queue_wait", "scenario_wait"}


def test_the_follow_up_shows_the_prediction_beside_the_measurement(loop: Loop) -> None:
    en, zh = loop.review["en"], loop.review["zh"]
    section = en[en.index("## Whether last month's applied changes helped"):]
    assert "The replay's prediction for the teams and queues last month's applied plan targeted" in section
    assert "| Predicted p95 | Measured p95 | Measured minus predicted |" in section
    rows = [line for line in section.splitlines() if line.startswith(f"| {loop.plan.id} |")]
    assert len(rows) == len(loop.checks)
    verdicts = {"as_predicted": "as predicted (within the calibration error)", "no_value": "not enough data",
                "better": "better than predicted (beyond the calibration error)",
                "worse": "worse than predicted (beyond the calibration error)"}
    for row, check in zip(rows, loop.checks, strict=True):
        assert f"| {verdicts[check.verdict]}" in row, row
    assert "上月已执行方案所针对的团队与队列：回放的预测与本月实测并列" in zh
