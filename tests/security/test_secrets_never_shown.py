"""Secrets never appear in logs, outputs or error messages of a demo-like run.

A small simulated fleet goes through import, evaluate, alerts (test and list), status and a
Markdown review, with an API token and a webhook signing secret in the environment, and two
webhook receivers: one that works (it gets signed posts) and one whose URL carries credentials
and a query token and whose host refuses connections (its errors are reported). Every line the
commands print, every log record, and what the warehouse stored as text are searched for the secrets.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest
from click.testing import CliRunner

from alerts.webhook import SIGNATURE_HEADER, verify
from gpusteward.config import example_config_path
from service.cli import cli
from simulator import simulate
from tests.alerts.server import Recorder, recording_server
from tests.realcomponents.conftest import free_port
from tests.simulated import MANIFEST_FILE
from warehouse import open_warehouse

WEBHOOK_SECRET = "whsec-demo-9d3f0b2a77"
URL_PASSWORD = "pw-in-url-41c9e8"
QUERY_TOKEN = "qtok-in-url-6b02aa"
API_TOKEN = "apitok-demo-e5f6a7b8c9"
SECRETS = (WEBHOOK_SECRET, URL_PASSWORD, QUERY_TOKEN, API_TOKEN)


@pytest.fixture(scope="module")
def receiver() -> Iterator[Recorder]:
    with recording_server() as srv:
        yield srv


@pytest.fixture(scope="module")
def run_output(tmp_path_factory: pytest.TempPathFactory, receiver: Recorder) -> tuple[str, Path]:
    root = tmp_path_factory.mktemp("secrets")
    simulate(root / "data", date(2026, 10, 1), 1, 5, nodes=2)
    dead = f"http://ops:{URL_PASSWORD}@127.0.0.1:{free_port()}/hook?token={QUERY_TOKEN}"
    config = root / "gpusteward.toml"
    config.write_text(
        Path(example_config_path()).read_text(encoding="utf-8")
        + f'\n[[alerts.receivers]]\nname = "signed"\nkind = "webhook"\nurl = "{receiver.url}"\n'
        'secret_env = "GS_TEST_WEBHOOK_SECRET"\n'
        f'\n[[alerts.receivers]]\nname = "down"\nkind = "webhook"\nurl = "{dead}"\n'
        'secret_env = "GS_TEST_WEBHOOK_SECRET"\ntimeout = "2s"\n',
        encoding="utf-8",
    )
    env = {"GS_TEST_WEBHOOK_SECRET": WEBHOOK_SECRET, "GPUSTEWARD_API_TOKENS": f"alice:{API_TOKEN}"}
    db = str(root / "w.duckdb")
    commands = [
        ["validate-config", str(config)],
        ["import", "--config", str(config), "--db", db, "--ignore", MANIFEST_FILE, str(root / "data")],
        ["evaluate", "--config", str(config), "--db", db],
        ["alerts", "test", "--config", str(config)],
        ["alerts", "list", "--config", str(config), "--db", db, "--outbox"],
        ["status", "--config", str(config), "--db", db],
        ["report", "--config", str(config), "--db", db, "--format", "md", "--lang", "en"],
    ]
    handler = _Capture()
    logging.getLogger().addHandler(handler)
    logging.getLogger().setLevel(logging.DEBUG)
    out: list[str] = []
    try:
        for args in commands:
            result = CliRunner().invoke(cli, args, env=env)
            out.append(f"$ {' '.join(args)} -> {result.exit_code}\n{result.output}\n{result.exception!r}")
    finally:
        logging.getLogger().removeHandler(handler)
    return "\n".join(out) + "\n".join(handler.lines), Path(db)


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


def test_the_flow_ran_and_reported_the_failing_receiver(run_output: tuple[str, Path]) -> None:
    text, _ = run_output
    assert "down: firing FAILED" in text, text[-3000:]
    assert "signed: firing ok" in text


@pytest.mark.parametrize("secret", SECRETS)
def test_no_secret_in_outputs_or_logs(run_output: tuple[str, Path], secret: str) -> None:
    assert secret not in run_output[0]


def test_no_secret_stored_in_the_warehouse(run_output: tuple[str, Path]) -> None:
    with open_warehouse(run_output[1], read_only=True) as wh:
        for table in ("import_runs", "alerts"):
            dump = wh.query(f"SELECT * FROM {table}").write_csv()
            assert not any(s in dump for s in SECRETS), table


def expected_v1(secret: str, signed_at: int, body: bytes) -> str:
    """The signature computed here, independently of alerts/webhook_signature.py."""
    return "v1=" + hmac.new(secret.encode(), f"{signed_at}.".encode() + body, hashlib.sha256).hexdigest()


def test_the_signed_receiver_can_verify_every_post(run_output: tuple[str, Path], receiver: Recorder) -> None:
    assert receiver.requests
    for request in receiver.requests:
        header = request.headers[SIGNATURE_HEADER.lower()]
        # Its own signing time as "now": this run used the system clock; freshness is tested with a
        # FakeClock in tests/alerts/test_webhook_replay.py.
        signed_at = int(header.split(",")[0].removeprefix("t="))
        assert verify(header, request.body, [WEBHOOK_SECRET], now=signed_at) == signed_at
        assert expected_v1(WEBHOOK_SECRET, signed_at, request.body) in header
