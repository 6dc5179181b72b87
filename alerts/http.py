"""One HTTP POST for a notifier, with errors that say whether a retry may help.

5xx, 429, timeouts and connection failures raise TransientError; other 4xx PermanentError. Messages
name the receiver and the URL without its credentials or query (tokens often live there).
"""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx

from gpusteward.errors import PermanentError, TransientError


def redact(url: str) -> str:
    """scheme://host[:port]/path: no user info, no query (tokens often live there)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def post(
    client: httpx.Client, url: str, data: bytes, headers: dict[str, str], *, who: str, timeout_s: float
) -> httpx.Response:
    """POST `data`; return the response when its status is below 400."""
    where = redact(url)
    # `from None`: httpx's own messages may carry the full URL, query tokens included.
    try:
        response = client.post(url, content=data, headers=headers)
    except httpx.TimeoutException:
        raise TransientError(f"{who}: POST {where} timed out after {timeout_s:g}s") from None
    except httpx.TransportError as exc:
        raise TransientError(f"{who}: POST {where} failed: {type(exc).__name__}") from None
    status = response.status_code
    if status >= 500 or status == 429:
        raise TransientError(f"{who}: POST {where} answered {status}")
    if status >= 400:
        raise PermanentError(f"{who}: POST {where} answered {status}")
    return response
