// Retained messages: browse by topic filter, view a payload as text, pretty-printed JSON or
// hex, delete one.

import {act, pagedTable} from '../actions.js';
import {api} from '../api.js';
import {dialog, field, formatTime, h, table} from '../dom.js';

const pageSize = 20;

function hexOf(text) {
  const bytes = new TextEncoder().encode(text);
  const lines = [];
  for (let i = 0; i < bytes.length; i += 16) {
    const row = [...bytes.slice(i, i + 16)];
    lines.push(`${i.toString(16).padStart(6, '0')}  ${row.map((b) => b.toString(16).padStart(2, '0')).join(' ')}`);
  }
  return lines.join('\n');
}

function prettyJson(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return null;
  }
}

function payloadView(m) {
  const json = prettyJson(m.payload);
  const views = [['Text', m.payload], ['JSON', json], ['Hex', hexOf(m.payload)]].filter(([, v]) => v !== null);
  const out = h('pre', {class: 'payload'}, views[0][1]);
  const tabs = h('div', {class: 'tabs', role: 'tablist'}, views.map(([label, text], i) =>
    h('button', {type: 'button', role: 'tab', 'aria-selected': i === 0 ? 'true' : 'false',
      onclick: (e) => {
        out.textContent = text;
        for (const b of tabs.children) b.setAttribute('aria-selected', b === e.currentTarget ? 'true' : 'false');
      }}, label)));
  const props = m.userProperties ? m.userProperties.props : [];
  return h('div', {},
    h('p', {class: 'muted'}, `QoS ${m.qos} · retained at ${formatTime(m.createdTime)}`),
    tabs, out,
    props.length ? h('div', {}, h('h3', {}, 'User properties'),
      table([{key: 'key', label: 'Key'}, {key: 'value', label: 'Value'}], props)) : null);
}

export async function render(main, params) {
  const filter = h('input', {type: 'search', 'aria-label': 'Topic filter',
    value: params.get('filter') || '#'});
  const results = h('div', {});
  const remove = (topic) => act({
    confirm: ['Delete retained message',
      `Delete the message retained on ${topic}? New subscribers no longer get it.`, 'Delete'],
    call: () => api('DELETE', '/api/retained-msg', {query: {topicName: topic}}),
    done: `Deleted the message retained on ${topic}.`, after: list.load});
  const show = async (m) => {
    const action = await dialog(m.topic, payloadView(m), [
      {label: 'Delete', value: 'delete', class: 'danger'}, {label: 'Close', value: null}]);
    if (action === 'delete') remove(m.topic);
  };
  const list = pagedTable(results, (page) => api('GET', '/api/retained-msg',
    {query: {pageSize, page, topicFilter: filter.value || '#'}}), [
    {key: 'topic', label: 'Topic', cell: (m) => h('code', {}, m.topic)},
    {key: 'qos', label: 'QoS'},
    {key: 'payload', label: 'Payload', cell: (m) => (m.payload.length > 60 ? `${m.payload.slice(0, 60)}…` : m.payload)},
    {key: 'createdTime', label: 'Retained at', cell: (m) => formatTime(m.createdTime)},
    {key: 'actions', label: '', cell: (m) => h('button', {type: 'button', class: 'danger small',
      'aria-label': `Delete ${m.topic}`, onclick: () => remove(m.topic)}, 'Delete')},
  ], () => ({onRow: show, rowLabel: (m) => `Retained message on ${m.topic}`}));
  const form = h('form', {class: 'toolbar'}, field('Topic filter', filter),
    h('button', {type: 'submit'}, 'Show'));
  form.addEventListener('submit', (e) => { e.preventDefault(); list.reset(); list.load(); });
  main.append(h('h1', {}, 'Retained messages'), form, results);
  await list.load();
}
