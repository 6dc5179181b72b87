"""Who is calling the control API: a bearer token's identity, or the user an authenticating proxy names.

An authenticating proxy (oauth2-proxy, Apache or nginx with SSO, the dashboard acting for its viewer)
signs the person in and names them in a header (`service.proxy.user_header`, e.g. X-Forwarded-User),
with their groups in another (`groups_header`). The service believes that header only when it is
configured and the connection comes from one of `trusted_proxies` (loopback by default): a request
carrying it from any other address is refused, since anyone could type it; with `require_token` it
also needs a valid token beside it (the proxy's own). The user's role comes
from the config (`service.proxy.roles`, per user or `group:NAME`, the highest that applies), never
from the request. A request with both a token and the header is the proxy acting for the user: the
audit names the user, and the role is the lower of the user's and the token's (a proxy cannot lend
more than it holds).
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from starlette.datastructures import Headers

from gpusteward.config.service import ProxyIdentityConfig, Role
from service.api_tokens import ROLES, Caller, Tokens
from warehouse.control import ControlError

log = logging.getLogger("gpusteward.service.api")

MAX_USER = 256  # characters of a proxy's user name (an e-mail address fits)
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class IdentityError(ControlError):
    """The caller is not known (401), or named in a way that is refused (400, 403); `where` names the header."""

    def __init__(self, message: str, *, where: str, status: int) -> None:
        super().__init__(message, status=status)
        self.where = where


@dataclass(frozen=True)
class ProxyIdentity:
    user_header: str
    groups_header: str | None = None
    trusted: tuple[Network, ...] = (ipaddress.ip_network("127.0.0.0/8"), ipaddress.ip_network("::1/128"))
    user_roles: Mapping[str, Role] = field(default_factory=dict)
    group_roles: Mapping[str, Role] = field(default_factory=dict)
    require_token: bool = False  # the header counts only beside a valid token (the proxy's own)

    @classmethod
    def from_config(cls, config: ProxyIdentityConfig) -> ProxyIdentity | None:
        """The proxy identity the config describes; None when no user header is configured (tokens only)."""
        if not config.user_header:
            return None
        return cls(
            config.user_header,
            config.groups_header or None,
            tuple(ipaddress.ip_network(n, strict=False) for n in config.trusted_proxies),
            {k: v for k, v in config.roles.items() if not k.startswith("group:")},
            {k.removeprefix("group:"): v for k, v in config.roles.items() if k.startswith("group:")},
            config.require_token,
        )

    def headers(self) -> tuple[str, ...]:
        return (self.user_header, self.groups_header) if self.groups_header else (self.user_header,)

    def trusts(self, peer: str | None) -> bool:
        if not peer:
            return False
        try:
            address = ipaddress.ip_address(peer)
        except ValueError:
            return False
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        return any(address in network for network in self.trusted)

    def role_of(self, user: str, groups: Sequence[str]) -> Role | None:
        """The highest role the config gives the user or any of their groups; None: no role."""
        granted = [self.user_roles[user]] if user in self.user_roles else []
        granted += [self.group_roles[g] for g in groups if g in self.group_roles]
        return max(granted, key=ROLES.index) if granted else None


def _one(headers: Headers, name: str) -> str | None:
    values = headers.getlist(name)
    if len(values) > 1:  # which one would the proxy have meant? Never guess who someone is.
        raise IdentityError(f"{name} is sent {len(values)} times; send it once", where=f"header {name}", status=400)
    return values[0] if values else None


def _user(value: str, header: str) -> str:
    user = value.strip()
    if not user or len(user) > MAX_USER or not user.isprintable():
        raise IdentityError(f"{header} must name the user: 1-{MAX_USER} printable characters",
                            where=f"header {header}", status=400)
    return user


def _proxy_caller(proxy: ProxyIdentity, headers: Headers, peer: str | None, token: Caller | None) -> Caller | None:
    """The user the proxy names, with their configured role; None when the request names nobody."""
    sent = {name: _one(headers, name) for name in proxy.headers()}
    present = [name for name, value in sent.items() if value is not None]
    if not present:
        return None
    if not proxy.trusts(peer):
        log.warning("control API: refused %s from %s, which is not a trusted proxy", present[0], peer or "?")
        raise IdentityError(
            f"{present[0]} is only believed from a trusted proxy, and {peer or 'this peer'} is not one "
            "(service.proxy.trusted_proxies); the request is refused",
            where=f"header {present[0]}", status=403)
    if proxy.require_token and token is None:
        raise IdentityError(f"{present[0]} is only believed beside the proxy's own bearer token "
                            "(service.proxy.require_token)", where="header Authorization", status=401)
    raw_user = sent[proxy.user_header]
    if raw_user is None:
        raise IdentityError(f"{proxy.groups_header} without {proxy.user_header} names nobody",
                            where=f"header {proxy.user_header}", status=400)
    user = _user(raw_user, proxy.user_header)
    raw_groups = sent.get(proxy.groups_header or "") or ""
    groups = [g.strip() for g in raw_groups.split(",") if g.strip()]
    role = proxy.role_of(user, groups)
    if role is None:
        raise IdentityError(f"{user} (signed in at the proxy) has no role here: give the user or a group of "
                            "theirs one in service.proxy.roles", where=f"header {proxy.user_header}", status=403)
    if token is None:
        return Caller(user, role)
    return Caller(user, min(role, token.role, key=ROLES.index), via=token.identity)


def identify(tokens: Tokens, proxy: ProxyIdentity | None, headers: Headers, peer: str | None) -> Caller:
    """Who is calling; IdentityError (401, or 400/403 for a proxy header that is refused) otherwise."""
    authorization = headers.get("authorization")
    token = tokens.caller(authorization)
    if authorization is not None and token is None:
        raise IdentityError("the bearer token is not valid", where="header Authorization", status=401)
    forwarded = _proxy_caller(proxy, headers, peer, token) if proxy is not None else None
    if forwarded is not None:
        return forwarded
    if token is None:
        also = f", or {proxy.user_header} from a trusted proxy" if proxy is not None else ""
        raise IdentityError(f"a valid bearer token is required{also}", where="header Authorization", status=401)
    return token

