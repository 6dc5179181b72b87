"""Approve -> apply -> audit -> rollback: a stored plan written to a scheduler through a `QuotaWriter`.

The rules (docs/quota.md):
- only an approved plan is applied (a dry run needs no approval); an applied plan is not applied twice;
- every limit is read first, and the whole plan is refused if any differs from the plan's current value
  (someone changed it since the plan was made): nothing is written;
- limits are written one by one through guarded writes (read, compare, write, read back); if one
  fails, the ones already written are restored, so a plan is never left half-applied;
- a rollback writes the applied changes back in reverse order, guarded the same way;
- with separation of duties, whoever approved a plan cannot apply it (and, in `warehouse.control`,
  whoever proposed or applied it cannot approve it);
- every attempt, refused ones included, is stored as one audit record (who approved, who applied,
  when, transport, before and after per limit, result).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from collectors.slurm.writes import DryRunScheduler, QuotaConflictError, QuotaTarget, QuotaWriter
from quota.plan import Plan, PlanItem
from warehouse.quota_store import ApplyAction, ApplyRecord, ChangeRecord, Decision, in_force


class QuotaStore(Protocol):
    """Where plans, decisions and apply records live (`warehouse.quota_store.WarehouseQuotaStore`)."""

    def plan_body(self, plan_id: str) -> dict[str, Any] | None: ...

    def decision(self, plan_id: str) -> Decision | None: ...

    def applies(self, plan_id: str) -> list[ApplyRecord]: ...

    def record_apply(self, record: ApplyRecord) -> None: ...


class PlanNotFoundError(LookupError):
    """No stored plan has this id."""


def target_of(
    item: PlanItem, *, flavor: str | None = None, field: str | None = None, resource: str | None = None
) -> QuotaTarget:
    """The scheduler object holding an item's limit: Slurm accounts are per cluster, QOS are global; a
    Kueue `clusterqueue` takes `flavor` (None: its only GPU flavor), a Volcano `queue` takes `field`
    (capability, the default, deserved or guarantee). `functools.partial` fixes the options for a run."""
    if item.kind == "clusterqueue":
        return QuotaTarget(item.kind, item.name, flavor=flavor, resource=resource)
    if item.kind == "queue":
        return QuotaTarget(item.kind, item.name, field=field, resource=resource)
    return QuotaTarget(item.kind, item.name, cluster=item.cluster if item.kind == "account" else None)


@dataclass(frozen=True)
class _Step:
    target: QuotaTarget
    cluster: str | None
    expected: int | None
    new: int | None


def _show(value: int | None) -> str:
    return "unlimited" if value is None else str(value)


def _change(seq: int, step: _Step, outcome: str, *, before: int | None, after: int | None, detail: str) -> ChangeRecord:
    t = step.target
    return ChangeRecord(seq, step.cluster, t.kind, t.name, step.expected, step.new, before, after, outcome, detail)


@dataclass(frozen=True)
class _Outcome:
    result: str
    detail: str
    changes: tuple[ChangeRecord, ...]


def _preflight(steps: list[_Step], writer: QuotaWriter) -> _Outcome | None:
    """Read every limit; a refusal (nothing written) when any is not what the plan expects."""
    read: list[int | None] = []
    for step in steps:
        try:
            read.append(writer.read_gpu_limit(step.target))
        except Exception as exc:  # any failure to read refuses the whole plan before a write
            return _Outcome("refused", f"could not read {step.target}: {exc}; nothing was written", ())
    stale = [(s, r) for s, r in zip(steps, read, strict=True) if r != s.expected]
    if not stale:
        return None
    changes = tuple(
        _change(n, s, "conflict" if r != s.expected else "not-reached", before=r, after=r,
                detail=f"found {_show(r)}, plan expects {_show(s.expected)}" if r != s.expected else "")
        for n, (s, r) in enumerate(zip(steps, read, strict=True), 1)
    )
    names = ", ".join(f"{s.target} is {_show(r)} not {_show(s.expected)}" for s, r in stale)
    return _Outcome("refused", f"stale plan, limits changed since it was made ({names}); plan again", changes)


def _restore(writer: QuotaWriter, step: _Step) -> tuple[str, int | None, str]:
    """Put one limit back to the step's expected value from whatever it is now."""
    try:
        now = writer.read_gpu_limit(step.target)
        if now != step.expected:
            writer.set_gpu_limit(step.target, expected=now, new=step.expected)
        return "restored", writer.read_gpu_limit(step.target), f"restored to {_show(step.expected)}"
    except Exception as exc:  # keep restoring the others; the record says which failed
        return "restore-failed", None, f"could not restore {_show(step.expected)}: {exc}"


def _execute(steps: list[_Step], writer: QuotaWriter, *, success: str) -> _Outcome:
    """Preflight, then write all steps, or restore the ones written and say so."""
    refused = _preflight(steps, writer)
    if refused is not None:
        return refused
    dry = isinstance(writer, DryRunScheduler)
    done: list[tuple[int, _Step, int | None]] = []
    changes: list[ChangeRecord] = []
    for n, step in enumerate(steps, 1):
        try:
            change = writer.set_gpu_limit(step.target, expected=step.expected, new=step.new)
        except Exception as exc:  # never half-apply: any failure restores what was written
            return _undo(steps, done, n, writer, exc)
        outcome = "would-write" if dry else ("written" if change.applied else "unchanged")
        done.append((n, step, change.before))
        changes.append(_change(n, step, outcome, before=change.before, after=change.after, detail=change.detail))
    if dry:
        return _Outcome("dry-run", f"{len(steps)} limit(s) read and checked; nothing written", tuple(changes))
    return _Outcome(success, f"{len(steps)} limit(s) written and read back", tuple(changes))


def _undo(
    steps: list[_Step], done: list[tuple[int, _Step, int | None]], failed_at: int, writer: QuotaWriter, exc: Exception
) -> _Outcome:
    failed = steps[failed_at - 1]
    records: dict[int, ChangeRecord] = {}
    conflict = isinstance(exc, QuotaConflictError)
    # The failed limit itself may have been written before its read-back failed: put it back too.
    outcome, after, note = ("conflict", getattr(exc, "current", None), "") if conflict else _restore(writer, failed)
    records[failed_at] = _change(failed_at, failed, "conflict" if conflict else "failed", before=failed.expected,
                                 after=after, detail=f"{exc}; {note}".rstrip("; "))
    all_ok = outcome != "restore-failed"
    for n, step, before in reversed(done):
        outcome, after, note = _restore(writer, step)
        all_ok = all_ok and outcome == "restored"
        records[n] = _change(n, step, outcome, before=before, after=after, detail=note)
    for n, step in enumerate(steps[failed_at:], failed_at + 1):
        records[n] = _change(n, step, "not-reached", before=None, after=None, detail="")
    result = "failed-restored" if all_ok else "failed-not-restored"
    what = "every limit written was restored" if all_ok else "SOME LIMITS COULD NOT BE RESTORED: fix them by hand"
    return _Outcome(result, f"{failed.target}: {exc}; {what}", tuple(records[n] for n in sorted(records)))


def load_plan(store: QuotaStore, plan_id: str) -> Plan:
    body = store.plan_body(plan_id)
    if body is None:
        raise PlanNotFoundError(f"no quota plan {plan_id!r} (see `gpusteward quota show`)")
    return Plan.from_dict(body)


def _record(
    store: QuotaStore,
    plan_id: str,
    *,
    action: ApplyAction,
    actor: str,
    approval: Decision | None,
    started: datetime,
    finished: datetime,
    transport: str,
    outcome: _Outcome,
) -> ApplyRecord:
    approved = approval if approval is not None and approval.decision == "approved" else None
    record = ApplyRecord(
        uuid.uuid4().hex, plan_id, action, actor, approved.decided_by if approved else None,
        approved.decided_at if approved else None, started, finished, transport, outcome.result, outcome.detail,
        outcome.changes,
    )
    store.record_apply(record)
    return record


def apply_plan(
    store: QuotaStore,
    writer: QuotaWriter,
    plan_id: str,
    *,
    actor: str,
    clock: Callable[[], datetime],
    dry_run: bool = False,
    targets: Callable[[PlanItem], QuotaTarget] = target_of,
    separation: bool = False,
) -> ApplyRecord:
    """Apply an approved plan (all of its limits or none), or dry-run any plan; always leaves a record.

    `separation` (separation of duties): whoever approved the plan cannot apply it; refused, and recorded."""
    plan = load_plan(store, plan_id)
    started = clock()
    approval = store.decision(plan_id)
    active = in_force(store.applies(plan_id))
    scheduler: QuotaWriter = DryRunScheduler(writer) if dry_run else writer
    action: ApplyAction = "dry-run" if dry_run else "apply"
    gate: str | None = None
    if not dry_run and (approval is None or approval.decision != "approved"):
        gate = f"plan {plan_id} is {approval.decision if approval else 'not approved'}; approve it first"
    elif not dry_run and separation and approval is not None and approval.decided_by == actor:
        gate = (f"separation of duties: {actor} approved plan {plan_id}, so someone else must apply it "
                "(service.separation_of_duties)")
    elif not dry_run and active is not None:
        gate = f"plan {plan_id} is already applied ({active.apply_id} by {active.actor}); roll it back first"
    elif not plan.changes:
        gate = f"plan {plan_id} has no changes"
    if gate is not None:
        outcome = _Outcome("refused", gate, ())
    else:
        steps = [_Step(targets(i), i.cluster, i.current_gpus, i.proposed_gpus) for i in plan.changes]
        outcome = _execute(steps, scheduler, success="applied")
    return _record(store, plan_id, action=action, actor=actor, approval=approval, started=started, finished=clock(),
                   transport=scheduler.transport, outcome=outcome)


def _written_target(plan: Plan, change: ChangeRecord, targets: Callable[[PlanItem], QuotaTarget]) -> QuotaTarget:
    """The object a change wrote, through the same mapping the apply used (the plan item at the change's
    position); a record that matches no item gets its target from the record alone."""
    items = plan.changes
    if 0 < change.seq <= len(items):
        item = items[change.seq - 1]
        if (item.kind, item.name) == (change.kind, change.name):
            return targets(item)
    return QuotaTarget(change.kind, change.name, cluster=change.cluster if change.kind == "account" else None)


def rollback_plan(
    store: QuotaStore,
    writer: QuotaWriter,
    plan_id: str,
    *,
    actor: str,
    clock: Callable[[], datetime],
    targets: Callable[[PlanItem], QuotaTarget] = target_of,
) -> ApplyRecord:
    """Write the applied plan's limits back to what they were (reverse order, guarded); leaves a record.

    `targets` must be the mapping the apply used (a Kueue flavor, a Volcano field)."""
    plan = load_plan(store, plan_id)
    started = clock()
    active = in_force(store.applies(plan_id))
    if active is None:
        outcome = _Outcome("refused", f"plan {plan_id} is not applied; nothing to roll back", ())
    else:
        steps = [
            _Step(_written_target(plan, c, targets), c.cluster, c.after, c.before)
            for c in reversed(active.changes) if c.outcome == "written"
        ]
        outcome = _execute(steps, writer, success="rolled-back") if steps else _Outcome(
            "rolled-back", "nothing had been written", ())
    return _record(store, plan_id, action="rollback", actor=actor, approval=store.decision(plan_id), started=started,
                   finished=clock(), transport=writer.transport, outcome=outcome)
