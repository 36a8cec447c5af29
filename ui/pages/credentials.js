// MQTT client credentials: the stored rows, a form that creates (or, with the same user name /
// client id / certificate CN, replaces) basic or X.509 credentials with topic rules, deletion,
// and bulk import of a JSON array (POST …/bulk_import).

import {act, formDialog, pagedTable} from '../actions.js';
import {api} from '../api.js';
import {field, formatTime, h} from '../dom.js';

const pageSize = 20;

// "a, b\nc" → ["a", "b", "c"]
function patterns(text) {
  return text.split(/[\n,]/).map((p) => p.trim()).filter(Boolean);
}

function credentialsForm() {
  const input = (name, attrs = {}) => h('input', {name, ...attrs});
  const f = {
    name: input('name', {required: true}),
    clientType: h('select', {name: 'clientType'},
      h('option', {value: 'DEVICE'}, 'Device'), h('option', {value: 'APPLICATION'}, 'Application')),
    credentialsType: h('select', {name: 'credentialsType'},
      h('option', {value: 'MQTT_BASIC'}, 'Basic (user name / client id / password)'),
      h('option', {value: 'X_509'}, 'X.509 certificate')),
    userName: input('userName', {autocomplete: 'off'}),
    clientId: input('clientId', {autocomplete: 'off'}),
    password: input('password', {type: 'password', autocomplete: 'new-password'}),
    certCnPattern: input('certCnPattern'),
    certCnIsRegex: input('certCnIsRegex', {type: 'checkbox'}),
    pub: h('textarea', {name: 'pub', rows: 2, placeholder: 'sensors/.*'}),
    sub: h('textarea', {name: 'sub', rows: 2, placeholder: 'commands/.*'}),
  };
  const basic = h('fieldset', {}, h('legend', {}, 'Basic'),
    field('User name', f.userName), field('Client id', f.clientId),
    field('Password', f.password, 'Hashed (bcrypt) by the server; leave empty for none.'));
  const x509 = h('fieldset', {hidden: true}, h('legend', {}, 'X.509'),
    field('Certificate CN', f.certCnPattern), field('CN is a regular expression', f.certCnIsRegex));
  f.credentialsType.addEventListener('change', () => {
    basic.hidden = f.credentialsType.value !== 'MQTT_BASIC';
    x509.hidden = !basic.hidden;
  });
  const form = h('form', {class: 'form', id: 'credentials-form'},
    field('Name', f.name), field('Client type', f.clientType), field('Kind', f.credentialsType),
    basic, x509,
    field('May publish to (regular expressions)', f.pub, 'One per line; empty: any topic.'),
    field('May subscribe to (regular expressions)', f.sub, 'One per line; empty: any topic.'));
  const body = () => {
    // A direction left empty is left out: the server reads a missing list as "any topic" (an
    // empty list would allow none).
    const authRules = {};
    if (patterns(f.pub.value).length) authRules.pubAuthRulePatterns = patterns(f.pub.value);
    if (patterns(f.sub.value).length) authRules.subAuthRulePatterns = patterns(f.sub.value);
    const value = f.credentialsType.value === 'MQTT_BASIC'
      ? {userName: f.userName.value || null, clientId: f.clientId.value || null,
          password: f.password.value || null, authRules}
      : {certCnPattern: f.certCnPattern.value, certCnIsRegex: f.certCnIsRegex.checked,
          authRulesMapping: {'.*': authRules}};
    return {name: f.name.value, clientType: f.clientType.value,
      credentialsType: f.credentialsType.value, credentialsValue: value};
  };
  return {form, body, first: f.name};
}

async function create(reload) {
  const {form, body, first} = credentialsForm();
  queueMicrotask(() => first.focus());
  const saved = await formDialog('New credentials', form, 'Save', async () => {
    const row = await api('POST', '/api/mqtt/client/credentials', {body: body()});
    return `Saved ${row.credentialsId}.`;
  });
  if (saved) reload();
}

async function bulkImport(reload) {
  const text = h('textarea', {rows: 10,
    placeholder: '[{"name": "…", "credentialsType": "MQTT_BASIC", "credentialsValue": {…}}]'});
  const saved = await formDialog('Import credentials', field('A JSON array of credentials', text), 'Import',
    async () => {
      const result = await api('POST', '/api/mqtt/client/credentials/bulk_import', {body: JSON.parse(text.value)});
      return `Imported: ${JSON.stringify(result)}`;
    });
  if (saved) reload();
}

export async function render(main) {
  const results = h('div', {});
  const list = pagedTable(results, (page) => api('GET', '/api/mqtt/client/credentials', {query: {pageSize, page}}), [
    {key: 'name', label: 'Name'},
    {key: 'credentialsId', label: 'Credentials id', cell: (c) => h('code', {}, c.credentialsId)},
    {key: 'credentialsType', label: 'Kind'},
    {key: 'clientType', label: 'Client type'},
    {key: 'createdTime', label: 'Created', cell: (c) => formatTime(c.createdTime)},
    {key: 'actions', label: '', cell: (c) => h('button', {type: 'button', class: 'danger small',
      'aria-label': `Delete ${c.name}`, onclick: () => act({
        confirm: ['Delete credentials', `Delete ${c.name} (${c.credentialsId})? ` +
          'Clients using them are refused at their next CONNECT.', 'Delete'],
        call: () => api('DELETE', `/api/mqtt/client/credentials/${encodeURIComponent(c.credentialsId)}`),
        done: `Deleted ${c.name}.`, after: list.load})}, 'Delete')},
  ]);
  main.append(h('h1', {}, 'Credentials'),
    h('div', {class: 'toolbar'},
      h('button', {type: 'button', class: 'primary', onclick: () => create(list.load)}, 'New credentials'),
      h('button', {type: 'button', onclick: () => bulkImport(list.load)}, 'Import…')),
    results);
  await list.load();
}
