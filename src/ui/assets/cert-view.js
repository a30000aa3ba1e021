// A certificate's page (`#/certificates/<mount>/<serial>`): its subject and alternative names,
// issuer, validity, key, revocation and PEM, read through the certificate authority's API
// (`cert/:serial` and `LIST certs/detailed`) with the secrets token; revoking it is a request to
// the same API.
import { actionButton, badge, enc, h, HttpError, live, send, session, v1 } from './lib.js';
import { download } from './download.js';

// ---- a small DER reader: just what naming a certificate takes ------------------------------

function tlv(bytes, at) {
  let len = bytes[at + 1];
  let start = at + 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + bytes[start + i];
    start += n;
  }
  return { tag: bytes[at], start, end: start + len };
}

function children(bytes, node) {
  const out = [];
  for (let at = node.start; at < node.end;) {
    const c = tlv(bytes, at);
    out.push(c);
    at = c.end;
  }
  return out;
}

function oid(bytes, node) {
  const b = bytes.subarray(node.start, node.end);
  const parts = [Math.floor(b[0] / 40), b[0] % 40];
  let v = 0;
  for (let i = 1; i < b.length; i++) {
    v = v * 128 + (b[i] & 0x7f);
    if (!(b[i] & 0x80)) {
      parts.push(v);
      v = 0;
    }
  }
  return parts.join('.');
}

const text = (bytes, node) => new TextDecoder().decode(bytes.subarray(node.start, node.end));

const ATTRIBUTES = {
  '2.5.4.3': 'CN',
  '2.5.4.5': 'SERIALNUMBER',
  '2.5.4.6': 'C',
  '2.5.4.7': 'L',
  '2.5.4.8': 'ST',
  '2.5.4.9': 'STREET',
  '2.5.4.10': 'O',
  '2.5.4.11': 'OU',
  '2.5.4.17': 'POSTALCODE',
  '1.2.840.113549.1.9.1': 'EMAIL',
};

/** A Name as a distinguished name, most specific part first (`CN=web,O=Example`). */
function distinguishedName(bytes, name) {
  const parts = [];
  for (const rdn of children(bytes, name)) {
    for (const attr of children(bytes, rdn)) {
      const [type, value] = children(bytes, attr);
      const id = oid(bytes, type);
      parts.push(`${ATTRIBUTES[id] ?? id}=${text(bytes, value)}`);
    }
  }
  return parts.reverse().join(',');
}

function ipText(b) {
  if (b.length === 4) return [...b].join('.');
  const groups = [];
  for (let i = 0; i + 1 < b.length; i += 2) groups.push(((b[i] << 8) | b[i + 1]).toString(16));
  return groups.join(':');
}

/** The subject alternative names, as `DNS:…`, `IP:…`, `email:…`, `URI:…`. */
function altNames(bytes, extensions) {
  for (const ext of children(bytes, children(bytes, extensions)[0])) {
    const parts = children(bytes, ext);
    if (oid(bytes, parts[0]) !== '2.5.29.17') continue;
    const value = parts[parts.length - 1];
    return children(bytes, tlv(bytes, value.start)).map((n) => {
      const body = bytes.subarray(n.start, n.end);
      switch (n.tag) {
        case 0x82:
          return `DNS:${text(bytes, n)}`;
        case 0x81:
          return `email:${text(bytes, n)}`;
        case 0x86:
          return `URI:${text(bytes, n)}`;
        case 0x87:
          return `IP:${ipText(body)}`;
        default:
          return 'other name';
      }
    });
  }
  return [];
}

/** The subject and alternative names of a PEM certificate. */
export function namesOf(pem) {
  const b64 = pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, '');
  const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  const tbs = children(bytes, children(bytes, tlv(bytes, 0))[0]);
  const fields = tbs[0].tag === 0xa0 ? tbs.slice(1) : tbs;
  // serial, signature algorithm, issuer, validity, subject, key, then optional extensions ([3])
  const extensions = fields.slice(6).find((f) => f.tag === 0xa3);
  return {
    subject: distinguishedName(bytes, fields[4]),
    altNames: extensions ? altNames(bytes, extensions) : [],
  };
}

// ---- the page ---------------------------------------------------------------------------------

const when = (iso) => h('time', { datetime: iso }, iso);

/** Copy a text to the clipboard, saying so in `status`. */
function copyButton(label, value, status) {
  return actionButton(label, () => navigator.clipboard.writeText(value), { status });
}

/** Revoke a certificate through the API, after asking; `label` is what the button shows. */
export function revokeButton(mount, serial, label, status, after) {
  return actionButton(
    label,
    () => send('secrets', 'POST', `${mount}revoke`, { serial_number: serial }),
    {
      confirm: [
        `Revoke certificate ${serial}? It is listed in the CRL from now on.`,
        'Revoke certificate',
      ],
      status,
      after,
    },
  );
}

export function certificate(container, [mount, serial]) {
  const title = h('h1', {}, 'Certificate ', h('code', {}, serial ?? ''));
  container.append(title);
  if (mount === undefined || serial === undefined || session.secrets === '') {
    container.append(h('p', {}, 'Sign in with a secrets token to see certificates.'));
    return null;
  }
  let view;
  view = live(container, async () => {
    const [cert, listed] = await Promise.all([
      v1(`${mount}cert/${enc(serial)}`),
      v1(`${mount}certs/detailed?list=true`).catch((err) => {
        if (err instanceof HttpError && err.status === 404) return { key_info: {} };
        throw err;
      }),
    ]);
    const info = listed.key_info?.[serial] ?? {};
    const { subject, altNames: sans } = namesOf(cert.certificate);
    if (info.common_name) title.replaceChildren('Certificate ', info.common_name);
    const revoked = Number(cert.revocation_time ?? 0) > 0;
    const expired = info.not_after !== undefined && Date.parse(info.not_after) < Date.now();
    const status = h('div', { class: 'status', role: 'status' });
    const facts = [
      ['Serial', h('code', {}, serial)],
      ['Subject', subject],
      ['Alternative names', sans.length > 0 ? sans.join(', ') : '—'],
      ['Issuer', info.issuer ?? '—'],
      ['Valid from', info.not_before ? when(info.not_before) : '—'],
      ['Valid until', info.not_after ? when(info.not_after) : '—'],
      ['Key', info.key_type ? `${info.key_type} ${info.key_bits}` : '—'],
      [
        'State',
        revoked
          ? h('span', { class: 'badge bad' }, 'revoked at ', when(cert.revocation_time_rfc3339))
          : badge(expired ? 'expired' : 'valid'),
      ],
    ];
    return [
      h(
        'dl',
        { class: 'facts', id: 'cert-facts' },
        ...facts.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]),
      ),
      h('h2', {}, 'PEM'),
      h('pre', { class: 'log', id: 'cert-pem', tabindex: 0 }, cert.certificate),
      h(
        'div',
        { class: 'buttons' },
        copyButton('Copy PEM', cert.certificate, status),
        download(
          'Download PEM',
          'secrets',
          `${mount}cert/${enc(serial)}/raw/pem`,
          `${serial.replace(/:/g, '-')}.pem`,
        ),
        revoked
          ? null
          : revokeButton(mount, serial, 'Revoke certificate', status, () => view.refresh(true)),
      ),
      status,
      h('p', {}, h('a', { href: '#/secrets' }, `All certificates of ${mount}`)),
    ];
  });
  return view;
}
