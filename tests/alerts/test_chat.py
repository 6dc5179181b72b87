"""Slack, Feishu, DingTalk and WeCom bodies, and Alertmanager's v2 POST, against local servers."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
import json
from datetime import UTC, datetime, timedelta
from typing import Any, cast
from urllib.parse import parse_qs, unquote_plus, urlsplit

import pytest

from alerts.alertmanager import AlertmanagerNotifier
from alerts.chat import DINGTALK, FEISHU, FLAVOURS, SLACK, WECOM, ChatNotifier, feishu_sign
from alerts.model import Alert, alerts_from_episodes
from alerts.notify import default_notifiers
from gpusteward.clock import FakeClock
from gpusteward.config.schema import ReceiverConfig
from gpusteward.errors import PermanentError, TransientError
from tests.alerts.helpers import config, episodes
from tests.alerts.server import recording_server

NOW = datetime(2026, 10, 12, 14, 5, tzinfo=UTC)
SECRET = "SEC-bot-secret-never-printed"


def _alerts() -> list[Alert]:
    resolved = alerts_from_episodes(episodes({}, {"subject": "west"}), config())
    firing = dataclasses.replace(resolved[0], status="firing", ends_at=None)
    return [firing, resolved[1]]


def _json(body: bytes) -> dict[str, Any]:
    return cast(dict[str, Any], json.loads(body))


def test_slack_blocks_carry_summary_evidence_and_fallback() -> None:
    with recording_server() as srv:
        assert ChatNotifier("chat", srv.url, SLACK).send(_alerts()) == 2
    body = _json(srv.bodies[0])
    assert body["text"] == "[FIRING:1] InferenceReserveBreach"
    assert body["blocks"][0]["type"] == "header"
    east = body["blocks"][1]["text"]["text"]
    assert "*summary*: Online inference on east had as few as 8 GPUs available" in east
    assert "*evidence*: training job 20" in east
    assert "*fallback*: Pause training on east." in east


def test_feishu_post_is_signed_with_timestamp_and_secret() -> None:
    clock = FakeClock(NOW)
    with recording_server() as srv:
        srv.answer = b'{"code":0,"msg":"success","data":{}}'
        ChatNotifier("lark", srv.url, FEISHU, secret=SECRET, clock=clock).send(_alerts())
    body = _json(srv.bodies[0])
    stamp = int(NOW.timestamp())
    assert body["timestamp"] == str(stamp)
    expected = base64.b64encode(hmac.new(f"{stamp}\n{SECRET}".encode(), b"", hashlib.sha256).digest()).decode()
    assert body["sign"] == expected == feishu_sign(SECRET, stamp)
    assert body["msg_type"] == "post"
    post = body["content"]["post"]["en_us"]
    assert post["title"] == "[FIRING:1] InferenceReserveBreach"
    texts = [seg["text"] for line in post["content"] for seg in line]
    assert "fallback: Pause training on east." in texts


def test_dingtalk_signs_the_url() -> None:
    clock = FakeClock(NOW)
    with recording_server("/robot/send?access_token=tok123") as srv:
        srv.answer = b'{"errcode":0,"errmsg":"ok"}'
        ChatNotifier("ding", srv.url, DINGTALK, secret=SECRET, clock=clock).send(_alerts())
    request = srv.requests[0]
    query = parse_qs(urlsplit(request.path).query)
    stamp_ms = int(NOW.timestamp() * 1000)
    assert query["access_token"] == ["tok123"]
    assert query["timestamp"] == [str(stamp_ms)]
    digest = hmac.new(SECRET.encode(), f"{stamp_ms}\n{SECRET}".encode(), hashlib.sha256).digest()
    assert query["sign"] == [base64.b64encode(digest).decode()]  # parse_qs undoes the URL encoding
    assert unquote_plus(urlsplit(request.path).query.split("sign=")[1]) == base64.b64encode(digest).decode()
    body = _json(request.body)
    assert body["msgtype"] == "markdown"
    assert body["markdown"]["title"] == "[FIRING:1] InferenceReserveBreach"
    assert "**fallback**: Pause training on east." in body["markdown"]["text"]


def test_wecom_markdown() -> None:
    with recording_server("/cgi-bin/webhook/send?key=k") as srv:
        srv.answer = b'{"errcode":0,"errmsg":"ok"}'
        ChatNotifier("wx", srv.url, WECOM).send(_alerts())
    body = _json(srv.bodies[0])
    assert body["msgtype"] == "markdown"
    assert body["markdown"]["content"].startswith("### [FIRING:1] InferenceReserveBreach")
    assert "**status**: resolved critical" in body["markdown"]["content"]


def test_a_chinese_receiver_gets_chinese_labels_texts_and_local_times() -> None:
    with recording_server("/cgi-bin/webhook/send?key=k") as srv:
        srv.answer = b'{"errcode":0,"errmsg":"ok"}'
        ChatNotifier("wx", srv.url, WECOM, lang="zh", zone="Asia/Shanghai").send(_alerts())
    text = _json(srv.bodies[0])["markdown"]["content"]
    firing, _resolved = _alerts()
    assert f"**摘要**: {firing.annotations['summary_zh']}" in text
    assert "**状态**: 告警中 严重" in text
    assert "**状态**: 已恢复 严重" in text
    assert "Asia/Shanghai" in text
    assert "**时间**: 自 " in text
    for english in ("summary", "status", "evidence", "fallback", "firing", "resolved", "Online inference"):
        assert english not in text.replace("InferenceReserveBreach", "")


def test_a_chinese_feishu_post_is_keyed_zh_cn() -> None:
    with recording_server() as srv:
        srv.answer = b'{"code":0}'
        ChatNotifier("lark", srv.url, FEISHU, lang="zh").send(_alerts())
    assert set(_json(srv.bodies[0])["content"]["post"]) == {"zh_cn"}


@pytest.mark.parametrize(
    ("flavour", "answer", "error"),
    [
        (DINGTALK, b'{"errcode":130101,"errmsg":"send too fast"}', TransientError),
        (WECOM, b'{"errcode":45009,"errmsg":"api freq out of limit"}', TransientError),
        (FEISHU, b'{"code":11232,"msg":"frequency limited"}', TransientError),
        (FEISHU, b'{"code":19021,"msg":"sign match fail or timestamp is not within one hour from current time"}',
         PermanentError),
        (DINGTALK, b'{"errcode":310000,"errmsg":"keywords not in content"}', PermanentError),
    ],
)
def test_bot_error_codes_say_whether_to_retry(flavour: object, answer: bytes, error: type[Exception]) -> None:
    with recording_server("/send?token=tok123") as srv:
        srv.answer = answer
        notifier = ChatNotifier("bot", srv.url, flavour)  # type: ignore[arg-type]
        with pytest.raises(error) as caught:
            notifier.send(_alerts())
    assert "tok123" not in str(caught.value)
    assert "tok123" not in repr(notifier)


def test_slack_503_is_transient() -> None:
    with recording_server() as srv:
        srv.status = 503
        with pytest.raises(TransientError, match="answered 503"):
            ChatNotifier("chat", srv.url, SLACK).send(_alerts())


def test_alertmanager_v2_post_body() -> None:
    clock = FakeClock(NOW)
    with recording_server("") as srv:
        notifier = AlertmanagerNotifier("am", srv.url, token=SECRET, clock=clock, firing_ttl=timedelta(hours=1))
        assert notifier.send(_alerts()) == 2
    (request,) = srv.requests
    assert request.path == "/api/v2/alerts"
    assert request.headers["authorization"] == f"Bearer {SECRET}"
    firing, resolved = json.loads(request.body)
    assert firing["labels"]["episode"] == _alerts()[0].fingerprint[:16]
    assert firing["labels"]["alertname"] == "InferenceReserveBreach"
    assert firing["annotations"]["fallback"] == "Pause training on east."
    assert firing["startsAt"] == "2026-03-04T11:00:00Z"
    assert firing["endsAt"] == "2026-10-12T15:05:00Z"  # now + ttl: Alertmanager keeps it firing that long
    assert resolved["endsAt"] == "2026-03-04T12:30:00Z"
    assert "generatorURL" not in firing
    assert SECRET not in repr(notifier)


def test_factories_build_every_kind_from_a_receiver_config() -> None:
    registry = default_notifiers()
    cfg = config()
    for kind in ["alertmanager", *FLAVOURS]:
        receiver = ReceiverConfig(name=kind, kind=cast(Any, kind), url="http://127.0.0.1:1/x?token=t")
        notifier = registry.build(receiver, cfg, {})
        assert notifier.name == kind
    signed = ReceiverConfig(name="d", kind=cast(Any, "dingtalk"), url="http://x/y", secret_env="DING_SECRET")
    with pytest.raises(PermanentError, match="DING_SECRET"):
        registry.build(signed, cfg, {})
    assert registry.build(signed, cfg, {"DING_SECRET": SECRET}).name == "d"
    unsigned_kind = ReceiverConfig(name="w", kind=cast(Any, "wecom"), url="http://x/y", secret_env="S")
    with pytest.raises(PermanentError, match="no signing secret"):
        registry.build(unsigned_kind, cfg, {"S": SECRET})
