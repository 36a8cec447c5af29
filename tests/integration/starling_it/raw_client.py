"""A blocking raw-socket MQTT client for protocol-level tests.

It sends whatever bytes a test builds (see ``codec``) and reads back parsed server packets.
Nothing is automatic: no acks, no pings, no retries, so a test controls each step of a flow
(QoS 2 handshakes, unacknowledged messages, receive-maximum windows, malformed input).

Lifecycle: one instance owns one TCP connection, opened by the constructor and closed by
``close()`` (idempotent). Not thread-safe: use it from the test thread only.
"""

from __future__ import annotations

import socket
import struct
import time
from typing import Any

from starling_it import codec
from starling_it.codec import Packet


class ConnectionClosed(Exception):
    """The server closed the connection (EOF or reset) while a packet was expected."""


class RawClient:
    def __init__(self, host: str, port: int, protocol: int = codec.MQTT5, timeout: float = 10.0):
        self.protocol = protocol
        self.default_timeout = timeout
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._buf = bytearray()
        self._stash: list[Packet] = []  # PUBLISHes read while waiting for an ack
        self._eof = False
        self._next_pid = 0
        self.closed = False
        # Server → client topic aliases seen so far (v5), for ``resolve_topic``.
        self.inbound_aliases: dict[int, str] = {}

    # ----------------------------------------------------------------- plumbing

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def try_send(self, data: bytes) -> bool:
        """Sends, returning False instead of raising when the server already closed."""
        try:
            self.sock.sendall(data)
            return True
        except (BrokenPipeError, ConnectionResetError, OSError):
            return False

    def next_packet_id(self) -> int:
        self._next_pid = self._next_pid % 65535 + 1
        return self._next_pid

    def _fill(self, deadline: float) -> None:
        """Reads more bytes into the buffer; raises TimeoutError or ConnectionClosed."""
        if self._eof:
            raise ConnectionClosed("connection closed by server")
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("no packet from server before the deadline")
        self.sock.settimeout(remaining)
        try:
            chunk = self.sock.recv(65536)
        except socket.timeout as exc:
            raise TimeoutError("no packet from server before the deadline") from exc
        except (ConnectionResetError, ConnectionAbortedError, BrokenPipeError) as exc:
            self._eof = True
            raise ConnectionClosed(f"connection reset: {exc}") from exc
        if not chunk:
            self._eof = True
            raise ConnectionClosed("connection closed by server")
        self._buf += chunk

    def _try_parse(self) -> Packet | None:
        buf = self._buf
        if len(buf) < 2:
            return None
        try:
            length, pos = codec.decode_varint(bytes(buf[1:5]), 0)
        except codec.MalformedPacket:
            if len(buf) < 5:
                return None
            raise
        header_len = 1 + pos
        if len(buf) < header_len + length:
            return None
        first = buf[0]
        body = bytes(buf[header_len : header_len + length])
        del buf[: header_len + length]
        pkt = codec.decode(first, body, self.protocol)
        if isinstance(pkt, codec.Publish) and "topic_alias" in pkt.properties:
            alias = pkt.properties["topic_alias"]
            if pkt.topic:
                self.inbound_aliases[alias] = pkt.topic
        return pkt

    def recv(self, timeout: float | None = None) -> Packet:
        """Returns the next packet. Raises TimeoutError or ConnectionClosed."""
        if self._stash:
            return self._stash.pop(0)
        deadline = time.monotonic() + (self.default_timeout if timeout is None else timeout)
        while True:
            pkt = self._try_parse()
            if pkt is not None:
                return pkt
            self._fill(deadline)

    def expect(
        self, packet_type: int, timeout: float | None = None, stash_publish: bool = False
    ) -> Any:
        """Receives the next packet and asserts its type (PINGRESP is skipped).

        With ``stash_publish`` an incoming PUBLISH is kept for a later ``recv`` instead of
        failing the expectation (a client subscribed to its own topic sees its message
        before or after the PUBACK, in either order).
        """
        stashed: list[Packet] = []
        try:
            while True:
                pkt = self.recv(timeout)
                if pkt.type == codec.PINGRESP and packet_type != codec.PINGRESP:
                    continue
                if stash_publish and pkt.type == codec.PUBLISH and packet_type != codec.PUBLISH:
                    stashed.append(pkt)
                    continue
                break
        finally:
            self._stash[:0] = stashed
        assert pkt.type == packet_type, (
            f"expected {codec.PACKET_NAMES[packet_type]}, got {pkt.name}: {pkt}"
        )
        return pkt

    def expect_nothing(self, within: float) -> None:
        """Asserts that no packet arrives (and the connection stays open) for ``within`` s."""
        try:
            pkt = self.recv(within)
        except TimeoutError:
            return
        raise AssertionError(f"expected no packet within {within}s, got {pkt}")

    def expect_closed(self, timeout: float = 10.0) -> list[Packet]:
        """Waits until the server closes the connection; returns the packets read meanwhile."""
        packets: list[Packet] = []
        deadline = time.monotonic() + timeout
        while True:
            try:
                packets.append(self.recv(max(0.0, deadline - time.monotonic())))
            except ConnectionClosed:
                return packets
            except TimeoutError as exc:
                raise AssertionError(
                    f"server did not close the connection within {timeout}s; got {packets}"
                ) from exc

    def expect_disconnect(self, timeout: float = 10.0) -> codec.Disconnect | None:
        """Waits for the close; returns the server's DISCONNECT, or None when it sent none.

        Only DISCONNECT (and PINGRESP) may arrive before the close.
        """
        packets = self.expect_closed(timeout)
        disconnects = [p for p in packets if p.type == codec.DISCONNECT]
        others = [p for p in packets if p.type not in (codec.DISCONNECT, codec.PINGRESP)]
        assert not others, f"unexpected packets before close: {others}"
        assert len(disconnects) <= 1, f"more than one DISCONNECT: {disconnects}"
        return disconnects[0] if disconnects else None

    def is_open(self, within: float = 0.2) -> bool:
        """True when the connection is still open (nothing but PINGRESP pending)."""
        try:
            self.recv(within)
        except TimeoutError:
            return True
        except ConnectionClosed:
            return False
        return True

    def close(self) -> None:
        """Closes the socket without DISCONNECT (an abnormal close from the server's view)."""
        if self.closed:
            return
        self.closed = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()

    def abort(self) -> None:
        """Closes with a TCP RST (SO_LINGER 0): the harshest abnormal close."""
        if self.closed:
            return
        linger_zero = struct.pack("ii", 1, 0)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger_zero)
        self.closed = True
        self.sock.close()

    # ----------------------------------------------------------------- conveniences

    def connect(self, client_id: str = "", **kwargs: Any) -> codec.Connack:
        """Sends CONNECT and returns the CONNACK (whatever its reason code)."""
        self.send(codec.connect(client_id, protocol=self.protocol, **kwargs))
        return self.expect(codec.CONNACK)

    def subscribe(
        self,
        topic_filter: str,
        qos: int = 0,
        no_local: bool = False,
        retain_as_published: bool = False,
        retain_handling: int = 0,
        properties: dict[str, Any] | None = None,
    ) -> codec.Suback:
        pid = self.next_packet_id()
        if self.protocol == codec.MQTT5:
            opts = codec.subscription_options(qos, no_local, retain_as_published, retain_handling)
        else:
            opts = qos
        self.send(codec.subscribe(pid, [(topic_filter, opts)], properties, self.protocol))
        suback = self.expect(codec.SUBACK, stash_publish=True)
        assert suback.packet_id == pid
        return suback

    def unsubscribe(self, topic_filter: str) -> codec.Packet:
        pid = self.next_packet_id()
        self.send(codec.unsubscribe(pid, [topic_filter], protocol=self.protocol))
        return self.expect(codec.UNSUBACK, stash_publish=True)

    def publish(
        self,
        topic: str,
        payload: bytes | str = b"",
        qos: int = 0,
        retain: bool = False,
        properties: dict[str, Any] | None = None,
        timeout: float | None = None,
    ) -> Packet | None:
        """Publishes and completes the QoS flow; returns PUBACK / PUBCOMP (None for QoS 0)."""
        pid = self.next_packet_id() if qos else None
        self.send(codec.publish(topic, payload, qos, retain, False, pid, properties, self.protocol))
        if qos == 0:
            return None
        if qos == 1:
            ack = self.expect(codec.PUBACK, timeout, stash_publish=True)
            assert ack.packet_id == pid
            return ack
        rec = self.expect(codec.PUBREC, timeout, stash_publish=True)
        assert rec.packet_id == pid
        assert rec.reason_code < 0x80, f"PUBREC failure 0x{rec.reason_code:02x}"
        self.send(codec.pubrel(pid, protocol=self.protocol))
        comp = self.expect(codec.PUBCOMP, timeout, stash_publish=True)
        assert comp.packet_id == pid
        return comp

    def expect_publish(self, timeout: float | None = None) -> codec.Publish:
        return self.expect(codec.PUBLISH, timeout)

    def ack(self, pub: codec.Publish) -> None:
        """Completes the receiver side of a QoS 1 or 2 delivery."""
        if pub.qos == 1:
            self.send(codec.puback(pub.packet_id, protocol=self.protocol))
        elif pub.qos == 2:
            self.send(codec.pubrec(pub.packet_id, protocol=self.protocol))
            rel = self.expect(codec.PUBREL)
            assert rel.packet_id == pub.packet_id
            self.send(codec.pubcomp(pub.packet_id, protocol=self.protocol))

    def resolve_topic(self, pub: codec.Publish) -> str:
        """The topic of a PUBLISH, following server → client topic aliases."""
        if pub.topic:
            return pub.topic
        alias = pub.properties.get("topic_alias")
        assert alias in self.inbound_aliases, f"PUBLISH with unknown topic alias {alias}"
        return self.inbound_aliases[alias]

    def disconnect(self, reason_code: int = 0, properties: dict[str, Any] | None = None) -> None:
        """Sends DISCONNECT and closes the socket."""
        self.try_send(codec.disconnect(reason_code, properties, self.protocol))
        self.close()

    def disconnect_and_wait(
        self, reason_code: int = 0, properties: dict[str, Any] | None = None
    ) -> None:
        """Sends DISCONNECT and waits until the server has closed the connection, i.e. has
        handled the DISCONNECT. A client that reconnects at once cannot know whether the new
        CONNECT or the old DISCONNECT reaches the server first (two sockets, two I/O threads);
        waiting makes the order the one the test means."""
        self.try_send(codec.disconnect(reason_code, properties, self.protocol))
        self.expect_closed()
        self.close()


def persistent(protocol: int, expiry: int = 300) -> dict[str, Any]:
    """``RawClient.connect`` kwargs for a persistent session at either protocol level."""
    if protocol == codec.MQTT5:
        return {"clean_start": False, "properties": {"session_expiry_interval": expiry}}
    return {"clean_start": False}
