// The Machines view: every lifecycle machine's diagram with the number of streams in each state
// drawn on the state itself, the run lifecycle first. A diagram opens at a legible size around
// the states where streams are; live updates change only the counts, never the reader's place.
import { enc, h, problem, table, v1 } from './lib.js';
import { centreOn, svgNode, zoomControls } from './stream-view.js';

/** Machines in the order a reader looks for them: runs, then secrets, then ACME's parts. */
const ORDER = [
  'run',
  'configuration-version',
  'certificate',
  'lease',
  'static-role',
  'acme-order',
  'acme-authorization',
  'acme-challenge',
  'acme-account',
];

const rank = (name) => {
  const i = ORDER.indexOf(name);
  return i === -1 ? ORDER.length : i;
};

export const byReadingOrder = (a, b) => rank(a.name) - rank(b.name) || a.name.localeCompare(b.name);

/** Room around the drawing for the badges on its outermost states (SVG units). */
const BADGE_ROOM = 12;

/** The corners of a node's outline, read from its path or polygon (no layout needed). */
function outline(g) {
  const xs = [];
  const ys = [];
  for (const el of g.querySelectorAll('path, polygon, ellipse')) {
    if (el.tagName === 'ellipse') {
      const [cx, cy, rx, ry] = ['cx', 'cy', 'rx', 'ry'].map((a) => Number(el.getAttribute(a)));
      xs.push(cx - rx, cx + rx);
      ys.push(cy - ry, cy + ry);
      continue;
    }
    const numbers = (el.getAttribute('d') ?? el.getAttribute('points') ?? '')
      .match(/-?\d+(\.\d+)?/g)
      ?.map(Number);
    for (let i = 0; i + 1 < (numbers?.length ?? 0); i += 2) {
      xs.push(numbers[i]);
      ys.push(numbers[i + 1]);
    }
  }
  if (xs.length === 0) return null;
  return { right: Math.max(...xs), top: Math.min(...ys) };
}

/** A count badge at a state's top right corner. */
function badge(g, count, final) {
  const box = outline(g);
  if (box === null) return;
  const text = String(count);
  // Drawn in the diagram's own (SVG) namespace.
  const SVG = g.namespaceURI;
  const w = Math.max(18, 8 + text.length * 7);
  const el = document.createElementNS(SVG, 'g');
  el.setAttribute('class', `badge${final ? ' final' : ''}`);
  const rect = document.createElementNS(SVG, 'rect');
  rect.setAttribute('x', String(box.right - w / 2));
  rect.setAttribute('y', String(box.top - 9));
  rect.setAttribute('width', String(w));
  rect.setAttribute('height', '18');
  rect.setAttribute('rx', '9');
  const label = document.createElementNS(SVG, 'text');
  label.setAttribute('x', String(box.right));
  label.setAttribute('y', String(box.top + 4));
  label.setAttribute('text-anchor', 'middle');
  label.textContent = text;
  el.append(rect, label);
  g.append(el);
}

/** Mark the states that hold streams and draw their counts on them. */
function drawCounts(figure, machine) {
  const svg = figure.querySelector('svg');
  if (!svg) return;
  const states = new Map(machine.states.map((s) => [s.name, s]));
  for (const g of svg.querySelectorAll('g.node')) {
    g.querySelector('g.badge')?.remove();
    const s = states.get((g.dataset.id ?? '').replace(/^state-/, ''));
    g.classList.toggle('occupied', (s?.count ?? 0) > 0);
    if (s !== undefined && s.count > 0) badge(g, s.count, s.final);
  }
}

/** Widen the drawing's frame so that badges on its outermost states are not cut off. */
function makeRoom(svg) {
  const box = svg.viewBox.baseVal;
  if (!box || box.width === 0) return;
  svg.setAttribute(
    'viewBox',
    `${box.x} ${box.y - BADGE_ROOM} ${box.width + BADGE_ROOM} ${box.height + BADGE_ROOM}`,
  );
}

/** Scroll the frame to the states that hold streams (or to the start when none does). */
function showOccupied(figure) {
  const nodes = [...figure.querySelectorAll('g.node.occupied')];
  if (nodes.length === 0) {
    const start = [...figure.querySelectorAll('g.node')].find(
      (g) => g.querySelector('title')?.textContent === '__start',
    );
    if (start) centreOn(figure, start);
    return;
  }
  const f = figure.getBoundingClientRect();
  const boxes = nodes.map((n) => n.getBoundingClientRect());
  const left = Math.min(...boxes.map((b) => b.left));
  const top = Math.min(...boxes.map((b) => b.top));
  const right = Math.max(...boxes.map((b) => b.right));
  const bottom = Math.max(...boxes.map((b) => b.bottom));
  // Centre them; when they do not all fit, start from the first of them (in the drawing's order),
  // which is then wholly in view, rather than from a corner no one state may be near.
  const first = boxes[0];
  const dx =
    right - left <= f.width ? (left + right - f.width) / 2 - f.left : first.left - f.left - 16;
  const dy =
    bottom - top <= f.height ? (top + bottom - f.height) / 2 - f.top : first.top - f.top - 16;
  figure.scrollLeft += dx;
  figure.scrollTop += dy;
}

const plural = (n, one) => `${n} ${one}${n === 1 ? '' : 's'}`;

/** What the diagram's badges say, as text (the drawing itself is hidden from screen readers). */
const summary = (m) => {
  const held = m.states.filter((s) => s.count > 0);
  return held.length === 0
    ? 'No streams yet.'
    : `Streams by state: ${held.map((s) => `${s.name} ${s.count}`).join(', ')}.`;
};

const countsTable = (m) =>
  table(
    `Streams of ${m.name} in each state`,
    ['State', 'Final', 'Streams'],
    m.states.map((s) => [s.name, s.final ? 'yes' : '', String(s.count)]),
  );

export function machines(container) {
  container.append(h('h1', {}, 'Machines'));
  const body = h('div');
  container.append(body);
  /** Per machine: what changes on a live update. */
  const shown = new Map();

  async function build() {
    const { machines: list } = await v1('sys/audit/machines');
    list.sort(byReadingOrder);
    if (list.length === 0) {
      body.replaceChildren(h('p', { class: 'empty' }, 'No machines are registered.'));
      return;
    }
    const toc = h(
      'ul',
      { class: 'machine-list' },
      ...list.map((m) =>
        h(
          'li',
          {},
          h('a', { href: `#machine-${m.name}`, 'data-machine': m.name }, m.name),
          ' ',
          h('span', { class: 'count', 'data-total': m.name }, ''),
          h('span', { class: 'sr-only' }, ' streams'),
        ),
      ),
    );
    // Links inside the page move within it (the address's hash is the page's route).
    toc.addEventListener('click', (ev) => {
      const a = /** @type {Element} */ (ev.target).closest('a[data-machine]');
      if (!(a instanceof HTMLElement)) return;
      ev.preventDefault();
      document.getElementById(`machine-${a.dataset.machine}`)?.scrollIntoView();
    });
    const sections = await Promise.all(list.map(section));
    body.replaceChildren(h('nav', { 'aria-label': 'Machines on this page' }, toc), ...sections);
    update(list);
    // Every diagram takes its size first: the page's final layout (a scrollbar appearing, say)
    // must not move a frame after it was scrolled to its states.
    for (const { fit } of shown.values()) fit();
    for (const parts of shown.values()) {
      showOccupied(parts.figure);
      parts.placed = true;
    }
  }

  async function section(m) {
    const svg = svgNode(await v1(`sys/audit/machines/${enc(m.name)}/diagram`, { text: true }));
    makeRoom(svg);
    const figure = h(
      'figure',
      {
        class: 'diagram',
        role: 'group',
        'aria-label': `State diagram of the ${m.name} machine`,
        // It scrolls (pans) by itself: keyboards reach it too.
        tabindex: 0,
      },
      svg,
    );
    const caption = h('p', { class: 'diagram-summary' });
    const link = h('p', {});
    const counts = h('div', {});
    const { controls, fit } = zoomControls(figure);
    const parts = { figure, fit, caption, link, counts, placed: false, moved: false };
    shown.set(m.name, parts);
    // The frame follows the states that hold streams, as counts change and as the page's layout
    // settles, until the reader moves it (pans, zooms, or uses its keys).
    const reader = () => {
      parts.moved = true;
    };
    for (const kind of ['wheel', 'pointerdown', 'touchstart', 'keydown'])
      figure.addEventListener(kind, reader, { passive: true });
    controls.addEventListener('click', reader);
    let width = 0;
    new ResizeObserver(() => {
      if (figure.clientWidth === width) return;
      width = figure.clientWidth;
      follow(parts, true);
    }).observe(figure);
    return h(
      'section',
      { 'aria-labelledby': `machine-${m.name}`, class: 'machine' },
      h('h2', { id: `machine-${m.name}` }, m.name),
      link,
      caption,
      controls,
      figure,
      h('details', {}, h('summary', {}, 'Counts as a table'), counts),
    );
  }

  /** Scroll a placed frame to its occupied states again (sized anew first), unless moved. */
  function follow(parts, resize = false) {
    if (!parts.placed || parts.moved) return;
    if (resize) parts.fit();
    showOccupied(parts.figure);
  }

  function update(list) {
    for (const m of list) {
      const parts = shown.get(m.name);
      if (parts === undefined) continue;
      const total = m.states.reduce((n, s) => n + s.count, 0);
      drawCounts(parts.figure, m);
      follow(parts);
      parts.caption.textContent = summary(m);
      parts.link.replaceChildren(
        m.stream_prefix === null
          ? 'Its streams are not browsable.'
          : h(
              'a',
              { href: `#/streams/${enc(m.name)}` },
              `${plural(total, 'stream')} (${m.stream_prefix}…)`,
            ),
      );
      parts.counts.replaceChildren(countsTable(m));
      const badge = body.querySelector(`[data-total="${CSS.escape(m.name)}"]`);
      if (badge) {
        badge.textContent = String(total);
        badge.classList.toggle('zero', total === 0);
      }
    }
  }

  const fail = (err) => {
    shown.clear();
    body.replaceChildren(problem(err));
  };
  /** The drawing under way, and whether a live update came while it was. */
  let drawing = null;
  let again = false;
  const draw = () => {
    drawing = (async () => {
      await build();
      // The counts it drew may be older than an update that came meanwhile: read them again.
      while (again && shown.size > 0) {
        again = false;
        update((await v1('sys/audit/machines')).machines);
      }
    })()
      .catch(fail)
      .finally(() => {
        drawing = null;
      });
    return drawing;
  };
  const ready = draw();
  return {
    ready,
    refresh: async () => {
      // One drawing at a time: a second one would put diagrams on the page that the first one's
      // bookkeeping no longer reaches, and no later update would change them.
      if (drawing !== null) {
        again = true;
        return;
      }
      if (shown.size === 0) return draw();
      try {
        const { machines: list } = await v1('sys/audit/machines');
        update(list);
      } catch (err) {
        fail(err);
      }
    },
  };
}
