"""The control API's model: who may call it (bearer tokens), what a call asks (a `Request`), and the
checks every body passes before the controller is asked to act (and so before anything is audited).

    POST /api/v1/plans/{plan_id}/approve        {"reason": "...", "override": "..."} -> 200 {"action_id": ...}
    POST /api/v1/plans/{plan_id}/reject         {"reason": "..."}
    POST /api/v1/alerts/{fingerprint}/silence   {"minutes": 120, "reason": "..."}
    POST /api/v1/alerts/{fingerprint}/acknowledge
    POST /api/v1/reviews                        {"month": "YYYY-MM"}         -> 202
    POST /api/v1/quarantine/retry               {"path": "...", "reason": "..."} -> 202
    POST /api/v1/reclaim/jobs/{cluster}/{job_id}/exempt  {"minutes": 1440, "reason": "..."}  (no minutes: while it runs)
    POST /api/v1/reclaim/jobs/{cluster}/{namespace}/{name}/exempt  the same for a Kueue Workload
    POST /api/v1/reclaim/actions/{decision_id}/approve   {"reason": "..."}
    POST /api/v1/reclaim/actions/{decision_id}/reject    {"reason": "..."}

Callers send `Authorization: Bearer <token>`; the token's identity is who the audit trail names, unless a
trusted authenticating proxy names the user in its header (service/api_identity.py).
A plan whose replay makes a protected objective worse is refused (409) unless the approval carries an
`override` reason, stored with the approval (docs/quota.md).
Tokens and roles: service/api_tokens.py; a caller whose role does not allow the action gets 403.
The HTTP side (Starlette served by uvicorn) is `service/api_app.py` and `service/api_server.py`.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from prometheus_client import CollectorRegistry

from gpusteward.domain import Month
from service.api_identity import ProxyIdentity
from service.api_tokens import Tokens
from warehouse.control import Action, ControlError

MAX_BODY = 64 * 1024  # bytes; a larger Content-Length is refused with 413 before anything is read
MAX_DEPTH = 16  # nesting of arrays and objects in a body; the API's own bodies are flat objects
READ_TIMEOUT_S = 10.0  # headers and body must arrive within this; else 408 (or a silent close when idle)
MAX_TEXT = 2000  # characters of a reason or an override; the audit keeps them, a page is plenty
MAX_SILENCE = timedelta(days=31)
PLAN_ID = re.compile(r"[A-Za-z0-9._-]{1,128}")
FINGERPRINT = re.compile(r"[0-9a-f]{8,64}")
# A job is its cluster and its Slurm job id, or a Kueue Workload's namespace/name (a DNS label and a
# DNS subdomain name, as Kubernetes checks them), which is how the reclaimer names such a job.
RECLAIM_JOB = re.compile(
    r"[A-Za-z0-9._-]{1,128}/(?:[0-9]{1,20}|[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?/[a-z0-9](?:[-.a-z0-9]{0,251}[a-z0-9])?)"
)
DECISION_ID = re.compile(r"[0-9a-f]{32}")
# What each action's body may hold; any other field is refused, so a typo is never silently ignored.
FIELDS: dict[Action, frozenset[str]] = {
    "plan.approve": frozenset({"reason", "override"}),
    "plan.reject": frozenset({"reason"}),
    "alert.silence": frozenset({"minutes", "reason"}),
    "alert.acknowledge": frozenset({"reason"}),
    "review.trigger": frozenset({"month", "reason"}),
    "import.retry": frozenset({"path", "reason"}),
    "reclaim.exempt": frozenset({"minutes", "reason"}),
    "reclaim.approve": frozenset({"reason"}),
    "reclaim.reject": frozenset({"reason"}),
}


class BadRequestError(ControlError):
    """A request refused before anything was done: `where` names the part at fault
    (`header Content-Length`, `body.month`, `path plan_id`)."""

    def __init__(self, message: str, *, where: str, status: int = 400) -> None:
        super().__init__(message, status=status)
        self.where = where


@dataclass(frozen=True)
class Request:
    actor: str
    action: Action
    target: str
    until: datetime | None
    reason: str | None
    month: str | None = None
    override: str | None = None
    via: str | None = None  # the relaying token's identity when a proxy or the dashboard acts for `actor`
    role: str | None = None  # the caller's role (service/api_tokens.py); None: the CLI, a person at the host


class Controller(Protocol):
    """What the API asks of the service; raises ControlError for a request that cannot be done."""

    def now(self) -> datetime: ...
    def act(self, request: Request) -> dict[str, Any]: ...


@dataclass(frozen=True)
class ApiContext:
    registry: CollectorRegistry
    tokens: Tokens
    controller: Controller
    ready: threading.Event
    healthy: Callable[[], bool]
    on_action: Callable[[str, int], None] | None = None
    read_timeout_s: float = READ_TIMEOUT_S
    proxy: ProxyIdentity | None = None  # identity from a trusted proxy's header (service/api_identity.py)


def check_target(action: Action, target: str) -> str:
    """The path's plan id or fingerprint, refused (naming it) when it cannot be one."""
    if action.startswith("plan.") and not PLAN_ID.fullmatch(target):
        raise BadRequestError("plan_id must be 1-128 letters, digits, '.', '_' or '-'", where="path plan_id")
    if action.startswith("alert.") and not FINGERPRINT.fullmatch(target):
        raise BadRequestError("fingerprint must be 8-64 lowercase hex digits", where="path fingerprint")
    if action == "reclaim.exempt" and not RECLAIM_JOB.fullmatch(target):
        raise BadRequestError("a job is its cluster (1-128 letters, digits, '.', '_' or '-') and its numeric job id,"
                              " or a Kueue Workload's namespace and name", where="path job_id")
    if action in ("reclaim.approve", "reclaim.reject") and not DECISION_ID.fullmatch(target):
        raise BadRequestError("decision_id must be 32 lowercase hex digits", where="path decision_id")
    return target


def _text(body: Mapping[str, Any], name: str, what: str) -> str | None:
    value = body.get(name)
    if value is not None and not isinstance(value, str):
        raise BadRequestError(f"{name} must be a string{what}", where=f"body.{name}")
    if value is not None and (len(value) > MAX_TEXT or "\x00" in value):
        raise BadRequestError(f"{name} must be at most {MAX_TEXT} characters, without NUL", where=f"body.{name}")
    return value


def build_request(actor: str, action: Action, target: str, body: Mapping[str, Any], now: datetime, *,
                  via: str | None = None, role: str | None = None) -> Request:
    """Check every field of `body` for `action`; the Request the controller acts on, or BadRequestError.

    Nothing is recorded before this returns, so a refused request leaves no audit row."""
    target = check_target(action, target)
    unknown = sorted(set(body) - FIELDS[action])
    if unknown:
        allowed = ", ".join(sorted(FIELDS[action]))
        raise BadRequestError(f"unknown field {unknown[0]!r}; this action takes {allowed}", where=f"body.{unknown[0]}")
    reason = _text(body, "reason", "")
    override = _text(body, "override", ": why the plan is approved despite its replay")
    until = None
    if action == "alert.silence" or (action == "reclaim.exempt" and body.get("minutes") is not None):
        what = "a silence" if action == "alert.silence" else "an exemption"
        minutes = body.get("minutes")
        if not isinstance(minutes, int) or isinstance(minutes, bool) or minutes <= 0:
            raise BadRequestError(f"{what} needs a positive whole number of minutes", where="body.minutes")
        if minutes > MAX_SILENCE // timedelta(minutes=1):  # compared as numbers: 10**26 minutes is no timedelta
            raise BadRequestError(f"{what} lasts at most {MAX_SILENCE.days} days", where="body.minutes")
        until = now + timedelta(minutes=minutes)
    month = None
    if action == "review.trigger":
        month = body.get("month")
        if month is not None and not _is_month(month):
            raise BadRequestError("month must be a month that exists, as YYYY-MM (e.g. 2026-10)", where="body.month")
        target = month or "latest"
    if action == "import.retry":
        path = body.get("path")
        if not isinstance(path, str) or not path or len(path) > 4096 or "\x00" in path:
            raise BadRequestError("path must be the quarantined file's path, as `gpusteward status` shows it",
                             where="body.path")
        target = path
    return Request(actor, action, target, until, reason, month, override, via, role)


def _is_month(value: object) -> bool:
    if not isinstance(value, str) or not re.fullmatch(r"\d{4}-\d{2}", value):
        return False
    try:
        Month.parse(value)
    except ValueError:
        return False
    return True


def _nesting(raw: bytes) -> int:
    """The deepest nesting of arrays and objects in a JSON text (brackets inside strings not counted)."""
    depth = deepest = 0
    in_string = escaped = False
    for byte in raw:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in {0x5B, 0x7B}:  # [ {
            depth += 1
            deepest = max(deepest, depth)
        elif byte in {0x5D, 0x7D}:
            depth -= 1
    return deepest


def _no_constants(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


def parse_body(raw: bytes) -> dict[str, Any]:
    """The request's JSON object (empty body: {}), nesting bounded; BadRequestError naming what is wrong."""
    if not raw:
        return {}
    if _nesting(raw) > MAX_DEPTH:
        raise BadRequestError(f"the body nests arrays or objects deeper than {MAX_DEPTH} levels", where="body")
    try:
        data = json.loads(raw, parse_constant=_no_constants)
    except (ValueError, RecursionError) as exc:
        raise BadRequestError(f"the body is not JSON: {str(exc)[:200]}", where="body") from exc
    if not isinstance(data, dict):
        raise BadRequestError("the body must be a JSON object", where="body")
    return data


