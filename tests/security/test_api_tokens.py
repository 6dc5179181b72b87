"""The control API refuses requests without a valid bearer token, and never logs a token."""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from service.api_tokens import Tokens
from tests.service.api_rig import RecordingController, served_api

TOKEN = "tok-alice-8c1b2f4e9a"
OTHER = "tok-bob-77aa31c0de"


@pytest.fixture
def api() -> Iterator[tuple[str, RecordingController]]:
    with served_api({"alice": TOKEN, "bob": OTHER}, ready=True) as served:
        yield served.url, served.controller


def _post(base: str, path: str, authorization: str | None) -> int:
    request = urllib.request.Request(base + path, data=json.dumps({"reason": "ok"}).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    if authorization is not None:
        request.add_header("Authorization", authorization)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


@pytest.mark.parametrize(
    "authorization",
    [None, "", "Bearer", "Bearer ", "Bearer wrong", f"Bearer {TOKEN}x", f"Bearer {TOKEN[:-1]}", f"Basic {TOKEN}",
     f"bearer {TOKEN}", TOKEN],
)
def test_missing_or_wrong_tokens_are_refused_and_nothing_is_done(
    api: tuple[str, RecordingController], authorization: str | None
) -> None:
    base, controller = api
    assert _post(base, "/api/v1/plans/p-1/approve", authorization) == 401
    assert controller.acted == []


def test_a_valid_token_acts_as_its_identity_and_is_never_logged(
    api: tuple[str, RecordingController], caplog: pytest.LogCaptureFixture
) -> None:
    base, controller = api
    with caplog.at_level(logging.DEBUG):
        assert _post(base, "/api/v1/plans/p-1/approve", f"Bearer {OTHER}") == 200
        assert _post(base, "/api/v1/plans/p-1/reject", f"Bearer {OTHER}-guess") == 401
    assert [r.actor for r in controller.acted] == ["bob"]
    assert OTHER not in caplog.text
    assert TOKEN not in repr(Tokens({"alice": TOKEN}))
