// One stream: its machine's diagram with the state highlighted, a slider through its history and
// the events with their audit metadata. The server folds the stream; the page only draws.
import { h, oneAtATime, problem, v1 } from './lib.js';

const diagrams = new Map();

/** A machine's diagram, whole or (with `focus`) only the states next to that one; kept. */
async function diagramSvg(machine, focus) {
  const key = `${machine} ${focus ?? ''}`;
  if (!diagrams.has(key)) {
    const query = focus ? `?focus=${encodeURIComponent(focus)}` : '';
    diagrams.set(
      key,
      await v1(`sys/audit/machines/${encodeURIComponent(machine)}/diagram${query}`, {
        text: true,
      }),
    );
  }
  return diagrams.get(key);
}

/** Machines with more states than this open around the current state, not whole. */
const LARGE = 12;

/** Parse the server's SVG (Graphviz output) into a node for the page. */
export function svgNode(text) {
  const doc = new DOMParser().parseFromString(text, 'image/svg+xml');
  const svg = doc.documentElement;
  svg.setAttribute('aria-hidden', 'true');
  svg.setAttribute('focusable', 'false');
  // Graphviz names every graph, node and edge (`graph0`, `state-…`): kept as data, so several
  // diagrams on one page have no ids in common.
  for (const el of /** @type {NodeListOf<SVGElement>} */ (svg.querySelectorAll('[id]'))) {
    el.dataset.id = el.id;
    el.removeAttribute('id');
  }
  return document.importNode(svg, true);
}

/** Scroll a diagram's frame so that `node` sits in its middle, without moving the page. */
export function centreOn(figure, node) {
  const f = figure.getBoundingClientRect();
  const n = node.getBoundingClientRect();
  figure.scrollLeft += n.left - f.left - (f.width - n.width) / 2;
  figure.scrollTop += n.top - f.top - (f.height - n.height) / 2;
}

/** Graphviz draws state labels at 11 pt: below this scale they would be under 10 px tall. */
const LEGIBLE = 0.7;
const PX_PER_PT = 96 / 72;

/**
 * Zoom controls for a diagram's frame: larger, smaller, Graphviz's own size, and fitted to the
 * frame's width — but never below the legible size: a large machine then scrolls (pans) inside
 * its frame instead. `fit` is the last, for a view to open with.
 */
export function zoomControls(figure) {
  let scale = 1;
  const apply = (next) => {
    const svg = figure.querySelector('svg');
    const box = svg?.viewBox.baseVal;
    if (!box || box.width === 0) return;
    scale = Math.min(4, Math.max(LEGIBLE, next));
    svg.setAttribute('width', `${Math.round(box.width * PX_PER_PT * scale)}px`);
    svg.setAttribute('height', `${Math.round(box.height * PX_PER_PT * scale)}px`);
  };
  const fit = () => {
    const box = figure.querySelector('svg')?.viewBox.baseVal;
    if (!box || box.width === 0) return;
    apply(Math.min(1, (figure.clientWidth - 2) / (box.width * PX_PER_PT)));
  };
  const button = (label, act) => h('button', { type: 'button', onclick: act }, label);
  const controls = h(
    'div',
    { class: 'buttons zoom', role: 'group', 'aria-label': 'Diagram size' },
    button('Zoom in', () => apply(scale * 1.25)),
    button('Zoom out', () => apply(scale / 1.25)),
    button('Actual size', () => apply(1)),
    button('Fit to frame', fit),
  );
  return { controls, fit };
}

const actorText = (a) => (a ? `${a.name} (${a.accessor})` : '—');

/**
 * Render a stream into `container`. Returns `{ ready, refresh }`; `refresh` refetches the history
 * and, if the slider was at the newest event, follows the stream to its new state.
 */
export function streamView(container, stream) {
  const figure = h('figure', { class: 'diagram' });
  const caption = h('p', { id: 'as-of', 'aria-live': 'polite' });
  const slider = h('input', {
    type: 'range',
    id: 'history-slider',
    min: 0,
    max: 0,
    value: 0,
    step: 1,
  });
  const sliderLabel = h('label', { for: 'history-slider' }, 'Step through history');
  const tbody = h('tbody');
  const table = h(
    'table',
    { class: 'history' },
    h('caption', {}, 'Events of ', h('code', {}, stream)),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        ...['#', 'Event', 'Time', 'Actor', 'Request id', 'State after'].map((t) =>
          h('th', { scope: 'col' }, t),
        ),
      ),
    ),
    tbody,
  );
  const status = h('div');
  let whole = false;
  /** What the figure shows (a focus state, or '' for the whole machine) and what was last asked. */
  let drawn = null;
  let wanted = null;
  const scope = h(
    'button',
    { type: 'button', id: 'diagram-scope', 'aria-pressed': 'false' },
    'Show the whole machine',
  );
  container.append(
    status,
    h('div', { class: 'slider' }, sliderLabel, slider),
    caption,
    h('div', { class: 'buttons' }, scope, zoomControls(figure).controls),
    figure,
    // Wider than a phone: it scrolls sideways in its own region, never the page.
    h(
      'div',
      { class: 'scroll', role: 'region', 'aria-label': `Events of ${stream}`, tabindex: 0 },
      table,
    ),
  );

  let data = null;
  let at = 0;
  let large = false;

  /** Draw the whole machine, or (for a large one) the part around `state`, once per choice. */
  async function draw(state) {
    const focus = large && !whole ? state : null;
    const key = `${focus ?? ''}`;
    if (drawn === key && figure.querySelector('svg')) return;
    wanted = key;
    const svg = svgNode(await diagramSvg(data.machine, focus ?? undefined));
    // Keys may have asked for another state meanwhile: only the last one asked is drawn.
    if (wanted !== key) return;
    figure.querySelector('svg')?.remove();
    figure.prepend(svg);
    drawn = key;
  }

  scope.addEventListener('click', async () => {
    whole = !whole;
    scope.setAttribute('aria-pressed', String(whole));
    scope.textContent = whole ? 'Show around the current state' : 'Show the whole machine';
    await draw(stateAt(at)?.leaves?.[0]);
    show(at);
  });

  const stateAt = (i) => (i === 0 ? data.initial : data.history[i - 1]);

  function show(i) {
    at = i;
    slider.value = String(i);
    const s = stateAt(i);
    const leaf = s?.leaves?.[0];
    if (large && !whole && leaf && drawn !== leaf) {
      // Keys may have moved the slider on meanwhile: show where it is now.
      void draw(leaf).then(() => show(at));
      return;
    }
    const leaves = new Set(s?.leaves ?? []);
    let first = null;
    for (const g of /** @type {NodeListOf<SVGElement>} */ (figure.querySelectorAll('g.node'))) {
      const name = (g.dataset.id ?? '').replace(/^state-/, '');
      const on = leaves.has(name);
      g.classList.toggle('current', on);
      if (on && first === null) first = g;
    }
    // Big machines scroll inside their frame: centre the highlighted state there, without
    // moving the page itself under the reader.
    if (first !== null) centreOn(figure, first);
    const total = data.history.length;
    const event = i === 0 ? null : data.history[i - 1];
    const where =
      event === null
        ? 'before the first event'
        : `as of event ${i} of ${total} (${event.type}, ${event.time})`;
    caption.replaceChildren(
      data.machine === null
        ? `No machine folds this stream; ${where}.`
        : h('span', {}, 'State ', h('strong', { id: 'current-state' }, s.state), ` ${where}`),
    );
    slider.setAttribute('aria-valuetext', `${s?.state ?? 'no state'}, ${where}`);
    for (const row of tbody.rows) {
      const on = Number(row.dataset.index) === i;
      row.classList.toggle('selected', on);
      if (on) row.setAttribute('aria-current', 'step');
      else row.removeAttribute('aria-current');
    }
  }

  function renderRows() {
    tbody.replaceChildren(
      ...data.history.map((e, k) =>
        h(
          'tr',
          { 'data-index': k + 1 },
          h(
            'td',
            {},
            h('button', { type: 'button', class: 'link', onclick: () => show(k + 1) }, e.version),
          ),
          h('td', {}, e.type),
          h('td', {}, h('time', { datetime: e.time }, e.time)),
          h('td', {}, actorText(e.actor)),
          h('td', {}, h('code', {}, e.request_id ?? '—')),
          h('td', {}, e.state || '—'),
        ),
      ),
    );
  }

  async function load() {
    const following = data === null || at === data.history.length;
    data = await v1(`sys/audit/streams/${encodeURIComponent(stream)}`);
    if (data.machine !== null && !figure.querySelector('svg')) {
      const { machines: list } = await v1('sys/audit/machines');
      large = (list.find((m) => m.name === data.machine)?.states.length ?? 0) > LARGE;
      scope.hidden = !large;
      const last = data.history.length === 0 ? data.initial : data.history.at(-1);
      await draw(last?.leaves?.[0]);
      figure.setAttribute('aria-label', `State diagram of the ${data.machine} machine`);
      figure.setAttribute('role', 'group');
    }
    slider.max = String(data.history.length);
    renderRows();
    show(following ? data.history.length : Math.min(at, data.history.length));
  }

  slider.addEventListener('input', () => show(Number(slider.value)));

  // A refresh that comes while the first load still draws waits for it: both would draw.
  const loadOnce = oneAtATime(load);
  const ready = loadOnce().catch((err) => {
    status.replaceChildren(problem(err));
  });
  return {
    ready,
    refresh: () =>
      loadOnce().then(
        () => status.replaceChildren(),
        (err) => status.replaceChildren(problem(err)),
      ),
  };
}
