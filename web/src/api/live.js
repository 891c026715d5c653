// Live updates over graphql-transport-ws (the graphql-ws client): one `activity` subscription
// for everything the viewer may see, and `notifications`. The socket is not retried by the
// library: when it drops, each subscription starts again here, the activity one from the last
// seq it delivered (`after`), so the page misses nothing and sees nothing twice.
import { createClient } from 'graphql-ws';

import { LIVE_ACTIVITY, LIVE_NOTIFICATIONS } from './documents.js';

const activityListeners = new Set();
const notificationListeners = new Set();
const statusListeners = new Set();
let client = null;
let lastSeq = null;
let status = 'offline';
let onForbidden = () => {};

const RETRY_MS = 1000;

function setStatus(next) {
  if (status === next) return;
  status = next;
  for (const listener of statusListeners) listener(next);
}

export function liveStatus() {
  return status;
}

export function onStatus(listener) {
  statusListeners.add(listener);
  return () => statusListeners.delete(listener);
}

/** Called with each new activity entry, in seq order, once. */
export function onActivity(listener) {
  activityListeners.add(listener);
  return () => activityListeners.delete(listener);
}

export function onNotification(listener) {
  notificationListeners.add(listener);
  return () => notificationListeners.delete(listener);
}

function run(owner, payload, deliver) {
  return new Promise((resolve, reject) => {
    owner.subscribe(payload(), {
      next: (result) => {
        if (result.data) deliver(result.data);
      },
      error: reject,
      complete: resolve,
    });
  });
}

async function keep(owner, payload, deliver) {
  while (client === owner) {
    try {
      await run(owner, payload, deliver);
    } catch (error) {
      // 4403: the token no longer works (signed out elsewhere, revoked, disabled).
      if (error?.code === 4403) {
        stopLive();
        onForbidden();
        return;
      }
    }
    if (client !== owner) return;
    setStatus('lost');
    await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
  }
}

export function startLive(token, { forbidden } = {}) {
  stopLive();
  onForbidden = forbidden || (() => {});
  const url = new URL('/graphql', window.location.href);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  const owner = createClient({
    url: url.href,
    lazy: true,
    retryAttempts: 0,
    keepAlive: 10_000,
    connectionParams: { authorization: `Bearer ${token}` },
  });
  client = owner;
  setStatus('connecting');
  owner.on('connected', () => client === owner && setStatus('live'));
  owner.on('closed', () => client === owner && setStatus('lost'));
  keep(
    owner,
    () => ({ query: LIVE_ACTIVITY, variables: { after: lastSeq === null ? null : String(lastSeq) } }),
    (data) => {
      const entry = data.activity;
      if (lastSeq !== null && entry.seq <= lastSeq) return;
      lastSeq = entry.seq;
      for (const listener of activityListeners) listener(entry);
    },
  );
  keep(
    owner,
    () => ({ query: LIVE_NOTIFICATIONS }),
    (data) => {
      for (const listener of notificationListeners) listener(data.notifications);
    },
  );
}

export function stopLive() {
  const owner = client;
  client = null;
  lastSeq = null;
  setStatus('offline');
  if (owner) owner.dispose();
}
