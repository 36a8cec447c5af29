"""Subscriptions: wildcard matching, $-topics, No Local, Subscription Identifiers,
overlapping subscriptions, shared subscriptions, unsubscribe, invalid filters."""

from __future__ import annotations

import collections
import time

import pytest

from starling_it import codec
from starling_it.expect import assert_closed_for_error


@pytest.mark.parametrize(
    "topic_filter, matches, misses",
    [
        ("a/b", ["a/b"], ["a", "a/b/c", "a/bb", "A/b"]),
        ("a/+", ["a/b", "a/"], ["a", "a/b/c"]),
        ("a/#", ["a", "a/b", "a/b/c", "a/"], ["b", "ab"]),
        ("+/+", ["a/b", "/b", "a/"], ["a", "a/b/c"]),
        ("+/b/#", ["a/b", "x/b/c/d"], ["a/c", "b"]),
        ("a//c", ["a//c"], ["a/b/c", "a/c"]),
    ],
)
def test_wildcard_matching(
    module_broker, paho_client, protocol, uid, topic_filter, matches, misses
):
    root = f"it-{uid}"
    sub = paho_client(module_broker, protocol=protocol)
    sub.subscribe(f"{root}/{topic_filter}", 0)
    pub = paho_client(module_broker, protocol=protocol)
    for t in misses + matches:  # misses first: any leak shows up before the matches
        pub.publish_and_wait(f"{root}/{t}", t, qos=1)
    got = [m.payload.decode() for m in sub.expect_messages(len(matches))]
    # Order holds per topic only (msg.all is partitioned by topic), so compare as multisets.
    assert sorted(got) == sorted(matches)
    sub.expect_no_message(0.2)


def test_dollar_topics_not_matched_by_leading_wildcards(broker, paho_client, protocol, uid):
    """Topics starting with '$' are not matched by filters starting with '#' or '+'
    [MQTT-4.7.2-1], but are matched by filters that name the '$' level."""
    hash_sub = paho_client(broker, protocol=protocol)
    hash_sub.subscribe("#", 0)
    plus_sub = paho_client(broker, protocol=protocol)
    plus_sub.subscribe(f"+/{uid}/x", 0)
    dollar_sub = paho_client(broker, protocol=protocol)
    dollar_sub.subscribe(f"$it/{uid}/#", 0)

    pub = paho_client(broker, protocol=protocol)
    pub.publish_and_wait(f"$it/{uid}/x", b"dollar", qos=1)
    assert dollar_sub.expect_message().payload == b"dollar"
    pub.publish_and_wait(f"plain/{uid}/x", b"plain", qos=1)
    # Both wildcard subscribers see the plain marker; nothing starting with '$' before it.
    for sub in (hash_sub, plus_sub):
        msgs = []
        while not msgs or msgs[-1].payload != b"plain":
            msgs.append(sub.expect_message())
        msgs += sub.collect_for(0.3)  # a late leak would show up here
        leaked = [m.topic for m in msgs if m.topic.startswith("$")]
        assert leaked == [], f"wildcard subscription received $-topics {leaked}"


def test_v5_no_local(module_broker, paho_client, topic):
    me = paho_client(module_broker, protocol=5)
    me.subscribe(f"{topic}/nl", 1, no_local=True)
    me.publish_and_wait(f"{topic}/nl", b"mine", qos=1)
    other = paho_client(module_broker, protocol=5)
    other.publish_and_wait(f"{topic}/nl", b"theirs", qos=1)
    assert me.expect_message().payload == b"theirs"
    me.expect_no_message(0.3)


def test_without_no_local_own_messages_are_received(module_broker, paho_client, protocol, topic):
    me = paho_client(module_broker, protocol=protocol)
    me.subscribe(f"{topic}/nl", 1)
    me.publish_and_wait(f"{topic}/nl", b"mine", qos=1)
    assert me.expect_message().payload == b"mine"


def test_granted_qos_downgrades_delivery(module_broker, paho_client, protocol, topic):
    sub = paho_client(module_broker, protocol=protocol)
    assert sub.subscribe(f"{topic}/d", 0) == [0]
    pub = paho_client(module_broker, protocol=protocol)
    pub.publish_and_wait(f"{topic}/d", b"qos2 publish", qos=2)
    assert sub.expect_message().qos == 0


def test_resubscribe_replaces_subscription(module_broker, paho_client, protocol, topic):
    """Subscribing again to the same filter replaces its options; no second copy."""
    sub = paho_client(module_broker, protocol=protocol)
    sub.subscribe(f"{topic}/s", 0)
    sub.subscribe(f"{topic}/s", 2)
    pub = paho_client(module_broker, protocol=protocol)
    pub.publish_and_wait(f"{topic}/s", b"x", qos=2)
    assert sub.expect_message().qos == 2
    sub.expect_no_message(0.3)


def test_unsubscribe_stops_delivery(module_broker, paho_client, protocol, topic):
    sub = paho_client(module_broker, protocol=protocol)
    sub.subscribe(f"{topic}/u", 1)
    sub.subscribe(f"{topic}/marker", 1)
    codes = sub.unsubscribe(f"{topic}/u")
    if protocol == 5:
        assert codes == [0]
    pub = paho_client(module_broker, protocol=protocol)
    pub.publish_and_wait(f"{topic}/u", b"after unsubscribe", qos=1)
    pub.publish_and_wait(f"{topic}/marker", b"marker", qos=1)
    assert sub.expect_message().payload == b"marker"
    sub.expect_no_message(0.2)


def test_v5_unsubscribe_unknown_filter(module_broker, raw_client, uid):
    conn = raw_client(module_broker, codec.MQTT5)
    assert conn.connect(uid).reason_code == 0
    unsuback = conn.unsubscribe(f"it/{uid}/never-subscribed")
    assert unsuback.reason_codes in ([codec.RC_NO_SUBSCRIPTION_EXISTED], [0])


def test_v5_subscription_identifiers(module_broker, paho_client, topic):
    sub = paho_client(module_broker, protocol=5)
    sub.subscribe(f"{topic}/si/+", 1, subscription_identifier=7)
    sub.subscribe(f"{topic}/plain", 1)
    pub = paho_client(module_broker, protocol=5)
    pub.publish_and_wait(f"{topic}/si/a", b"with id", qos=1)
    pub.publish_and_wait(f"{topic}/plain", b"without id", qos=1)
    first, second = sub.expect_messages(2)
    assert first.properties.get("subscription_identifier") == [7]
    assert "subscription_identifier" not in second.properties
    # Re-subscribing with a new identifier replaces it.
    sub.subscribe(f"{topic}/si/+", 1, subscription_identifier=268435455)
    pub.publish_and_wait(f"{topic}/si/b", b"new id", qos=1)
    assert sub.expect_message().properties.get("subscription_identifier") == [268435455]


def test_v5_subscription_identifier_zero_is_protocol_error(module_broker, raw_client, uid):
    conn = raw_client(module_broker, codec.MQTT5)
    assert conn.connect(uid).reason_code == 0
    conn.send(codec.subscribe(1, [(f"it/{uid}/x", 1)], {"subscription_identifier": 0}))
    assert_closed_for_error(
        conn, module_broker.kind, {codec.RC_PROTOCOL_ERROR, codec.RC_MALFORMED_PACKET}
    )


def test_overlapping_subscriptions_deliver_max_qos(module_broker, paho_client, protocol, topic):
    """Overlapping subscriptions: the message is delivered respecting the maximum QoS of the
    matching subscriptions [MQTT-3.3.4-2 (v5) / 3.3.5 (3.1.1)]; extra copies are allowed."""
    sub = paho_client(module_broker, protocol=protocol)
    sub.subscribe(f"{topic}/#", 0)
    sub.subscribe(f"{topic}/a/+", 1)
    sub.subscribe(f"{topic}/a/b", 2)
    pub = paho_client(module_broker, protocol=protocol)
    pub.publish_and_wait(f"{topic}/a/b", b"overlap", qos=2)
    copies = [sub.expect_message()] + sub.collect_for(0.5)
    assert 1 <= len(copies) <= 3
    assert max(m.qos for m in copies) == 2


@pytest.mark.starlingd_only(
    reason="Mosquitto 2.0 sends one copy per matching subscription (each with its own QoS and "
    "identifier), which the spec also allows"
)
def test_v5_overlapping_subscriptions_single_copy_with_all_identifiers(
    module_broker, paho_client, topic
):
    sub = paho_client(module_broker, protocol=5)
    sub.subscribe(f"{topic}/#", 0, subscription_identifier=1)
    sub.subscribe(f"{topic}/a/+", 1, subscription_identifier=2)
    sub.subscribe(f"{topic}/a/b", 2, subscription_identifier=3)
    sub.subscribe(f"{topic}/a/#", 1)  # no identifier
    pub = paho_client(module_broker, protocol=5)
    pub.publish_and_wait(f"{topic}/a/b", b"overlap", qos=2)
    msg = sub.expect_message()
    assert msg.qos == 2
    assert sorted(msg.properties.get("subscription_identifier", [])) == [1, 2, 3]
    sub.expect_no_message(0.5)


def test_v5_shared_subscription_round_robin(module_broker, paho_client, topic):
    """$share/<group>/<filter>: each message goes to exactly one member of the group; every
    member gets some; a plain subscriber on the same filter still gets every message."""
    members = [paho_client(module_broker, protocol=5) for _ in range(3)]
    for m in members:
        assert m.subscribe(f"$share/grp/{topic}/shared/#", 1) == [1]
    plain = paho_client(module_broker, protocol=5)
    plain.subscribe(f"{topic}/shared/#", 1)

    total = 30
    pub = paho_client(module_broker, protocol=5)
    for i in range(total):
        pub.publish_and_wait(f"{topic}/shared/t", f"{i}", qos=1)
    everything = [int(m.payload) for m in plain.expect_messages(total)]
    assert everything == list(range(total))

    # Every message reached the group exactly once: poll the members until they hold `total`.
    per_member: list[list[int]] = [[] for _ in members]
    deadline = time.monotonic() + 10
    while sum(map(len, per_member)) < total:
        assert time.monotonic() < deadline, f"group got {sum(map(len, per_member))}/{total}"
        for idx, m in enumerate(members):
            per_member[idx] += [int(msg.payload) for msg in m.drain()]
        time.sleep(0.02)  # polling a condition with a deadline
    for m in members:
        m.expect_no_message(0.2)
    counts = collections.Counter(n for lst in per_member for n in lst)
    assert sorted(counts) == list(range(total)), "some message never reached the group"
    assert max(counts.values()) == 1, "a message reached the group twice"
    assert all(per_member), f"a member received nothing: {[len(x) for x in per_member]}"


def test_v5_shared_subscription_separate_groups(module_broker, paho_client, topic):
    """Two groups on the same filter each get every message once."""
    g1 = paho_client(module_broker, protocol=5)
    g1.subscribe(f"$share/one/{topic}/g", 1)
    g2 = paho_client(module_broker, protocol=5)
    g2.subscribe(f"$share/two/{topic}/g", 1)
    pub = paho_client(module_broker, protocol=5)
    for i in range(5):
        pub.publish_and_wait(f"{topic}/g", f"{i}", qos=1)
    assert [int(m.payload) for m in g1.expect_messages(5)] == list(range(5))
    assert [int(m.payload) for m in g2.expect_messages(5)] == list(range(5))


@pytest.mark.parametrize("bad_filter", ["a/#/b", "a/b#", "a+/b", ""])
def test_invalid_topic_filter(module_broker, raw_client, protocol, uid, bad_filter):
    """An invalid filter: v5 may answer SUBACK 0x8F or disconnect; 3.1.1 may answer SUBACK
    0x80 or close. It is never granted."""
    conn = raw_client(module_broker, protocol)
    assert conn.connect(uid).reason_code == 0
    conn.send(codec.subscribe(1, [(bad_filter, 0)], protocol=protocol))
    try:
        pkt = conn.recv()
    except Exception:  # ConnectionClosed: closing is an allowed answer
        return
    if pkt.type == codec.SUBACK:
        expected = codec.RC_TOPIC_FILTER_INVALID if protocol == codec.MQTT5 else 0x80
        assert pkt.reason_codes in ([expected], [0x80]), pkt
        return
    assert pkt.type == codec.DISCONNECT and protocol == codec.MQTT5, pkt
    assert pkt.reason_code in (
        codec.RC_MALFORMED_PACKET, codec.RC_PROTOCOL_ERROR, codec.RC_TOPIC_FILTER_INVALID
    )
    conn.expect_closed()
