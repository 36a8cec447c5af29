// APPLICATION shared subscriptions: the definitions that give msg.app.shared.<filter> its
// partition count; create, delete.

import {act, formDialog, pagedTable} from '../actions.js';
import {api} from '../api.js';
import {field, formatTime, h} from '../dom.js';

const pageSize = 20;

async function create(reload) {
  const topic = h('input', {name: 'topic', required: true, placeholder: 'factory/+/telemetry'});
  const partitions = h('input', {name: 'partitions', type: 'number', min: 1, max: 10000, value: 1});
  const name = h('input', {name: 'name'});
  const form = h('div', {class: 'form'}, field('Topic filter', topic, 'Not the $share/<group>/ form.'),
    field('Partitions', partitions), field('Name', name));
  const saved = await formDialog('New shared subscription', form, 'Save', async () => {
    await api('POST', '/api/app/shared/subs', {body: {topic: topic.value,
      partitions: Number(partitions.value), name: name.value || null}});
    return `Saved ${topic.value}.`;
  });
  if (saved) reload();
}

export async function render(main) {
  const results = h('div', {});
  const list = pagedTable(results, (page) => api('GET', '/api/app/shared/subs', {query: {pageSize, page}}), [
    {key: 'name', label: 'Name'},
    {key: 'topic', label: 'Topic filter', cell: (s) => h('code', {}, s.topic)},
    {key: 'partitions', label: 'Partitions'},
    {key: 'createdTime', label: 'Created', cell: (s) => formatTime(s.createdTime)},
    {key: 'actions', label: '', cell: (s) => h('button', {type: 'button', class: 'danger small',
      'aria-label': `Delete ${s.topic}`, onclick: () => act({
        confirm: ['Delete shared subscription', `Delete the definition of ${s.topic}?`, 'Delete'],
        call: () => api('DELETE', `/api/app/shared/subs/${encodeURIComponent(s.id)}`),
        done: `Deleted ${s.topic}.`, after: list.load})}, 'Delete')},
  ]);
  main.append(h('h1', {}, 'Shared subscriptions'),
    h('div', {class: 'toolbar'}, h('button', {type: 'button', class: 'primary', onclick: () => create(list.load)}, 'New shared subscription')),
    results);
  await list.load();
}
