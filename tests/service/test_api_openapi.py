"""The served OpenAPI document and the app's actual routes describe the same API: every route is
documented, every documented operation exists with its method, and each documented body takes
exactly the fields the handler accepts."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from prometheus_client import CollectorRegistry
from starlette.applications import Starlette
from starlette.routing import Route

from service.api import FIELDS, ApiContext
from service.api_app import InFlightLimit, make_app
from service.api_tokens import Tokens
from tests.service.api_rig import RecordingController, ServedApi, served_api

TOKEN = "alice-secret-token"


@pytest.fixture(scope="module")
def api() -> Iterator[ServedApi]:
    with served_api({"alice": TOKEN}, ready=True) as served:
        yield served


@pytest.fixture(scope="module")
def document(api: ServedApi) -> dict[str, Any]:
    response = httpx.get(f"{api.url}/api/v1/openapi.json", timeout=10)
    assert response.status_code == 200
    doc: dict[str, Any] = response.json()
    return doc


def _routes() -> set[tuple[str, str]]:
    """(path, method) of every route the app serves, read from the app itself."""
    ctx = ApiContext(CollectorRegistry(), Tokens({}), RecordingController(), threading.Event(), lambda: True)
    limited = make_app(ctx)
    assert isinstance(limited, InFlightLimit)
    app = limited.app
    assert isinstance(app, Starlette)
    found: set[tuple[str, str]] = set()
    for route in app.routes:
        assert isinstance(route, Route)
        found |= {(route.path, m) for m in (route.methods or set()) - {"HEAD"}}  # Starlette adds HEAD to GET
    return found


def test_every_route_is_documented_and_every_documented_operation_is_routed(document: dict[str, Any]) -> None:
    documented = {(path, method.upper()) for path, ops in document["paths"].items() for method in ops}
    assert documented == _routes()
    assert document["openapi"].startswith("3.1")


def test_every_documented_operation_answers_at_its_path(api: ServedApi, document: dict[str, Any]) -> None:
    for path, ops in document["paths"].items():
        concrete = (path.replace("{plan_id}", "p-1").replace("{fingerprint}", "0123456789abcdef")
                    .replace("{cluster}", "east").replace("{job_id}", "42").replace("{decision_id}", "ab" * 16)
                    .replace("{namespace}", "ml-team").replace("{name}", "job-lab-1"))
        for method, op in ops.items():
            response = httpx.request(method, api.url + concrete, timeout=10)  # no token
            expected = 401 if op.get("security") else 200
            assert response.status_code == expected, (method, path, response.text)
            assert str(expected) in op["responses"]
    assert api.controller.acted == []


def test_each_documented_body_is_what_the_handler_accepts(document: dict[str, Any]) -> None:
    ids = [op["operationId"] for ops in document["paths"].values() for op in ops.values()]
    assert len(ids) == len(set(ids)), ids  # OpenAPI: unique across the document
    bodies = {
        op["operationId"]: op["requestBody"]["content"]["application/json"]["schema"]
        for ops in document["paths"].values()
        for op in ops.values()
        if "requestBody" in op
    }
    assert set(bodies) == {action.replace(".", "_") for action in FIELDS} | {"reclaim_exempt_workload"}
    assert bodies["reclaim_exempt_workload"] == bodies["reclaim_exempt"]
    for action, fields in FIELDS.items():
        schema = bodies[action.replace(".", "_")]
        assert set(schema["properties"]) == fields
        assert schema["additionalProperties"] is False


def test_documented_bodies_are_accepted(document: dict[str, Any]) -> None:
    """A body built from the document's own schema is taken (no field the document names is refused)."""
    with served_api({"alice": TOKEN}) as api:
        _post_every_documented_body(api, document)


def _post_every_documented_body(api: ServedApi, doc: dict[str, Any]) -> None:
    samples = {"reason": "why", "override": "accepted", "minutes": 30, "month": "2026-10", "path": "/in/x.om"}
    for path, ops in doc["paths"].items():
        op = ops.get("post")
        if op is None:
            continue
        props = op["requestBody"]["content"]["application/json"]["schema"]["properties"]
        concrete = (path.replace("{plan_id}", "p-1").replace("{fingerprint}", "0123456789abcdef")
                    .replace("{cluster}", "east").replace("{job_id}", "42").replace("{decision_id}", "ab" * 16)
                    .replace("{namespace}", "ml-team").replace("{name}", "job-lab-1"))
        response = httpx.post(api.url + concrete, json={k: samples[k] for k in props},
                              headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10)
        assert response.status_code in {200, 202}, (path, response.text)
