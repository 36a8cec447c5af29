"""A synchronous test wrapper over paho-mqtt 2.x.

``MqttClient`` connects and waits for the CONNACK, runs paho's network loop on its own thread
(without automatic reconnect, so a takeover or a server close is observed, not papered over),
and collects received messages in a thread-safe queue. Every wait is bounded by a deadline and
waits on an event, except ``expect_no_message`` which asserts absence over a window.

Lifecycle: create, ``connect()``, use, then ``disconnect()`` (clean), ``drop()`` (abnormal
close, no DISCONNECT) or ``close()`` (whatever is needed to release the socket and thread;
the fixtures call it at teardown). One test thread uses an instance; the paho thread only
touches the queue and the events.
"""

from __future__ import annotations

import queue
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.subscribeoptions import SubscribeOptions

# paho Properties attribute name -> our snake_case name (same names as codec.PROPERTIES).
_PAHO_PROPS = {
    "PayloadFormatIndicator": "payload_format_indicator",
    "MessageExpiryInterval": "message_expiry_interval",
    "ContentType": "content_type",
    "ResponseTopic": "response_topic",
    "CorrelationData": "correlation_data",
    "SubscriptionIdentifier": "subscription_identifier",
    "SessionExpiryInterval": "session_expiry_interval",
    "AssignedClientIdentifier": "assigned_client_identifier",
    "ServerKeepAlive": "server_keep_alive",
    "AuthenticationMethod": "authentication_method",
    "AuthenticationData": "authentication_data",
    "RequestProblemInformation": "request_problem_information",
    "WillDelayInterval": "will_delay_interval",
    "RequestResponseInformation": "request_response_information",
    "ResponseInformation": "response_information",
    "ServerReference": "server_reference",
    "ReasonString": "reason_string",
    "ReceiveMaximum": "receive_maximum",
    "TopicAliasMaximum": "topic_alias_maximum",
    "TopicAlias": "topic_alias",
    "MaximumQoS": "maximum_qos",
    "RetainAvailable": "retain_available",
    "UserProperty": "user_property",
    "MaximumPacketSize": "maximum_packet_size",
    "WildcardSubscriptionAvailable": "wildcard_subscription_available",
    "SubscriptionIdentifierAvailable": "subscription_identifier_available",
    "SharedSubscriptionAvailable": "shared_subscription_available",
}
_OUR_PROPS = {v: k for k, v in _PAHO_PROPS.items()}


def props_to_dict(props: Properties | None) -> dict[str, Any]:
    """paho Properties -> {snake_case_name: value}; lists for the repeatable ones."""
    out: dict[str, Any] = {}
    if props is None:
        return out
    for paho_name, name in _PAHO_PROPS.items():
        if hasattr(props, paho_name):
            value = getattr(props, paho_name)
            if name == "subscription_identifier" and not isinstance(value, list):
                value = [value]
            if name == "user_property":
                value = [tuple(p) for p in value]
            out[name] = value
    return out


def make_properties(packet_type: int, values: dict[str, Any] | None) -> Properties | None:
    if not values:
        return None
    props = Properties(packet_type)
    for name, value in values.items():
        setattr(props, _OUR_PROPS[name], value)
    return props


@dataclass
class ConnectResult:
    reason_code: int
    session_present: bool
    properties: dict[str, Any]


@dataclass
class DisconnectInfo:
    from_server: bool  # True when the server sent a DISCONNECT packet
    reason_code: int
    properties: dict[str, Any]
    at: float = 0.0  # time.monotonic() when the client saw the connection end


@dataclass
class Message:
    topic: str
    payload: bytes
    qos: int
    retain: bool
    dup: bool
    mid: int
    properties: dict[str, Any] = field(default_factory=dict)
    received_at: float = 0.0


def _rc_value(rc: Any) -> int:
    if hasattr(rc, "value"):
        return int(rc.value)
    return int(rc)


class MqttClient:
    """One paho client. ``protocol`` is 4 (3.1.1) or 5."""

    def __init__(
        self,
        host: str,
        port: int,
        client_id: str = "",
        protocol: int = 5,
        clean_start: bool = True,
        session_expiry: int | None = None,
        keepalive: int = 60,
        will: dict[str, Any] | None = None,
        connect_properties: dict[str, Any] | None = None,
        manual_ack: bool = False,
        transport: str = "tcp",
        ws_path: str = "/mqtt",
        tls_context: Any = None,
        username: str | None = None,
        password: str | None = None,
    ) -> None:
        """``transport`` is paho's ("tcp" or "websockets"); ``tls_context`` an ssl.SSLContext
        to connect with TLS (mqtts / wss)."""
        self.host = host
        self.port = port
        self.client_id = client_id
        self.protocol = protocol
        self.clean_start = clean_start
        self.keepalive = keepalive
        paho_proto = mqtt.MQTTv5 if protocol == 5 else mqtt.MQTTv311
        kwargs: dict[str, Any] = {}
        if protocol != 5:
            kwargs["clean_session"] = clean_start
        self.paho = mqtt.Client(
            CallbackAPIVersion.VERSION2,
            client_id=client_id,
            protocol=paho_proto,
            reconnect_on_failure=False,
            manual_ack=manual_ack,
            transport=transport,
            **kwargs,
        )
        if transport == "websockets":
            self.paho.ws_set_options(path=ws_path)
        if tls_context is not None:
            self.paho.tls_set_context(tls_context)
        if username is not None:
            self.paho.username_pw_set(username, password)
        self.paho.max_inflight_messages_set(1000)
        self.paho.max_queued_messages_set(0)
        self.connect_properties = dict(connect_properties or {})
        if session_expiry is not None:
            self.connect_properties["session_expiry_interval"] = session_expiry
        if will is not None:
            self.paho.will_set(
                will["topic"],
                will.get("payload"),
                will.get("qos", 0),
                will.get("retain", False),
                make_properties(PacketTypes.WILLMESSAGE, will.get("properties")),
            )
        self.messages: queue.Queue[Message] = queue.Queue()
        self._connected = threading.Event()
        self._disconnected = threading.Event()
        self._subacks: dict[int, list[int]] = {}
        self._unsubacks: dict[int, list[int]] = {}
        self._acks: dict[int, int] = {}
        self._cond = threading.Condition()
        self.connack: ConnectResult | None = None
        self.disconnect_info: DisconnectInfo | None = None
        self.paho.on_connect = self._on_connect
        self.paho.on_disconnect = self._on_disconnect
        self.paho.on_message = self._on_message
        self.paho.on_subscribe = self._on_subscribe
        self.paho.on_unsubscribe = self._on_unsubscribe
        self.paho.on_publish = self._on_publish
        self._loop_started = False

    # ----------------------------------------------------------------- paho callbacks

    def _on_connect(self, client, userdata, flags, reason_code, properties) -> None:
        self.connack = ConnectResult(
            _rc_value(reason_code), bool(flags.session_present), props_to_dict(properties)
        )
        self._connected.set()

    def _on_disconnect(self, client, userdata, flags, reason_code, properties) -> None:
        self.disconnect_info = DisconnectInfo(
            bool(flags.is_disconnect_packet_from_server),
            _rc_value(reason_code),
            props_to_dict(properties),
            time.monotonic(),
        )
        self._disconnected.set()
        self._connected.set()  # wake a connect() waiting for a CONNACK that never came

    def _on_message(self, client, userdata, msg) -> None:
        self.messages.put(
            Message(
                msg.topic,
                bytes(msg.payload),
                msg.qos,
                bool(msg.retain),
                bool(msg.dup),
                msg.mid,
                props_to_dict(getattr(msg, "properties", None)),
                time.monotonic(),
            )
        )

    def _on_subscribe(self, client, userdata, mid, reason_codes, properties) -> None:
        with self._cond:
            self._subacks[mid] = [_rc_value(rc) for rc in reason_codes]
            self._cond.notify_all()

    def _on_unsubscribe(self, client, userdata, mid, reason_codes, properties) -> None:
        with self._cond:
            self._unsubacks[mid] = [_rc_value(rc) for rc in reason_codes]
            self._cond.notify_all()

    def _on_publish(self, client, userdata, mid, reason_code, properties) -> None:
        with self._cond:
            self._acks[mid] = _rc_value(reason_code)
            self._cond.notify_all()

    def _wait_for(self, table: dict[int, Any], mid: int, timeout: float, what: str) -> Any:
        deadline = time.monotonic() + timeout
        with self._cond:
            while mid not in table:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._disconnected.is_set():
                    raise AssertionError(
                        f"{self.client_id}: no {what} for mid {mid} within {timeout}s "
                        f"(disconnect: {self.disconnect_info})"
                    )
                self._cond.wait(min(remaining, 0.1))
            return table.pop(mid)

    # ----------------------------------------------------------------- connection

    def connect(self, timeout: float = 10.0, expect_success: bool = True) -> ConnectResult:
        props = make_properties(PacketTypes.CONNECT, self.connect_properties)
        if self.protocol == 5:
            self.paho.connect(
                self.host, self.port, self.keepalive, clean_start=self.clean_start,
                properties=props,
            )
        else:
            self.paho.connect(self.host, self.port, self.keepalive)
        self.paho.loop_start()
        self._loop_started = True
        if not self._connected.wait(timeout):
            raise AssertionError(f"{self.client_id}: no CONNACK within {timeout}s")
        if self.connack is None:
            raise AssertionError(f"{self.client_id}: closed before CONNACK: {self.disconnect_info}")
        if expect_success:
            assert self.connack.reason_code == 0, (
                f"{self.client_id}: CONNACK 0x{self.connack.reason_code:02x}"
            )
        return self.connack

    @property
    def session_present(self) -> bool:
        assert self.connack is not None
        return self.connack.session_present

    def disconnect(
        self, reason_code: int = 0, properties: dict[str, Any] | None = None, timeout=10.0
    ) -> None:
        """Sends DISCONNECT (with a v5 reason code) and waits for the close."""
        if self._disconnected.is_set():
            self._stop_loop()
            return
        rc = None
        if self.protocol == 5:
            from paho.mqtt.reasoncodes import ReasonCode

            rc = ReasonCode(PacketTypes.DISCONNECT, identifier=reason_code)
        self.paho.disconnect(rc, make_properties(PacketTypes.DISCONNECT, properties))
        self._disconnected.wait(timeout)
        self._stop_loop()

    def drop(self) -> None:
        """Closes the TCP connection without DISCONNECT: the server sees an abnormal close."""
        self._stop_loop()
        sock = self.paho.socket()
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()

    def _stop_loop(self) -> None:
        if self._loop_started:
            self.paho.loop_stop()
            self._loop_started = False

    def close(self) -> None:
        """Teardown helper: clean disconnect when still connected, then stop the thread."""
        try:
            if self._loop_started and not self._disconnected.is_set():
                self.disconnect(timeout=2.0)
        finally:
            self._stop_loop()

    def wait_for_disconnect(self, timeout: float = 10.0) -> DisconnectInfo:
        """Waits until the server closes the connection (with or without DISCONNECT)."""
        if not self._disconnected.wait(timeout):
            raise AssertionError(f"{self.client_id}: still connected after {timeout}s")
        assert self.disconnect_info is not None
        return self.disconnect_info

    def is_connected(self) -> bool:
        return self.paho.is_connected() and not self._disconnected.is_set()

    # ----------------------------------------------------------------- subscribe

    def subscribe(
        self,
        topic: str,
        qos: int = 0,
        no_local: bool = False,
        retain_as_published: bool = False,
        retain_handling: int = 0,
        subscription_identifier: int | None = None,
        user_properties: list[tuple[str, str]] | None = None,
        timeout: float = 10.0,
    ) -> list[int]:
        """Subscribes and returns the SUBACK reason codes (granted QoS on success)."""
        if self.protocol == 5:
            opts = SubscribeOptions(
                qos=qos,
                noLocal=no_local,
                retainAsPublished=retain_as_published,
                retainHandling=retain_handling,
            )
            values: dict[str, Any] = {}
            if subscription_identifier is not None:
                values["subscription_identifier"] = subscription_identifier
            if user_properties:
                values["user_property"] = user_properties
            rc, mid = self.paho.subscribe(
                topic, options=opts, properties=make_properties(PacketTypes.SUBSCRIBE, values)
            )
        else:
            rc, mid = self.paho.subscribe(topic, qos)
        assert rc == mqtt.MQTT_ERR_SUCCESS, f"subscribe failed locally: {rc}"
        return self._wait_for(self._subacks, mid, timeout, "SUBACK")

    def unsubscribe(self, topic: str, timeout: float = 10.0) -> list[int]:
        rc, mid = self.paho.unsubscribe(topic)
        assert rc == mqtt.MQTT_ERR_SUCCESS, f"unsubscribe failed locally: {rc}"
        return self._wait_for(self._unsubacks, mid, timeout, "UNSUBACK")

    # ----------------------------------------------------------------- publish

    def publish(
        self,
        topic: str,
        payload: bytes | str | None = b"",
        qos: int = 0,
        retain: bool = False,
        properties: dict[str, Any] | None = None,
    ) -> mqtt.MQTTMessageInfo:
        info = self.paho.publish(
            topic, payload, qos, retain, make_properties(PacketTypes.PUBLISH, properties)
        )
        assert info.rc == mqtt.MQTT_ERR_SUCCESS, f"publish failed locally: {info.rc}"
        return info

    def publish_and_wait(
        self,
        topic: str,
        payload: bytes | str | None = b"",
        qos: int = 1,
        retain: bool = False,
        properties: dict[str, Any] | None = None,
        timeout: float = 10.0,
    ) -> int:
        """Publishes and waits for PUBACK (QoS 1) or PUBCOMP (QoS 2); returns the reason code.

        For QoS 0 it waits until paho has written the packet to the socket.
        """
        info = self.publish(topic, payload, qos, retain, properties)
        if qos == 0:
            info.wait_for_publish(timeout)
            assert info.is_published(), f"QoS 0 publish not written within {timeout}s"
            return 0
        return self._wait_for(self._acks, info.mid, timeout, "PUBACK/PUBCOMP")

    # ----------------------------------------------------------------- receive

    def expect_message(self, timeout: float = 5.0) -> Message:
        try:
            return self.messages.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(
                f"{self.client_id}: no message within {timeout}s "
                f"(connected={self.is_connected()}, disconnect={self.disconnect_info})"
            ) from None

    def expect_messages(self, count: int, timeout: float = 10.0) -> list[Message]:
        deadline = time.monotonic() + timeout
        out = []
        for _ in range(count):
            remaining = deadline - time.monotonic()
            try:
                out.append(self.messages.get(timeout=max(remaining, 0.001)))
            except queue.Empty:
                raise AssertionError(
                    f"{self.client_id}: got {len(out)} of {count} messages within {timeout}s: "
                    f"{[m.topic for m in out]}"
                ) from None
        return out

    def expect_no_message(self, within: float = 0.5) -> None:
        """Asserts that nothing arrives during ``within`` seconds (the one untriggered wait)."""
        try:
            msg = self.messages.get(timeout=within)
        except queue.Empty:
            return
        raise AssertionError(f"{self.client_id}: unexpected message {msg}")

    def collect_for(self, within: float) -> list[Message]:
        """Everything that arrives during a window of ``within`` seconds (for counting copies
        where any number is allowed; like ``expect_no_message`` this is an absence window)."""
        deadline = time.monotonic() + within
        out = []
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return out
            try:
                out.append(self.messages.get(timeout=remaining))
            except queue.Empty:
                return out

    def drain(self) -> list[Message]:
        """Returns whatever is already queued, without waiting."""
        out = []
        while True:
            try:
                out.append(self.messages.get_nowait())
            except queue.Empty:
                return out

    def ack(self, mid: int, qos: int) -> None:
        """Acknowledges a message when the client was created with ``manual_ack=True``."""
        self.paho.ack(mid, qos)


def persistent(protocol: int, expiry: int = 300) -> dict[str, Any]:
    """``MqttClient`` kwargs for a persistent session at either protocol level."""
    if protocol == 5:
        return {"clean_start": False, "session_expiry": expiry}
    return {"clean_start": False}
