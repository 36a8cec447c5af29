// MQTT.js over WebSocket: connects to ws://127.0.0.1:<port>/mqtt, subscribes to <topic>,
// publishes one QoS 1 message to it and prints {"protocol": ..., "payload": ...} once the
// message comes back. Exits non-zero on any error or after a 10 s deadline.
//
// Usage: node ws_roundtrip.mjs <port> <topic> <protocolVersion 4|5>
import mqtt from "mqtt";

const [port, topic, version] = process.argv.slice(2);
const deadline = setTimeout(() => {
    console.error("no message within 10 s");
    process.exit(2);
}, 10000);

const client = mqtt.connect(`ws://127.0.0.1:${port}/mqtt`, {
    protocolVersion: Number(version),
    reconnectPeriod: 0,
    clientId: `mqttjs-${process.pid}`,
});
client.on("error", (err) => {
    console.error(`error: ${err.message}`);
    process.exit(1);
});
client.on("connect", () => {
    client.subscribe(topic, { qos: 1 }, (err) => {
        if (err) {
            console.error(`subscribe: ${err.message}`);
            process.exit(1);
        }
        client.publish(topic, "hello from mqtt.js", { qos: 1 });
    });
});
client.on("message", (t, payload) => {
    clearTimeout(deadline);
    console.log(JSON.stringify({ topic: t, payload: payload.toString() }));
    client.end(false, () => process.exit(0));
});
