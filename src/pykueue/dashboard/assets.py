"""Serving the dashboard's static files (package data under ``static/``) at ``/ui``.

The files carry no data and no credential, so they are served without authentication (the API
calls the page makes are authenticated as any other request). The ``Host`` check still applies
(a DNS-rebound name gets 403, as for the API), and every response forbids what the page does not
need: a Content-Security-Policy that allows only same-origin scripts, styles and connections (a
token the page holds can only ever be sent back to this server), no framing, no referrer.
"""

from __future__ import annotations

import functools
from importlib import resources

from starlette.types import Scope, Send

from pykueue.apiserver.security import RequestGuard

UI_PREFIX = "/ui"
FILES = {
    "": ("index.html", "text/html; charset=utf-8"),
    "/": ("index.html", "text/html; charset=utf-8"),
    "/index.html": ("index.html", "text/html; charset=utf-8"),
    "/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/app.css": ("app.css", "text/css; charset=utf-8"),
    "/favicon.svg": ("favicon.svg", "image/svg+xml"),
}
SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        b"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    ),
    (b"referrer-policy", b"no-referrer"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-cache"),
]


def is_ui_path(path: str) -> bool:
    """Whether ``path`` belongs to the dashboard (``/ui`` and below)."""
    return path == UI_PREFIX or path.startswith(UI_PREFIX + "/")


@functools.cache
def read_asset(name: str) -> bytes:
    """The bytes of one shipped file (read once)."""
    return resources.files("pykueue.dashboard").joinpath("static", name).read_bytes()


async def serve_ui(scope: Scope, send: Send, guard: RequestGuard) -> None:
    """Answer a request below ``/ui``: the asset, or a short plain-text refusal."""
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
    host = headers.get("host")
    method: str = scope["method"]
    entry = FILES.get(scope["path"][len(UI_PREFIX) :])
    if host is not None and not guard.host_allowed(host):
        status, body, content_type = 403, b"forbidden: unknown Host\n", "text/plain; charset=utf-8"
    elif method not in ("GET", "HEAD"):
        status, body, content_type = 405, b"method not allowed\n", "text/plain; charset=utf-8"
    elif entry is None:
        status, body, content_type = 404, b"not found\n", "text/plain; charset=utf-8"
    else:
        status, body, content_type = 200, read_asset(entry[0]), entry[1]
    head = [
        (b"content-type", content_type.encode()),
        (b"content-length", str(len(body)).encode()),
        *SECURITY_HEADERS,
    ]
    if status == 405:
        head.append((b"allow", b"GET, HEAD"))
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": b"" if method == "HEAD" else body})
