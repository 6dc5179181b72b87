"""The notifier extension point: a Protocol, a registry of receiver kinds, and `deliver`.

Built-in kinds (jsonl, webhook, alertmanager, slack, feishu, dingtalk, wecom) are registered by
`default_notifiers()` the same way an add-on registers its own; importing this module registers
nothing. Delivery never raises for one receiver's failure: the report says what was sent, what
failed, and whether a retry may help.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from alerts.alertmanager import AlertmanagerNotifier
from alerts.chat import FLAVOURS, ChatNotifier
from alerts.jsonl import JsonlNotifier
from alerts.model import Alert
from alerts.webhook import WebhookNotifier
from gpusteward.config.schema import Config, ReceiverConfig
from gpusteward.errors import PermanentError, StewardError, TransientError


class Notifier(Protocol):
    """Delivers alerts to one receiver."""

    @property
    def name(self) -> str:
        """The receiver's name from the config (alerts route by it)."""
        ...

    def send(self, alerts: Sequence[Alert]) -> int:
        """Deliver `alerts`; return how many were newly delivered.

        Raise TransientError when a retry may succeed, PermanentError when it will not.
        """
        ...


NotifierFactory = Callable[[ReceiverConfig, Config, Mapping[str, str]], Notifier]
"""Builds a notifier from its receiver config, the whole config, and the environment (for secrets)."""


class NotifierRegistry:
    """Receiver kinds -> notifier factories."""

    def __init__(self) -> None:
        self._factories: dict[str, NotifierFactory] = {}

    def register(self, kind: str, factory: NotifierFactory) -> None:
        if kind in self._factories:
            raise ValueError(f"a notifier kind {kind!r} is already registered")
        self._factories[kind] = factory

    def kinds(self) -> list[str]:
        return list(self._factories)

    def build(self, receiver: ReceiverConfig, config: Config, env: Mapping[str, str]) -> Notifier:
        factory = self._factories.get(receiver.kind)
        if factory is None:
            raise PermanentError(f"receiver {receiver.name!r}: no notifier for kind {receiver.kind!r}")
        return factory(receiver, config, env)


def _jsonl(receiver: ReceiverConfig, config: Config, _env: Mapping[str, str]) -> Notifier:
    if not receiver.path:
        raise PermanentError(f"receiver {receiver.name!r}: a jsonl receiver needs a path")
    return JsonlNotifier(receiver.name, config.resolve(receiver.path))


def _url(receiver: ReceiverConfig, env: Mapping[str, str]) -> str:
    """The receiver's URL: `url_env` (an environment variable, for URLs that carry tokens) or `url`."""
    url_env = getattr(receiver, "url_env", None)  # a field the config may grow; chat bot URLs are secrets
    if url_env:
        url = env.get(url_env)
        if not url:
            raise PermanentError(f"receiver {receiver.name!r}: environment variable {url_env} (its URL) is not set")
        return url
    if not receiver.url:
        raise PermanentError(f"receiver {receiver.name!r}: a {receiver.kind} receiver needs a url")
    return receiver.url


def _secret(receiver: ReceiverConfig, env: Mapping[str, str], what: str) -> str | None:
    if not receiver.secret_env:
        return None
    secret = env.get(receiver.secret_env)
    if not secret:
        # Fail closed: a receiver that expects signed bodies must not get unsigned ones.
        raise PermanentError(
            f"receiver {receiver.name!r}: environment variable {receiver.secret_env} ({what}) is not set"
        )
    return secret


def _webhook(receiver: ReceiverConfig, _config: Config, env: Mapping[str, str]) -> Notifier:
    url = _url(receiver, env)
    secret = _secret(receiver, env, "signing secret")
    # The previous secret (while rotating) is optional: once the variable is removed, rotation is over.
    previous = env.get(receiver.previous_secret_env) if receiver.previous_secret_env else None
    return WebhookNotifier(receiver.name, url, secret=secret, previous_secret=previous or None,
                           timeout_s=receiver.timeout.total_seconds())


def _alertmanager(receiver: ReceiverConfig, _config: Config, env: Mapping[str, str]) -> Notifier:
    url = _url(receiver, env)
    token = _secret(receiver, env, "bearer token")
    return AlertmanagerNotifier(receiver.name, url, token=token, timeout_s=receiver.timeout.total_seconds())


def _chat(receiver: ReceiverConfig, config: Config, env: Mapping[str, str]) -> Notifier:
    url = _url(receiver, env)
    secret = _secret(receiver, env, "signing secret")
    flavour = FLAVOURS[receiver.kind]
    return ChatNotifier(receiver.name, url, flavour, secret=secret, lang=receiver.language, zone=config.timezone,
                        timeout_s=receiver.timeout.total_seconds())


def default_notifiers() -> NotifierRegistry:
    """A fresh registry holding the built-in receiver kinds."""
    registry = NotifierRegistry()
    registry.register("jsonl", _jsonl)
    registry.register("webhook", _webhook)
    registry.register("alertmanager", _alertmanager)
    for kind in FLAVOURS:
        registry.register(kind, _chat)
    return registry


@dataclass(frozen=True)
class DeliveryOutcome:
    receiver: str
    alerts: int  # alerts routed to this receiver
    sent: int  # newly delivered (0 for a repeat the receiver already had)
    error: str | None = None
    retry: bool = False  # True when the error is transient


@dataclass(frozen=True)
class DeliveryReport:
    outcomes: tuple[DeliveryOutcome, ...]

    @property
    def ok(self) -> bool:
        return all(o.error is None for o in self.outcomes)

    @property
    def sent(self) -> int:
        return sum(o.sent for o in self.outcomes)

    @property
    def failed(self) -> list[DeliveryOutcome]:
        return [o for o in self.outcomes if o.error is not None]


def build_notifiers(
    config: Config, *, registry: NotifierRegistry | None = None, env: Mapping[str, str] | None = None
) -> tuple[list[Notifier], list[DeliveryOutcome]]:
    """Notifiers for every configured receiver, and an outcome for each that could not be built."""
    chosen = registry if registry is not None else default_notifiers()
    environ = os.environ if env is None else env
    built: list[Notifier] = []
    broken: list[DeliveryOutcome] = []
    for receiver in config.alerts.receivers:
        try:
            built.append(chosen.build(receiver, config, environ))
        except StewardError as exc:
            broken.append(DeliveryOutcome(receiver.name, 0, 0, error=str(exc), retry=False))
    return built, broken


def deliver(
    alerts: Sequence[Alert],
    config: Config,
    *,
    notifiers: Sequence[Notifier] | None = None,
    registry: NotifierRegistry | None = None,
    env: Mapping[str, str] | None = None,
) -> DeliveryReport:
    """Send each alert to its receivers (all of them when the alert names none)."""
    broken: list[DeliveryOutcome] = []
    if notifiers is None:
        built, broken = build_notifiers(config, registry=registry, env=env)
        notifiers = built
    outcomes = list(broken)
    for notifier in notifiers:
        mine = [a for a in alerts if not a.receivers or notifier.name in a.receivers]
        if not mine:
            outcomes.append(DeliveryOutcome(notifier.name, 0, 0))
            continue
        try:
            sent = notifier.send(mine)
        except TransientError as exc:
            outcomes.append(DeliveryOutcome(notifier.name, len(mine), 0, error=str(exc), retry=True))
        except PermanentError as exc:
            outcomes.append(DeliveryOutcome(notifier.name, len(mine), 0, error=str(exc), retry=False))
        else:
            outcomes.append(DeliveryOutcome(notifier.name, len(mine), sent))
    return DeliveryReport(tuple(outcomes))
