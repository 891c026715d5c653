// The Caseway dashboard: sign in, projects → subprojects → boards, items with their actions,
// my tasks, and a live feed — everything from the GraphQL API of the server that serves it.
import './app.css';

import { useCallback, useEffect, useState } from 'react';
import { createRoot } from 'react-dom/client';

import { getToken, gql, setToken } from './api/client.js';
import { LOGOUT, VIEWER } from './api/documents.js';
import { startLive, stopLive } from './api/live.js';
import { useLiveStatus, useRoute } from './hooks.js';
import { Failed, Loading } from './ui.jsx';
import { Admin } from './views/Admin.jsx';
import { Board } from './views/Board.jsx';
import { Feed } from './views/Feed.jsx';
import { Insights } from './views/Insights.jsx';
import { Item } from './views/Item.jsx';
import { Login } from './views/Login.jsx';
import { NotificationBadge } from './views/Notifications.jsx';
import { Permissions } from './views/Permissions.jsx';
import { Projects } from './views/Projects.jsx';
import { Search, SearchBox } from './views/Search.jsx';
import { Tasks } from './views/Tasks.jsx';

const STATUS_TEXT = {
  live: 'Live',
  connecting: 'Connecting…',
  lost: 'Connection lost — reconnecting…',
  offline: 'Offline',
};

function Page({ route, viewer }) {
  const [view, id] = route;
  if (view === 'subproject' && id) return <Board id={id} />;
  if (view === 'item' && id) return <Item id={id} action={route[2]} />; // #/item/<id>/<action>: its dialog open
  if (view === 'insights' && id) return <Insights id={id} />;
  if (view === 'permissions' && id) return <Permissions id={id} />;
  if (view === 'tasks') return <Tasks />;
  if (view === 'search' && id) return <Search query={decodeURIComponent(id)} />;
  if (view === 'admin' && viewer.admin) return <Admin tab={id} />;
  return <Projects viewer={viewer} />;
}

const TITLES = { search: 'Search', subproject: 'Board', insights: 'Insights', item: 'Item', permissions: 'Permissions', tasks: 'My tasks', admin: 'Administration' };

function Shell({ viewer, signOut }) {
  const route = useRoute();
  const status = useLiveStatus();
  // The feed is open beside the page on a wide screen and folded on a narrow one until asked for.
  const [feedOpen, setFeedOpen] = useState(() => window.matchMedia('(min-width: 1100px)').matches);
  useEffect(() => {
    document.body.dataset.live = status;
  }, [status]);
  useEffect(() => {
    document.title = `${TITLES[route[0]] ?? 'Projects'} · Caseway`;
  }, [route]);
  const here = route[0] ?? '';
  return (
    <div className={`shell${feedOpen ? ' feed-open' : ''}`}>
      <a className="skip" href="#main" onClick={(e) => {
        e.preventDefault();
        document.getElementById('main')?.focus();
      }}>
        Skip to the page
      </a>
      <header>
        <a className="brand" href="#/">
          Caseway
        </a>
        <nav aria-label="Main">
          <a href="#/" aria-current={here === '' ? 'page' : undefined}>Projects</a>
          <a href="#/tasks" aria-current={here === 'tasks' ? 'page' : undefined}>My tasks</a>
          {viewer.admin && (
            <a href="#/admin/users" aria-current={here === 'admin' ? 'page' : undefined}>
              Admin
            </a>
          )}
        </nav>
        <SearchBox />
        <div className="header-end">
          <span className={`live live-${status}`} data-testid="live-status" role="status">
            {STATUS_TEXT[status]}
          </span>
          <NotificationBadge />
          <span className="viewer" data-testid="viewer">
            {viewer.displayName}
          </span>
          <button type="button" className="sign-out" onClick={signOut}>
            Sign out
          </button>
        </div>
      </header>
      {status === 'lost' && (
        <div className="banner" role="alert">
          The live connection to the server is lost. Reconnecting; the page will catch up on what it missed.
        </div>
      )}
      <div className="columns">
        <main id="main" tabIndex={-1}>
          <Page route={route} viewer={viewer} />
        </main>
        <Feed open={feedOpen} onToggle={() => setFeedOpen((o) => !o)} />
      </div>
    </div>
  );
}

function App() {
  const [viewer, setViewer] = useState(null);
  const [checking, setChecking] = useState(Boolean(getToken()));
  const [error, setError] = useState(null);

  const signedOut = useCallback(() => {
    stopLive();
    setToken(null);
    setViewer(null);
  }, []);

  const signedIn = useCallback(
    (token, user) => {
      setToken(token);
      setViewer(user);
      startLive(token, { forbidden: signedOut });
    },
    [signedOut],
  );

  const check = useCallback(() => {
    setError(null);
    setChecking(true);
    gql(VIEWER).then(
      (data) => {
        setChecking(false);
        signedIn(getToken(), data.viewer);
      },
      (failure) => {
        setChecking(false);
        if (failure.codes.includes('UNAUTHENTICATED')) signedOut();
        else setError(failure);
      },
    );
  }, [signedIn, signedOut]);

  useEffect(() => {
    if (getToken()) check();
  }, [check]);

  const signOut = useCallback(async () => {
    try {
      await gql(LOGOUT);
    } finally {
      signedOut();
    }
  }, [signedOut]);

  if (checking) return <Loading what="your session" />;
  if (error) return <Failed error={error} retry={check} />;
  if (!viewer) return <Login onSignedIn={signedIn} />;
  return <Shell viewer={viewer} signOut={signOut} />;
}

createRoot(document.getElementById('app')).render(<App />);
