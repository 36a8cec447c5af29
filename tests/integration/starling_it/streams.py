"""Pipelined QoS 1 publishing for tests that queue large backlogs."""

from __future__ import annotations

from starling_it import codec

WINDOW = 500  # QoS 1 PUBLISH packets kept in flight (below the broker's Receive Maximum)


def publish_stream(conn, topic: str, first: int, count: int, window: int = WINDOW) -> None:
    """Publishes payloads str(first) .. str(first+count-1) at QoS 1 on a connected RawClient,
    pipelined, and returns once every PUBACK arrived (so the broker acknowledged them all).
    Packet ids cycle through 1..65535."""
    outstanding = 0
    sent = 0
    while sent < count or outstanding:
        batch = bytearray()
        while sent < count and outstanding < window:
            pid = (first + sent) % 65535 + 1
            batch += codec.publish(topic, str(first + sent), qos=1, packet_id=pid)
            sent += 1
            outstanding += 1
        if batch:
            conn.send(bytes(batch))
        pkt = conn.recv()
        assert pkt.type == codec.PUBACK, pkt
        assert pkt.reason_code < 0x80, f"PUBACK 0x{pkt.reason_code:02x}"
        outstanding -= 1
