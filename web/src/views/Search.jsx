// Search (the server's `search`): the projects, subprojects and workflow items the viewer may
// see whose name or description hold every word typed, best match first, 20 at a time.
import { useState } from 'react';

import { gql } from '../api/client.js';
import { SEARCH } from '../api/documents.js';
import { useLoad } from '../hooks.js';
import { Empty, Failed, Loading } from '../ui.jsx';

const KIND = { Project: 'Project', Subproject: 'Subproject', WorkflowItem: 'Item' };

function href(node) {
  if (node.__typename === 'Subproject') return `#/subproject/${node.id}`;
  if (node.__typename === 'WorkflowItem') return `#/item/${node.id}`;
  return '#/';
}

function where(node) {
  if (node.__typename === 'WorkflowItem') {
    return [node.subproject?.displayName, node.case?.state.prettyName, node.dueDate && `due ${node.dueDate}`]
      .filter(Boolean)
      .join(' · ');
  }
  if (node.__typename === 'Subproject') return node.project?.displayName ?? '';
  return node.status.toLowerCase();
}

/** The search box of the header: Enter shows the results page. */
export function SearchBox() {
  const [query, setQuery] = useState('');
  return (
    <form
      className="search-box"
      role="search"
      aria-label="Search"
      onSubmit={(e) => {
        e.preventDefault();
        if (query.trim()) window.location.hash = `#/search/${encodeURIComponent(query.trim())}`;
      }}
    >
      <input type="search" aria-label="Search projects and items" placeholder="Search…" maxLength={200} value={query}
        onChange={(e) => setQuery(e.target.value)} />
    </form>
  );
}

export function Search({ query }) {
  const [pages, setPages] = useState([]);
  const [{ loading, error, data }, reload] = useLoad(async () => {
    setPages([]);
    return (await gql(SEARCH, { query, after: null })).search;
  }, [query]);
  const [more, setMore] = useState({ busy: false, error: null });
  if (!data) return loading ? <Loading what="the results" /> : <Failed error={error} retry={reload} />;
  const all = [data, ...pages];
  const nodes = all.flatMap((p) => p.edges.map((e) => e.node));
  const last = all[all.length - 1];
  return (
    <section>
      <h1>Search: {query}</h1>
      <Failed error={error} retry={reload} />
      {nodes.length === 0 && <Empty>Nothing you may see matches every word of “{query}”.</Empty>}
      <ol className="results" data-testid="results">
        {nodes.map((node) => (
          <li key={node.id} data-testid="result" data-kind={node.__typename}>
            <span className="tag">{KIND[node.__typename] ?? node.__typename}</span>{' '}
            <a href={href(node)}>{node.displayName}</a> <small>{where(node)}</small>
            {node.description && <p className="hint">{node.description.slice(0, 200)}</p>}
          </li>
        ))}
      </ol>
      <Failed error={more.error} />
      {last.pageInfo.hasNextPage && (
        <button
          type="button"
          disabled={more.busy}
          onClick={async () => {
            setMore({ busy: true, error: null });
            try {
              const { search } = await gql(SEARCH, { query, after: last.pageInfo.endCursor });
              setPages((p) => [...p, search]);
              setMore({ busy: false, error: null });
            } catch (failure) {
              setMore({ busy: false, error: failure });
            }
          }}
        >
          More results
        </button>
      )}
    </section>
  );
}
