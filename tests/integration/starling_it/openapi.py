"""docs/openapi.json, and the check of a REST answer against it.

``validate_response(method, target, status, body, content_type)`` finds the documented
operation for the method and the request target (path template match, query left out), the
documented response for the status, and validates the JSON body against its schema. Anything
the document does not cover — an unknown path, a method or status the path does not document,
a body that does not validate — is an AssertionError naming the method, path and status.

The document is OpenAPI 3.0.3; its schemas are turned into JSON Schema draft 4 (the dialect
OpenAPI 3.0 extends) for the `jsonschema` package: `nullable: true` adds null to the type, and
the OpenAPI-only keywords are dropped."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import jsonschema
import jsonschema.exceptions

DOCUMENT = Path(__file__).resolve().parents[3] / "docs" / "openapi.json"

METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")

# OpenAPI 3.0 schema keywords JSON Schema does not have (or that mean nothing to a check of a
# response).
_OPENAPI_ONLY = {
    "nullable",
    "discriminator",
    "readOnly",
    "writeOnly",
    "xml",
    "externalDocs",
    "example",
    "deprecated",
}


@functools.lru_cache(maxsize=1)
def document() -> dict:
    """docs/openapi.json, parsed (once)."""
    return json.loads(DOCUMENT.read_text(encoding="utf-8"))


def operations() -> list[tuple[str, str]]:
    """Every documented (METHOD, path template), in the document's order."""
    return [
        (method.upper(), template)
        for template, item in document()["paths"].items()
        for method in item
        if method in METHODS
    ]


def to_json_schema(schema: Any) -> Any:
    """An OpenAPI 3.0 schema object as JSON Schema draft 4."""
    if isinstance(schema, list):
        return [to_json_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _OPENAPI_ONLY:
            continue
        if key == "properties":
            out[key] = {name: to_json_schema(s) for name, s in value.items()}
        elif key in ("items", "additionalProperties", "not", "allOf", "anyOf", "oneOf"):
            out[key] = to_json_schema(value)
        else:
            out[key] = value
    if schema.get("nullable") is True:
        if "type" in out:
            out["type"] = [out["type"], "null"]
        else:
            out = {"anyOf": [{"type": "null"}, out]}
    return out


@functools.lru_cache(maxsize=1)
def _components() -> dict:
    schemas = document().get("components", {}).get("schemas", {})
    return {"schemas": {name: to_json_schema(s) for name, s in schemas.items()}}


@functools.lru_cache(maxsize=None)
def _validator(template: str, method: str, status: str, media_type: str) -> jsonschema.Draft4Validator:
    response = _response(document()["paths"][template][method]["responses"][status])
    schema = to_json_schema(response["content"][media_type]["schema"])
    # The response's schema under a root that holds the components, so the document's
    # "#/components/schemas/..." references resolve.
    root = {"allOf": [schema], "components": _components()}
    return jsonschema.Draft4Validator(root)


def _response(response: dict) -> dict:
    """A response object, its $ref (to #/components/responses/...) followed."""
    while "$ref" in response:
        ref = response["$ref"]
        assert ref.startswith("#/"), f"docs/openapi.json: only local references: {ref}"
        node: Any = document()
        for part in ref[2:].split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        response = node
    return response


def _matches(template: str, path: str) -> bool:
    want = template.split("/")
    got = path.split("/")
    if len(want) != len(got):
        return False
    for w, g in zip(want, got):
        if w.startswith("{") and w.endswith("}"):
            if not g:  # a path parameter is one non-empty segment (still percent-encoded)
                return False
        elif w != g:
            return False
    return True


def match(method: str, target: str) -> tuple[str, dict]:
    """(path template, operation) documented for this method and request target; an
    AssertionError when the path or the method is not documented. A literal path beats a
    template with parameters."""
    path = target.split("?", 1)[0]
    candidates = [t for t in document()["paths"] if _matches(t, path)]
    if not candidates:
        raise AssertionError(f"{method.upper()} {path}: the path is not in docs/openapi.json")
    template = min(candidates, key=lambda t: t.count("{"))
    item = document()["paths"][template]
    op = item.get(method.lower())
    if op is None:
        documented = ", ".join(m.upper() for m in item if m in METHODS)
        raise AssertionError(
            f"{method.upper()} {path}: docs/openapi.json documents {template} for {documented} only"
        )
    return template, op


def validate_response(
    method: str, target: str, status: int, body: bytes, content_type: str | None
) -> Any:
    """Checks one answer against docs/openapi.json and returns its parsed JSON body (None when
    the documented response has no body). AssertionError, naming method, path and status, when
    the answer is not what the document says."""
    path = target.split("?", 1)[0]
    where = f"{method.upper()} {path} → {status}"
    template, op = match(method, target)
    responses = op["responses"]
    key = str(status) if str(status) in responses else "default" if "default" in responses else None
    if key is None:
        raise AssertionError(
            f"{where}: status {status} is not documented for {method.upper()} {template} "
            f"(documented: {', '.join(sorted(responses))}); body: {body[:300]!r}"
        )
    response = _response(responses[key])
    content = response.get("content")
    if not content:
        if body:
            raise AssertionError(f"{where}: documented without a body, got {body[:300]!r}")
        return None
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media not in content:
        raise AssertionError(
            f"{where}: Content-Type {content_type!r}, documented: {', '.join(content)}"
        )
    try:
        parsed = json.loads(body)
    except ValueError as e:
        raise AssertionError(f"{where}: the body is not JSON ({e}): {body[:300]!r}") from None
    errors = list(_validator(template, method.lower(), key, media).iter_errors(parsed))
    if errors:
        best = jsonschema.exceptions.best_match(errors)
        raise AssertionError(
            f"{where}: the body does not match docs/openapi.json ({method.upper()} {template}, "
            f"response {key}): at {best.json_path}: {best.message}; body: {_short(parsed)}"
        )
    if status >= 400 and isinstance(parsed, dict) and "status" in parsed:
        if parsed["status"] != status:
            raise AssertionError(
                f"{where}: the error body says status {parsed['status']}: {_short(parsed)}"
            )
    return parsed


def _short(value: Any, limit: int = 600) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + "..."
