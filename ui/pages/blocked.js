// Blocked clients: rules that refuse a CONNECT by client id, user name, IP address or a regular
// expression over one of them, each with an optional expiry.

import {act, formDialog, pagedTable} from '../actions.js';
import {api} from '../api.js';
import {field, formatTime, h} from '../dom.js';

const pageSize = 20;

async function add(reload) {
  const type = h('select', {name: 'type'}, ['CLIENT_ID', 'USERNAME', 'IP_ADDRESS', 'REGEX']
    .map((t) => h('option', {value: t}, t)));
  const value = h('input', {name: 'value', required: true});
  const target = h('select', {name: 'regexMatchTarget'}, ['BY_CLIENT_ID', 'BY_USERNAME', 'BY_IP_ADDRESS']
    .map((t) => h('option', {value: t}, t)));
  const targetField = field('A regular expression matched against', target);
  targetField.hidden = true;
  type.addEventListener('change', () => { targetField.hidden = type.value !== 'REGEX'; });
  const expires = h('input', {name: 'expires', type: 'datetime-local'});
  const description = h('input', {name: 'description'});
  const form = h('div', {class: 'form'}, field('Block by', type), field('Value', value), targetField,
    field('Expires', expires, 'Empty: never.'), field('Description', description));
  const saved = await formDialog('Block a client', form, 'Block', async () => {
    await api('POST', '/api/blockedClient', {body: {
      type: type.value, value: value.value, description: description.value || null,
      expirationTime: expires.value ? new Date(expires.value).getTime() : 0,
      regexMatchTarget: type.value === 'REGEX' ? target.value : null}});
    return `Blocked ${type.value} ${value.value}.`;
  }, 'danger');
  if (saved) reload();
}

export async function render(main) {
  const results = h('div', {});
  const list = pagedTable(results, (page) => api('GET', '/api/blockedClient', {query: {pageSize, page}}), [
    {key: 'type', label: 'By'},
    {key: 'value', label: 'Value', cell: (b) => h('code', {}, b.value)},
    {key: 'regexMatchTarget', label: 'Matched against', cell: (b) => b.regexMatchTarget || '—'},
    {key: 'expirationTime', label: 'Expires', cell: (b) => (b.expirationTime ? formatTime(b.expirationTime) : 'never')},
    {key: 'description', label: 'Description'},
    {key: 'actions', label: '', cell: (b) => h('button', {type: 'button', class: 'small',
      'aria-label': `Unblock ${b.value}`, onclick: () => act({
        confirm: ['Unblock', `Remove the rule ${b.type} ${b.value}?`, 'Unblock'],
        call: () => api('DELETE', '/api/blockedClient', {query: {type: b.type, value: b.value}}),
        done: `Unblocked ${b.value}.`, after: list.load})}, 'Unblock')},
  ]);
  main.append(h('h1', {}, 'Blocked clients'),
    h('div', {class: 'toolbar'}, h('button', {type: 'button', class: 'primary', onclick: () => add(list.load)}, 'Block a client')),
    results);
  await list.load();
}
