// Client sessions: a searchable, sortable, paged table of the cluster's sessions; a row opens
// its details (subscriptions, in-flight and queued counts, address, protocol, node) with
// Disconnect (connected) and Remove (offline) actions.

import {act, formDialog, pagedTable} from '../actions.js';
import {api} from '../api.js';
import {dialog, field, formatCount, formatTime, h, table, toast} from '../dom.js';

const pageSize = 20;

const columns = [
  {key: 'clientId', label: 'Client id', sortable: true},
  {key: 'connectionState', label: 'State', sortable: true,
    cell: (s) => h('span', {class: `badge ${s.connectionState}`}, s.connectionState)},
  {key: 'clientType', label: 'Type', sortable: true},
  {key: 'nodeId', label: 'Node', sortable: true},
  {key: 'clientIpAdr', label: 'Address', sortable: true},
  {key: 'subscriptionsCount', label: 'Subscriptions', sortable: true},
  {key: 'connectedAt', label: 'Connected at', sortable: true, cell: (s) => formatTime(s.connectedAt)},
];

function detailsView(d) {
  const row = (label, value) => [h('dt', {}, label), h('dd', {}, value)];
  return h('div', {class: 'details'},
    h('dl', {},
      row('State', d.connectionState),
      row('Type', d.clientType),
      row('Protocol', d.mqttVersion ? `MQTT ${d.mqttVersion}` : '—'),
      row('Node', d.nodeId || '—'),
      row('Address', d.clientIpAdr || '—'),
      row('Persistent', d.persistent ? `yes (expiry ${d.sessionExpiryInterval} s)` : 'no'),
      row('Connected at', formatTime(d.connectedAt)),
      row('Disconnected at', formatTime(d.disconnectedAt)),
      row('In flight', d.inFlight === null ? 'held by another node' : formatCount(d.inFlight)),
      row('Queued', d.queued === null ? 'held by another node' : formatCount(d.queued))),
    h('h3', {}, `Subscriptions (${d.subscriptions.length})`),
    table([
      {key: 'topicFilter', label: 'Topic filter'},
      {key: 'qos', label: 'QoS'},
      {key: 'options', label: 'Options', cell: (s) => [
        s.options.noLocal ? 'no local · ' : '', s.options.retainAsPublish ? 'retain as published · ' : '',
        `retain handling ${s.options.retainHandling}`]},
      {key: 'subscriptionId', label: 'Id', cell: (s) => s.subscriptionId ?? '—'},
    ], d.subscriptions));
}

const qosNames = {AT_MOST_ONCE: 0, AT_LEAST_ONCE: 1, EXACTLY_ONCE: 2};

// The subscriptions as text, one "<filter> <qos>" a line; a filter kept keeps its options and
// subscription id. Saving replaces the whole set (POST /api/subscription); the client is told
// nothing.
async function editSubscriptions(d) {
  const text = h('textarea', {rows: 8, 'aria-label': 'Subscriptions, one "topic-filter qos" a line',
    value: d.subscriptions.map((s) => `${s.topicFilter} ${qosNames[s.qos]}`).join('\n')});
  const form = h('div', {}, field('One "topic-filter qos" a line (QoS 0, 1 or 2)', text));
  await formDialog(`Subscriptions of ${d.clientId}`, form, 'Save', async () => {
    const subscriptions = text.value.split('\n').map((l) => l.trim()).filter(Boolean).map((line) => {
      // The QoS is the last word; a filter may hold spaces.
      const m = line.match(/^(.*\S)\s+([012])$/);
      const [topicFilter, qos] = m ? [m[1], m[2]] : [line, '0'];
      const before = d.subscriptions.find((s) => s.topicFilter === topicFilter);
      return {topicFilter, qos: Number(qos), options: before ? before.options : null,
        subscriptionId: before ? before.subscriptionId : null};
    });
    await api('POST', '/api/subscription', {body: {clientId: d.clientId, subscriptions}});
    return `Subscriptions of ${d.clientId} saved.`;
  });
}

export async function render(main, params) {
  const state = {
    textSearch: params.get('q') || '',
    connectionState: params.get('state') || '',
    sort: {property: 'clientId', order: 'ASC'},
  };
  const search = h('input', {type: 'search', placeholder: 'Client id contains…',
    'aria-label': 'Search by client id', value: state.textSearch});
  const stateFilter = h('select', {'aria-label': 'Connection state'},
    h('option', {value: ''}, 'Any state'),
    h('option', {value: 'CONNECTED'}, 'Connected'),
    h('option', {value: 'DISCONNECTED'}, 'Disconnected'));
  stateFilter.value = state.connectionState;
  const results = h('div', {});
  main.append(h('h1', {}, 'Sessions'),
    h('div', {class: 'toolbar'}, field('Search', search), field('State', stateFilter)), results);

  const list = pagedTable(results, (page) => api('GET', '/api/client-session', {query: {
    pageSize, page, textSearch: state.textSearch, connectionState: state.connectionState,
    sortProperty: state.sort.property, sortOrder: state.sort.order}}), columns, () => ({
    sort: state.sort,
    onSort: (key) => {
      state.sort = {property: key,
        order: state.sort.property === key && state.sort.order === 'ASC' ? 'DESC' : 'ASC'};
      list.load();
    },
    onRow: (s) => openDetails(s.clientId),
    rowLabel: (s) => `Session ${s.clientId}`,
  }));
  const load = list.load;

  const openDetails = async (clientId) => {
    let d;
    try {
      d = await api('GET', '/api/client-session/details', {query: {clientId}});
    } catch (e) {
      toast(e.message, 'error');
      return;
    }
    const buttons = [{label: 'Edit subscriptions', value: 'edit'}, {label: 'Close', value: null}];
    if (d.connectionState === 'CONNECTED') buttons.unshift({label: 'Disconnect', value: 'disconnect', class: 'danger'});
    else buttons.unshift({label: 'Remove session', value: 'remove', class: 'danger'});
    const action = await dialog(`Session ${clientId}`, detailsView(d), buttons);
    if (!action) return;
    if (action === 'edit') {
      await editSubscriptions(d);
      load();
      return;
    }
    const verb = action === 'disconnect' ? 'Disconnect' : 'Remove';
    const what = action === 'disconnect'
      ? `Disconnect ${clientId}? Its will is published; a persistent session stays.`
      : `Remove the session of ${clientId}? Its subscriptions and queued messages are deleted.`;
    await act({
      confirm: [`${verb} ${clientId}`, what, verb],
      call: () => api('DELETE', `/api/client-session/${action}`, {query: {clientId, sessionId: d.sessionId}}),
      done: action === 'disconnect' ? `${clientId} disconnected.` : `Session of ${clientId} removed.`,
      after: load});
  };

  let debounce = null;
  search.addEventListener('input', () => {
    clearTimeout(debounce);
    debounce = setTimeout(() => { state.textSearch = search.value; list.reset(); load(); }, 250);
  });
  stateFilter.addEventListener('change', () => {
    state.connectionState = stateFilter.value;
    list.reset();
    load();
  });
  await load();
  const timer = setInterval(load, 10000);
  return () => clearInterval(timer);
}
