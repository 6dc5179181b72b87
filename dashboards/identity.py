"""Who is looking: the viewer an authenticating proxy in front of the dashboard names in its headers.

The dashboard is deployed behind a sign-in proxy (oauth2-proxy, an SSO gateway) and reachable only
through it (it listens on loopback). With `--user-header` the proxy names the viewer; the dashboard
shows who is signed in and forwards that header (and `--groups-header`) with each control action,
so the service's audit names the person, not the dashboard (the service believes the header from
the dashboard's address: `service.proxy`, docs/service.md). With `--team-header` the proxy names the
viewer's team, which scopes every page to it. A configured header that is missing, repeated or empty
refuses the request: nothing is shown and nothing can be done, rather than showing everything.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

MAX_VALUE = 256  # characters of a user, group list or team name a proxy sends


@dataclass(frozen=True)
class SignIn:
    """The headers the sign-in proxy sets (None: not used)."""

    user_header: str | None = None
    groups_header: str | None = None
    team_header: str | None = None


@dataclass(frozen=True)
class Viewer:
    user: str | None = None
    groups: str | None = None
    team: str | None = None

    def forwarded(self, sign_in: SignIn) -> dict[str, str]:
        """The headers a control action carries to the service on the viewer's behalf."""
        sent = {sign_in.user_header: self.user, sign_in.groups_header: self.groups}
        return {name: value for name, value in sent.items() if name and value}


@dataclass(frozen=True)
class Refusal:
    """Why the request is refused: a catalogue key (dashboards/locales) and its parameters."""

    key: str
    params: Mapping[str, object]


def _values(headers: Mapping[str, str], name: str) -> list[str]:
    get_all = getattr(headers, "get_all", None)  # Streamlit's st.context.headers keeps a repeated header's values
    if callable(get_all):
        return [str(v) for v in get_all(name)]
    wanted = name.lower()
    return [value for key, value in headers.items() if key.lower() == wanted]


def _one(headers: Mapping[str, str], name: str, *, required: bool, who: str) -> str | Refusal | None:
    values = _values(headers, name)
    if not values:
        return Refusal("page.header_missing", {"header": name, "what": who}) if required else None
    if len(values) > 1:
        return Refusal("page.header_repeated", {"header": name, "count": len(values)})
    value = values[0].strip()
    if not value or len(value) > MAX_VALUE or not value.isprintable():
        return Refusal("page.header_invalid", {"header": name})
    return value


def viewer_from_headers(headers: Mapping[str, str], sign_in: SignIn) -> Viewer | Refusal:
    """The viewer the proxy names, or why the request is refused; without configured headers, nobody in particular."""
    found: dict[str, str | None] = {}
    wanted = (("user", sign_in.user_header, True, "page.who_user"), ("groups", sign_in.groups_header, False, ""),
              ("team", sign_in.team_header, True, "page.who_team"))
    for field_name, header, required, who in wanted:
        if not header:
            found[field_name] = None
            continue
        value = _one(headers, header, required=required, who=who)
        if isinstance(value, Refusal):
            return value
        found[field_name] = value
    return Viewer(found["user"], found["groups"], found["team"])
