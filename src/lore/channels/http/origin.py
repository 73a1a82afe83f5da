"""Where a request came from: over HTTPS or not, and from Lore's own page or another.

Every port of a host is the same site to a browser, so SameSite=Strict still sends the
log-in cookie with a form a page on another local port submits. A change asked with the
cookie therefore needs the page's CSRF token (header `X-CSRF-Token`, or the form field
`csrf_token`), and is refused when the browser says it came from elsewhere (`Origin`,
`Sec-Fetch-Site`). Requests with a bearer token carry no ambient credential and skip
this. `X-Forwarded-Proto` and `X-Forwarded-Host` count only from `api.trusted_proxies`.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from fastapi import Request

from lore.channels.http.auth import Forbidden
from lore.channels.http.logins import Login
from lore.config import ApiConfig

__all__ = ["CSRF_FIELD", "CSRF_HEADER", "ForeignRequest", "check_from_page", "check_same_origin"]

CSRF_HEADER = "x-csrf-token"
CSRF_FIELD = "csrf_token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_FORMS = ("application/x-www-form-urlencoded", "multipart/form-data")


class ForeignRequest(Forbidden):
    """A change asked with the page's cookie that Lore's page did not send."""


def is_https(request: Request, api: ApiConfig) -> bool:
    if request.url.scheme == "https":
        return True
    proto = _forwarded(request, api, "x-forwarded-proto")
    return proto is not None and proto.lower() == "https"


def check_same_origin(request: Request, api: ApiConfig) -> None:
    """Refuse what the browser says another site (or another port) sent."""
    fetched_from = request.headers.get("sec-fetch-site", "").lower()
    if fetched_from in ("cross-site", "same-site"):
        raise ForeignRequest("refused: the request came from another site or port")
    origin = request.headers.get("origin")
    if origin is not None and urlsplit(origin).netloc.lower() != _own_host(request, api):
        raise ForeignRequest("refused: the request came from another site or port")


async def check_from_page(request: Request, login: Login, api: ApiConfig) -> None:
    """A change asked with the log-in cookie: Lore's page, with this log-in's token."""
    check_same_origin(request, api)
    sent = request.headers.get(CSRF_HEADER, "")
    if not sent and request.headers.get("content-type", "").startswith(_FORMS):
        value = (await request.form()).get(CSRF_FIELD)
        sent = value if isinstance(value, str) else ""
    if not login.sent(sent):
        raise ForeignRequest(
            "this request did not come from Lore's page (no valid CSRF token): reload the page"
        )


def _own_host(request: Request, api: ApiConfig) -> str:
    forwarded = _forwarded(request, api, "x-forwarded-host")
    return (forwarded or request.headers.get("host", "")).lower()


def _forwarded(request: Request, api: ApiConfig, name: str) -> str | None:
    """A proxy's header, when the peer is a proxy config trusts: the value it set last."""
    value = request.headers.get(name)
    if value is None or request.client is None or not api.trusted_proxies:
        return None
    try:
        peer = ipaddress.ip_address(request.client.host)
    except ValueError:
        return None
    if not any(peer in network for network in api.proxy_networks):
        return None
    return value.rsplit(",", 1)[-1].strip()
