"""CONNECT / CONNACK: session present, client identifiers, protocol levels, takeover, AUTH."""

from __future__ import annotations

import pytest

from starling_it import codec
from starling_it.client import persistent
from starling_it.expect import assert_closed_for_error
from starling_it.raw_client import persistent as raw_persistent


def test_connack_session_present(module_broker, paho_client, protocol, uid):
    """Session Present is 0 for a new session, 1 when resuming one, 0 after a clean start."""
    c = paho_client(module_broker, uid, protocol=protocol, **persistent(protocol))
    assert not c.session_present
    c.subscribe(f"it/{uid}/x", 1)  # give the session some state
    c.disconnect()

    c = paho_client(module_broker, uid, protocol=protocol, **persistent(protocol))
    assert c.session_present
    c.disconnect()

    c = paho_client(module_broker, uid, protocol=protocol, clean_start=True)
    assert not c.session_present
    c.disconnect()

    # The clean start discarded the session, so a persistent reconnect finds none.
    c = paho_client(module_broker, uid, protocol=protocol, **persistent(protocol))
    assert not c.session_present


def test_clean_session_connect_never_has_session_present(module_broker, raw_client, protocol, uid):
    conn = raw_client(module_broker, protocol)
    ack = conn.connect(uid, **raw_persistent(protocol))
    assert ack.reason_code == 0
    conn.disconnect()
    conn = raw_client(module_broker, protocol)
    ack = conn.connect(uid, clean_start=True)
    assert ack.reason_code == 0
    assert not ack.session_present, "Session Present must be 0 when Clean Start is 1"


def test_v5_assigned_client_identifier(module_broker, raw_client):
    """A v5 CONNECT with an empty client id gets an Assigned Client Identifier."""
    conn = raw_client(module_broker, codec.MQTT5)
    ack = conn.connect("")
    assert ack.reason_code == 0
    assigned = ack.properties.get("assigned_client_identifier")
    assert assigned, f"no assigned_client_identifier in {ack.properties}"

    other = raw_client(module_broker, codec.MQTT5)
    ack2 = other.connect("")
    assert ack2.reason_code == 0
    assert ack2.properties.get("assigned_client_identifier") not in (None, assigned)
    # Both connections stay up: the assigned ids are distinct sessions, no takeover.
    assert conn.is_open() and other.is_open()


def test_v311_zero_length_client_id_with_clean_session_accepted(module_broker, raw_client):
    conn = raw_client(module_broker, codec.MQTT311)
    ack = conn.connect("", clean_start=True)
    assert ack.reason_code == codec.V3_ACCEPTED
    assert not ack.session_present
    suback = conn.subscribe("it/zero-length-id", 1)
    assert suback.reason_codes == [1]


def test_v311_zero_length_client_id_without_clean_session_rejected(module_broker, raw_client):
    """[MQTT-3.1.3-8]: CONNACK 0x02 (identifier rejected), then the server closes."""
    conn = raw_client(module_broker, codec.MQTT311)
    ack = conn.connect("", clean_start=False)
    assert ack.reason_code == codec.V3_IDENTIFIER_REJECTED
    assert not ack.session_present
    assert conn.expect_closed() == []


def test_mqtt31_connect_and_publish(module_broker, raw_client, uid):
    """MQTT 3.1 (protocol name "MQIsdp", level 3) clients are still served."""
    sub = raw_client(module_broker, codec.MQTT31)
    ack = sub.connect(uid[:23])  # 3.1 limits client ids to 23 characters
    assert ack.reason_code == 0
    assert sub.subscribe(f"it/{uid}/m31", 1).reason_codes == [1]
    pub = raw_client(module_broker, codec.MQTT31)
    assert pub.connect(f"p{uid}"[:23]).reason_code == 0
    pub.publish(f"it/{uid}/m31", b"hello 3.1", qos=1)
    msg = sub.expect_publish()
    assert (msg.topic, msg.payload, msg.qos) == (f"it/{uid}/m31", b"hello 3.1", 1)
    sub.ack(msg)


@pytest.mark.parametrize("level", [0, 6, 7])
def test_unsupported_protocol_level_refused(module_broker, raw_client, level, uid):
    """An unknown protocol level: CONNACK 0x01 (3.1.1 form) or 0x84 (v5 form), or a bare
    close; never an accepted connection."""
    conn = raw_client(module_broker, codec.MQTT5)
    body = codec.connect(uid, protocol=codec.MQTT311)
    # Patch the protocol level byte (after fixed header (2) + "MQTT" string (6)).
    data = bytearray(body)
    data[8] = level
    conn.send(bytes(data))
    packets = conn.expect_closed()
    assert len(packets) <= 1, packets
    if packets:
        assert packets[0].type == codec.CONNACK, packets
        assert packets[0].reason_code in (
            codec.V3_UNACCEPTABLE_PROTOCOL_VERSION,
            codec.RC_UNSUPPORTED_PROTOCOL_VERSION,
        )


def test_client_id_takeover(module_broker, raw_client, protocol, uid):
    """A second connection with the same client id takes over: the first gets DISCONNECT 0x8E
    (v5) or is closed (3.1.1); the new one is served."""
    old = raw_client(module_broker, protocol)
    assert old.connect(uid).reason_code == 0
    new = raw_client(module_broker, protocol)
    assert new.connect(uid).reason_code == 0
    assert_closed_for_error(old, module_broker.kind, {codec.RC_SESSION_TAKEN_OVER})
    # The new connection works.
    assert new.subscribe(f"it/{uid}/t", 1).reason_codes == [1]
    new.publish(f"it/{uid}/t", b"after takeover", qos=1)
    assert new.expect_publish().payload == b"after takeover"


def test_takeover_keeps_persistent_session(module_broker, paho_client, protocol, uid):
    old = paho_client(module_broker, uid, protocol=protocol, **persistent(protocol))
    old.subscribe(f"it/{uid}/s", 1)
    new = paho_client(module_broker, uid, protocol=protocol, **persistent(protocol))
    assert new.session_present
    info = old.wait_for_disconnect()
    if protocol == 5 and info.from_server:
        assert info.reason_code == codec.RC_SESSION_TAKEN_OVER
    # The subscription made on the old connection belongs to the session the new one resumed.
    pub = paho_client(module_broker, protocol=protocol)
    pub.publish_and_wait(f"it/{uid}/s", b"to the session", qos=1)
    assert new.expect_message().payload == b"to the session"


def test_auth_method_without_configured_authentication(module_broker, raw_client, uid):
    """Enhanced authentication requested but none configured: CONNACK 0x8C (Bad
    authentication method), then the server closes the connection."""
    conn = raw_client(module_broker, codec.MQTT5)
    ack = conn.connect(
        uid,
        properties={
            "authentication_method": "SCRAM-SHA-256",
            "authentication_data": b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
        },
    )
    assert ack.reason_code == codec.RC_BAD_AUTH_METHOD
    assert not ack.session_present
    assert conn.expect_closed() == []


def test_v5_connack_advertises_limits(module_broker, raw_client, uid):
    """Every limit property present in CONNACK is well formed (sanity check of the codec and
    of the server's advertisement)."""
    conn = raw_client(module_broker, codec.MQTT5)
    ack = conn.connect(uid)
    assert ack.reason_code == 0
    props = ack.properties
    if "receive_maximum" in props:
        assert props["receive_maximum"] > 0
    if "maximum_qos" in props:
        assert props["maximum_qos"] in (0, 1)  # absent means 2
    if "maximum_packet_size" in props:
        assert props["maximum_packet_size"] > 0
    for flag in (
        "retain_available",
        "wildcard_subscription_available",
        "subscription_identifier_available",
        "shared_subscription_available",
    ):
        assert props.get(flag, 1) in (0, 1)
