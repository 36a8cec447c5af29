"""A minimal hand-written WebSocket client (RFC 6455, stdlib only) for protocol-level tests of
MQTT over WebSocket: it sends frames exactly as asked (split messages, several packets in one
frame, text frames) and reads the server's frames back.

Lifecycle: ``WsClient.open(...)`` performs the HTTP upgrade (raising ``UpgradeRefused`` with the
status on a refusal); ``close()`` releases the socket. One test thread uses an instance.
"""

from __future__ import annotations

import base64
import os
import socket
import ssl
import struct
import time

OP_CONTINUATION = 0x0
OP_TEXT = 0x1
OP_BINARY = 0x2
OP_CLOSE = 0x8


class UpgradeRefused(Exception):
    def __init__(self, status: int, response: bytes) -> None:
        super().__init__(f"upgrade refused with HTTP {status}: {response[:200]!r}")
        self.status = status


class WsClient:
    def __init__(self, sock: socket.socket, protocol: str | None) -> None:
        self.sock = sock
        self.protocol = protocol
        self._buffer = b""  # raw bytes from the socket
        self._payload = b""  # binary payload bytes not yet returned by recv_bytes

    @classmethod
    def open(
        cls,
        host: str,
        port: int,
        path: str = "/mqtt",
        protocols: str | None = "mqtt",
        tls_context: ssl.SSLContext | None = None,
        timeout: float = 10.0,
    ) -> "WsClient":
        sock = socket.create_connection((host, port), timeout=timeout)
        if tls_context is not None:
            sock = tls_context.wrap_socket(sock, server_hostname=host)
        key = base64.b64encode(os.urandom(16)).decode()
        lines = [
            f"GET {path} HTTP/1.1",
            f"Host: {host}:{port}",
            "Upgrade: websocket",
            "Connection: Upgrade",
            f"Sec-WebSocket-Key: {key}",
            "Sec-WebSocket-Version: 13",
        ]
        if protocols is not None:
            lines.append(f"Sec-WebSocket-Protocol: {protocols}")
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        client = cls(sock, None)
        head = client._read_until(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        if status != 101:
            sock.close()
            raise UpgradeRefused(status, head)
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"sec-websocket-protocol":
                client.protocol = value.strip().decode()
        return client

    def _read_until(self, marker: bytes) -> bytes:
        while marker not in self._buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed during the upgrade")
            self._buffer += chunk
        head, _, self._buffer = self._buffer.partition(marker)
        return head

    def _read_exactly(self, n: int) -> bytes:
        while len(self._buffer) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self._buffer += chunk
        out, self._buffer = self._buffer[:n], self._buffer[n:]
        return out

    def send_frame(self, payload: bytes, opcode: int = OP_BINARY, fin: bool = True) -> None:
        """One client frame (masked, as RFC 6455 requires of clients)."""
        header = bytes([(0x80 if fin else 0) | opcode])
        n = len(payload)
        if n < 126:
            header += bytes([0x80 | n])
        elif n < 65536:
            header += bytes([0x80 | 126]) + struct.pack("!H", n)
        else:
            header += bytes([0x80 | 127]) + struct.pack("!Q", n)
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(header + mask + masked)

    def recv_frame(self) -> tuple[int, bytes]:
        """The next server frame as (opcode, payload)."""
        b0, b1 = self._read_exactly(2)
        n = b1 & 0x7F
        if n == 126:
            (n,) = struct.unpack("!H", self._read_exactly(2))
        elif n == 127:
            (n,) = struct.unpack("!Q", self._read_exactly(8))
        assert not b1 & 0x80, "server frames must not be masked"
        return b0 & 0x0F, self._read_exactly(n)

    def recv_bytes(self, n: int) -> bytes:
        """Exactly ``n`` bytes of the binary message stream (frames are read as needed, and
        what is left of a frame is kept for the next call)."""
        while len(self._payload) < n:
            opcode, payload = self.recv_frame()
            assert opcode in (OP_BINARY, OP_CONTINUATION), f"unexpected opcode {opcode}"
            self._payload += payload
        out, self._payload = self._payload[:n], self._payload[n:]
        return out

    def expect_closed(self, timeout: float = 10.0) -> None:
        """Waits (bounded) for the server to close: a close frame or end of stream."""
        deadline = time.monotonic() + timeout
        self.sock.settimeout(timeout)
        while time.monotonic() < deadline:
            try:
                opcode, _ = self.recv_frame()
            except (ConnectionError, OSError):
                return
            if opcode == OP_CLOSE:
                return
        raise AssertionError("server did not close the WebSocket")

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
