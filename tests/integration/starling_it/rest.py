"""Calls to starlingd's REST API (/api/...) with the admin bearer token, for the tests of the
endpoints behind security.admin-token."""

from __future__ import annotations

import json
import urllib.error
import urllib.request


def call(broker, method: str, path: str, token: str | None) -> tuple[int, dict]:
    """(HTTP status, JSON body); an error status is returned, not raised."""
    req = urllib.request.Request(f"http://{broker.host}:{broker.http_port}{path}", method=method)
    if token is not None:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")
