// The console's shell: the hash router (#/sessions, …), the navigation bar, the theme and the
// login state. Each page is a module exporting render(container, params) that may return a
// function to call when the page is left (to stop its timers).

import {api, loggedIn, logout, onSessionChange} from './api.js';
import {clear, h, toast} from './dom.js';

// Pages load on first use: the WebSocket client brings MQTT.js (340 kB), which the other pages
// do not need.
const pages = [
  {path: '/', title: 'Home', load: () => import('./pages/home.js')},
  {path: '/sessions', title: 'Sessions', load: () => import('./pages/sessions.js')},
  {path: '/credentials', title: 'Credentials', load: () => import('./pages/credentials.js')},
  {path: '/retained', title: 'Retained messages', load: () => import('./pages/retained.js')},
  {path: '/shared', title: 'Shared subscriptions', load: () => import('./pages/shared.js')},
  {path: '/blocked', title: 'Blocked clients', load: () => import('./pages/blocked.js')},
  {path: '/unauthorized', title: 'Unauthorized clients', load: () => import('./pages/unauthorized.js')},
  {path: '/monitoring', title: 'Monitoring', load: () => import('./pages/monitoring.js')},
  {path: '/ws-client', title: 'WebSocket client', load: () => import('./pages/wsclient.js')},
];
const loginPage = {path: '/login', title: 'Log in', load: () => import('./pages/login.js')};

let leave = null;
let generation = 0;  // of route(): a page that loads after a newer route() is not shown

function currentPath() {
  const hash = location.hash.replace(/^#/, '') || '/';
  const [path, query = ''] = hash.split('?');
  return {path, params: new URLSearchParams(query)};
}

function renderNav(active) {
  const nav = clear(document.getElementById('nav'));
  if (!loggedIn()) return;
  nav.append(h('ul', {}, pages.map((p) => h('li', {},
    h('a', {href: `#${p.path}`, 'aria-current': p.path === active ? 'page' : false}, p.title)))));
}

async function showUser() {
  const user = document.getElementById('user');
  user.textContent = '';
  if (!loggedIn()) return;
  try {
    const me = await api('GET', '/api/auth/user');
    user.textContent = me.username || (me.serviceAccount ? 'service account' : '');
  } catch {
    // the page itself reports errors
  }
}

async function route() {
  const mine = ++generation;
  if (leave) {
    leave();
    leave = null;
  }
  const {path, params} = currentPath();
  document.getElementById('logout').hidden = !loggedIn();
  const main = clear(document.getElementById('main'));
  if (!loggedIn() && path !== '/login') {
    location.hash = `#/login?next=${encodeURIComponent(path)}`;
    return;
  }
  const entry = path === '/login' ? loginPage : pages.find((p) => p.path === path);
  renderNav(path);
  if (!entry) {
    main.append(h('h1', {}, 'Not found'), h('p', {}, h('a', {href: '#/'}, 'Home')));
    return;
  }
  document.title = `${entry.title} · Starling`;
  try {
    const page = await entry.load();
    if (mine !== generation) return;  // the user moved on while it loaded
    const cleanup = (await page.render(main, params)) || null;
    if (mine === generation) leave = cleanup;
    else if (cleanup) cleanup();  // left while it rendered: stop its timers now
  } catch (e) {
    main.append(h('p', {class: 'error'}, e.message));
  }
  // Keyboard and screen-reader users start at the new page, unless it focused a field itself.
  if (!main.contains(document.activeElement)) main.focus({preventScroll: true});
}

// Theme: the system's, or light / dark chosen here and remembered.
const themes = ['system', 'light', 'dark'];
function applyTheme(theme) {
  if (theme === 'system') delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = theme;
  document.getElementById('theme').textContent = `Theme: ${theme}`;
}

function start() {
  let theme = localStorage.getItem('starling.theme') || 'system';
  applyTheme(theme);
  document.getElementById('theme').addEventListener('click', () => {
    theme = themes[(themes.indexOf(theme) + 1) % themes.length];
    localStorage.setItem('starling.theme', theme);
    applyTheme(theme);
  });
  document.getElementById('logout').addEventListener('click', () => {
    logout();
    toast('Logged out.');
  });
  onSessionChange((isIn) => {
    showUser();
    if (!isIn) route();
  });
  window.addEventListener('hashchange', route);
  showUser();
  route();
}

start();
