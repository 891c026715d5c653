// The projects the viewer may see, each with its subprojects; a name/tag/status filter (the
// server's ProjectFilter), and, as the server allows, new projects and subprojects, editing,
// closing and the permissions page.
import { useState } from 'react';

import { gql } from '../api/client.js';
import { CLOSE_PROJECT, PROJECTS } from '../api/documents.js';
import { useLoad, useServerFilter } from '../hooks.js';
import { Dialog, Empty, Failed, FieldErrors, Loading, useMutation } from '../ui.jsx';
import { ProjectForm, SubprojectForm } from './Forms.jsx';

function CloseProject({ project, onClose, onDone }) {
  const [close, { busy, errors }] = useMutation(CLOSE_PROJECT, 'closeProject');
  return (
    <Dialog title={`Close ${project.displayName}`} onClose={onClose}>
      <p>A closed project takes no new subprojects and no changes.</p>
      <FieldErrors errors={errors} field={null} />
      <div className="buttons">
        <button type="button" className="danger" disabled={busy}
          onClick={async () => (await close({ input: { id: project.id } })) && onDone()}>
          Close it
        </button>
        <button type="button" onClick={onClose}>
          Keep it open
        </button>
      </div>
    </Dialog>
  );
}

function Project({ project, reload }) {
  const [dialog, setDialog] = useState(null);
  const can = (intent) => project.allowedIntents.includes(`project.${intent}`);
  const open = project.status === 'OPEN';
  const done = () => {
    setDialog(null);
    reload();
  };
  return (
    <li className="project" data-testid="project">
      <div className="project-head">
        <h2>{project.displayName}</h2>
        {!open && <span className="tag">closed</span>}
        <div className="toolbar">
          {open && can('createSubproject') && (
            <button type="button" onClick={() => setDialog('subproject')} aria-label={`New subproject in ${project.displayName}`}>
              New subproject
            </button>
          )}
          {open && can('update') && (
            <button type="button" onClick={() => setDialog('edit')} aria-label={`Edit ${project.displayName}`}>
              Edit
            </button>
          )}
          {can('intent.listPermissions') && (
            <a className="button" href={`#/permissions/${project.id}`} aria-label={`Permissions of ${project.displayName}`}>
              Permissions
            </a>
          )}
          {open && can('close') && (
            <button type="button" className="danger" onClick={() => setDialog('close')} aria-label={`Close ${project.displayName}`}>
              Close…
            </button>
          )}
        </div>
      </div>
      {project.description && <p>{project.description}</p>}
      {project.tags.length > 0 && <p className="tags">{project.tags.map((t) => <span key={t} className="tag">{t}</span>)}</p>}
      {project.subprojects.edges.length === 0 && <Empty>No subprojects you may view.</Empty>}
      <ul className="subprojects">
        {project.subprojects.edges.map(({ node }) => (
          <li key={node.id}>
            <a href={`#/subproject/${node.id}`}>{node.displayName}</a>{' '}
            <small>
              {node.workflow.prettyName} v{node.workflow.version} · {node.currency} · {node.status.toLowerCase()}
            </small>
          </li>
        ))}
      </ul>
      {dialog === 'subproject' && (
        <SubprojectForm projectId={project.id} onClose={() => setDialog(null)}
          onSaved={(sub) => {
            setDialog(null);
            window.location.hash = `#/subproject/${sub.id}`;
          }} />
      )}
      {dialog === 'edit' && <ProjectForm project={project} onClose={() => setDialog(null)} onSaved={done} />}
      {dialog === 'close' && <CloseProject project={project} onClose={() => setDialog(null)} onDone={done} />}
    </li>
  );
}

export function Projects({ viewer }) {
  const [filter, setFilter] = useState({ search: '', tag: '', status: '' });
  const sent = useServerFilter(filter);
  const [creating, setCreating] = useState(false);
  const [{ loading, error, data }, reload] = useLoad(() => gql(PROJECTS, { filter: sent }), [sent]);
  const projects = data ? data.projects.edges.map((e) => e.node) : [];
  return (
    <section>
      <div className="page-head">
        <h1>Projects</h1>
        <button type="button" className="primary" onClick={() => setCreating(true)}>
          New project
        </button>
      </div>
      <form className="filters" role="search" aria-label="Filter projects" onSubmit={(e) => e.preventDefault()}>
        <label>
          Name
          <input type="search" name="search" maxLength={200} value={filter.search} placeholder="Contains…"
            onChange={(e) => setFilter({ ...filter, search: e.target.value })} />
        </label>
        <label>
          Tag
          <input name="tag" maxLength={64} value={filter.tag} onChange={(e) => setFilter({ ...filter, tag: e.target.value })} />
        </label>
        <label>
          Status
          <select name="status" value={filter.status} onChange={(e) => setFilter({ ...filter, status: e.target.value })}>
            <option value="">Any</option>
            <option value="OPEN">Open</option>
            <option value="CLOSED">Closed</option>
          </select>
        </label>
      </form>
      {!data && loading && <Loading what="projects" />}
      <Failed error={error} retry={reload} />
      {data && projects.length === 0 && (
        <Empty>{sent ? 'No project matches.' : 'There are no projects you may view.'}</Empty>
      )}
      <ul className="projects">
        {projects.map((project) => (
          <Project key={project.id} project={project} reload={reload} viewer={viewer} />
        ))}
      </ul>
      {creating && (
        <ProjectForm onClose={() => setCreating(false)}
          onSaved={() => {
            setCreating(false);
            reload();
          }} />
      )}
    </section>
  );
}
