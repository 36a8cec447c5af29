"""Shared assertions and the one sanctioned way to let time pass."""

from __future__ import annotations

import time

from starling_it import codec
from starling_it.raw_client import RawClient


def assert_closed_for_error(
    conn: RawClient, broker_kind: str, allowed_v5_codes: set[int], timeout: float = 10.0
) -> codec.Disconnect | None:
    """The server must close ``conn`` because of an error.

    MQTT 3.1.x: the server closes the connection and never sends DISCONNECT.
    MQTT 5.0: the spec lets the server send DISCONNECT with a reason code before closing
    (section 4.13); when it does, the code must be one of ``allowed_v5_codes``. starlingd
    promises to always send it, so for starlingd the DISCONNECT is required; Mosquitto often
    just closes, which the spec permits.
    """
    dis = conn.expect_disconnect(timeout)
    if conn.protocol != codec.MQTT5:
        assert dis is None, f"an MQTT 3.1.x server must not send DISCONNECT, got {dis}"
        return None
    if dis is None:
        assert broker_kind != "starlingd", (
            "starlingd must send DISCONNECT with a reason code before closing; "
            f"expected one of {sorted(hex(c) for c in allowed_v5_codes)}"
        )
        return None
    assert dis.reason_code in allowed_v5_codes, (
        f"DISCONNECT reason 0x{dis.reason_code:02x}, "
        f"expected one of {sorted(hex(c) for c in allowed_v5_codes)}"
    )
    return dis


def let_time_pass(seconds: float) -> None:
    """Waits for wall-clock time to elapse because elapsed time IS the stimulus under test
    (an expiry interval, a keep-alive, a will delay) — never to wait for the broker to finish
    something. Use events and ``expect_*`` for synchronization."""
    time.sleep(seconds)
