"""Calls to starlingd's REST API (/api/...) with the admin bearer token, for the tests of the
endpoints behind security.admin-token. Every answer is checked against docs/openapi.json
(starling_it.openapi): a path, method or status the document does not describe, or a body that
does not match its schema, fails the call with an AssertionError."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from starling_it import openapi


def call(broker, method: str, path: str, token: str | None, body=None,
         content_type: str = "application/json") -> tuple[int, Any]:
    """(HTTP status, JSON body); an error status is returned, not raised. A body is sent as
    JSON (a str is sent as it is, to test malformed ones, or with another `content_type`). The
    answer is validated against docs/openapi.json (only the answer: a request may be malformed
    on purpose)."""
    data = None
    if body is not None:
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    req = urllib.request.Request(
        f"http://{broker.host}:{broker.http_port}{path}", data=data, method=method
    )
    if token is not None:
        req.add_header("Authorization", f"Bearer {token}")
    if data is not None:
        req.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            status, raw, content_type = resp.status, resp.read(), resp.headers.get("Content-Type")
    except urllib.error.HTTPError as e:
        status, raw, content_type = e.code, e.read(), e.headers.get("Content-Type")
    return status, openapi.validate_response(method, path, status, raw, content_type)
