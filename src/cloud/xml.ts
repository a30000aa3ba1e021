/**
 * A tiny XML writer for the Query protocol's responses. A node is a text value, a list of
 * `member` items, or an object of child elements; `undefined` children are left out.
 */
export type XmlNode = string | number | boolean | undefined | XmlList | { [name: string]: XmlNode };

/** A list renders as repeated `<member>` elements, as the Query protocol does. */
export class XmlList {
  constructor(readonly items: readonly XmlNode[]) {}
}

/** Wraps items so they render as `<member>` children. */
export const members = (items: readonly XmlNode[]): XmlList => new XmlList(items);

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&apos;',
};

/** Escapes text for element content. */
export const escapeXml = (s: string): string => s.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);

function render(node: XmlNode): string {
  if (node === undefined) return '';
  if (typeof node === 'string') return escapeXml(node);
  if (typeof node === 'number' || typeof node === 'boolean') return String(node);
  if (node instanceof XmlList)
    return node.items.map((m) => `<member>${render(m)}</member>`).join('');
  return Object.entries(node)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `<${k}>${render(v)}</${k}>`)
    .join('');
}

/** `<OpResponse xmlns=…><OpResult>…</OpResult><ResponseMetadata>…</ResponseMetadata></OpResponse>`. */
export function successXml(
  action: string,
  namespace: string,
  result: XmlNode | null,
  requestId: string,
): string {
  const body = result === null ? '' : `<${action}Result>${render(result)}</${action}Result>`;
  return (
    `<${action}Response xmlns="${namespace}">${body}` +
    `<ResponseMetadata><RequestId>${escapeXml(requestId)}</RequestId></ResponseMetadata>` +
    `</${action}Response>`
  );
}

/** The `ErrorResponse` document every AWS SDK expects from a Query-protocol service. */
export function errorXml(
  namespace: string,
  error: { type: string; code: string; message: string },
  requestId: string,
): string {
  return (
    `<ErrorResponse xmlns="${namespace}"><Error><Type>${error.type}</Type>` +
    `<Code>${escapeXml(error.code)}</Code><Message>${escapeXml(error.message)}</Message></Error>` +
    `<RequestId>${escapeXml(requestId)}</RequestId></ErrorResponse>`
  );
}
