// The states every view shows alike: loading, empty, a failed request, a refused input.
export function Loading({ what }) {
  return <p className="state loading" role="status">Loading {what}…</p>;
}

export function Empty({ children }) {
  return <p className="state empty">{children}</p>;
}

export function Failed({ error, retry }) {
  if (!error) return null;
  return (
    <div className="state error" role="alert">
      {error.message}
      {retry && (
        <button type="button" onClick={retry}>
          Try again
        </button>
      )}
    </div>
  );
}

/** The userErrors of a mutation for one input field (`field` null: those for no field we show). */
export function FieldErrors({ errors, field, shown = [] }) {
  const mine = (errors || []).filter((e) => {
    const name = e.field?.[0] ?? null;
    return field === null ? !shown.includes(name) : name === field;
  });
  if (!mine.length) return null;
  return (
    <ul className="field-errors" role="alert">
      {mine.map((e) => (
        <li key={e.code + e.message} data-code={e.code}>
          {e.message}
        </li>
      ))}
    </ul>
  );
}
