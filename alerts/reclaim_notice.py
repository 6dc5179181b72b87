"""Reclaim warnings and action notices as alerts, for the alert outbox (at least once, to the owner and team).

A warning carries the evidence: the job, its owner and team, its GPUs, since when they are idle and
by which metric, the policy, and what happens when (or that nothing will: a notify policy), with how
to object. English goes in `summary`/`description`, every other language in `summary_<lang>`/
`description_<lang>`, as the protection-line alerts do. Labels carry `user` and `team`, so an
Alertmanager or a chat bridge behind a webhook routes the warning to its owner.

Items go to the receivers in `reclaim.receivers` (empty: every receiver) and the job's team's
`reclaim.team_receivers`; their outbox keys are the decision's id and the receiver, so storing the
same decision twice sends nothing twice. Shadow-mode decisions are stored `shadow`: never sent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from alerts.engine import alert_to_dict
from alerts.model import Alert
from alerts.outbox import Outgoing
from gpusteward.config.schema import Config
from reports.locale import LANGS, Formatter, load_catalogue

ALERT_NAME = {"warning": "GpuReclaimWarning", "action": "GpuReclaimAction"}


def _texts(line: Mapping[str, Any], config: Config, lang: str, detail: str) -> tuple[str, str]:
    fmt = Formatter(lang, zone=config.timezone)  # type: ignore[arg-type]
    names = load_catalogue(lang, "service")
    action = names[f"reclaim.action.{line['action']}"]
    due = fmt.moment(line["action_due"])
    gpus = fmt.t("unit.gpus", n=fmt.number(line["gpus"] or 0))
    since = fmt.moment(line["idle_since"])
    values = {
        "job": line["job"], "job_id": line["job_id"], "cluster": line["cluster"], "gpus": gpus, "since": since,
        "due": due, "action": action, "user": line["user_name"] or "?", "team": line["team"],
        "policy": line["policy"], "service": line["service"] or "?",
        "scenario": fmt.term("scenario", line["scenario"]),
    }
    if line["kind"] == "action":
        return (fmt.t("reclaim.notice.action.summary", **values),
                fmt.t("reclaim.notice.action.description", **values, by=line["decided_by"], detail=detail))
    what = fmt.t(f"reclaim.notice.what.{line['action']}", due=due, service=values["service"])
    if line["mode"] == "approve" and line["action"] != "notify":
        what += fmt.t("reclaim.notice.what.approve")
    key = "reclaim.notice.warning.notify_summary" if line["action"] == "notify" else "reclaim.notice.warning.summary"
    source = fmt.t(f"reclaim.source.{line.get('util_source') or 'none'}")
    idle = fmt.duration(60.0 * (line["idle_minutes"] or 0))
    return fmt.t(key, **values), fmt.t("reclaim.notice.warning.description", **values, what=what, idle=idle,
                                       source=source)


def reclaim_alert(line: Mapping[str, Any], config: Config, *, detail: str = "") -> Alert:
    """The alert of one ledger line (a warning, or an action taken): its texts in every language."""
    summary, description = _texts(line, config, "en", detail)
    annotations = {"summary": summary, "description": description}
    for lang in LANGS:
        if lang != "en":
            annotations[f"summary_{lang}"], annotations[f"description_{lang}"] = _texts(line, config, lang, detail)
    labels = {
        "alertname": ALERT_NAME[line["kind"]], "cluster": line["cluster"], "job_id": line["job_id"],
        "team": line["team"] or "", "user": line["user_name"] or "", "policy": line["policy"],
        "action": line["action"], "mode": line["mode"], "severity": "warning" if line["kind"] == "warning" else "info",
    }
    return Alert(
        fingerprint=line["decision_id"],
        status="firing",
        labels={k: str(v) for k, v in labels.items() if v is not None},
        annotations=annotations,
        starts_at=line["idle_since"] or line["decided_at"],
        ends_at=None,
        receivers=receivers_of(config, line["team"]),
    )


def receivers_of(config: Config, team: str | None) -> tuple[str, ...]:
    """`reclaim.receivers` (every receiver when empty) and the team's own, in that order, once each."""
    base = config.reclaim.receivers or [r.name for r in config.alerts.receivers]
    names = [*base, *config.reclaim.team_receivers.get(team or "", [])]
    return tuple(dict.fromkeys(names))


def outgoing(line: Mapping[str, Any], config: Config, at: datetime, *, detail: str = "") -> list[Outgoing]:
    """One outbox item per receiver of the line's alert (shadow items for a shadow-mode line)."""
    alert = reclaim_alert(line, config, detail=detail)
    body = json.dumps({"reason": f"reclaim-{line['kind']}", "at": at.isoformat(), "group_key": line["decision_id"],
                       "alerts": [alert_to_dict(alert)]},
                      ensure_ascii=False, sort_keys=True)
    shadow = line["mode"] == "shadow"
    return [Outgoing(f"reclaim-{line['decision_id']}-{receiver}", receiver, line["decision_id"], body, at, shadow)
            for receiver in alert.receivers]
