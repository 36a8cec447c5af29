// MQTT client credentials: the stored rows; a form that creates basic or X.509 credentials with
// topic rules, or edits stored ones (name, client type, password, rules — who they are for, the
// credentials id, stays: delete and create to change it); deletion; bulk import of a JSON array
// (POST …/bulk_import).

import {act, formDialog, pagedTable} from '../actions.js';
import {api} from '../api.js';
import {field, formatTime, h} from '../dom.js';

const pageSize = 20;

// One pattern a line (a regular expression may hold commas).
function patterns(text) {
  return text.split('\n').map((p) => p.trim()).filter(Boolean);
}

// A stored rule list as text; "any topic" ([".*"] or none) as an empty box.
function patternText(list) {
  return !list || (list.length === 1 && list[0] === '.*') ? '' : list.join('\n');
}

// The form for new credentials, or for `stored` (a row as the API lists it).
function credentialsForm(stored = null) {
  const v = stored ? stored.credentialsValue || {} : {};
  const rules = v.authRules || (v.authRulesMapping && Object.values(v.authRulesMapping)[0]) || {};
  const input = (name, attrs = {}) => h('input', {name, ...attrs});
  const identity = {readonly: !!stored};  // the credentials id is made of these
  const f = {
    name: input('name', {required: true, value: stored ? stored.name : ''}),
    clientType: h('select', {name: 'clientType'},
      h('option', {value: 'DEVICE'}, 'Device'), h('option', {value: 'APPLICATION'}, 'Application')),
    credentialsType: h('select', {name: 'credentialsType', disabled: !!stored},
      h('option', {value: 'MQTT_BASIC'}, 'Basic (user name / client id / password)'),
      h('option', {value: 'X_509'}, 'X.509 certificate')),
    userName: input('userName', {autocomplete: 'off', value: v.userName || '', ...identity}),
    clientId: input('clientId', {autocomplete: 'off', value: v.clientId || '', ...identity}),
    password: input('password', {type: 'password', autocomplete: 'new-password'}),
    certCnPattern: input('certCnPattern', {value: v.certCnPattern || '', ...identity}),
    certCnIsRegex: input('certCnIsRegex', {type: 'checkbox', checked: !!v.certCnIsRegex}),
    pub: h('textarea', {name: 'pub', rows: 2, placeholder: 'sensors/.*', value: patternText(rules.pubAuthRulePatterns)}),
    sub: h('textarea', {name: 'sub', rows: 2, placeholder: 'commands/.*', value: patternText(rules.subAuthRulePatterns)}),
  };
  if (stored) {
    f.clientType.value = stored.clientType;
    f.credentialsType.value = stored.credentialsType;
  }
  const keepsPassword = stored && v.password === '***';
  const basic = h('fieldset', {}, h('legend', {}, 'Basic'),
    field('User name', f.userName), field('Client id', f.clientId),
    field('Password', f.password, keepsPassword
      ? 'Leave empty to keep the current password.'
      : 'Hashed (bcrypt) by the server; leave empty for none.'));
  const x509 = h('fieldset', {}, h('legend', {}, 'X.509'),
    field('Certificate CN', f.certCnPattern), field('CN is a regular expression', f.certCnIsRegex));
  const showKind = () => {
    basic.hidden = f.credentialsType.value !== 'MQTT_BASIC';
    x509.hidden = !basic.hidden;
  };
  f.credentialsType.addEventListener('change', showKind);
  showKind();
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
    // "***" (what the API shows for a stored password) asks the server to keep it.
    const password = f.password.value || (keepsPassword ? '***' : null);
    const value = f.credentialsType.value === 'MQTT_BASIC'
      ? {userName: f.userName.value || null, clientId: f.clientId.value || null, password, authRules}
      : {certCnPattern: f.certCnPattern.value, certCnIsRegex: f.certCnIsRegex.checked, authRules};
    if (v.clientIdPattern) value.clientIdPattern = v.clientIdPattern;  // not in the form: kept
    return {name: f.name.value, clientType: f.clientType.value,
      credentialsType: f.credentialsType.value, credentialsValue: value};
  };
  return {form, body, first: f.name};
}

// New credentials, or `stored` edited; reload() after a save.
async function edit(reload, stored = null) {
  const {form, body, first} = credentialsForm(stored);
  queueMicrotask(() => first.focus());
  const title = stored ? `Edit ${stored.name}` : 'New credentials';
  const saved = await formDialog(title, form, 'Save', async () => {
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
    {key: 'actions', label: '', cell: (c) => [h('button', {type: 'button', class: 'small',
      'aria-label': `Edit ${c.name}`, onclick: () => edit(list.load, c)}, 'Edit'), ' ',
    h('button', {type: 'button', class: 'danger small',
      'aria-label': `Delete ${c.name}`, onclick: () => act({
        confirm: ['Delete credentials', `Delete ${c.name} (${c.credentialsId})? ` +
          'Clients using them are refused at their next CONNECT.', 'Delete'],
        call: () => api('DELETE', `/api/mqtt/client/credentials/${encodeURIComponent(c.credentialsId)}`),
        done: `Deleted ${c.name}.`, after: list.load})}, 'Delete')]},
  ]);
  main.append(h('h1', {}, 'Credentials'),
    h('div', {class: 'toolbar'},
      h('button', {type: 'button', class: 'primary', onclick: () => edit(list.load)}, 'New credentials'),
      h('button', {type: 'button', onclick: () => bulkImport(list.load)}, 'Import…')),
    results);
  await list.load();
}
