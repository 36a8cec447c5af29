"""The management REST API fuzzed from its own document (schemathesis). Every operation of the
OpenAPI document starlingd serves at GET /api/openapi.json gets generated requests with the
admin bearer token: valid ones and, where the operation has query, header or body input to
break, invalid ones. Every answer must be no 5xx, a status the operation documents, of a
documented Content-Type, matching the documented schema, and a 401 without the token or with a
wrong one. After each operation the daemon must still run and answer GET /actuator/health.

One daemon serves the whole module, so the lists fuzzed later show what earlier operations
created (credentials, blocked-client rules, retained messages, shared subscriptions): the
operations run POST and PUT first, then GET, then DELETE. Two MQTT clients, one of them with a
persistent session and subscriptions, stay connected so that the session and subscription
answers have rows. No operation is left out: the daemon is private to this module, and none can
take the API away (the token is configuration, not state). Draining (POST /api/app/drain)
runs last: it takes the node out of service for good, as it should.

Bounded for CI: the generation is derandomized (the same requests on every run), with
STARLING_API_FUZZ_EXAMPLES requests per operation and kind of data (default 40; the module
takes 35 to 60 s against the debug ASan build on 2 cores). Set it higher for a longer run by
hand, e.g. STARLING_API_FUZZ_EXAMPLES=2000; the timeout of each test grows with it."""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Iterator

import hypothesis.configuration
import pytest
import requests
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable

from starling_it import openapi
from starling_it.brokers import Broker, make_broker
from starling_it.client import MqttClient

# schemathesis 3 still uses jsonschema's RefResolver, deprecated since jsonschema 4.18: when it
# is imported here, and later when it loads a document (the filterwarnings mark below).
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import schemathesis
    from schemathesis import DataGenerationMethod, GenerationConfig, HeaderConfig
    from schemathesis.checks import not_a_server_error
    from schemathesis.specs.openapi.checks import (
        content_type_conformance,
        ignored_auth,
        response_headers_conformance,
        response_schema_conformance,
        status_code_conformance,
    )

pytestmark = [
    pytest.mark.starlingd_only(reason="the management API is starlingd's"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning:schemathesis"),
]

TOKEN = "fuzz-t0ken"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
EXAMPLES = int(os.environ.get("STARLING_API_FUZZ_EXAMPLES", "40"))
# The slowest operation needs about 0.1 s per example (both kinds, debug ASan build, 2 cores):
# 1 s per example leaves room for a slower machine and for shrinking a failure.
TIMEOUT_S = max(60, EXAMPLES)

CHECKS = (
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    # A 2xx with the token must be a 401 without it, and with a wrong one.
    ignored_auth,
)
# Left out: negative_data_rejection (an invalid request must get a 4xx). The server ignores
# query parameters it does not know, as HTTP APIs do, and schemathesis 3 counts a request as
# invalid when only its typed form is (the integer 273 generated as the string "273" is the
# same on the wire), so that check fails for requests that are valid.

# Operations with a known server bug: {(METHOD, path template): "the bug"}. They still run, and
# are reported as xfail (not strict) until the bug is fixed. None known.
KNOWN_BUGS: dict[tuple[str, str], str] = {}

# Header values as RFC 9110 §5.5 allows them: visible ASCII and obs-text (0x80-0xFF), with
# spaces and tabs inside only. By default schemathesis also puts control characters (0x01-0x1F,
# 0x7F) in generated header values, which the HTTP server rightly refuses with a 400 (malformed
# request) before any route runs; the document says so once, in its description, not per
# operation. Only well-formed headers here: this test is about the API, not the HTTP parser.
FIELD_VALUES = st.text(
    alphabet=st.sampled_from(
        [chr(c) for c in range(0x21, 0x7F)] + [chr(c) for c in range(0x80, 0x100)] + [" ", "\t"]
    )
).map(lambda s: s.strip(" \t"))

METHOD_ORDER = ("POST", "PUT", "PATCH", "GET", "DELETE")
# After every other operation: draining takes the node out of service for good (its MQTT
# clients go, readiness is OUT_OF_SERVICE), which is what it is for.
LAST = {("POST", "/api/app/drain")}


def ordered_operations() -> list[tuple[str, str]]:
    """The operations of docs/openapi.json (the served document is the same: test_openapi.py),
    POST and PUT first, then GET, then DELETE; in the document's order within each."""
    ops = openapi.operations()
    return sorted(
        ops, key=lambda op: (op in LAST, METHOD_ORDER.index(op[0]), ops.index(op))
    )


def operation_params() -> list:
    out = []
    for method, path in ordered_operations():
        bug = KNOWN_BUGS.get((method, path))
        marks = [pytest.mark.xfail(reason=bug, strict=False)] if bug else []
        out.append(pytest.param(method, path, id=f"{method} {path}", marks=marks))
    return out


class Api:
    """The module's daemon and its document as schemathesis loaded it."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.base_url = f"http://{broker.host}:{broker.http_port}"
        self.schema = schemathesis.from_uri(
            f"{self.base_url}/api/openapi.json",
            base_url=self.base_url,
            headers=AUTH,
            data_generation_methods=[DataGenerationMethod.positive, DataGenerationMethod.negative],
            generation_config=GenerationConfig(
                # The token goes with every request as it is (AUTH), never generated.
                with_security_parameters=False,
                headers=HeaderConfig(strategy=FIELD_VALUES),
            ),
        )

    def drained(self) -> bool:
        try:
            r = requests.get(f"{self.base_url}/api/app/drain", headers=AUTH, timeout=10)
        except requests.RequestException:
            return False
        return r.status_code == 200 and r.json().get("state") != "SERVING"

    def problem(self) -> str | None:
        """None when the daemon runs and GET /actuator/health answers 200 with status UP, else
        what is wrong."""
        if not self.broker.running:
            return f"starlingd exited with code {self.broker.proc.returncode}"
        try:
            status, body = self.broker.health()
        except OSError as e:
            return f"starlingd runs, but GET /actuator/health failed: {e!r}"
        if self.drained():
            # A drained node is out of service on purpose; it must still answer.
            if status == 503 and isinstance(body, dict) and body.get("status") == "OUT_OF_SERVICE":
                return None
        if status != 200 or not isinstance(body, dict) or body.get("status") != "UP":
            return f"GET /actuator/health answered {status} {body!r}"
        return None


@pytest.fixture(scope="module")
def module_api(tmp_path_factory) -> Iterator[Api]:
    # Hypothesis keeps caches under ./.hypothesis: in the temp dir instead of the source tree.
    hypothesis.configuration.set_hypothesis_home_dir(tmp_path_factory.mktemp("hypothesis"))
    broker = make_broker(tmp_path_factory.mktemp("api_fuzz"), env={"SECURITY_ADMIN_TOKEN": TOKEN})
    broker.start()
    clients = [
        MqttClient(
            broker.host, broker.port, "fuzz-persistent", clean_start=False, session_expiry=3600
        ),
        MqttClient(broker.host, broker.port, "fuzz-v311", protocol=4),
    ]
    try:
        for c in clients:
            c.connect()
        clients[0].subscribe("fuzz/+/state", qos=1)
        clients[0].subscribe("$share/fuzz/fuzz/#", qos=2)
        clients[1].subscribe("fuzz/#")
        yield Api(broker)
    finally:
        for c in clients:
            try:
                c.close()
            except Exception:  # teardown must stop the broker even if a client is broken
                pass
        broker.close()
        hypothesis.configuration.set_hypothesis_home_dir(None)


@pytest.fixture
def api(module_api: Api) -> Iterator[Api]:
    """The module's daemon; started again (same data, same ports) if an earlier operation
    killed it, so that one crash does not hide what the other operations do."""
    if not module_api.broker.running:
        module_api.broker.start()
    yield module_api


def invalid_input_possible(operation) -> bool:
    """Whether the operation has input that can be made invalid: a query, header or cookie
    parameter, or a body. (A path parameter alone cannot: every non-empty segment is a valid
    string, and hypothesis would spend seconds finding that out.)"""
    return bool(operation.query or operation.headers or operation.cookies or operation.body)


def fuzz(operation, kind: DataGenerationMethod, session: requests.Session) -> int:
    """Sends the generated requests of one kind; returns how many."""
    sent = 0

    @settings(
        max_examples=EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.explicit, Phase.generate, Phase.shrink],
        print_blob=False,
    )
    @given(case=operation.as_strategy(data_generation_method=kind))
    def run(case) -> None:
        nonlocal sent
        sent += 1
        # ignored_auth puts a wrong token in the case's headers, which are None when the
        # operation has no header parameter (a TypeError inside schemathesis 3.39).
        if case.headers is None:
            case.headers = {}
        case.call_and_validate(session=session, headers=AUTH, checks=CHECKS, timeout=10)

    run()
    return sent


@pytest.mark.timeout(TIMEOUT_S)
@pytest.mark.parametrize("method,path", operation_params())
def test_operation_survives_fuzzing(api, method, path):
    try:
        operation = api.schema[path][method]
    except KeyError:  # schemathesis's OperationNotFound
        pytest.fail(
            f"{method} {path} is in docs/openapi.json, not in the document starlingd serves "
            "(it is compiled in: rebuild starlingd after changing the file)"
        )
    kinds = [DataGenerationMethod.positive]
    if invalid_input_possible(operation):
        kinds.append(DataGenerationMethod.negative)
    started = time.monotonic()
    with requests.Session() as session:
        for kind in kinds:
            try:
                sent = fuzz(operation, kind, session)
            except Unsatisfiable:  # no invalid request exists for this operation's input
                assert kind is DataGenerationMethod.negative
                continue
            except requests.ConnectionError as e:
                pytest.fail(
                    f"{method} {path} ({kind.name} data): the connection failed ({e}); "
                    f"{api.problem() or 'the daemon still runs and answers'}"
                )
            except BaseException:
                # A check failed: schemathesis's message names it and gives a curl command
                # that reproduces it (the token shown as [Filtered]). Say whether the daemon
                # survived too.
                print(f"after {method} {path} ({kind.name} data): {api.problem() or 'daemon up'}")
                raise
            assert sent > 0, f"{method} {path}: no {kind.name} request was generated"
    problem = api.problem()
    assert problem is None, f"after fuzzing {method} {path}: {problem}"
    took = time.monotonic() - started
    print(f"{method} {path}: {'+'.join(k.name for k in kinds)} data in {took:.1f} s")
