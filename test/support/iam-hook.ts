import type { IAMClient } from '@aws-sdk/client-iam';
import type { AwsClientFactory } from '../../src/secrets/aws/clients.js';

/**
 * Called before each IAM call the engine sends and after its answer arrived: a test throws from
 * it to stop the engine at that step, as a process killed there would stop.
 */
export type IamHook = (command: string, phase: 'before' | 'after') => void;

type Handler = (args: unknown) => Promise<unknown>;

/** Wraps a client factory so every IAM client it builds runs `hook` around each call. */
export function hookIam(factory: AwsClientFactory, hook: IamHook): AwsClientFactory {
  return (root) => {
    const clients = factory(root);
    const hooked = new WeakSet<IAMClient>();
    return {
      iam() {
        const client = clients.iam();
        if (!hooked.has(client)) {
          hooked.add(client);
          const stack = client.middlewareStack as unknown as {
            add(
              mw: (next: Handler, context: { commandName?: string }) => Handler,
              options: { step: 'initialize'; name: string },
            ): void;
          };
          stack.add(
            (next, context) => async (args) => {
              const command = (context.commandName ?? '').replace(/Command$/, '');
              hook(command, 'before');
              const out = await next(args);
              hook(command, 'after');
              return out;
            },
            { step: 'initialize', name: 'keelTestIamHook' },
          );
        }
        return client;
      },
      sts: () => clients.sts(),
    };
  };
}
