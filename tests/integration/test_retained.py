"""Retained messages: store, replace, delete with an empty payload, RETAIN flag on delivery,
Retain Handling 0/1/2, Retain As Published, message expiry on retained messages."""

from __future__ import annotations

import pytest

from starling_it.expect import let_time_pass


def test_retained_message_delivered_to_new_subscriber(
    module_broker, paho_client, protocol, topic
):
    pub = paho_client(module_broker, protocol=protocol)
    pub.publish_and_wait(f"{topic}/r", b"kept", qos=1, retain=True)
    sub = paho_client(module_broker, protocol=protocol)
    sub.subscribe(f"{topic}/r", 1)
    msg = sub.expect_message()
    assert (msg.topic, msg.payload, msg.qos, msg.retain) == (f"{topic}/r", b"kept", 1, True)
    sub.expect_no_message(0.2)


def test_retained_qos_is_min_of_stored_and_subscription(
    module_broker, paho_client, protocol, topic
):
    pub = paho_client(module_broker, protocol=protocol)
    pub.publish_and_wait(f"{topic}/r", b"q2", qos=2, retain=True)
    sub = paho_client(module_broker, protocol=protocol)
    sub.subscribe(f"{topic}/r", 1)
    msg = sub.expect_message()
    assert (msg.qos, msg.retain) == (1, True)


def test_retained_message_replaced_by_newer(module_broker, paho_client, protocol, topic):
    pub = paho_client(module_broker, protocol=protocol)
    pub.publish_and_wait(f"{topic}/r", b"old", qos=1, retain=True)
    pub.publish_and_wait(f"{topic}/r", b"new", qos=1, retain=True)
    sub = paho_client(module_broker, protocol=protocol)
    sub.subscribe(f"{topic}/r", 1)
    assert sub.expect_message().payload == b"new"
    sub.expect_no_message(0.3)


def test_empty_retained_payload_deletes(module_broker, paho_client, protocol, topic):
    pub = paho_client(module_broker, protocol=protocol)
    pub.publish_and_wait(f"{topic}/r", b"soon gone", qos=1, retain=True)
    live = paho_client(module_broker, protocol=protocol)
    live.subscribe(f"{topic}/r", 1)
    assert live.expect_message().payload == b"soon gone"
    pub.publish_and_wait(f"{topic}/r", b"", qos=1, retain=True)
    # The empty retained message is still forwarded to existing subscribers [MQTT-3.3.1-6 note].
    forwarded = live.expect_message()
    assert forwarded.payload == b""

    late = paho_client(module_broker, protocol=protocol)
    late.subscribe(f"{topic}/r", 1)
    # Prove the late subscription is live with a fresh (non-retained) message.
    pub.publish_and_wait(f"{topic}/r", b"live", qos=1)
    msgs = [late.expect_message()] + late.collect_for(0.3)
    assert [(m.payload, m.retain) for m in msgs] == [(b"live", False)], "retained msg remains"


def test_retained_messages_matched_by_wildcards(module_broker, paho_client, protocol, topic):
    pub = paho_client(module_broker, protocol=protocol)
    for leaf in ("a/1", "a/2", "b/1"):
        pub.publish_and_wait(f"{topic}/{leaf}", leaf, qos=1, retain=True)
    sub = paho_client(module_broker, protocol=protocol)
    sub.subscribe(f"{topic}/a/+", 1)
    got = sorted(m.payload for m in sub.expect_messages(2))
    assert got == [b"a/1", b"a/2"]
    sub.expect_no_message(0.3)
    sub2 = paho_client(module_broker, protocol=protocol)
    sub2.subscribe(f"{topic}/#", 1)
    assert sorted(m.payload for m in sub2.expect_messages(3)) == [b"a/1", b"a/2", b"b/1"]


def test_retain_flag_cleared_for_established_subscription(
    module_broker, paho_client, protocol, topic
):
    """A retained PUBLISH forwarded to an existing subscription: RETAIN=0 at 3.1.1
    [MQTT-3.3.1-9], and at v5 with Retain As Published=0 [MQTT-3.3.1-12]."""
    sub = paho_client(module_broker, protocol=protocol)
    sub.subscribe(f"{topic}/r", 1)
    pub = paho_client(module_broker, protocol=protocol)
    pub.publish_and_wait(f"{topic}/r", b"live retained", qos=1, retain=True)
    msg = sub.expect_message()
    assert (msg.payload, msg.retain) == (b"live retained", False)


def test_v5_retain_as_published(module_broker, paho_client, topic):
    sub = paho_client(module_broker, protocol=5)
    sub.subscribe(f"{topic}/rap", 1, retain_as_published=True)
    pub = paho_client(module_broker, protocol=5)
    pub.publish_and_wait(f"{topic}/rap", b"retained", qos=1, retain=True)
    pub.publish_and_wait(f"{topic}/rap", b"plain", qos=1, retain=False)
    first, second = sub.expect_messages(2)
    assert (first.payload, first.retain) == (b"retained", True)
    assert (second.payload, second.retain) == (b"plain", False)


@pytest.mark.parametrize(
    "retain_handling, on_first, on_resubscribe",
    [(0, True, True), (1, True, False), (2, False, False)],
    ids=["rh0-always", "rh1-if-new", "rh2-never"],
)
def test_v5_retain_handling(
    module_broker, paho_client, topic, retain_handling, on_first, on_resubscribe
):
    pub = paho_client(module_broker, protocol=5)
    pub.publish_and_wait(f"{topic}/rh", b"retained", qos=1, retain=True)
    sub = paho_client(module_broker, protocol=5)

    for expected in (on_first, on_resubscribe):
        sub.subscribe(f"{topic}/rh", 1, retain_handling=retain_handling)
        # A marker published after SUBACK proves the subscription is live.
        pub.publish_and_wait(f"{topic}/rh", b"marker", qos=1, retain=False)
        # Retained delivery and the marker take different paths in a broker, so their
        # order is not fixed: collect until the marker (and the retained copy, if expected).
        msgs = []
        while not any(m.payload == b"marker" for m in msgs) or (
            expected and not any(m.retain for m in msgs)
        ):
            msgs.append(sub.expect_message())
        msgs += sub.collect_for(0.3)
        retained = [m for m in msgs if m.retain]
        if expected:
            assert [m.payload for m in retained] == [b"retained"], msgs
        else:
            assert retained == [], msgs


@pytest.mark.slow
def test_v5_retained_message_expiry(module_broker, paho_client, topic):
    pub = paho_client(module_broker, protocol=5)
    pub.publish_and_wait(
        f"{topic}/exp", b"short-lived", qos=1, retain=True,
        properties={"message_expiry_interval": 1},
    )
    pub.publish_and_wait(
        f"{topic}/keep", b"long-lived", qos=1, retain=True,
        properties={"message_expiry_interval": 60},
    )
    early = paho_client(module_broker, protocol=5)
    early.subscribe(f"{topic}/#", 1)
    got = {m.payload: m for m in early.expect_messages(2)}
    assert set(got) == {b"short-lived", b"long-lived"}
    assert got[b"short-lived"].properties.get("message_expiry_interval", 0) <= 1

    let_time_pass(2.5)  # the 1 s expiry is what is under test
    late = paho_client(module_broker, protocol=5)
    late.subscribe(f"{topic}/#", 1)
    msg = late.expect_message()
    assert msg.payload == b"long-lived"
    remaining = msg.properties.get("message_expiry_interval")
    assert remaining is not None and remaining <= 58, f"remaining expiry {remaining}"
    late.expect_no_message(0.5)


def test_subscribers_joining_a_retained_stream_see_each_topic_once_in_order(
    module_broker, paho_client, topic
):
    """A publisher streams retained values (a counter per topic) while subscribers join one
    after another. Retained messages are stored before they are routed, so a joiner meets the
    same values live and as retained (src/broker/retained_echoes.h): it must still see each
    topic's values strictly increasing — no value twice, no older value after a newer one — and
    end on the publisher's last value."""
    topics = [f"{topic}/v/{i}" for i in range(4)]
    pub = paho_client(module_broker, protocol=5)
    rounds = 1500
    joiners = []
    for n in range(rounds):
        for t in topics:
            pub.publish(t, str(n).encode(), qos=0, retain=True)
        if n % 150 == 75:
            sub = paho_client(module_broker, protocol=5)
            sub.subscribe(f"{topic}/v/#", 1)  # returns at the SUBACK, while the stream goes on
            joiners.append(sub)
    for t in topics:  # the last values, acknowledged
        pub.publish_and_wait(t, str(rounds).encode(), qos=1, retain=True)
    assert len(joiners) == 10
    for sub in joiners:
        last = {t: -1 for t in topics}
        while any(v != rounds for v in last.values()):
            msg = sub.expect_message(timeout=15)
            value = int(msg.payload)
            assert value > last[msg.topic], (
                f"{sub.client_id}: {msg.topic} went from {last[msg.topic]} to {value} "
                f"(retain={msg.retain})"
            )
            last[msg.topic] = value
