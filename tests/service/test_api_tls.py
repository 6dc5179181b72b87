"""TLS: any listen address off loopback needs a certificate and key, or an explicit --insecure-listen
that is logged at every start; the API served with a self-signed certificate made here answers an
httpx client that trusts it, and refuses to start with a broken key."""

from __future__ import annotations

import logging
import shutil
import ssl
import subprocess
import threading
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from prometheus_client import CollectorRegistry

from gpusteward.config import example_config_path
from service.api import ApiContext
from service.api_server import ApiServer, ListenError, Tls, check_listen, is_loopback
from service.api_tokens import Tokens
from service.cli import cli
from tests.service.api_rig import RecordingController

TOKEN = "alice-secret-token"


def _self_signed(folder: Path) -> Tls:
    """A certificate for 127.0.0.1 and localhost, made with the openssl command (Debian's openssl)."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=gpusteward-test",
         "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
        check=True, capture_output=True, timeout=60,
    )
    return Tls(cert, key)


def _ctx(controller: RecordingController) -> ApiContext:
    ready = threading.Event()
    ready.set()
    return ApiContext(CollectorRegistry(), Tokens({"alice": TOKEN}), controller, ready, lambda: True)


def test_the_api_speaks_https_with_the_given_certificate(tmp_path: Path) -> None:
    tls = _self_signed(tmp_path)
    controller = RecordingController()
    with ApiServer(_ctx(controller), tls=tls) as server:
        assert server.url.startswith("https://127.0.0.1:")
        trust = ssl.create_default_context(cafile=str(tls.certfile))
        with httpx.Client(verify=trust, timeout=10) as client:
            assert client.get(f"{server.url}/readyz").text == "ready\n"
            approved = client.post(f"{server.url}/api/v1/plans/p-1/approve", json={"reason": "ok"},
                                   headers={"Authorization": f"Bearer {TOKEN}"})
            assert approved.status_code == 200
        with pytest.raises(httpx.ConnectError):  # a client that does not trust it refuses the certificate
            httpx.get(f"{server.url}/readyz", timeout=10)
        plain = server.url.replace("https://", "http://")
        with pytest.raises(httpx.HTTPError):  # plain HTTP gets no answer from a TLS socket
            httpx.get(f"{plain}/readyz", timeout=5)
    assert [r.actor for r in controller.acted] == ["alice"]


def test_a_key_that_does_not_load_refuses_to_start(tmp_path: Path) -> None:
    tls = _self_signed(tmp_path)
    tls.keyfile.write_text("not a key\n", encoding="utf-8")
    with pytest.raises(ListenError, match="TLS certificate or key"):
        ApiServer(_ctx(RecordingController()), tls=tls)


@pytest.mark.parametrize("host", ["0.0.0.0", "10.1.2.3", "::", "[2001:db8::1]", "gpusteward.example"])
def test_a_non_loopback_address_needs_tls_or_insecure_listen(host: str, tmp_path: Path) -> None:
    assert not is_loopback(host)
    with pytest.raises(ListenError, match="--insecure-listen"):
        check_listen(host, None, insecure=False)
    with pytest.raises(ListenError):  # the server itself refuses, before binding anything
        ApiServer(_ctx(RecordingController()), host, 0)
    check_listen(host, Tls(tmp_path / "c.pem", tmp_path / "k.pem"), insecure=False)  # with TLS: allowed


def test_insecure_listen_is_warned_about_at_every_start(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="gpusteward.service.api"):
        for _ in range(2):
            check_listen("10.1.2.3", None, insecure=True)
    warnings = [r for r in caplog.records if "--insecure-listen" in r.getMessage()]
    assert len(warnings) == 2
    assert all(r.levelno == logging.WARNING for r in warnings)


@pytest.mark.parametrize("host", ["127.0.0.1", "127.9.9.9", "::1", "[::1]", "localhost"])
def test_loopback_stays_plain_http_without_a_warning(host: str, caplog: pytest.LogCaptureFixture) -> None:
    assert is_loopback(host)
    with caplog.at_level(logging.WARNING):
        check_listen(host, None, insecure=False)
    assert caplog.records == []


def test_serve_refuses_a_plain_non_loopback_listen_before_opening_anything(tmp_path: Path) -> None:
    config = tmp_path / "gpusteward.toml"
    shutil.copyfile(example_config_path(), config)
    result = CliRunner().invoke(cli, ["serve", "--config", str(config), "--listen", "10.1.2.3:9464"])
    assert result.exit_code == 2, result.output
    assert "not loopback" in result.output
    assert "--insecure-listen" in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gpusteward.toml"]  # no warehouse was created
    half = CliRunner().invoke(cli, ["serve", "--config", str(config), "--tls-cert", str(config)])
    assert half.exit_code == 2
    assert "both" in half.output
