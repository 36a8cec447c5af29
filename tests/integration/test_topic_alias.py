"""MQTT 5 topic aliases: client → server (mapping, re-mapping, invalid aliases) and
server → client (only when the client allows them in CONNECT; the least recently used alias is
re-established once the client's maximum is reached)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from starling_it import codec
from starling_it.expect import assert_closed_for_error

JS_DIR = Path(__file__).resolve().parent / "js"


def _alias_publisher(broker, raw_client, client_id):
    conn = raw_client(broker, codec.MQTT5)
    ack = conn.connect(client_id)
    assert ack.reason_code == 0
    alias_max = ack.properties.get("topic_alias_maximum", 0)
    if alias_max == 0:
        pytest.fail(f"server accepts no topic aliases (CONNACK {ack.properties})")
    return conn, alias_max


def test_client_to_server_topic_alias(module_broker, raw_client, paho_client, topic):
    sub = paho_client(module_broker, protocol=5)
    sub.subscribe(f"{topic}/#", 1)
    pub, _ = _alias_publisher(module_broker, raw_client, f"{topic}-pub")

    pub.publish(f"{topic}/long/topic/name", b"1", qos=1, properties={"topic_alias": 1})
    pub.publish("", b"2", qos=1, properties={"topic_alias": 1})
    # Re-map alias 1 to another topic.
    pub.publish(f"{topic}/other", b"3", qos=1, properties={"topic_alias": 1})
    pub.publish("", b"4", qos=1, properties={"topic_alias": 1})

    got = [(m.topic, m.payload) for m in sub.expect_messages(4)]
    # Order holds per topic only (docs/clustering.md: msg.all is keyed by topic), so
    # the two topics' messages may interleave either way.
    by_topic = {}
    for t, payload in got:
        by_topic.setdefault(t, []).append(payload)
    assert by_topic == {
        f"{topic}/long/topic/name": [b"1", b"2"],
        f"{topic}/other": [b"3", b"4"],
    }
    # The alias is a transport detail: subscribers never see it unless they asked for aliases.
    sub.expect_no_message(0.2)


def test_topic_alias_is_per_connection(module_broker, raw_client, paho_client, topic):
    """An alias set on one connection means nothing on another (nor after a reconnect)."""
    pub, _ = _alias_publisher(module_broker, raw_client, f"{topic}-a")
    pub.publish(f"{topic}/x", b"1", qos=1, properties={"topic_alias": 2})
    other, _ = _alias_publisher(module_broker, raw_client, f"{topic}-b")
    other.send(codec.publish("", b"?", qos=1, packet_id=1, properties={"topic_alias": 2}))
    assert_closed_for_error(other, module_broker.kind, {codec.RC_PROTOCOL_ERROR})


def test_topic_alias_above_maximum(module_broker, raw_client, uid):
    conn, alias_max = _alias_publisher(module_broker, raw_client, uid)
    conn.send(
        codec.publish(f"it/{uid}/x", b"x", qos=1, packet_id=1,
                      properties={"topic_alias": alias_max + 1})
    )
    assert_closed_for_error(conn, module_broker.kind, {codec.RC_TOPIC_ALIAS_INVALID})


def test_topic_alias_zero(module_broker, raw_client, uid):
    conn, _ = _alias_publisher(module_broker, raw_client, uid)
    conn.send(codec.publish(f"it/{uid}/x", b"x", qos=1, packet_id=1,
                            properties={"topic_alias": 0}))
    assert_closed_for_error(
        conn, module_broker.kind,
        {codec.RC_TOPIC_ALIAS_INVALID, codec.RC_PROTOCOL_ERROR, codec.RC_MALFORMED_PACKET},
    )


def test_empty_topic_with_unknown_alias(module_broker, raw_client, uid):
    conn, _ = _alias_publisher(module_broker, raw_client, uid)
    conn.send(codec.publish("", b"x", qos=1, packet_id=1, properties={"topic_alias": 3}))
    assert_closed_for_error(conn, module_broker.kind, {codec.RC_PROTOCOL_ERROR})


def test_empty_topic_without_alias(module_broker, raw_client, protocol, uid):
    conn = raw_client(module_broker, protocol)
    assert conn.connect(uid).reason_code == 0
    conn.send(codec.publish("", b"x", qos=1, packet_id=1, protocol=protocol))
    assert_closed_for_error(
        conn, module_broker.kind,
        {codec.RC_PROTOCOL_ERROR, codec.RC_MALFORMED_PACKET, codec.RC_TOPIC_NAME_INVALID},
    )


def test_no_server_aliases_when_client_allows_none(module_broker, raw_client, paho_client, topic):
    """Topic Alias Maximum absent (= 0) in CONNECT: the server must not send aliases."""
    sub = raw_client(module_broker, codec.MQTT5)
    assert sub.connect(f"{topic}-sub").reason_code == 0
    sub.subscribe(f"{topic}/#", 0)
    pub = paho_client(module_broker, protocol=5)
    long_topic = f"{topic}/" + "segment/" * 10 + "end"
    for i in range(3):
        pub.publish_and_wait(long_topic, f"{i}", qos=1)
    for _ in range(3):
        msg = sub.expect_publish()
        assert msg.topic == long_topic
        assert "topic_alias" not in msg.properties


def test_server_to_client_aliases_resolve(module_broker, raw_client, paho_client, topic):
    """With Topic Alias Maximum 5 in CONNECT, whatever aliases the server uses stay within 5
    and resolve to the right topics (the server may also send none)."""
    sub = raw_client(module_broker, codec.MQTT5)
    assert sub.connect(f"{topic}-sub", properties={"topic_alias_maximum": 5}).reason_code == 0
    sub.subscribe(f"{topic}/#", 0)
    pub = paho_client(module_broker, protocol=5)
    topics = [f"{topic}/" + "segment/" * 10 + f"t{i % 3}" for i in range(9)]
    for i, t in enumerate(topics):
        pub.publish_and_wait(t, f"{i}", qos=1)
    for i, t in enumerate(topics):
        msg = sub.expect_publish()
        alias = msg.properties.get("topic_alias")
        if alias is not None:
            assert 1 <= alias <= 5
        assert sub.resolve_topic(msg) == t
        assert msg.payload == f"{i}".encode()


@pytest.mark.starlingd_only(reason="Mosquitto 2.0 never sends topic aliases to clients (2.1 does)")
def test_server_uses_topic_aliases_for_repeated_long_topics(
    module_broker, raw_client, paho_client, topic
):
    """starlingd assigns an alias to a long topic (TBMQ: >= 50 characters) and then sends the
    alias with an empty topic name."""
    sub = raw_client(module_broker, codec.MQTT5)
    assert sub.connect(f"{topic}-sub", properties={"topic_alias_maximum": 5}).reason_code == 0
    sub.subscribe(f"{topic}/#", 0)
    pub = paho_client(module_broker, protocol=5)
    long_topic = f"{topic}/" + "segment/" * 10 + "end"
    assert len(long_topic) >= 50
    for i in range(3):
        pub.publish_and_wait(long_topic, f"{i}", qos=1)
    first = sub.expect_publish()
    assert first.topic == long_topic
    alias = first.properties.get("topic_alias")
    assert alias is not None and 1 <= alias <= 5, first.properties
    for _ in range(2):
        nxt = sub.expect_publish()
        assert nxt.topic == "", "an established alias should replace the topic name"
        assert nxt.properties.get("topic_alias") == alias
        assert sub.resolve_topic(nxt) == long_topic


@pytest.mark.starlingd_only(reason="Mosquitto 2.0 never sends topic aliases to clients (2.1 does)")
def test_full_alias_table_reuses_the_least_recently_used_alias(
    module_broker, raw_client, paho_client, topic
):
    """With Topic Alias Maximum 2 and three long topics, the third topic takes over the alias
    of the least recently used one (sent with its topic, which re-maps it at the client), and a
    topic whose alias was taken is established again rather than sent with a stale alias."""
    sub = raw_client(module_broker, codec.MQTT5)
    assert sub.connect(f"{topic}-sub", properties={"topic_alias_maximum": 2}).reason_code == 0
    sub.subscribe(f"{topic}/#", 0)
    pub = paho_client(module_broker, protocol=5)
    t = [f"{topic}/" + "segment/" * 10 + f"t{i}" for i in range(3)]
    order = [t[0], t[1], t[0], t[2], t[1], t[0], t[2]]
    for i, name in enumerate(order):
        pub.publish_and_wait(name, f"{i}", qos=1)
    seen = []
    for i, name in enumerate(order):
        msg = sub.expect_publish()
        assert sub.resolve_topic(msg) == name and msg.payload == f"{i}".encode()
        seen.append((msg.topic != "", msg.properties.get("topic_alias")))
    assert seen == [
        (True, 1),   # t0 establishes 1
        (True, 2),   # t1 establishes 2
        (False, 1),  # t0 again: alias alone
        (True, 2),   # t2 takes 2 from t1 (least recently used)
        (True, 1),   # t1 takes 1 from t0 (least recently used)
        (True, 2),   # t0 takes 2 from t2
        (True, 1),   # t2 takes 1 from t1
    ]


@pytest.mark.parametrize("alias_max", [1, 3])
def test_mqtt_js_resolves_every_aliased_topic(module_broker, topic, alias_max):
    """A third-party client (MQTT.js) that accepts a few aliases, receiving more long topics
    than it has aliases: every message arrives under its own topic, in order."""
    node = shutil.which("node")
    if node is None or not (JS_DIR / "node_modules" / "mqtt").is_dir():
        pytest.skip("node or MQTT.js missing: run scripts/install-deps.sh (npm ci in js/)")
    topics = [f"{topic}/" + "segment/" * 10 + f"t{i % 4}" for i in range(12)]
    done = subprocess.run(
        [node, str(JS_DIR / "alias_subscriber.mjs"), str(module_broker.port), topic,
         str(alias_max), *topics],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["received"] == [{"topic": t, "payload": f"{i}"} for i, t in enumerate(topics)]
    if module_broker.kind == "starlingd":
        assert result["aliased"] == len(topics)  # every long topic went with an alias
