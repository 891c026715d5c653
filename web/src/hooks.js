// Small hooks shared by the views: the hash route, a query with loading/error states, the
// server's part of a filter, and live status.
import { useCallback, useEffect, useRef, useState } from 'react';

import { gql } from './api/client.js';
import { liveStatus, onStatus } from './api/live.js';

export function useRoute() {
  const read = () => window.location.hash.replace(/^#\/?/, '').split('/').filter(Boolean);
  const [route, setRoute] = useState(read);
  useEffect(() => {
    const changed = () => setRoute(read());
    window.addEventListener('hashchange', changed);
    return () => window.removeEventListener('hashchange', changed);
  }, []);
  return route;
}

/** Runs `load` (an async function of nothing) now and on `reload()`; keeps the last good data
 * while reloading, so a live refresh does not blank the page. */
export function useLoad(load, deps) {
  const [state, setState] = useState({ loading: true, error: null, data: null });
  const generation = useRef(0);
  const reload = useCallback(() => {
    const mine = ++generation.current;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => mine === generation.current && setState({ loading: false, error: null, data }),
      (error) => mine === generation.current && setState((s) => ({ loading: false, error, data: s.data })),
    );
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, deps);
  useEffect(() => {
    setState({ loading: true, error: null, data: null });
    reload();
  }, [reload]);
  return [state, reload];
}

/** `fn` at most once per `ms`, the last call winning: a burst of events costs one reload. */
export function useDebounced(fn, ms) {
  const timer = useRef(null);
  const latest = useRef(fn);
  latest.current = fn;
  useEffect(() => () => clearTimeout(timer.current), []);
  return useCallback(() => {
    if (timer.current) return;
    timer.current = setTimeout(() => {
      timer.current = null;
      latest.current();
    }, ms);
  }, [ms]);
}

/** The server's part of a filter (name, tag, status: ProjectFilter), sent once typing pauses;
 * null when empty, and the same object while it does not change (so loads keyed on it rerun
 * only when it does). */
export function useServerFilter(filter, ms = 250) {
  const [sent, setSent] = useState(null);
  useEffect(() => {
    const timer = setTimeout(() => {
      const f = {};
      if (filter.search.trim()) f.search = filter.search.trim();
      if (filter.tag.trim()) f.tag = filter.tag.trim();
      if (filter.status) f.status = filter.status;
      const next = Object.keys(f).length ? f : null;
      setSent((current) => (JSON.stringify(current) === JSON.stringify(next) ? current : next));
    }, ms);
    return () => clearTimeout(timer);
  }, [filter.search, filter.tag, filter.status, ms]);
  return sent;
}

export function useLiveStatus() {
  const [status, setStatus] = useState(liveStatus);
  useEffect(() => onStatus(setStatus), []);
  return status;
}

export { gql };
