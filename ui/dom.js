// Small DOM helpers. Every page builds its elements with h(): text is always set as text, never
// parsed as HTML, so a client id or a payload can not inject markup (and the server's
// Content-Security-Policy forbids inline scripts anyway).

// h('button', {class: 'primary', onclick: fn}, 'Save') → <button class="primary">Save</button>
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith('on') && typeof value === 'function') {
      el.addEventListener(key.slice(2), value);
    } else if (key === 'class') {
      el.className = value;
    } else if (key === 'value') {
      el.value = value;
    } else if (key === 'dataset') {
      Object.assign(el.dataset, value);
    } else {
      el.setAttribute(key, value === true ? '' : String(value));
    }
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

export function clear(el) {
  el.replaceChildren();
  return el;
}

export function formatTime(ms) {
  return ms ? new Date(ms).toLocaleString() : '—';
}

export function formatCount(n) {
  return typeof n === 'number' ? n.toLocaleString() : '—';
}

// A short message at the corner of the page; errors stay until clicked.
export function toast(message, kind = 'info') {
  const box = document.getElementById('toasts');
  const item = h('div', {class: `toast ${kind}`, onclick: () => item.remove()}, message);
  box.append(item);
  if (kind !== 'error') setTimeout(() => item.remove(), 4000);
}

// A modal dialog (the native <dialog>: focus is trapped, Escape closes it). Resolves with the
// value of the button pressed, or null when dismissed.
export function dialog(title, body, buttons = [{label: 'Close', value: null}]) {
  return new Promise((resolve) => {
    const actions = buttons.map((b) =>
      h('button', {type: 'button', class: b.class || '', onclick: () => close(b.value)}, b.label));
    const box = h('dialog', {class: 'modal', 'aria-label': title},
      h('h2', {}, title), body, h('div', {class: 'actions'}, actions));
    let done = false;
    const close = (value) => {
      if (done) return;
      done = true;
      box.close();
      box.remove();
      resolve(value);
    };
    box.addEventListener('cancel', () => close(null));
    document.body.append(box);
    box.showModal();
  });
}

export async function confirmAction(title, message, label) {
  const answer = await dialog(title, h('p', {}, message), [
    {label: 'Cancel', value: false},
    {label, value: true, class: 'danger'},
  ]);
  return answer === true;
}

// A table whose headers may sort: columns are {key, label, sortable, cell(row) → node|text}.
export function table(columns, rows, {sort, onSort, onRow, rowLabel} = {}) {
  // Explicit roles: the phone layout restyles rows and cells as blocks, which would otherwise
  // drop their table semantics for screen readers.
  const head = h('tr', {role: 'row'}, columns.map((c) => {
    if (!c.sortable || !onSort) return h('th', {scope: 'col', role: 'columnheader'}, c.label);
    const active = sort && sort.property === c.key;
    const order = active ? (sort.order === 'ASC' ? 'ascending' : 'descending') : 'none';
    return h('th', {scope: 'col', role: 'columnheader', 'aria-sort': order},
      h('button', {type: 'button', class: 'sort', onclick: () => onSort(c.key)},
        c.label, active ? (sort.order === 'ASC' ? ' ▲' : ' ▼') : ''));
  }));
  const body = rows.length
    ? rows.map((row) => {
        const tr = h('tr', {role: 'row'}, columns.map((c) => h('td', {role: 'cell', 'data-label': c.label},
          c.cell ? c.cell(row) : row[c.key])));
        if (onRow) {
          tr.classList.add('clickable');
          tr.tabIndex = 0;
          if (rowLabel) tr.setAttribute('aria-label', rowLabel(row));
          tr.addEventListener('click', (e) => { if (!e.target.closest('button')) onRow(row); });
          tr.addEventListener('keydown', (e) => { if (e.key === 'Enter') onRow(row); });
        }
        return tr;
      })
    : [h('tr', {role: 'row'}, h('td', {role: 'cell', colspan: columns.length, class: 'empty'}, 'Nothing here.'))];
  return h('div', {class: 'table-wrap'}, h('table', {role: 'table'}, h('thead', {role: 'rowgroup'}, head),
    h('tbody', {role: 'rowgroup'}, body)));
}

// Page n of a PageData answer, with previous / next.
export function pager(page, data, go) {
  return h('div', {class: 'pager'},
    h('button', {type: 'button', disabled: page === 0, onclick: () => go(page - 1)}, '‹ Previous'),
    h('span', {class: 'muted'},
      `Page ${page + 1} of ${Math.max(1, data.totalPages)} · ${formatCount(data.totalElements)} in all`),
    h('button', {type: 'button', disabled: !data.hasNext, onclick: () => go(page + 1)}, 'Next ›'));
}

// A labelled form field: the label names the control exactly, the hint describes it.
let fieldIds = 0;
export function field(label, input, hint) {
  if (!input.id) input.id = `field-${++fieldIds}`;
  const note = hint ? h('small', {class: 'muted', id: `${input.id}-hint`}, hint) : null;
  if (note) input.setAttribute('aria-describedby', note.id);
  return h('div', {class: 'field'}, h('label', {for: input.id}, label), input, note);
}
