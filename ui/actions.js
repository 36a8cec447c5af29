// The three shapes every management page repeats: a paged table from the API, a form in a
// dialog that is saved through the API, and an action (often confirmed first) that reports how
// it went.

import {clear, confirmAction, dialog, h, pager, table, toast} from './dom.js';

// A paged list drawn into `into`: fetchPage(page) → TBMQ's PageData; columns as for table();
// tableOptions() → table()'s options at each draw (current sort, row handlers). Returns
// {load, reset}: load() draws the current page, reset() goes back to the first.
export function pagedTable(into, fetchPage, columns, tableOptions = () => ({})) {
  let page = 0;
  const load = async () => {
    let data;
    try {
      data = await fetchPage(page);
    } catch (e) {
      clear(into).append(h('p', {class: 'error'}, e.message));
      return;
    }
    clear(into).append(table(columns, data.data, tableOptions()),
      pager(page, data, (p) => { page = p; load(); }));
  };
  return {load, reset: () => { page = 0; }};
}

// Shows `form` in a dialog until save() succeeds or the user cancels: a refused save shows the
// server's message and opens the dialog again with what was typed. save() may return a message
// to show. Resolves true when saved.
export async function formDialog(title, form, saveLabel, save, saveClass = 'primary') {
  for (;;) {
    const answer = await dialog(title, form,
      [{label: 'Cancel', value: null}, {label: saveLabel, value: 'save', class: saveClass}]);
    if (answer !== 'save') return false;
    try {
      const message = await save();
      if (message) toast(message);
      return true;
    } catch (e) {
      toast(e.message, 'error');
    }
  }
}

// Runs call() — after the user confirms, when `confirm` is [title, message, button label] —
// then shows `done` or the server's refusal, then runs after() (a reload) either way.
export async function act({confirm, call, done, after}) {
  if (confirm && !(await confirmAction(...confirm))) return;
  try {
    await call();
    if (done) toast(done);
  } catch (e) {
    toast(e.message, 'error');
  }
  if (after) after();
}
