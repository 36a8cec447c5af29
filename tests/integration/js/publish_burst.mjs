// MQTT.js as a pipelining publisher: connects over TCP to 127.0.0.1:<port> at <protocolVersion>,
// hands it <count> QoS 1 PUBLISHes at once (payloads "0".."count-1"; MQTT.js writes them all
// without waiting for acknowledgements) and prints "acknowledged <n>" once every one was
// acknowledged. Exits non-zero on an error, on the broker closing the connection, or after 60 s.
//
// Usage: node publish_burst.mjs <port> <topic> <protocolVersion 4|5> <count>
import mqtt from "mqtt";

const [port, topic, version, countArg] = process.argv.slice(2);
const count = Number(countArg);
const deadline = setTimeout(() => {
    console.error("not every PUBLISH was acknowledged within 60 s");
    process.exit(2);
}, 60000);

const client = mqtt.connect(`mqtt://127.0.0.1:${port}`, {
    protocolVersion: Number(version),
    reconnectPeriod: 0,
    clientId: `mqttjs-burst-${process.pid}`,
});
let acknowledged = 0;
let finished = false;
client.on("error", (err) => {
    console.error(`error: ${err.message}`);
    process.exit(1);
});
client.on("close", () => {
    if (!finished) {
        console.error(`connection closed after ${acknowledged} acknowledgements`);
        process.exit(1);
    }
});
client.on("connect", () => {
    for (let i = 0; i < count; i++) {
        client.publish(topic, String(i), { qos: 1 }, (err) => {
            if (err) {
                console.error(`publish ${i}: ${err.message}`);
                process.exit(1);
            }
            acknowledged += 1;
            if (acknowledged === count) {
                finished = true;
                clearTimeout(deadline);
                console.log(`acknowledged ${acknowledged}`);
                client.end(false, () => process.exit(0));
            }
        });
    }
});
