// Unauthorized clients: the newest refused CONNECT per client id, with why; delete one or all.

import {act, pagedTable} from '../actions.js';
import {api} from '../api.js';
import {field, formatTime, h} from '../dom.js';

const pageSize = 20;

export async function render(main) {
  const search = h('input', {type: 'search', 'aria-label': 'Search refused clients', placeholder: 'Client id contains…'});
  const results = h('div', {});
  const list = pagedTable(results, (page) => api('GET', '/api/unauthorized/client',
    {query: {pageSize, page, textSearch: search.value}}), [
    {key: 'clientId', label: 'Client id', cell: (u) => h('code', {}, u.clientId)},
    {key: 'username', label: 'User name'},
    {key: 'ipAddress', label: 'Address'},
    {key: 'reason', label: 'Reason'},
    {key: 'flags', label: 'Password / TLS', cell: (u) => `${u.passwordProvided ? 'password' : 'no password'} · ${u.tlsUsed ? 'TLS' : 'plain'}`},
    {key: 'ts', label: 'Refused at', cell: (u) => formatTime(u.ts)},
    {key: 'actions', label: '', cell: (u) => h('button', {type: 'button', class: 'small',
      'aria-label': `Forget ${u.clientId}`, onclick: () => act({
        call: () => api('DELETE', `/api/unauthorized/client/${encodeURIComponent(u.clientId)}`),
        after: list.load})}, 'Forget')},
  ]);
  let debounce = null;
  search.addEventListener('input', () => {
    clearTimeout(debounce);
    debounce = setTimeout(() => { list.reset(); list.load(); }, 250);
  });
  main.append(h('h1', {}, 'Unauthorized clients'),
    h('div', {class: 'toolbar'}, field('Search', search),
      h('button', {type: 'button', class: 'danger', onclick: () => act({
        confirm: ['Forget all', 'Delete every refused-client row?', 'Delete all'],
        call: () => api('DELETE', '/api/unauthorized/client'),
        done: 'Deleted every row.', after: list.load})}, 'Delete all')),
    results);
  await list.load();
}
