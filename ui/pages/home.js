// The cluster at a glance: nodes and their health, sessions, retained messages, credentials,
// message rates of the last hours (the stats series) and the top drop reasons of the last
// minutes. Refreshed every 5 seconds while shown.

import {api} from '../api.js';
import {legend, lineChart} from '../chart.js';
import {clear, formatCount, formatTime, h, table} from '../dom.js';

const rateKeys = [
  {key: 'incomingMsgs', label: 'In (PUBLISH received / min)'},
  {key: 'outgoingMsgs', label: 'Out (PUBLISH sent / min)'},
  {key: 'droppedMsgs', label: 'Dropped / min'},
];

async function count(path, query = {}) {
  const page = await api('GET', path, {query: {pageSize: 1, ...query}});
  return page.totalElements;
}

function tile(label, value, href) {
  return h('a', {class: 'tile', href}, h('span', {class: 'tile-value'}, formatCount(value)),
    h('span', {class: 'tile-label'}, label));
}

async function load() {
  const now = Date.now();
  const settled = await Promise.allSettled([
    api('GET', '/api/app/cluster-info'),
    count('/api/client-session'),
    count('/api/retained-msg'),
    count('/api/mqtt/client/credentials'),
    api('GET', '/api/drops'),
    api('GET', '/api/timeseries/total/values', {query: {
      keys: rateKeys.map((k) => k.key).join(','), startTs: now - 3 * 3600_000, endTs: now,
      limit: 1000}}),
  ]);
  const [cluster, sessions, retained, credentials, drops, series] =
    settled.map((r) => (r.status === 'fulfilled' ? r.value : null));
  const failed = settled.find((r) => r.status === 'rejected');
  return {cluster, sessions, retained, credentials, drops, series,
    error: failed ? failed.reason.message : null};
}

function view(data) {
  const nodes = data.cluster ? data.cluster.nodes : [];
  const reasons = data.drops ? Object.entries(data.drops.totals).sort((a, b) => b[1] - a[1]) : [];
  const rateSeries = rateKeys.map((k, i) => ({label: k.label, className: `series-${i}`,
    points: (data.series && data.series[k.key]) || []}));
  return [
    h('h1', {}, 'Cluster'),
    data.error ? h('p', {class: 'error'}, data.error) : null,
    h('div', {class: 'tiles'},
      tile('Connected clients', data.cluster ? data.cluster.totalSessions : null, '#/sessions?state=CONNECTED'),
      tile('Sessions', data.sessions, '#/sessions'),
      tile('Retained messages', data.retained, '#/retained'),
      tile('Credentials', data.credentials, '#/credentials'),
      tile('Drops (last minutes)', data.drops ? data.drops.total : null, '#/monitoring'),
    ),
    h('section', {class: 'card'},
      h('h2', {}, 'Nodes'),
      table([
        {key: 'nodeId', label: 'Node', cell: (n) => [n.nodeId, n.self ? ' (this one)' : '']},
        {key: 'health', label: 'Health', cell: (n) => h('span', {class: `badge ${n.health}`}, n.health)},
        {key: 'sessions', label: 'Connected', cell: (n) => formatCount(n.sessions)},
        {key: 'version', label: 'Version'},
        {key: 'startedAt', label: 'Started', cell: (n) => formatTime(n.startedAt)},
        {key: 'lastSeen', label: 'Last heartbeat', cell: (n) => formatTime(n.lastSeen)},
      ], nodes)),
    h('section', {class: 'card'},
      h('h2', {}, 'Messages, last 3 hours'),
      lineChart(rateSeries, {title: 'Messages per minute, last 3 hours'}), legend(rateSeries)),
    h('section', {class: 'card'},
      h('h2', {}, 'Top drop reasons (last minutes, this node)'),
      reasons.length
        ? h('ol', {class: 'reasons'}, reasons.slice(0, 5).map(([reason, n]) =>
            h('li', {}, h('code', {}, reason), ` — ${formatCount(n)}`)))
        : h('p', {class: 'muted'}, 'No message was dropped.')),
  ];
}

export async function render(main) {
  const body = h('div', {class: 'home'});
  main.append(body);
  let stopped = false;
  const refresh = async () => {
    const data = await load();
    if (!stopped) clear(body).append(...view(data).filter(Boolean));
  };
  await refresh();
  const timer = setInterval(refresh, 5000);
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}
