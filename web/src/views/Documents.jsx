// The documents of a workflow item: each file's name (a download link when the viewer may
// download it), size, type, who added it and when, and its SHA-256 (short, the whole hash on
// hover and to copy) — the hash is what proves a file unchanged, so it is never hidden. Upload
// and removal show only to those who hold workflowItem.update, as the server decides
// (allowedIntents), while the item is open, and hide once the server refuses them. Live: the
// list reloads on the item's document_added / document_removed activity, and before its signed
// links expire.
import { useEffect, useState } from 'react';

import { gql } from '../api/client.js';
import { ADD_DOCUMENT, DOCUMENTS, REMOVE_DOCUMENT } from '../api/documents.js';
import { onActivity } from '../api/live.js';
import { uploadFile } from '../api/upload.js';
import { bytes, partyName, when } from '../format.js';
import { useDebounced, useLoad } from '../hooks.js';
import { Empty, Failed, FieldErrors, Loading } from '../ui.jsx';

const CHANGE_INTENT = 'workflowItem.update';
// Refusals that hold until the page reloads: no right to change the item, or the item closed.
const REFUSED = new Set(['NOT_ALLOWED', 'RESOURCE_CLOSED']);
// Reload this long before the first signed link expires, so a click never meets a dead link.
const LINK_MARGIN_MS = 30_000;

/** When the first of the documents' signed links (`exp=` seconds since the epoch) expires. */
function firstExpiry(documents) {
  let first = null;
  for (const doc of documents) {
    if (!doc.url) continue;
    const exp = Number(new URL(doc.url, window.location.href).searchParams.get('exp'));
    if (exp && (first === null || exp < first)) first = exp;
  }
  return first === null ? null : first * 1000;
}

function Hash({ sha256 }) {
  const [copied, setCopied] = useState(false);
  async function copy() {
    try {
      await navigator.clipboard.writeText(sha256);
      setCopied(true);
    } catch {
      setCopied(false); // no clipboard here: the full hash is still in the title to select
    }
  }
  return (
    <span className="hash">
      <code title={sha256} data-testid="document-sha256" data-sha256={sha256}>
        {sha256.slice(0, 12)}…
      </code>
      <button type="button" className="link" onClick={copy} aria-label={`Copy the SHA-256 ${sha256}`}>
        {copied ? 'Copied' : 'Copy'}
      </button>
    </span>
  );
}

function DocumentRow({ doc, canRemove, onRemoved, onRefused }) {
  const [confirming, setConfirming] = useState(false);
  const [errors, setErrors] = useState([]);
  const [busy, setBusy] = useState(false);

  async function remove() {
    setBusy(true);
    try {
      const { removeDocument: result } = await gql(REMOVE_DOCUMENT, { input: { id: doc.id } });
      setErrors(result.userErrors);
      if (result.userErrors.some((e) => REFUSED.has(e.code))) onRefused();
      if (!result.userErrors.length) onRemoved();
    } catch (failure) {
      setErrors([{ code: 'FAILED', message: failure.message, field: null }]);
    } finally {
      setBusy(false);
      setConfirming(false);
    }
  }

  return (
    <tr data-testid="document" data-document={doc.id} data-removed={doc.removed ? 'true' : 'false'} className={doc.removed ? 'removed' : ''}>
      <td className="file-name">
        {doc.url ? (
          <a href={doc.url} download={doc.fileName}>
            {doc.fileName}
          </a>
        ) : (
          <span>{doc.fileName}</span>
        )}
        {doc.removed && (
          <span className="tag" data-testid="document-removed">
            removed {when(doc.removedAt)}
          </span>
        )}
      </td>
      <td className="size">{bytes(doc.size)}</td>
      <td className="type">{doc.contentType || '—'}</td>
      <td className="added">
        {partyName(doc.addedBy)} <time>{when(doc.addedAt)}</time>
      </td>
      <td>
        <Hash sha256={doc.sha256} />
      </td>
      <td>
        {canRemove && !doc.removed && !confirming && (
          <button type="button" onClick={() => setConfirming(true)} aria-label={`Remove ${doc.fileName}`}>
            Remove
          </button>
        )}
        {confirming && (
          <span className="inline">
            <button type="button" onClick={remove} disabled={busy}>
              {busy ? 'Removing…' : 'Confirm removal'}
            </button>
            <button type="button" onClick={() => setConfirming(false)}>
              Cancel
            </button>
          </span>
        )}
        <FieldErrors errors={errors} field={null} />
      </td>
    </tr>
  );
}

function UploadForm({ itemId, onUploaded, onRefused }) {
  const [file, setFile] = useState(null);
  const [inputKey, setInputKey] = useState(0); // a new key empties the file input
  const [progress, setProgress] = useState(null);
  const [errors, setErrors] = useState([]);

  async function upload(event) {
    event.preventDefault();
    if (!file) return;
    setErrors([]);
    setProgress({ sent: 0, total: file.size });
    try {
      const { addDocument: result } = await uploadFile(
        ADD_DOCUMENT,
        { input: { workflowItemId: itemId, file: null } },
        'variables.input.file',
        file,
        { onProgress: (sent, total) => setProgress({ sent, total }) },
      );
      setErrors(result.userErrors);
      if (result.userErrors.some((e) => REFUSED.has(e.code))) onRefused();
      if (!result.userErrors.length) {
        setFile(null);
        setInputKey((k) => k + 1);
        onUploaded();
      }
    } catch (failure) {
      setErrors([{ code: failure.codes?.[0] || 'FAILED', message: failure.message, field: null }]);
    } finally {
      setProgress(null);
    }
  }

  return (
    <form className="upload" onSubmit={upload} aria-label="Attach a document">
      <label>
        Attach a file
        <input key={inputKey} type="file" name="file" onChange={(e) => setFile(e.target.files[0] || null)} />
      </label>
      <button type="submit" disabled={!file || progress !== null}>
        {progress ? 'Uploading…' : 'Upload'}
      </button>
      {progress && (
        <progress data-testid="upload-progress" max={progress.total || 1} value={progress.sent}>
          {bytes(progress.sent)} of {bytes(progress.total)}
        </progress>
      )}
      <FieldErrors errors={errors} field={null} />
    </form>
  );
}

/** `open`: the item's case is active or suspended; a closed item's documents no longer change. */
export function Documents({ id, open }) {
  const [{ loading, error, data }, reload] = useLoad(() => gql(DOCUMENTS, { id }), [id]);
  const reloadSoon = useDebounced(reload, 100);
  const [refused, setRefused] = useState(false);

  useEffect(
    () => onActivity((entry) => entry.workflowItem?.id === id && entry.kind.startsWith('document_') && reloadSoon()),
    [id, reloadSoon],
  );

  const documents = data?.node?.documents ?? [];
  const expiry = firstExpiry(documents);
  useEffect(() => {
    if (expiry === null) return undefined;
    const timer = setTimeout(reload, Math.max(expiry - LINK_MARGIN_MS - Date.now(), 1000));
    return () => clearTimeout(timer);
  }, [expiry, reload]);

  if (!data) return loading ? <Loading what="documents" /> : <Failed error={error} retry={reload} />;
  if (!data.node) return null; // the item itself says it is missing
  const canChange = open && !refused && data.node.allowedIntents.includes(CHANGE_INTENT);
  return (
    <section className="documents" data-testid="documents">
      <h2>
        Documents <small>{documents.length}</small>
      </h2>
      <Failed error={error} retry={reload} />
      {documents.length === 0 ? (
        <Empty>No documents attached.</Empty>
      ) : (
        <table>
          <thead>
            <tr>
              <th>File</th>
              <th>Size</th>
              <th>Type</th>
              <th>Added</th>
              <th>SHA-256</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {documents.map((doc) => (
              <DocumentRow key={doc.id} doc={doc} canRemove={canChange} onRemoved={reload} onRefused={() => setRefused(true)} />
            ))}
          </tbody>
        </table>
      )}
      {canChange && <UploadForm itemId={id} onUploaded={reload} onRefused={() => setRefused(true)} />}
    </section>
  );
}
