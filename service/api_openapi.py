"""The service's HTTP endpoints as one table, and the OpenAPI 3.1 document made from it.

The app routes from ENDPOINTS (service/api_app.py) and GET /api/v1/openapi.json serves the
document, so the two cannot drift; tests/service/test_api_openapi.py checks the served document
against the app's actual routes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from service.api import DECISION_ID, FIELDS, FINGERPRINT, MAX_BODY, MAX_SILENCE, MAX_TEXT, PLAN_ID
from service.api_tokens import least_role
from warehouse.control import Action

VERSION = "1"


@dataclass(frozen=True)
class Endpoint:
    path: str  # Starlette's template: /api/v1/plans/{plan_id}/approve
    method: str
    summary: str
    action: Action | None = None  # the audited control action; None: a read-only GET
    status: int = 200  # the status of success
    operation: str | None = None  # the operationId where two paths share an action (else the action's)


ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint("/metrics", "GET", "Prometheus metrics of the service (text exposition format)"),
    Endpoint("/healthz", "GET", "200 while the job loop runs, else 503"),
    Endpoint("/readyz", "GET", "200 once the first cycle has run and published, else 503"),
    Endpoint("/api/v1/openapi.json", "GET", "This document"),
    Endpoint("/api/v1/plans/{plan_id}/approve", "POST", "Approve a quota plan (audited)", "plan.approve"),
    Endpoint("/api/v1/plans/{plan_id}/reject", "POST", "Reject a quota plan (audited)", "plan.reject"),
    Endpoint("/api/v1/alerts/{fingerprint}/silence", "POST", "Silence an alert for some minutes (audited)",
             "alert.silence"),
    Endpoint("/api/v1/alerts/{fingerprint}/acknowledge", "POST", "Acknowledge an alert (audited)",
             "alert.acknowledge"),
    Endpoint("/api/v1/reviews", "POST", "Write the monthly review now (audited)", "review.trigger", 202),
    Endpoint("/api/v1/quarantine/retry", "POST", "Import a quarantined file again (audited)", "import.retry", 202),
    Endpoint("/api/v1/reclaim/jobs/{cluster}/{job_id}/exempt", "POST",
             "Object to reclaiming a job: exempt it (a lead of its team or an admin; audited)", "reclaim.exempt"),
    Endpoint("/api/v1/reclaim/jobs/{cluster}/{namespace}/{name}/exempt", "POST",
             "Object to reclaiming a Kueue Workload: exempt it (a lead of its team or an admin; audited)",
             "reclaim.exempt", operation="reclaim_exempt_workload"),
    Endpoint("/api/v1/reclaim/actions/{decision_id}/approve", "POST",
             "Approve a reclaim action waiting in approve mode (audited)", "reclaim.approve"),
    Endpoint("/api/v1/reclaim/actions/{decision_id}/reject", "POST",
             "Reject a reclaim action waiting in approve mode (audited)", "reclaim.reject"),
)

_TEXT = {"type": ["string", "null"], "maxLength": MAX_TEXT}
_PROPERTIES: dict[str, dict[str, Any]] = {
    "reason": _TEXT | {"description": "why; stored in the audit trail"},
    "override": _TEXT | {"description": "why the plan is approved although its replay makes a protected objective "
                                        "worse (without it such a plan is refused with 409)"},
    "minutes": {"type": "integer", "minimum": 1, "maximum": int(MAX_SILENCE.total_seconds() // 60)},
    "month": {"type": ["string", "null"], "pattern": r"^\d{4}-\d{2}$", "description": "YYYY-MM; null: the latest"},
    "path": {"type": "string", "minLength": 1, "maxLength": 4096,
             "description": "the quarantined file's path, as `gpusteward status` shows it"},
}
_PARAMETERS = {"plan_id": PLAN_ID.pattern, "fingerprint": FINGERPRINT.pattern,
               "cluster": r"[A-Za-z0-9._-]{1,128}", "job_id": r"[0-9]{1,20}", "decision_id": DECISION_ID.pattern,
               "namespace": r"[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?", "name": r"[a-z0-9](?:[-.a-z0-9]{0,251}[a-z0-9])?"}
_ERROR = {
    "type": "object",
    "required": ["error", "where"],
    "properties": {"error": {"type": "string"}, "where": {"type": "string"}},
}
_ERROR_REF = {"$ref": "#/components/schemas/Error"}
_REFUSALS = {
    "400": "malformed request, header or body (the answer names what and where)",
    "401": "no valid bearer token",
    "403": "the token's role does not allow this action",
    "404": "no such plan or alert",
    "408": "the body did not arrive within the read timeout",
    "409": "the action conflicts with the current state",
    "413": f"body larger than {MAX_BODY} bytes",
    "503": "busy or shutting down; retry later",
}


def _body_schema(action: Action) -> dict[str, Any]:
    fields = sorted(FIELDS[action])
    properties = {name: _PROPERTIES[name] for name in fields}
    required = [name for name in fields if name == "path" or (name == "minutes" and action == "alert.silence")]
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def _operation(endpoint: Endpoint) -> dict[str, Any]:
    op: dict[str, Any] = {"summary": endpoint.summary, "operationId": _operation_id(endpoint)}
    names = re.findall(r"\{(\w+)\}", endpoint.path)
    if names:
        op["parameters"] = [
            {"name": n, "in": "path", "required": True, "schema": {"type": "string", "pattern": f"^{_PARAMETERS[n]}$"}}
            for n in names
        ]
    if endpoint.action is None:
        op["responses"] = {"200": {"description": "OK"}}
        return op
    op["security"] = [{"bearer": []}]
    op["x-minimum-role"] = least_role(endpoint.action)
    op["requestBody"] = {
        "required": False,
        "content": {"application/json": {"schema": _body_schema(endpoint.action)}},
    }
    op["responses"] = {
        str(endpoint.status): {"description": f"done; audited as {endpoint.action}",
                               "content": {"application/json": {"schema": {"type": "object"}}}},
        **{code: {"description": text, "content": {"application/json": {"schema": _ERROR_REF}}}
           for code, text in _REFUSALS.items()},
    }
    return op


def _operation_id(endpoint: Endpoint) -> str:
    if endpoint.operation is not None:
        return endpoint.operation
    if endpoint.action is not None:
        return endpoint.action.replace(".", "_")
    return "get_" + re.sub(r"\W+", "_", endpoint.path.rsplit("/", 1)[-1].removesuffix(".json"))


@cache
def openapi_document() -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    for endpoint in ENDPOINTS:
        paths.setdefault(endpoint.path, {})[endpoint.method.lower()] = _operation(endpoint)
    return {
        "openapi": "3.1.0",
        "info": {"title": "GPU Steward service", "version": VERSION,
                 "description": "Metrics, health and the audited control API of `gpusteward serve` (docs/service.md)."},
        "paths": paths,
        "components": {
            "schemas": {"Error": _ERROR},
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                           "description": "a token of the service's token files; its role "
                                                          "(viewer, operator, approver, admin) limits the actions. "
                                                          "Instead, or beside it, a trusted authenticating proxy "
                                                          "may name the user in service.proxy.user_header, whose "
                                                          "role comes from service.proxy.roles "
                                                          "(docs/service.md)"}},
        },
    }
