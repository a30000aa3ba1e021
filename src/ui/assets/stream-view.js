// One stream: its machine's diagram with the state highlighted, a slider through its history and
// the events with their audit metadata. The server folds the stream; the page only draws.
import { h, problem, v1 } from './lib.js';

const diagrams = new Map();

async function diagramSvg(machine) {
  if (!diagrams.has(machine)) {
    diagrams.set(
      machine,
      await v1(`sys/audit/machines/${encodeURIComponent(machine)}/diagram`, { text: true }),
    );
  }
  return diagrams.get(machine);
}

/** Parse the server's SVG (Graphviz output) into a node for the page. */
export function svgNode(text) {
  const doc = new DOMParser().parseFromString(text, 'image/svg+xml');
  const svg = doc.documentElement;
  svg.setAttribute('aria-hidden', 'true');
  svg.setAttribute('focusable', 'false');
  return document.importNode(svg, true);
}

/** Scroll a diagram's frame so that `node` sits in its middle, without moving the page. */
export function centreOn(figure, node) {
  const f = figure.getBoundingClientRect();
  const n = node.getBoundingClientRect();
  figure.scrollLeft += n.left - f.left - (f.width - n.width) / 2;
  figure.scrollTop += n.top - f.top - (f.height - n.height) / 2;
}

/** A button that switches a diagram between its own size (scrolling) and fitting its frame. */
export function fitButton(figure) {
  const button = h(
    'button',
    { type: 'button', class: 'fit', 'aria-pressed': 'false' },
    'Fit diagram to frame',
  );
  button.addEventListener('click', () => {
    const on = figure.classList.toggle('fit');
    button.setAttribute('aria-pressed', String(on));
  });
  return button;
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
  container.append(
    status,
    h('div', { class: 'slider' }, sliderLabel, slider),
    caption,
    fitButton(figure),
    figure,
    table,
  );

  let data = null;
  let at = 0;

  const stateAt = (i) => (i === 0 ? data.initial : data.history[i - 1]);

  function show(i) {
    at = i;
    slider.value = String(i);
    const s = stateAt(i);
    const leaves = new Set(s?.leaves ?? []);
    let first = null;
    for (const g of figure.querySelectorAll('g.node')) {
      const name = (g.id ?? '').replace(/^state-/, '');
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
      figure.prepend(svgNode(await diagramSvg(data.machine)));
      figure.setAttribute('aria-label', `State diagram of the ${data.machine} machine`);
      figure.setAttribute('role', 'group');
    }
    slider.max = String(data.history.length);
    renderRows();
    show(following ? data.history.length : Math.min(at, data.history.length));
  }

  slider.addEventListener('input', () => show(Number(slider.value)));

  const ready = load().catch((err) => {
    status.replaceChildren(problem(err));
  });
  return {
    ready,
    refresh: () =>
      load().then(
        () => status.replaceChildren(),
        (err) => status.replaceChildren(problem(err)),
      ),
  };
}
