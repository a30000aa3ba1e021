// The signed-in user's runs API tokens (where the reference's `/app/settings/tokens` leads):
// list them, make one (its value is shown once), delete one.
import { api, h, live, problem, session, table } from './lib.js';

async function send(method, path, body) {
  const res = await fetch(`/api/v2/${path}`, {
    method,
    headers: {
      Authorization: `Bearer ${session.runs}`,
      'Content-Type': 'application/vnd.api+json',
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`the request was refused (${res.status})`);
  return res.status === 204 ? null : res.json();
}

export function tokens(container) {
  container.append(h('h1', {}, 'API tokens'));
  if (session.runs === '') {
    container.append(h('p', {}, 'Sign in with a runs user token to see your tokens.'));
    return null;
  }
  const made = h('div', { id: 'token-made', role: 'status' });
  const description = h('input', { id: 'token-description', name: 'token-description' });
  const form = h(
    'form',
    { class: 'login' },
    h('label', { for: 'token-description' }, 'Description'),
    description,
    h('button', { type: 'submit' }, 'Create token'),
  );
  let view = null;
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      const me = (await api('account/details')).data;
      const doc = await send('POST', `users/${me.id}/authentication-tokens`, {
        data: {
          type: 'authentication-tokens',
          attributes: { description: description.value.trim() || null },
        },
      });
      made.replaceChildren(
        h('p', {}, 'Copy the token now; it is not shown again:'),
        h('pre', { id: 'token-value', tabindex: 0 }, doc.data.attributes.token),
      );
      description.value = '';
      await view?.refresh();
    } catch (err) {
      made.replaceChildren(problem(err));
    }
  });
  container.append(form, made);
  view = live(container, async () => {
    const me = (await api('account/details')).data;
    const list = (await api(`users/${me.id}/authentication-tokens`)).data;
    if (list.length === 0) return h('p', {}, 'No tokens.');
    return table(
      `Tokens of ${me.attributes.username}`,
      ['Description', 'Created', 'Expires', ''],
      list.map((t) => [
        t.attributes.description ?? '',
        t.attributes['created-at'] ?? '',
        t.attributes['expired-at'] ?? 'never',
        h(
          'button',
          {
            type: 'button',
            'aria-label': `Delete token ${t.attributes.description ?? t.id}`,
            onclick: async () => {
              await send('DELETE', `authentication-tokens/${t.id}`);
              await view.refresh();
            },
          },
          'Delete',
        ),
      ]),
    );
  });
  return view;
}
