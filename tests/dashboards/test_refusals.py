"""A refused control action reads in the viewer's language: what the refusal means first, then the
service's own words (its JSON `error` field, not the raw body)."""

from __future__ import annotations

import json

import pytest

from dashboards.pages import REFUSALS, refusal_text
from dashboards.texts import Texts
from service.api_openapi import openapi_document

SERVICE_SAID = json.dumps({"error": "alice has the operator role; plan.approve needs approver or above",
                           "where": "header Authorization"})


@pytest.mark.parametrize(("lang", "meaning"), [("en", "your role does not allow this action"),
                                               ("zh", "你的角色不允许此操作")])
def test_a_403_says_what_it_means_then_what_the_service_said(lang: str, meaning: str) -> None:
    text = refusal_text(Texts(lang), 403, SERVICE_SAID)  # type: ignore[arg-type]
    assert meaning in text
    assert text.endswith("alice has the operator role; plan.approve needs approver or above")
    assert '"where"' not in text  # the detail, not the JSON


def test_a_body_that_is_not_json_and_a_connection_failure_still_read_in_the_language() -> None:
    zh = Texts("zh")
    assert "服务繁忙或正在关闭" in refusal_text(zh, 503, "<html>bad gateway</html>")
    failed = refusal_text(zh, 0, "[Errno 111] Connection refused")
    assert "无法连接服务" in failed
    assert "Connection refused" in failed


def test_every_refusal_the_api_documents_has_its_own_meaning() -> None:
    documented = {int(code) for op in openapi_document()["paths"]["/api/v1/plans/{plan_id}/approve"].values()
                  for code in op["responses"] if code.startswith(("4", "5"))}
    assert documented <= set(REFUSALS)
    en, zh = Texts("en"), Texts("zh")
    meanings = {en(f"control.refused.{code}") for code in REFUSALS}
    assert len(meanings) == len(REFUSALS)  # no two refusals share a sentence
    assert all(zh(f"control.refused.{code}") for code in REFUSALS)
