"""Calls to starlingd's REST API (/api/...) with the admin bearer token, for the tests of the
endpoints behind security.admin-token."""

from __future__ import annotations

import json
import urllib.error
import urllib.request


def call(broker, method: str, path: str, token: str | None, body=None) -> tuple[int, dict]:
    """(HTTP status, JSON body); an error status is returned, not raised. A body is sent as
    JSON (a str is sent as it is, to test malformed ones)."""
    data = None
    if body is not None:
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    req = urllib.request.Request(
        f"http://{broker.host}:{broker.http_port}{path}", data=data, method=method
    )
    if token is not None:
        req.add_header("Authorization", f"Bearer {token}")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")
