"""Fixtures for the integration suite: broker processes and MQTT clients.

See README.md in this directory for the broker contract and how to run the suite.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from starling_it import codec
from starling_it.brokers import Broker, broker_kind, make_broker, starlingd_path
from starling_it.client import MqttClient
from starling_it.raw_client import RawClient

KIND = broker_kind()


# --------------------------------------------------------------------------- markers


BROKER_FIXTURES = {"broker", "module_broker", "broker_factory"}


def pytest_collection_modifyitems(config, items) -> None:
    if KIND == "starlingd" and starlingd_path() is None:
        if any(BROKER_FIXTURES & set(getattr(i, "fixturenames", ())) for i in items):
            raise pytest.UsageError(
                "STARLING_TEST_BROKER=starlingd but no starlingd binary: build it "
                "(build/{debug,dev,release}/src/app/starlingd), set STARLINGD=<path>, or run "
                "against Mosquitto with STARLING_TEST_BROKER=mosquitto"
            )
    for item in items:
        marker = item.get_closest_marker("starlingd_only")
        if marker is not None and KIND != "starlingd":
            reason = marker.kwargs.get("reason") or (marker.args[0] if marker.args else "")
            item.add_marker(pytest.mark.skip(reason=f"starlingd only: {reason}"))
        marker = item.get_closest_marker("mosquitto_xfail")
        if marker is not None and KIND == "mosquitto":
            reason = marker.kwargs.get("reason") or (marker.args[0] if marker.args else "")
            item.add_marker(pytest.mark.xfail(reason=f"mosquitto: {reason}", strict=False))


def pytest_report_header(config) -> str:
    return f"broker under test: {KIND}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """On failure, attach the log tail of every broker the test used."""
    outcome = yield
    report = outcome.get_result()
    if report.passed or report.skipped:
        return
    seen: list[Broker] = []
    for value in getattr(item, "funcargs", {}).values():
        if isinstance(value, Broker):
            seen.append(value)
        elif isinstance(value, BrokerFactory):
            seen.extend(value.brokers)
    for broker in dict.fromkeys(seen):
        report.sections.append(
            (f"{broker.kind} log tail ({broker.log_path})", broker.log_tail(60))
        )


# --------------------------------------------------------------------------- brokers


class BrokerFactory:
    """Creates started brokers in a temp dir; kills them all at teardown."""

    def __init__(self, base_dir: Path) -> None:
        self.base_dir = base_dir
        self.brokers: list[Broker] = []

    def __call__(
        self,
        env: dict[str, str] | None = None,
        mosquitto_conf: list[str] | None = None,
        start: bool = True,
        config_text: str | None = None,
    ) -> Broker:
        work_dir = self.base_dir / f"broker{len(self.brokers)}"
        broker = make_broker(
            work_dir, env=env, mosquitto_conf=mosquitto_conf, config_text=config_text
        )
        self.brokers.append(broker)
        if start:
            broker.start()
        return broker

    def close(self) -> None:
        for broker in self.brokers:
            broker.close()


@pytest.fixture(scope="session")
def broker_kind_name() -> str:
    return KIND


@pytest.fixture
def broker_factory(tmp_path: Path) -> Iterator[BrokerFactory]:
    """``broker_factory(env={...}, mosquitto_conf=[...])`` → a started broker (function scope)."""
    factory = BrokerFactory(tmp_path)
    yield factory
    factory.close()


@pytest.fixture
def broker(broker_factory: BrokerFactory) -> Broker:
    """A fresh broker for this test only (use when the test stops, restarts or reconfigures)."""
    return broker_factory()


@pytest.fixture(scope="module")
def module_broker(tmp_path_factory) -> Iterator[Broker]:
    """One broker shared by the tests of a module (tests must use unique ids and topics)."""
    factory = BrokerFactory(tmp_path_factory.mktemp("module_broker"))
    b = factory()
    yield b
    factory.close()


@pytest.fixture(autouse=True)
def _module_broker_watchdog(request) -> Iterator[None]:
    """If the shared module broker died during a test, blame that test (error at teardown,
    with the log tail) and start the broker again so the rest of the module is unaffected."""
    yield
    if "module_broker" not in request.fixturenames:
        return
    b: Broker = request.getfixturevalue("module_broker")
    if b.proc is not None and not b.running:
        rc = b.proc.returncode
        tail = b.log_tail(60)
        b.start()
        pytest.fail(f"the module broker died during this test (exit code {rc}); log tail:\n{tail}")


# --------------------------------------------------------------------------- names


_counter = itertools.count()


@pytest.fixture
def uid(request) -> str:
    """A short id unique to this test run, usable in client ids and topics."""
    name = re.sub(r"[^A-Za-z0-9]+", "-", request.node.name).strip("-")[-40:]
    return f"{name}-{next(_counter)}"


@pytest.fixture
def topic(uid: str) -> str:
    """A topic prefix no other test uses."""
    return f"it/{uid}"


# --------------------------------------------------------------------------- protocol


@pytest.fixture(params=[codec.MQTT311, codec.MQTT5], ids=["v311", "v5"])
def protocol(request) -> int:
    """Parametrizes a test over MQTT 3.1.1 (4) and 5.0 (5)."""
    return request.param


# --------------------------------------------------------------------------- clients


@pytest.fixture
def paho_client() -> Iterator[Callable[..., MqttClient]]:
    """``paho_client(broker, client_id=..., protocol=5, connect=True, **MqttClient kwargs)``."""
    created: list[MqttClient] = []
    ids = itertools.count()

    def make(broker: Broker, client_id: str | None = None, connect: bool = True, **kw: Any):
        if client_id is None:
            client_id = f"paho-{next(ids)}-{next(_counter)}"
        # ``port=`` picks another listener of the broker (TLS, WebSocket: see broker.ports).
        port = kw.pop("port", None) or broker.port
        c = MqttClient(broker.host, port, client_id=client_id, **kw)
        created.append(c)
        if connect:
            c.connect()
        return c

    yield make
    for c in created:
        try:
            c.close()
        except Exception:  # teardown must release every client even if one is broken
            pass


@pytest.fixture
def raw_client() -> Iterator[Callable[..., RawClient]]:
    """``raw_client(broker, protocol=5)`` → an open, not yet connected RawClient."""
    created: list[RawClient] = []

    def make(broker: Broker, protocol: int = codec.MQTT5, timeout: float = 10.0) -> RawClient:
        c = RawClient(broker.host, broker.port, protocol=protocol, timeout=timeout)
        created.append(c)
        return c

    yield make
    for c in created:
        c.close()
