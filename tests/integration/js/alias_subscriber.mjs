// MQTT.js as a subscriber that accepts `max` server → client topic aliases: connects over TCP,
// subscribes to <prefix>/#, publishes the long topics given on the command line, in order, one
// QoS 1 message each, and prints the topics of the messages it received, in order, as MQTT.js
// resolved them (it refuses a PUBLISH whose alias it never learnt, which fails this script).
//
// Usage: node alias_subscriber.mjs <port> <prefix> <max> <topic>...
import mqtt from "mqtt";

const [port, prefix, max, ...topics] = process.argv.slice(2);
const deadline = setTimeout(() => {
    console.error(`got ${received.length} of ${topics.length} messages within 15 s`);
    process.exit(2);
}, 15000);
const received = [];
let aliased = 0;

const client = mqtt.connect(`mqtt://127.0.0.1:${port}`, {
    protocolVersion: 5,
    reconnectPeriod: 0,
    clientId: `mqttjs-alias-${process.pid}`,
    properties: { topicAliasMaximum: Number(max) },
});
client.on("error", (err) => {
    console.error(`error: ${err.message}`);
    process.exit(1);
});
client.on("connect", () => {
    client.subscribe(`${prefix}/#`, { qos: 1 }, async (err) => {
        if (err) {
            console.error(`subscribe: ${err.message}`);
            process.exit(1);
        }
        for (const [i, t] of topics.entries()) {
            await client.publishAsync(t, String(i), { qos: 1 });
        }
    });
});
client.on("message", (t, payload, packet) => {
    if (packet.properties && packet.properties.topicAlias !== undefined) {
        aliased += 1;
    }
    received.push({ topic: t, payload: payload.toString() });
    if (received.length === topics.length) {
        clearTimeout(deadline);
        console.log(JSON.stringify({ received, aliased }));
        client.end(false, () => process.exit(0));
    }
});
