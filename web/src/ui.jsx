import { cloneElement, useCallback, useEffect, useId, useRef, useState } from 'react';

import { gql } from './api/client.js';

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
    <div className="field-errors" role="alert">
      <ul>
        {mine.map((e) => (
          <li key={e.code + e.message} data-code={e.code}>
            {e.message}
          </li>
        ))}
      </ul>
    </div>
  );
}

/** A labelled input (or the one control given as children); `hint` is read out with it
 * (aria-describedby). */
export function Field({ label, name, hint, errors, children, ...props }) {
  const id = useId();
  const hintId = hint ? `${id}-hint` : undefined;
  const control = children ? (
    cloneElement(children, { id, 'aria-describedby': hintId })
  ) : (
    <input id={id} name={name} aria-describedby={hintId} {...props} />
  );
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {control}
      {hint && (
        <small id={hintId} className="hint">
          {hint}
        </small>
      )}
      <FieldErrors errors={errors} field={name} />
    </div>
  );
}

/** A modal dialog (the browser's <dialog>: focus moves in, Escape closes, focus returns). */
export function Dialog({ title, onClose, children, testid }) {
  const ref = useRef(null);
  useEffect(() => {
    const dialog = ref.current;
    const opener = document.activeElement;
    dialog.showModal();
    return () => {
      if (dialog.open) dialog.close();
      if (opener instanceof HTMLElement && opener.isConnected) opener.focus();
    };
  }, []);
  return (
    <dialog
      ref={ref}
      className="dialog"
      aria-label={title}
      data-testid={testid}
      onCancel={(e) => {
        e.preventDefault();
        onClose();
      }}
    >
      <div className="dialog-head">
        <h2>{title}</h2>
        <button type="button" className="close" onClick={onClose} aria-label="Close">
          ×
        </button>
      </div>
      {children}
    </dialog>
  );
}

/** Runs a mutation whose payload has userErrors: `[run, {busy, errors}]`; run resolves to the
 * payload when nothing was refused, else null (the errors are shown by the caller). */
export function useMutation(document, key) {
  const [state, setState] = useState({ busy: false, errors: [] });
  const run = useCallback(
    async (variables) => {
      setState({ busy: true, errors: [] });
      try {
        const data = await gql(document, variables);
        const payload = data[key];
        setState({ busy: false, errors: payload.userErrors || [] });
        return payload.userErrors?.length ? null : payload;
      } catch (failure) {
        setState({ busy: false, errors: [{ code: failure.codes?.[0] || 'FAILED', message: failure.message, field: null }] });
        return null;
      }
    },
    [document, key],
  );
  return [run, state];
}
