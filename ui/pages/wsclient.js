// A debugging MQTT client in the browser, over this broker's WebSocket listener (MQTT.js, compiled
// into starlingd as /ui/vendor/mqtt.esm.js): connect with MQTT 3.1.1 or 5.0, credentials and a
// will; subscribe; publish (with MQTT 5 properties); see messages arrive live with theirs.
// The connection outlives page changes (it belongs to the console tab); Disconnect ends it.

import mqtt from '/ui/vendor/mqtt.esm.js';

import {clear, field, formatTime, h, toast} from '../dom.js';

const maxMessages = 500;
const session = {client: null, status: 'disconnected', messages: [], subscriptions: [], onChange: null};

function changed() {
  if (session.onChange) session.onChange();
}

function defaultUrl() {
  const secure = location.protocol === 'https:';
  return localStorage.getItem('starling.ws.url') ||
    `${secure ? 'wss' : 'ws'}://${location.hostname}:${secure ? 8085 : 8084}/mqtt`;
}

// "a=1\nb=2" → {a: '1', b: '2'} (MQTT.js's user properties).
function userProperties(text) {
  const props = {};
  for (const line of text.split('\n')) {
    const at = line.indexOf('=');
    if (at > 0) props[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  return Object.keys(props).length ? props : undefined;
}

function connect(options) {
  if (session.client) session.client.end(true);
  localStorage.setItem('starling.ws.url', options.url);
  const client = mqtt.connect(options.url, {
    protocolVersion: options.version,
    clientId: options.clientId,
    username: options.username || undefined,
    password: options.password || undefined,
    clean: options.clean,
    keepalive: options.keepalive,
    reconnectPeriod: 0,
    connectTimeout: 10_000,
    will: options.will,
    // Plain timers: MQTT.js's default runs them in a Worker made from a blob: URL, which the
    // console's Content-Security-Policy refuses.
    timerVariant: 'native',
  });
  session.client = client;
  session.status = 'connecting';
  session.subscriptions = [];
  changed();
  client.on('connect', (connack) => {
    session.status = `connected (MQTT ${options.version === 5 ? '5.0' : '3.1.1'}` +
      `${connack.sessionPresent ? ', session present' : ''})`;
    changed();
  });
  client.on('message', (topic, payload, packet) => {
    session.messages.unshift({at: Date.now(), topic, payload: new TextDecoder().decode(payload),
      qos: packet.qos, retain: packet.retain, properties: packet.properties || null});
    session.messages.length = Math.min(session.messages.length, maxMessages);
    changed();
  });
  client.on('error', (e) => {
    session.status = `error: ${e.message}`;
    changed();
  });
  client.on('disconnect', (packet) => {
    session.status = `disconnected by the broker (reason ${packet.reasonCode})`;
    changed();
  });
  client.on('close', () => {
    if (session.client === client && session.status.startsWith('connected')) {
      session.status = 'disconnected';
      changed();
    }
  });
}

function connectionForm() {
  const f = {
    url: h('input', {name: 'url', value: defaultUrl()}),
    clientId: h('input', {name: 'clientId', value: `console-${Math.random().toString(16).slice(2, 10)}`}),
    version: h('select', {name: 'version'}, h('option', {value: '5'}, 'MQTT 5.0'), h('option', {value: '4'}, 'MQTT 3.1.1')),
    username: h('input', {name: 'username', autocomplete: 'off'}),
    password: h('input', {name: 'password', type: 'password', autocomplete: 'off'}),
    clean: h('input', {name: 'clean', type: 'checkbox', checked: true}),
    keepalive: h('input', {name: 'keepalive', type: 'number', min: 0, max: 65535, value: 60}),
    willTopic: h('input', {name: 'willTopic'}),
    willPayload: h('input', {name: 'willPayload'}),
  };
  const form = h('form', {class: 'card form'},
    h('h2', {}, 'Connection'),
    field('Broker URL', f.url, 'This broker\'s WebSocket listener (listener.ws, path /mqtt).'),
    h('div', {class: 'row'}, field('Client id', f.clientId), field('Protocol', f.version)),
    h('div', {class: 'row'}, field('User name', f.username), field('Password', f.password)),
    h('div', {class: 'row'}, field('Keep alive (s)', f.keepalive), field('Clean start', f.clean)),
    h('details', {}, h('summary', {}, 'Will'),
      h('div', {class: 'row'}, field('Will topic', f.willTopic), field('Will payload', f.willPayload))),
    h('div', {class: 'actions'},
      h('button', {type: 'submit', class: 'primary'}, 'Connect'),
      h('button', {type: 'button', onclick: () => {
        if (session.client) session.client.end(false);
        session.client = null;
        session.status = 'disconnected';
        changed();
      }}, 'Disconnect')));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    connect({
      url: f.url.value, clientId: f.clientId.value, version: Number(f.version.value),
      username: f.username.value, password: f.password.value, clean: f.clean.checked,
      keepalive: Number(f.keepalive.value),
      will: f.willTopic.value ? {topic: f.willTopic.value, payload: f.willPayload.value, qos: 0, retain: false} : undefined,
    });
  });
  return form;
}

function subscribeForm(list) {
  const topic = h('input', {name: 'filter', placeholder: 'sensors/#'});
  const qos = h('select', {name: 'subQos'}, [0, 1, 2].map((q) => h('option', {value: q}, `QoS ${q}`)));
  const form = h('form', {class: 'card form'}, h('h2', {}, 'Subscriptions'),
    h('div', {class: 'row'}, field('Topic filter', topic), field('Subscribe QoS', qos)),
    h('div', {class: 'actions'}, h('button', {type: 'submit'}, 'Subscribe')), list);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    if (!session.client) return toast('Connect first.', 'error');
    const filter = topic.value;
    session.client.subscribe(filter, {qos: Number(qos.value)}, (err, granted) => {
      if (err) return toast(err.message, 'error');
      const code = granted && granted[0] ? granted[0].qos : '?';
      if (typeof code === 'number' && code >= 0x80) return toast(`Subscription to ${filter} refused (0x${code.toString(16)}).`, 'error');
      session.subscriptions.push({filter, qos: code});
      toast(`Subscribed to ${filter}.`);
      changed();
    });
  });
  return form;
}

function publishForm() {
  const f = {
    topic: h('input', {name: 'topic'}),
    payload: h('textarea', {name: 'payload', rows: 3}),
    qos: h('select', {name: 'pubQos'}, [0, 1, 2].map((q) => h('option', {value: q}, `QoS ${q}`))),
    retain: h('input', {name: 'retain', type: 'checkbox'}),
    contentType: h('input', {name: 'contentType', placeholder: 'application/json'}),
    props: h('textarea', {name: 'props', rows: 2, placeholder: 'key=value'}),
  };
  const form = h('form', {class: 'card form'}, h('h2', {}, 'Publish'),
    field('Topic', f.topic), field('Payload', f.payload),
    h('div', {class: 'row'}, field('Publish QoS', f.qos), field('Retain', f.retain)),
    h('details', {}, h('summary', {}, 'MQTT 5 properties'),
      field('Content type', f.contentType), field('User properties (one key=value a line)', f.props)),
    h('div', {class: 'actions'}, h('button', {type: 'submit', class: 'primary'}, 'Publish')));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    if (!session.client) return toast('Connect first.', 'error');
    const properties = {};
    if (f.contentType.value) properties.contentType = f.contentType.value;
    const user = userProperties(f.props.value);
    if (user) properties.userProperties = user;
    session.client.publish(f.topic.value, f.payload.value,
      {qos: Number(f.qos.value), retain: f.retain.checked,
        properties: Object.keys(properties).length ? properties : undefined},
      (err) => (err ? toast(err.message, 'error') : toast(`Published to ${f.topic.value}.`)));
  });
  return form;
}

function messagesView() {
  if (!session.messages.length) return h('p', {class: 'muted'}, 'No message yet.');
  return h('ol', {class: 'messages'}, session.messages.map((m) => h('li', {class: 'message'},
    h('div', {class: 'message-head'}, h('code', {}, m.topic),
      h('span', {class: 'muted'}, ` QoS ${m.qos}${m.retain ? ' · retained' : ''} · ${formatTime(m.at)}`)),
    h('pre', {class: 'payload'}, m.payload),
    m.properties && Object.keys(m.properties).length
      ? h('pre', {class: 'properties muted'}, JSON.stringify(m.properties)) : null)));
}

export function render(main) {
  const status = h('p', {class: 'status', role: 'status'});
  const subscriptions = h('ul', {class: 'subscriptions'});
  const messages = h('div', {});
  const refresh = () => {
    status.textContent = `Status: ${session.status}`;
    clear(subscriptions).append(...session.subscriptions.map((s) => h('li', {},
      h('code', {}, s.filter), ` (QoS ${s.qos}) `,
      h('button', {type: 'button', class: 'small', onclick: () => {
        session.client?.unsubscribe(s.filter);
        session.subscriptions = session.subscriptions.filter((x) => x !== s);
        changed();
      }}, 'Unsubscribe'))));
    clear(messages).append(messagesView());
  };
  session.onChange = refresh;
  main.append(h('h1', {}, 'WebSocket client'), status,
    h('div', {class: 'columns'}, connectionForm(), h('div', {}, subscribeForm(subscriptions), publishForm())),
    h('section', {class: 'card'}, h('h2', {}, 'Messages'),
      h('button', {type: 'button', class: 'small', onclick: () => { session.messages = []; changed(); }}, 'Clear'),
      messages));
  refresh();
  return () => { session.onChange = null; };
}
