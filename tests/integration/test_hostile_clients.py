"""Authenticated clients attacking the node (issue 13): each verified attack replayed against the
real daemon, plus the limits that keep one client from growing the node's state without bound.

- A 30,000-character topic against the publish rule `sensors/.*` crashed the broker (stack
  overflow inside std::regex); topic rules now run on RE2 (linear time, no recursion).
- User `alice` (rules `alice/.*`) connecting with Bob's client id and clean session 0 received
  Bob's queued and live messages on `bob/secret`; a resumed session now keeps only the
  subscriptions the resuming client may have, and its stored messages are checked on the way.
- Subscriptions per client, retained messages, topic levels, user properties: bounded, with the
  reason code MQTT 5 has for it.

The X.509 chain attack is in test_x509_chain_attack.py, connection floods in
test_hostile_connections.py, a full disk in test_hostile_disk.py, JWT in test_hostile_jwt.py."""

from __future__ import annotations

import pytest

from starling_it import codec
from starling_it.brokers import REPO_ROOT
from starling_it.prometheus import metric_sum

pytestmark = pytest.mark.starlingd_only(reason="the attacks target starlingd's own code")

_CREDENTIALS = """\
    credentials:
      - name: sensor
        credentials-type: MQTT_BASIC
        username: sensor
        password: sensor-pw
        pub: ["sensors/.*"]
        sub: ["sensors/.*"]
      - name: alice
        credentials-type: MQTT_BASIC
        username: alice
        password: alice-pw
        pub: ["alice/.*"]
        sub: ["alice/.*"]
      - name: bob
        credentials-type: MQTT_BASIC
        username: bob
        password: bob-pw
        pub: ["bob/.*"]
        sub: ["bob/.*"]
      - name: carol
        credentials-type: MQTT_BASIC
        username: carol
        password: carol-pw
        client-id-pattern: "carol(-.*)?"
        pub: ["carol/.*"]
        sub: ["carol/.*", "bob/.*"]
      - name: admin
        credentials-type: MQTT_BASIC
        username: admin
        password: admin-pw
"""


def hostile_broker(broker_factory, **env: str):
    text = (REPO_ROOT / "config" / "starling.yml").read_text()
    assert "    credentials: []\n" in text, "config/starling.yml no longer has `credentials: []`"
    return broker_factory(
        env={"SECURITY_MQTT_ALLOW_ANONYMOUS": "false", **env},
        config_text=text.replace("    credentials: []\n", _CREDENTIALS),
    )


def login(name: str) -> dict[str, str]:
    return {"username": name, "password": f"{name}-pw"}


def test_a_30000_character_topic_against_a_rule_does_not_crash_the_node(
    broker_factory, raw_client, uid
):
    broker = hostile_broker(broker_factory)
    sub = raw_client(broker, codec.MQTT5)
    assert sub.connect(f"{uid}-sub", **login("sensor")).reason_code == 0
    assert sub.subscribe("sensors/#", 1).reason_codes == [1]
    pub = raw_client(broker, codec.MQTT5)
    assert pub.connect(f"{uid}-pub", **login("sensor")).reason_code == 0
    for length in (10_000, 30_000, 60_000):  # the maximum packet size is 64 KiB
        topic = "sensors/" + "a" * length
        ack = pub.publish(topic, b"long", qos=1)
        assert ack.reason_code == 0, f"{length}: PUBACK 0x{ack.reason_code:02x}"
        msg = sub.expect_publish(timeout=10)
        assert msg.topic == topic
        sub.ack(msg)
    # A topic the rule does not allow, as long: refused (0x87), the node still up.
    ack = pub.publish("other/" + "b" * 60_000, b"x", qos=1)
    assert ack.reason_code == 0x87
    assert broker.running


def test_alice_resuming_bobs_session_gets_none_of_bobs_messages(broker_factory, raw_client, uid):
    broker = hostile_broker(broker_factory)
    bob_id = f"{uid}-bob"
    bob = raw_client(broker, codec.MQTT311)
    assert bob.connect(bob_id, clean_start=False, **login("bob")).reason_code == 0
    assert bob.subscribe("bob/secret", 1).reason_codes == [1]
    bob.disconnect()

    pub = raw_client(broker, codec.MQTT5)
    assert pub.connect(f"{uid}-pub", **login("admin")).reason_code == 0
    for i in range(3):
        assert pub.publish("bob/secret", f"queued {i}", qos=1).reason_code == 0

    # Alice's credentials are not bound to a client id: she may use Bob's.
    alice = raw_client(broker, codec.MQTT311)
    ack = alice.connect(bob_id, clean_start=False, **login("alice"))
    assert ack.reason_code == 0 and ack.session_present
    for i in range(3):
        assert pub.publish("bob/secret", f"live {i}", qos=1).reason_code == 0
    alice.expect_nothing(1.0)  # neither the queued nor the live ones
    samples = broker.metrics()
    assert metric_sum(samples, "droppedMsgs_total", reason="not_authorized") == 3
    # What Alice may subscribe to still works on the session she took.
    assert alice.subscribe("alice/inbox", 1).reason_codes == [1]
    assert pub.publish("alice/inbox", "for alice", qos=1).reason_code == 0
    assert alice.expect_publish().payload == b"for alice"


@pytest.mark.parametrize("version", [codec.MQTT311, codec.MQTT5], ids=["v311", "v5"])
def test_credentials_bound_to_client_ids_cannot_take_another_session(
    broker_factory, raw_client, uid, version
):
    """Carol's credentials carry client-id-pattern `carol(-.*)?` (and may even read bob/...):
    with the right password she still cannot connect as Bob, so Bob's session, its
    subscriptions and its queue stay his."""
    broker = hostile_broker(broker_factory)
    bob_id = f"{uid}-bob"
    keep = {"properties": {"session_expiry_interval": 300}} if version == codec.MQTT5 else {}
    bob = raw_client(broker, version)
    assert bob.connect(bob_id, clean_start=False, **keep, **login("bob")).reason_code == 0
    assert bob.subscribe("bob/secret", 1).reason_codes == [1]
    bob.disconnect()
    pub = raw_client(broker, codec.MQTT5)
    assert pub.connect(f"{uid}-pub", **login("admin")).reason_code == 0
    assert pub.publish("bob/secret", "for bob", qos=1).reason_code == 0

    carol = raw_client(broker, version)
    ack = carol.connect(bob_id, clean_start=False, **keep, **login("carol"))
    assert ack.reason_code == (0x87 if version == codec.MQTT5 else 5), ack
    # Her own ids work; an empty (server-assigned) one does not match the pattern.
    own = raw_client(broker, version)
    assert own.connect(f"carol-{uid}", **login("carol")).reason_code == 0
    if version == codec.MQTT5:
        anonymous_id = raw_client(broker, version)
        assert anonymous_id.connect("", **login("carol")).reason_code == 0x87

    bob = raw_client(broker, version)
    ack = bob.connect(bob_id, clean_start=False, **keep, **login("bob"))
    assert ack.reason_code == 0 and ack.session_present
    assert bob.expect_publish().payload == b"for bob"


def test_state_one_client_can_grow_is_bounded(broker_factory, raw_client, uid):
    broker = hostile_broker(
        broker_factory,
        MQTT_SUBSCRIPTION_MAX_PER_CLIENT="5",
        MQTT_RETAINED_MESSAGES_MAX_COUNT="3",
        MQTT_TOPIC_MAX_SEGMENTS_COUNT="8",
        MQTT_MAX_USER_PROPERTIES="16",
    )
    c = raw_client(broker, codec.MQTT5)
    assert c.connect(f"{uid}-c", **login("admin")).reason_code == 0
    codes = [c.subscribe(f"s/{i}", 1).reason_codes[0] for i in range(7)]
    assert codes == [1, 1, 1, 1, 1, 0x97, 0x97], "subscriptions beyond 5 get Quota exceeded"
    assert c.subscribe("a/b/c/d/e/f/g/h/i", 1).reason_codes == [0x8F], "more than 8 levels"
    retained = [c.publish(f"r/{uid}/{i}", b"keep", qos=1, retain=True).reason_code
                for i in range(4)]
    assert retained == [0, 0, 0, 0x97], "a fourth retained topic is refused"
    assert c.publish(f"r/{uid}/0", b"update", qos=1, retain=True).reason_code == 0
    assert c.publish("t/" + "/".join("x" * 8), b"deep", qos=1).reason_code == 0x90
    samples = broker.metrics()
    assert metric_sum(samples, "subscriptionsRefused_total") == 2
    assert metric_sum(samples, "retainedMsgsRefused_total") == 1
    assert metric_sum(samples, "droppedMsgs_total", reason="topic_levels") == 1

    # 17 user properties: the packet is refused (DISCONNECT 0x83), the node stays up.
    props = {"user_property": [(f"k{i}", "v") for i in range(17)]}
    c.send(codec.publish("t/props", b"x", qos=1, packet_id=99, properties=props))
    d = c.expect(codec.DISCONNECT)
    assert d.reason_code == 0x83
    again = raw_client(broker, codec.MQTT5)
    assert again.connect(f"{uid}-again", **login("admin")).reason_code == 0


def test_a_will_the_node_cannot_honour_refuses_the_connect(broker_factory, raw_client, uid):
    broker = hostile_broker(broker_factory, MQTT_MAX_QOS="1", MQTT_RETAIN_AVAILABLE="false")
    c = raw_client(broker, codec.MQTT5)
    ack = c.connect(f"{uid}-q", will=codec.Will("w", b"x", qos=2), **login("admin"))
    assert ack.reason_code == 0x9B
    c = raw_client(broker, codec.MQTT5)
    ack = c.connect(f"{uid}-r", will=codec.Will("w", b"x", retain=True), **login("admin"))
    assert ack.reason_code == 0x9A
