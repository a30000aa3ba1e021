import type { MatchResult, Router } from '@koa/router';
import { Lru } from '../core/lru.js';

/** (method, path) pairs remembered per router; past it the least recently used goes. */
const LIMIT = 1000;
/** Longer paths are matched afresh each time (a client chooses them; the memo stays small). */
const MAX_PATH = 256;

/**
 * Makes `router` remember which of its layers match a path and method. Matching tries every
 * layer's regular expression in turn (a mount's certificate authority router has a few hundred),
 * and a request was matched more than once: the secrets kernel checks that a path is routed before
 * it dispatches it, and the runs kernel walks several routers. Which layers match depends only on
 * the layers, so the memo is forgotten when a route is added. Each call gets arrays of its own:
 * the router keeps the one it is given on the context and appends to it.
 */
export function rememberMatches(router: Router): Router {
  const match = router.match.bind(router);
  const memo = new Lru<string, MatchResult>(LIMIT);
  let layers = router.stack.length;
  router.match = (path: string, method: string): MatchResult => {
    if (path.length > MAX_PATH) return match(path, method);
    if (router.stack.length !== layers) {
      memo.clear();
      layers = router.stack.length;
    }
    const key = `${method} ${path}`;
    const found = memo.getOrSet(key, () => match(path, method));
    return { path: [...found.path], pathAndMethod: [...found.pathAndMethod], route: found.route };
  };
  return router;
}
