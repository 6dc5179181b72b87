"""From plan to ledger lines: one warning per idle stretch, one action per run, by mode; objections hold."""

from __future__ import annotations

from datetime import datetime

import polars as pl

from gpusteward.reclaim_ledger import RECLAIM_DECISIONS
from sla.reclaim import reclaim_plan
from sla.reclaim_decide import decide, warned_of
from sla.reclaim_inputs import EXEMPTED, ReclaimInputs
from tests.sla.builders import at
from tests.sla.builders import config as load
from tests.sla.reclaim_builders import ALL_IDLE, BUSY, IDLE, gpu_minutes_of, reclaim_config, trainer
from tests.sla.reclaim_builders import reclaim_inputs as inputs_of

CONFIG = reclaim_config()


def _inputs(now: datetime, ledger: pl.DataFrame, utils: list[float] | None = None, *, start: float = 0,
            exempted: pl.DataFrame | None = None) -> ReclaimInputs:
    """Training job 2 (requeue, grace 0s) with `utils` per minute from T0 up to `now`."""
    minutes = int((now - at(0)).total_seconds() // 60)
    running = {**trainer(2), "start_time": at(start), "submit_time": at(start)}
    base = inputs_of(running=[running], gpu_minutes=gpu_minutes_of(2, (utils or ALL_IDLE)[:minutes]),
                     now=now)
    return ReclaimInputs(base.now, base.window_start, base.running, base.waiting, base.gpu_minutes,
                         base.inference_windows, warned=warned_of(ledger),
                         exempted=exempted if exempted is not None else pl.DataFrame(schema=EXEMPTED))


def _turn(now: datetime, ledger: pl.DataFrame, **kw: object) -> pl.DataFrame:
    plan = reclaim_plan(_inputs(now, ledger, **kw), CONFIG)  # type: ignore[arg-type]
    return pl.concat([ledger, decide(plan, ledger, now)])


def test_grace_zero_writes_the_warning_with_the_action_and_nothing_after() -> None:
    empty = pl.DataFrame(schema=RECLAIM_DECISIONS)
    ledger = _turn(at(240), empty)
    assert ledger.select("kind", "state", "job_id", "policy").rows() == [
        ("warning", "shadow", "2", "training"), ("action", "shadow", "2", "training")]
    warning, action = ledger.to_dicts()
    assert action["warning_id"] == warning["decision_id"]
    assert action["decided_by"] == "policy training"
    assert warning["idle_gpu_hours"] == 4.0  # 1 GPU, idle (at least) since T0, the first minute read
    # The same plan again (a restart at the same watermark), and later turns of the same run: nothing new.
    assert decide(reclaim_plan(_inputs(at(240), ledger), CONFIG), ledger, at(240)).is_empty()
    assert _turn(at(300), ledger).height == 2


def test_a_warning_of_an_earlier_stretch_or_run_does_not_count() -> None:
    warned_only = pl.DataFrame([{
        "decision_id": "w1", "kind": "warning", "cluster": "east", "job_id": "2", "run_start": at(0),
        "policy": "training", "decided_at": at(100), "state": "shadow", "action": "requeue", "mode": "shadow",
    }], schema=RECLAIM_DECISIONS)
    # Busy until 02:30, idle after: the warning at 01:40 was about the earlier stretch.
    utils = [BUSY] * 150 + [IDLE] * 150
    plan = reclaim_plan(_inputs(at(240), warned_only, utils), CONFIG)
    row = plan.row(0, named=True)
    assert (row["idle_since"], row["stage"]) == (at(150), "act")  # warned anew (grace 0s: with the action)
    lines = decide(plan, warned_only, at(240))
    assert lines["kind"].to_list() == ["warning", "action"]
    # A requeued job's next run (started at 03:00) is a new episode: the first run's warning is not its own.
    plan = reclaim_plan(_inputs(at(300), warned_only, [BUSY] * 180 + [IDLE] * 120, start=180), CONFIG)
    assert plan.row(0, named=True)["stage"] == "act"
    assert decide(plan, warned_only, at(300))["warning_id"].drop_nulls().to_list() != ["w1"]


def test_an_objection_leaves_the_job_alone_until_it_ends() -> None:
    empty = pl.DataFrame(schema=RECLAIM_DECISIONS)
    objection = pl.DataFrame([{"cluster": "east", "job_id": "2", "until": at(250), "by": "lea"}], schema=EXEMPTED)
    plan = reclaim_plan(_inputs(at(240), empty, exempted=objection), CONFIG)
    assert plan.select("verdict", "reason").row(0) == ("left_alone", "exempt_objection")
    assert decide(plan, empty, at(240)).is_empty()
    later = reclaim_plan(_inputs(at(260), empty, [IDLE] * 260, exempted=objection), CONFIG)
    assert later["verdict"].to_list() == ["candidate"]  # the exemption ended at 04:10


def test_modes_decide_the_states() -> None:
    for mode, warning, action in (("approve", "sent", "awaiting_approval"), ("auto", "sent", "pending")):
        toml = CONFIG_TOML.replace('action = "requeue"', f'action = "requeue"\nmode = "{mode}"')
        plan = reclaim_plan(_inputs(at(240), pl.DataFrame(schema=RECLAIM_DECISIONS)), load(toml))
        lines = decide(plan, pl.DataFrame(schema=RECLAIM_DECISIONS), at(240))
        assert lines["state"].to_list() == [warning, action]


CONFIG_TOML = """
[[reclaim.policies]]
name = "training"
scenario = "training"
when = "idle"
idle_for = "1h"
grace = "0s"
action = "requeue"
"""



def test_a_due_action_is_checked_again_before_it_is_sent() -> None:
    """An approved action may be sent hours after it was decided: it goes only while the kill switch is off,
    its run still runs, the job is still the same idle stretch's candidate, and the cluster's hour has room."""
    from dataclasses import replace

    from sla.reclaim_safety import recheck

    empty = pl.DataFrame(schema=RECLAIM_DECISIONS)
    running = _inputs(at(240), empty).running
    line = {"decision_id": "a1", "kind": "action", "cluster": "east", "job_id": "2", "run_start": at(0),
            "policy": "training", "action": "requeue", "idle_since": at(0)}
    idle = reclaim_plan(_inputs(at(240), empty), CONFIG)
    assert recheck(line, idle, running, 0, CONFIG) == ("go", "")
    assert recheck(line, idle, running, 5, CONFIG) == (
        "hold", "the per-hour cap: 5 of 5 actions sent in cluster east")
    paused = replace(CONFIG, reclaim=replace(CONFIG.reclaim, paused=True))
    assert recheck(line, idle, running, 0, paused)[0] == "hold"
    # The run it was about is over (the job ended, or a requeued job runs again as a new run).
    assert recheck({**line, "run_start": at(-30)}, idle, running, 0, CONFIG)[0] == "ended"
    # Busy now; idle again, but only after being busy (a new stretch, to be warned anew); no policy covers it.
    busy = reclaim_plan(_inputs(at(240), empty, [IDLE] * 200 + [BUSY] * 40), CONFIG)
    assert recheck(line, busy, running, 0, CONFIG) == ("stale", "left alone now: busy")
    again = reclaim_plan(_inputs(at(240), empty, [IDLE] * 100 + [BUSY] * 10 + [IDLE] * 130), CONFIG)
    assert recheck(line, again, running, 0, CONFIG) == (
        "stale", "busy since the warning (idle again only since 2026-03-01 01:50)")
    assert recheck({**line, "policy": "gone"}, idle, running, 0, CONFIG)[0] == "stale"


def test_a_dropped_action_leaves_the_run_to_a_new_warning() -> None:
    """An action dropped as stale does not close the run: its next idle stretch is warned and acted on anew."""
    utils = [IDLE] * 100 + [BUSY] * 10 + [IDLE] * 190
    first = _turn(at(100), pl.DataFrame(schema=RECLAIM_DECISIONS), utils=utils)
    assert first["kind"].to_list() == ["warning", "action"]
    dropped = first.with_columns(
        pl.when(pl.col("kind") == "action").then(pl.lit("stale")).otherwise("state").alias("state"))
    later = _turn(at(240), dropped, utils=utils)
    assert later.select("kind", "decided_at").rows()[2:] == [("warning", at(240)), ("action", at(240))]
