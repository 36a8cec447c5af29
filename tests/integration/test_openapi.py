"""docs/openapi.json: a valid OpenAPI 3.0 document, every operation in it served by starlingd,
its paths those of the endpoint table in docs/api.md, and the same document served at
GET /api/openapi.json. (Every answer the API tests get through starling_it.rest is checked
against the document; here the checker itself is checked too.)"""

from __future__ import annotations

import json
import re

import jsonschema
import pytest
from openapi_spec_validator import validate as validate_spec

from starling_it import openapi, rest
from starling_it.brokers import REPO_ROOT

TOKEN = "0penapi-t0ken"
API_MD = REPO_ROOT / "docs" / "api.md"

starlingd_only = pytest.mark.starlingd_only(reason="the management API is starlingd's")


def test_the_document_is_valid_openapi_3_0():
    doc = openapi.document()
    assert doc["openapi"] == "3.0.3"
    validate_spec(doc)  # raises OpenAPIValidationError, naming the place, when it is not
    # Bearer token on every route, and every operation says what a wrong token gets.
    scheme = doc["components"]["securitySchemes"]["bearerAuth"]
    assert (scheme["type"], scheme["scheme"]) == ("http", "bearer")
    assert doc["security"] == [{"bearerAuth": []}]
    for method, template in openapi.operations():
        responses = doc["paths"][template][method.lower()]["responses"]
        assert "401" in responses, f"{method} {template}: 401 not documented"
        assert "default" not in responses, f"{method} {template}: list the statuses instead"
    # Every component schema converts to JSON Schema the checker accepts.
    for name, schema in doc["components"]["schemas"].items():
        jsonschema.Draft4Validator.check_schema(openapi.to_json_schema(schema))


def test_the_checker_refuses_what_the_document_does_not_describe():
    ok = b'{"enabled": false}'
    assert openapi.validate_response("GET", "/api/quota", 200, ok, "application/json") == {
        "enabled": False
    }
    refusals = (
        ("GET", "/api/quota", 200, b'{"enabled": "no"}', "application/json", "enabled"),
        ("GET", "/api/quota", 200, b'{"enabled": false, "x": 1}', "application/json", "x"),
        ("GET", "/api/quota", 200, b"not json", "application/json", "not JSON"),
        ("GET", "/api/quota", 200, ok, "text/plain", "Content-Type"),
        ("GET", "/api/quota", 418, b'{"status": 418, "message": "m"}', "application/json",
         "418 is not documented"),
        ("PUT", "/api/quota", 200, ok, "application/json", "documents /api/quota for GET only"),
        ("GET", "/api/nothing", 200, ok, "application/json", "not in docs/openapi.json"),
        ("GET", "/api/quota", 401, b'{"status": 403, "message": "m"}', "application/json",
         "status 403"),
        ("GET", "/api/unauthorized/client/", 200, b"{}", "application/json", "not in docs"),
    )
    for method, target, status, body, content_type, says in refusals:
        with pytest.raises(AssertionError) as refused:
            openapi.validate_response(method, target, status, body, content_type)
        assert says in str(refused.value), (target, str(refused.value))
        assert f"{method} {target.split('?')[0]}" in str(refused.value)
    # A session: null where the document says nullable (mqttVersion), not elsewhere; enums and
    # required members hold.
    session = {"id": "c", "clientId": "c", "sessionId": "", "connectionState": "CONNECTED",
               "clientType": "DEVICE", "nodeId": "n", "subscriptionsCount": 0, "connectedAt": 1,
               "disconnectedAt": 0, "clientIpAdr": "127.0.0.1:5", "persistent": False,
               "sessionExpiryInterval": 0, "mqttVersion": None}
    one = "/api/client-session?clientId=c"
    assert openapi.validate_response("GET", one, 200, json.dumps(session).encode(),
                                     "application/json") == session
    for change in ({"connectionState": "ONLINE"}, {"nodeId": None}, {"mqttVersion": "4"},
                   {"subscriptionsCount": True}, {"persistent": None}):
        with pytest.raises(AssertionError, match="does not match docs/openapi.json"):
            openapi.validate_response("GET", one, 200, json.dumps({**session, **change}).encode(),
                                      "application/json")
    missing = {k: v for k, v in session.items() if k != "persistent"}
    with pytest.raises(AssertionError, match="does not match"):
        openapi.validate_response("GET", one, 200, json.dumps(missing).encode(), "application/json")
    # A path parameter is one segment, still percent-encoded; literal paths beat templates.
    assert openapi.match("GET", "/api/unauthorized/client/a%2Fb?x=1")[0] == (
        "/api/unauthorized/client/{clientId}"
    )
    assert openapi.match("GET", "/api/client-session/details")[0] == "/api/client-session/details"


@starlingd_only
def test_every_documented_operation_is_served(broker_factory):
    """Without a token every documented route answers 401 — never 404 (no such route) or 405
    (not for this method) — except the public ones (`security: []`, the login), which answer
    400 to an empty body."""
    broker = broker_factory(env={"SECURITY_ADMIN_TOKEN": TOKEN})
    paths = openapi.document()["paths"]
    wrong = []
    for method, template in openapi.operations():
        path = re.sub(r"\{[^}]+\}", "x", template)
        public = paths[template][method.lower()].get("security") == []
        status, body = rest.call(broker, method, path, None)
        if status != (400 if public else 401):
            wrong.append(f"{method} {path} → {status} {body}")
    assert not wrong, "documented but not served:\n" + "\n".join(wrong)


def api_md_endpoints() -> tuple[set[str], list[tuple[list[str], set[str], set[tuple[str, str]]]]]:
    """The endpoint table of docs/api.md: every path it names, and per row (its paths, the
    methods given without a sub-path, the (method, path) pairs given with one)."""
    paths: set[str] = set()
    rows = []
    for line in API_MD.read_text(encoding="utf-8").splitlines():
        if not line.startswith("| `/api/"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        row_paths = re.findall(r"`(/api/[^`]*)`", cells[0])
        base = row_paths[0]
        plain: set[str] = set()
        pairs: set[tuple[str, str]] = set()
        for item in cells[1].split(","):
            # "GET", "DELETE `/{id}`", "GET/DELETE `/{id}`"
            m = re.fullmatch(r"\s*([A-Z]+(?:/[A-Z]+)*)(?:\s+`(/[^`]*)`)?\s*", item)
            assert m, f"docs/api.md: cannot read the method {item!r} in: {line}"
            for method in m.group(1).split("/"):
                if m.group(2):
                    pairs.add((method, base + m.group(2)))
                else:
                    plain.add(method)
        paths.update(row_paths)
        paths.update(p for _, p in pairs)
        rows.append((row_paths, plain, pairs))
    assert rows, "docs/api.md: no endpoint rows (| `/api/...)"
    return paths, rows


def test_the_document_has_the_paths_and_methods_of_docs_api_md():
    table_paths, rows = api_md_endpoints()
    doc_paths = set(openapi.document()["paths"])
    assert sorted(doc_paths - table_paths) == [], "in docs/openapi.json, not in docs/api.md's table"
    assert sorted(table_paths - doc_paths) == [], "in docs/api.md's table, not in docs/openapi.json"
    documented = set(openapi.operations())
    for row_paths, plain, pairs in rows:
        # Methods with a sub-path are exact; the others belong to the row's paths (a row may
        # name two, as /api/quota and /api/quota/acknowledge).
        for sub_path in {p for _, p in pairs}:
            table = {m for m, p in pairs if p == sub_path}
            doc = {m for m, p in documented if p == sub_path}
            assert doc == table, (
                f"{sub_path}: docs/api.md lists {sorted(table)}, docs/openapi.json {sorted(doc)}"
            )
        doc_methods = {m for m, p in documented if p in row_paths}
        assert doc_methods == plain, (
            f"{row_paths}: docs/api.md lists {sorted(plain)}, docs/openapi.json {sorted(doc_methods)}"
        )


@starlingd_only
def test_the_served_document_is_docs_openapi_json(broker_factory):
    broker = broker_factory(env={"SECURITY_ADMIN_TOKEN": TOKEN})
    assert rest.call(broker, "GET", "/api/openapi.json", None)[0] == 401
    status, served = rest.call(broker, "GET", "/api/openapi.json", TOKEN)
    assert status == 200, served
    assert served == openapi.document(), (
        "GET /api/openapi.json is not docs/openapi.json (the document is compiled into starlingd: "
        "rebuild it after changing the file)"
    )
