"""MQTT 3.1.1 packets over raw sockets, for the bench scripts (stalled.py, silent_sockets.py,
integration_http.py): only the framing they need, standard library only. The scripts import it
as `rawmqtt` (they run from bench/, which Python puts first on the path)."""

from __future__ import annotations

import socket


def varint(n: int) -> bytes:
    """MQTT's variable byte integer (the remaining length)."""
    out = bytearray()
    while True:
        byte = n % 128
        n //= 128
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def utf8(s: str) -> bytes:
    """A length-prefixed UTF-8 string."""
    b = s.encode()
    return len(b).to_bytes(2, "big") + b


def packet(first: int, body: bytes) -> bytes:
    """A whole packet: the first byte, the remaining length, the body."""
    return bytes([first]) + varint(len(body)) + body


def read_exactly(sock: socket.socket, n: int) -> bytes:
    data = bytearray()
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("broker closed the connection")
        data += chunk
    return bytes(data)


def read_packet(sock: socket.socket) -> tuple[int, bytes]:
    """(first byte, body) of the next packet."""
    first = read_exactly(sock, 1)[0]
    length, shift = 0, 0
    while True:
        b = read_exactly(sock, 1)[0]
        length |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return first, read_exactly(sock, length)


def free_port() -> int:
    """A loopback port nothing listens on now (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
