"""Parser for the Prometheus text exposition format (version 0.0.4).

``parse_prometheus(text)`` returns {(metric_name, frozenset({(label, value), ...})): value}.
Comments (# HELP / # TYPE) are skipped; timestamps after the value are ignored.
"""

from __future__ import annotations

import math
import re

_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")


def _parse_labels(text: str, pos: int) -> tuple[frozenset, int]:
    """Parses ``{a="x",b="y"}`` starting at ``text[pos] == '{'``; returns (labels, end)."""
    assert text[pos] == "{"
    pos += 1
    labels = []
    while True:
        while pos < len(text) and text[pos] in " \t,":
            pos += 1
        if text[pos] == "}":
            return frozenset(labels), pos + 1
        m = _NAME.match(text, pos)
        if not m:
            raise ValueError(f"bad label name at {pos}: {text!r}")
        name = m.group(0)
        pos = m.end()
        while text[pos] in " \t":
            pos += 1
        if text[pos] != "=":
            raise ValueError(f"expected '=' at {pos}: {text!r}")
        pos += 1
        while text[pos] in " \t":
            pos += 1
        if text[pos] != '"':
            raise ValueError(f"expected '\"' at {pos}: {text!r}")
        pos += 1
        value = []
        while text[pos] != '"':
            ch = text[pos]
            if ch == "\\":
                nxt = text[pos + 1]
                value.append({"n": "\n", "\\": "\\", '"': '"'}.get(nxt, "\\" + nxt))
                pos += 2
            else:
                value.append(ch)
                pos += 1
        labels.append((name, "".join(value)))
        pos += 1


def _parse_value(token: str) -> float:
    special = {"+Inf": math.inf, "Inf": math.inf, "-Inf": -math.inf, "NaN": math.nan}
    if token in special:
        return special[token]
    return float(token)


def parse_prometheus(text: str) -> dict[tuple[str, frozenset], float]:
    samples: dict[tuple[str, frozenset], float] = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _NAME.match(line)
        if not m:
            raise ValueError(f"line {lineno}: no metric name: {raw!r}")
        name = m.group(0)
        pos = m.end()
        labels: frozenset = frozenset()
        if pos < len(line) and line[pos] == "{":
            labels, pos = _parse_labels(line, pos)
        rest = line[pos:].split()
        if not rest:
            raise ValueError(f"line {lineno}: no value: {raw!r}")
        samples[(name, labels)] = _parse_value(rest[0])
    return samples


def metric_sum(samples: dict[tuple[str, frozenset], float], name: str, **labels: str) -> float:
    """Sum of every sample called ``name`` whose labels include ``labels``."""
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and want <= set(ls))


def metric_names(samples: dict[tuple[str, frozenset], float]) -> set[str]:
    return {name for name, _ in samples}
