// Log in with an admin user's name and password (POST /api/auth/login), then go where the user
// was heading.

import {login} from '../api.js';
import {field, h} from '../dom.js';

export function render(main, params) {
  const username = h('input', {name: 'username', autocomplete: 'username', required: true});
  const password = h('input', {name: 'password', type: 'password',
    autocomplete: 'current-password', required: true});
  const error = h('p', {class: 'error', role: 'alert'});
  const submit = h('button', {type: 'submit', class: 'primary'}, 'Log in');
  const form = h('form', {class: 'card login'},
    h('h1', {}, 'Starling'),
    h('p', {class: 'muted'}, 'Log in with an admin user.'),
    field('User name', username), field('Password', password), error, submit);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    error.textContent = '';
    submit.disabled = true;
    try {
      await login(username.value, password.value);
      const next = params.get('next');
      location.hash = `#${next && next !== '/login' ? next : '/'}`;
    } catch (err) {
      error.textContent = err.status === 401 ? 'Wrong user name or password.' : err.message;
    } finally {
      submit.disabled = false;
    }
  });
  main.append(form);
  username.focus();
}
