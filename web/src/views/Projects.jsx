import { gql } from '../api/client.js';
import { PROJECTS } from '../api/documents.js';
import { useLoad } from '../hooks.js';
import { Empty, Failed, Loading } from '../ui.jsx';

export function Projects() {
  const [{ loading, error, data }, reload] = useLoad(() => gql(PROJECTS), []);
  if (!data) return loading ? <Loading what="projects" /> : <Failed error={error} retry={reload} />;
  const projects = data.projects.edges.map((e) => e.node);
  return (
    <section>
      <h1>Projects</h1>
      <Failed error={error} retry={reload} />
      {projects.length === 0 && <Empty>There are no projects you may view.</Empty>}
      <ul className="projects">
        {projects.map((project) => (
          <li key={project.id} className="project" data-testid="project">
            <h2>{project.displayName}</h2>
            {project.description && <p>{project.description}</p>}
            {project.subprojects.edges.length === 0 && <Empty>No subprojects you may view.</Empty>}
            <ul>
              {project.subprojects.edges.map(({ node }) => (
                <li key={node.id}>
                  <a href={`#/subproject/${node.id}`}>{node.displayName}</a>{' '}
                  <small>
                    {node.workflow.prettyName} · {node.currency} · {node.status}
                  </small>
                </li>
              ))}
            </ul>
          </li>
        ))}
      </ul>
    </section>
  );
}
