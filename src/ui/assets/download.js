// Saving what an API answers as a file (a CA, a CRL, a certificate, a state version), with the
// signed-in token in a header as every other request of the page.
import { actionButton, HttpError, politely, session } from './lib.js';

/** A button that fetches `path` from the runs (`/api/v2/`) or secrets (`/v1/`) API and saves it. */
export function download(label, surface, path, fileName) {
  return actionButton(label, async () => {
    const runs = surface === 'runs';
    const res = await politely(() =>
      fetch(runs ? `/api/v2/${path}` : `/v1/${path}`, {
        headers: runs
          ? { Authorization: `Bearer ${session.runs}` }
          : { 'X-Vault-Token': session.secrets },
      }),
    );
    if (!res.ok) throw new HttpError(res.status, `${res.status} ${res.statusText}`);
    const url = URL.createObjectURL(await res.blob());
    const a = document.createElement('a');
    a.href = url;
    a.download = fileName;
    document.body.append(a);
    a.click();
    a.remove();
    URL.revokeObjectURL(url);
  });
}
