"""Who may call the control API, and what each may do: bearer tokens, per person, with a role.

Token files hold one entry a line (`#` comments); $GPUSTEWARD_API_TOKENS holds entries separated by
commas or newlines:

    alice:approver:sha256:9f86d081884c7d65...   per-person, hashed at rest (`gpusteward api-token create`)
    ci-bot:s3cret-token                           plain `identity:token` (the older form): role admin

A hashed entry stores only the SHA-256 of a random 256-bit token, which `api-token create` prints
once; like GitHub's and GitLab's tokens, the token's entropy makes a salt unnecessary, and a
stolen file does not let anyone call the API. Roles, each including the ones before it:

    viewer    GETs only (what the dashboard shows)
    operator  silence and acknowledge alerts, trigger a review, retry a quarantined import, exempt a job
              from reclaiming (only a lead of the job's team, `reclaim.team_leads`, or an admin)
    approver  approve and reject quota plans and reclaim actions
    admin     everything

Tokens are compared in constant time and never logged or shown, not even in `repr`. Token files
are read again when they change: a created or revoked token counts from the next request.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import re
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import cast, get_args

from gpusteward.config import service as service_config
from warehouse.control import ACTIONS, Action

log = logging.getLogger("gpusteward.service.api")

TOKENS_ENV = "GPUSTEWARD_API_TOKENS"
Role = service_config.Role  # the names live in the config, which maps proxy users to them
ROLES: tuple[Role, ...] = get_args(Role)
_OPERATOR: frozenset[Action] = frozenset(
    {"alert.silence", "alert.acknowledge", "review.trigger", "import.retry", "reclaim.exempt"}
)
ALLOWED: dict[Role, frozenset[Action]] = {
    "viewer": frozenset(),
    "operator": _OPERATOR,
    "approver": _OPERATOR | {"plan.approve", "plan.reject", "reclaim.approve", "reclaim.reject"},
    "admin": frozenset(ACTIONS),
}
_HASHED = re.compile(r"(?P<identity>[^:\s]+):(?P<role>[a-z]+):sha256:(?P<digest>[0-9a-f]{64})")


def least_role(action: Action) -> Role:
    return next(role for role in ROLES if action in ALLOWED[role])


@dataclass(frozen=True)
class Caller:
    identity: str
    role: Role
    via: str | None = None  # the token of the proxy that named this caller (service/api_identity.py)

    def may(self, action: Action) -> bool:
        return action in ALLOWED[self.role]


@dataclass(frozen=True)
class TokenEntry:
    identity: str
    role: Role
    digest: str  # hex SHA-256 of the token; a plain entry's token is hashed when read

    def line(self) -> str:
        return f"{self.identity}:{self.role}:sha256:{self.digest}"


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class Tokens:
    """Bearer tokens -> caller (identity and role). Its repr never shows a token or a digest.

    `pairs` (identity -> plain token) are admins, as every token was before roles."""

    def __init__(self, pairs: Mapping[str, str] | None = None, entries: Iterable[TokenEntry] = ()) -> None:
        plain = [TokenEntry(identity, "admin", digest(token)) for identity, token in (pairs or {}).items() if token]
        self._entries = [*plain, *entries]

    def __repr__(self) -> str:
        return f"Tokens({len(self._entries)} configured)"

    def __len__(self) -> int:
        return len(self._entries)

    def caller(self, header: str | None) -> Caller | None:
        if not header or not header.startswith("Bearer "):
            return None
        offered = digest(header.removeprefix("Bearer ").strip()).encode()
        found = None
        for entry in self._entries:  # compare every one: no timing hint of which matched
            if hmac.compare_digest(entry.digest.encode(), offered):
                found = Caller(entry.identity, entry.role)
        return found

    def identify(self, header: str | None) -> str | None:
        caller = self.caller(header)
        return caller.identity if caller else None


def _entries(text: str) -> list[TokenEntry]:
    entries: list[TokenEntry] = []
    for raw in re.split(r"[\n,]", text):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        hashed = _HASHED.fullmatch(line)
        if hashed:
            role = hashed["role"]
            if role not in ROLES:
                raise ValueError(f"token entry of {hashed['identity']!r}: role must be one of {', '.join(ROLES)}")
            entries.append(TokenEntry(hashed["identity"], cast(Role, role), hashed["digest"]))
            continue
        identity, sep, token = line.partition(":")
        if not sep or not identity.strip() or not token.strip():
            raise ValueError("a token entry must look like identity:token (the entry is not shown)")
        entries.append(TokenEntry(identity.strip(), "admin", digest(token.strip())))
    return entries


def parse_tokens(text: str) -> dict[str, str]:
    """Plain `identity:token` pairs separated by newlines or commas; blank lines and # comments skipped."""
    pairs: dict[str, str] = {}
    for raw in re.split(r"[\n,]", text):
        line = raw.strip()
        if not line or line.startswith("#") or _HASHED.fullmatch(line):
            continue
        identity, sep, token = line.partition(":")
        if not sep or not identity.strip() or not token.strip():
            raise ValueError("a token entry must look like identity:token (the entry is not shown)")
        pairs[identity.strip()] = token.strip()
    return pairs


class FileTokens(Tokens):
    """Tokens from $GPUSTEWARD_API_TOKENS and token files, read again when a file changes, so a token
    created or revoked with `gpusteward api-token` counts from the next request, without a restart."""

    def __init__(self, files: list[Path], env_text: str) -> None:
        self._files = list(files)
        self._env_text = env_text
        self._stamp = self._stamps()
        super().__init__(entries=self._read())

    def _stamps(self) -> tuple[tuple[int, int] | None, ...]:
        stamps: list[tuple[int, int] | None] = []
        for path in self._files:
            try:
                info = path.stat()
            except OSError:
                stamps.append(None)
            else:
                stamps.append((info.st_mtime_ns, info.st_size))
        return tuple(stamps)

    def _read(self) -> list[TokenEntry]:
        entries = _entries(self._env_text)
        for path in self._files:
            entries += _entries(path.read_text(encoding="utf-8"))
        return entries

    def caller(self, header: str | None) -> Caller | None:
        stamp = self._stamps()
        if stamp != self._stamp:
            self._stamp = stamp
            try:
                self._entries = self._read()
            except (OSError, ValueError) as exc:  # a half-edited file: refuse everyone rather than guess
                log.error("control API tokens: a token file cannot be read (%s); every request is refused "
                          "until it is fixed", exc)
                self._entries = []
        return super().caller(header)


def load_tokens(files: list[Path], env: Mapping[str, str] | None = None) -> Tokens:
    environ = os.environ if env is None else env
    return FileTokens(files, environ.get(TOKENS_ENV, ""))


def create_token(path: Path, identity: str, role: Role) -> str:
    """Append a hashed entry for `identity` to `path` (made readable by its owner only); the token, once."""
    if not re.fullmatch(r"[^:\s,#]+", identity):
        raise ValueError("an identity is one word without ':', ',', '#' or spaces (for example alice or ci-bot)")
    token = "gst_" + secrets.token_urlsafe(32)
    existing = path.read_text(encoding="utf-8") if path.exists() else ""
    line = TokenEntry(identity, role, digest(token)).line()
    separator = "" if not existing or existing.endswith("\n") else "\n"
    path.write_text(f"{existing}{separator}{line}\n", encoding="utf-8")
    path.chmod(0o600)
    return token


def revoke_tokens(path: Path, identity: str) -> int:
    """Remove every entry of `identity` (hashed or plain) from `path`; how many were removed."""
    kept, removed = [], 0
    for line in path.read_text(encoding="utf-8").splitlines():
        entry = line.strip()
        if entry and not entry.startswith("#") and entry.split(":", 1)[0].strip() == identity:
            removed += 1
            continue
        kept.append(line)
    path.write_text("".join(f"{line}\n" for line in kept), encoding="utf-8")
    return removed


def list_tokens(path: Path) -> list[tuple[str, Role]]:
    """(identity, role) of every entry in `path`; never a token or a digest."""
    return [(e.identity, e.role) for e in _entries(path.read_text(encoding="utf-8"))]
