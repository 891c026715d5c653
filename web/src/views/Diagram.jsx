// The workflow's state machine drawn by Mermaid (loaded from this server only when an item page
// opens), the case's current state highlighted; `extra` adds Mermaid lines (Insights' shading).
import { useEffect, useRef, useState } from 'react';

let mermaidReady = null;
let counter = 0;

function mermaid() {
  mermaidReady ??= import('mermaid').then(({ default: m }) => {
    m.initialize({ startOnLoad: false, securityLevel: 'strict', theme: 'neutral' });
    return m;
  });
  return mermaidReady;
}

export function Diagram({ source, current, extra = '' }) {
  const box = useRef(null);
  const [error, setError] = useState(null);

  useEffect(() => {
    let live = true;
    const marked = current
      ? `${source}\n    classDef current fill:#ffd54f,stroke:#8a6d00,stroke-width:3px\n    class ${current} current`
      : source;
    const text = extra ? `${marked}\n${extra}` : marked;
    mermaid()
      .then((m) => m.render(`workflow-diagram-${++counter}`, text))
      .then(
        ({ svg }) => {
          if (live && box.current) box.current.innerHTML = svg;
        },
        (failure) => live && setError(failure),
      );
    return () => {
      live = false;
    };
  }, [source, current, extra]);

  return (
    <figure className="diagram" data-testid="diagram" data-current={current} aria-label="Workflow diagram" tabIndex={0}>
      {error ? <p className="state error">The diagram could not be drawn: {error.message}</p> : null}
      <div ref={box} />
    </figure>
  );
}
