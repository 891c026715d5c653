// A GraphQL mutation that carries one file, as the GraphQL multipart request specification
// (github.com/jaydenseric/graphql-multipart-request-spec) sends it: the `operations` JSON with the
// file's variable null, a `map` naming where the file goes, then the file itself. Sent with
// XMLHttpRequest rather than fetch because only it reports upload progress.
import { RequestError, getToken } from './client.js';

/**
 * Posts `query` with `variables`, where `path` (e.g. "variables.input.file") is the variable the
 * file fills. `onProgress(sent, total)` follows the upload. Resolves to the result's data, or
 * rejects with a RequestError: no answer, an answer that is not GraphQL, or GraphQL errors (the
 * server's 413 for a body far over its limit is one, with its sentence).
 */
export function uploadFile(query, variables, path, file, options = {}) {
  return uploadFiles(query, variables, [[path, file]], options);
}

/** As uploadFile, with several files: `files` is a list of [variable path, File]. */
export function uploadFiles(query, variables, files, { onProgress } = {}) {
  const body = new FormData();
  body.append('operations', JSON.stringify({ query, variables }));
  body.append('map', JSON.stringify(Object.fromEntries(files.map(([path], i) => [String(i), [path]]))));
  files.forEach(([, file], i) => body.append(String(i), file, file.name));
  const file = { size: files.reduce((n, [, f]) => n + f.size, 0) };

  return new Promise((resolve, reject) => {
    const request = new XMLHttpRequest();
    request.open('POST', '/graphql');
    const token = getToken();
    if (token) request.setRequestHeader('Authorization', `Bearer ${token}`);
    if (onProgress) request.upload.onprogress = (e) => onProgress(e.loaded, e.lengthComputable ? e.total : file.size);
    request.onerror = () => reject(new RequestError('The server cannot be reached.', ['UNREACHABLE']));
    request.onload = () => {
      let result;
      try {
        result = JSON.parse(request.responseText);
      } catch {
        // 413 from a proxy in front of the server, which answers without JSON.
        if (request.status === 413) reject(new RequestError('The file is larger than the server accepts.', ['TOO_LARGE']));
        else reject(new RequestError(`The server answered ${request.status} without a GraphQL result.`));
        return;
      }
      if (result.errors?.length) {
        reject(
          new RequestError(
            result.errors.map((e) => e.message).join(' '),
            result.errors.map((e) => e.extensions?.code),
          ),
        );
        return;
      }
      resolve(result.data);
    };
    request.send(body);
  });
}
