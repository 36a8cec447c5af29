"""QoS 0/1/2 in both directions, the delivered QoS = min(publish, subscription), ordering,
and the QoS 2 handshakes step by step with a raw client."""

from __future__ import annotations

import pytest

from starling_it import codec


@pytest.mark.parametrize("sub_qos", [0, 1, 2])
@pytest.mark.parametrize("pub_qos", [0, 1, 2])
def test_qos_matrix(module_broker, paho_client, protocol, topic, pub_qos, sub_qos):
    """Delivered QoS is the minimum of the publish QoS and the granted subscription QoS."""
    sub = paho_client(module_broker, protocol=protocol)
    assert sub.subscribe(f"{topic}/q", sub_qos) == [sub_qos]
    pub = paho_client(module_broker, protocol=protocol)
    rc = pub.publish_and_wait(f"{topic}/q", f"{pub_qos}->{sub_qos}", qos=pub_qos)
    assert rc == 0
    msg = sub.expect_message()
    assert msg.payload == f"{pub_qos}->{sub_qos}".encode()
    assert msg.qos == min(pub_qos, sub_qos)
    assert not msg.dup and not msg.retain
    sub.expect_no_message(0.2)


def test_qos1_messages_arrive_in_order(module_broker, paho_client, protocol, topic):
    """Ordered topic: QoS 1 messages from one publisher arrive in publish order [4.6]."""
    count = 100
    sub = paho_client(module_broker, protocol=protocol)
    sub.subscribe(f"{topic}/ordered", 1)
    pub = paho_client(module_broker, protocol=protocol)
    infos = [pub.publish(f"{topic}/ordered", str(i), qos=1) for i in range(count)]
    for info in infos:
        info.wait_for_publish(10)
    got = [int(m.payload) for m in sub.expect_messages(count)]
    assert got == list(range(count))


def test_qos2_inbound_flow_step_by_step(module_broker, raw_client, paho_client, protocol, topic):
    """PUBLISH → PUBREC; a duplicate PUBLISH (DUP=1, same id) before PUBREL gets another PUBREC
    but is not delivered twice; PUBREL → PUBCOMP."""
    sub = paho_client(module_broker, protocol=protocol)
    sub.subscribe(f"{topic}/q2", 2)
    pub = raw_client(module_broker, protocol)
    assert pub.connect(f"{topic}-pub").reason_code == 0

    pub.send(codec.publish(f"{topic}/q2", b"once", qos=2, packet_id=7, protocol=protocol))
    rec = pub.expect(codec.PUBREC)
    assert rec.packet_id == 7 and rec.reason_code == 0
    pub.send(
        codec.publish(f"{topic}/q2", b"once", qos=2, dup=True, packet_id=7, protocol=protocol)
    )
    rec2 = pub.expect(codec.PUBREC)
    assert rec2.packet_id == 7
    pub.send(codec.pubrel(7, protocol=protocol))
    comp = pub.expect(codec.PUBCOMP)
    assert comp.packet_id == 7 and comp.reason_code == 0

    msg = sub.expect_message()
    assert (msg.payload, msg.qos) == (b"once", 2)
    # A fresh message with the same (now released) packet id is a new message.
    pub.publish(f"{topic}/q2", b"second", qos=2)
    assert sub.expect_message().payload == b"second"
    sub.expect_no_message(0.3)


def test_qos2_publish_resent_before_its_pubrec_is_published_once(
    module_broker, raw_client, paho_client, protocol, topic
):
    """A QoS 2 PUBLISH and its resend (DUP=1, same id) in one write: the resend reaches the
    broker while the first is still being written to the log. Both get a PUBREC, in order; the
    message is delivered once [MQTT-4.3.3-10]."""
    # QoS 1 to the subscriber: paho hands a QoS 2 message to the application only after its
    # PUBREL, which would let the marker below overtake it.
    sub = paho_client(module_broker, protocol=protocol)
    sub.subscribe(f"{topic}/q2", 1)
    pub = raw_client(module_broker, protocol)
    assert pub.connect(f"{topic}-pub").reason_code == 0

    first = codec.publish(f"{topic}/q2", b"once", qos=2, packet_id=8, protocol=protocol)
    resend = codec.publish(f"{topic}/q2", b"once", qos=2, dup=True, packet_id=8, protocol=protocol)
    pub.send(first + resend)
    for _ in range(2):
        rec = pub.expect(codec.PUBREC)
        assert (rec.packet_id, rec.reason_code) == (8, 0)
    pub.send(codec.pubrel(8, protocol=protocol))
    comp = pub.expect(codec.PUBCOMP)
    assert (comp.packet_id, comp.reason_code) == (8, 0)

    # The same publisher's next message on the topic comes right after the one copy.
    pub.send(codec.publish(f"{topic}/q2", b"marker", qos=1, packet_id=9, protocol=protocol))
    assert pub.expect(codec.PUBACK).packet_id == 9
    assert [m.payload for m in sub.expect_messages(2)] == [b"once", b"marker"]


def test_qos2_pubrel_for_unknown_packet_id_completes(module_broker, raw_client, protocol, uid):
    """PUBREL for an id the server does not hold: PUBCOMP (v5 reason 0x92 Packet Identifier not
    found is allowed), never a disconnect."""
    conn = raw_client(module_broker, protocol)
    assert conn.connect(uid).reason_code == 0
    conn.send(codec.pubrel(4242, protocol=protocol))
    comp = conn.expect(codec.PUBCOMP)
    assert comp.packet_id == 4242
    assert comp.reason_code in (0x00, 0x92)
    assert conn.is_open()


def test_qos2_outbound_flow_step_by_step(module_broker, raw_client, paho_client, protocol, topic):
    """Server → client: PUBLISH(QoS 2) → client PUBREC → server PUBREL → client PUBCOMP. A
    PUBREC repeated before the PUBCOMP (a client that resends on a timeout) gets the PUBREL
    again."""
    sub = raw_client(module_broker, protocol)
    assert sub.connect(f"{topic}-sub").reason_code == 0
    assert sub.subscribe(f"{topic}/q2", 2).reason_codes == [2]
    pub = paho_client(module_broker, protocol=protocol)
    pub.publish_and_wait(f"{topic}/q2", b"two", qos=2)

    msg = sub.expect_publish()
    assert (msg.payload, msg.qos, msg.dup) == (b"two", 2, False)
    assert msg.packet_id
    sub.send(codec.pubrec(msg.packet_id, protocol=protocol))
    rel = sub.expect(codec.PUBREL)
    assert rel.packet_id == msg.packet_id
    assert rel.flags == 0x02, "PUBREL fixed header flags must be 0010"
    sub.send(codec.pubrec(msg.packet_id, protocol=protocol))
    again = sub.expect(codec.PUBREL)
    assert (again.packet_id, again.reason_code) == (msg.packet_id, 0)
    sub.send(codec.pubcomp(msg.packet_id, protocol=protocol))
    sub.expect_nothing(0.3)


def test_qos1_outbound_puback(module_broker, raw_client, paho_client, protocol, topic):
    sub = raw_client(module_broker, protocol)
    assert sub.connect(f"{topic}-sub").reason_code == 0
    sub.subscribe(f"{topic}/q1", 1)
    pub = paho_client(module_broker, protocol=protocol)
    for i in range(3):
        pub.publish_and_wait(f"{topic}/q1", f"m{i}", qos=1)
    ids = set()
    for i in range(3):
        msg = sub.expect_publish()
        assert (msg.payload, msg.qos) == (f"m{i}".encode(), 1)
        ids.add(msg.packet_id)
        sub.ack(msg)
    assert len(ids) == 3, "unacknowledged in-flight messages need distinct packet ids"
    sub.expect_nothing(0.3)


def test_qos0_publish_from_raw_client(module_broker, raw_client, paho_client, protocol, topic):
    sub = paho_client(module_broker, protocol=protocol)
    sub.subscribe(f"{topic}/q0", 2)
    pub = raw_client(module_broker, protocol)
    assert pub.connect(f"{topic}-pub").reason_code == 0
    pub.publish(f"{topic}/q0", b"fire and forget", qos=0)
    msg = sub.expect_message()
    assert (msg.payload, msg.qos) == (b"fire and forget", 0)
