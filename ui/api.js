// The management API client. Holds the admin user's token pair (localStorage, so a reload or
// a second tab stays logged in until the refresh token expires), sends the access token with
// every call, and on a 401 trades the refresh token for a new pair once and retries. When the
// refresh token is refused too, the session is over: the tokens are dropped and the login page
// shown.

const storageKey = 'starling.tokens';

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

let tokens = readTokens();
let refreshing = null;
const listeners = new Set();

function readTokens() {
  try {
    const stored = JSON.parse(localStorage.getItem(storageKey) || 'null');
    return stored && stored.token && stored.refreshToken ? stored : null;
  } catch {
    return null;
  }
}

function setTokens(pair) {
  tokens = pair;
  if (pair) localStorage.setItem(storageKey, JSON.stringify(pair));
  else localStorage.removeItem(storageKey);
  for (const fn of listeners) fn(!!pair);
}

export function loggedIn() {
  return tokens !== null;
}

// fn(loggedIn) after every login, refresh failure and logout.
export function onSessionChange(fn) {
  listeners.add(fn);
}

async function errorOf(res) {
  let message = `${res.status} ${res.statusText}`;
  try {
    const body = await res.json();
    if (body && body.message) message = body.message;
  } catch {
    // not JSON: keep the status line
  }
  return new ApiError(res.status, message);
}

async function postJson(path, body) {
  return fetch(path, {
    method: 'POST',
    headers: {'Content-Type': 'application/json'},
    body: JSON.stringify(body),
  });
}

export async function login(username, password) {
  const res = await postJson('/api/auth/login', {username, password});
  if (!res.ok) throw await errorOf(res);
  setTokens(await res.json());
}

export function logout() {
  setTokens(null);
}

// One refresh at a time: calls that fail together wait for the same new pair.
function refresh() {
  if (!tokens) return Promise.resolve(false);
  if (!refreshing) {
    const refreshToken = tokens.refreshToken;
    refreshing = postJson('/api/auth/token', {refreshToken})
      .then(async (res) => {
        if (!res.ok) return false;
        setTokens(await res.json());
        return true;
      })
      .catch(() => false)
      .finally(() => { refreshing = null; });
  }
  return refreshing;
}

function urlOf(path, query) {
  if (!query) return path;
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined && value !== null && value !== '') params.set(key, String(value));
  }
  const text = params.toString();
  return text ? `${path}?${text}` : path;
}

// api('GET', '/api/client-session', {query: {pageSize: 20}}) → the parsed JSON answer.
export async function api(method, path, {query, body} = {}) {
  const send = () => {
    const headers = {};
    if (tokens) headers['X-Authorization'] = `Bearer ${tokens.token}`;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    return fetch(urlOf(path, query), {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  };
  let res = await send();
  if (res.status === 401 && (await refresh())) res = await send();
  if (res.status === 401) {
    setTokens(null);
    throw new ApiError(401, 'Your session has ended: log in again.');
  }
  if (!res.ok) throw await errorOf(res);
  const text = await res.text();
  return text ? JSON.parse(text) : null;
}
