import type { Action, ActionContext } from './context.js';
import { arn, stamp } from './context.js';
import { CloudError } from './errors.js';
import { listResult, requireUser, targetUserName, userResource } from './iam-common.js';
import { newSeed, totpMatches } from './mfa.js';
import { checkName, checkPath } from './params.js';
import type { MfaRow } from './store.js';

function requireDevice(c: ActionContext): MfaRow {
  const serial = c.params.required('SerialNumber');
  const d = c.store.get<MfaRow>('SELECT * FROM mfa_devices WHERE serial = ?', serial);
  if (!d)
    throw new CloudError('NoSuchEntity', `MFA Device with serial number ${serial} does not exist.`);
  return d;
}

const userNamed = (c: ActionContext): string => userResource(c, c.params.required('UserName'));

/** Virtual MFA devices: enough to make GetSessionToken's SerialNumber/TokenCode meaningful. */
export const mfaActions: Record<string, Action> = {
  CreateVirtualMFADevice: {
    resource: (c) =>
      arn.mfa(
        c.account,
        checkPath(c.params.get('Path')),
        c.params.required('VirtualMFADeviceName'),
      ),
    run: (c) => {
      const name = checkName(
        c.params.required('VirtualMFADeviceName'),
        'virtualMFADeviceName',
        226,
      );
      const serial = arn.mfa(c.account, checkPath(c.params.get('Path')), name);
      if (c.store.get<MfaRow>('SELECT * FROM mfa_devices WHERE serial = ?', serial)) {
        throw new CloudError(
          'EntityAlreadyExists',
          'MFADevice entity at the same path and name already exists.',
        );
      }
      const seed = newSeed();
      c.store.run(
        'INSERT INTO mfa_devices (serial, name, user_name, seed, create_date) VALUES (?, ?, NULL, ?, ?)',
        serial,
        name,
        c.store.seal(seed),
        stamp(c.now),
      );
      return {
        VirtualMFADevice: {
          SerialNumber: serial,
          // A blob on the wire: base64 of the base32 text an authenticator app takes.
          Base32StringSeed: Buffer.from(seed).toString('base64'),
        },
      };
    },
  },
  EnableMFADevice: {
    resource: userNamed,
    run: (c) => {
      const u = requireUser(c, c.params.required('UserName'));
      const d = requireDevice(c);
      if (d.user_name !== null) {
        throw new CloudError('EntityAlreadyExists', 'MFA Device is already in use.');
      }
      const code1 = c.params.required('AuthenticationCode1');
      const code2 = c.params.required('AuthenticationCode2');
      // Two consecutive codes, as IAM asks: the current window and the one before it.
      const seed = c.store.unseal(d.seed);
      const ok =
        totpMatches(seed, new Date(c.now.getTime() - 30_000), code1) &&
        totpMatches(seed, c.now, code2);
      if (!ok || code1 === code2) {
        throw new CloudError(
          'InvalidAuthenticationCode',
          'Authentication code for device is not valid.',
        );
      }
      c.store.run(
        'UPDATE mfa_devices SET user_name = ?, enable_date = ? WHERE serial = ?',
        u.name,
        stamp(c.now),
        d.serial,
      );
      return null;
    },
  },
  DeactivateMFADevice: {
    resource: userNamed,
    run: (c) => {
      const u = requireUser(c, c.params.required('UserName'));
      const d = requireDevice(c);
      if (d.user_name?.toLowerCase() !== u.name.toLowerCase()) {
        throw new CloudError(
          'NoSuchEntity',
          `MFA Device with serial number ${d.serial} does not exist.`,
        );
      }
      c.store.run(
        'UPDATE mfa_devices SET user_name = NULL, enable_date = NULL WHERE serial = ?',
        d.serial,
      );
      return null;
    },
  },
  DeleteVirtualMFADevice: {
    resource: (c) => c.params.required('SerialNumber'),
    run: (c) => {
      const d = requireDevice(c);
      if (d.user_name !== null)
        throw new CloudError('DeleteConflict', 'MFA Device is in use by user.');
      c.store.run('DELETE FROM mfa_devices WHERE serial = ?', d.serial);
      return null;
    },
  },
  ListMFADevices: {
    resource: (c) => userResource(c, targetUserName(c)),
    run: (c) => {
      const u = requireUser(c, targetUserName(c));
      const rows = c.store.all<MfaRow>(
        'SELECT * FROM mfa_devices WHERE user_name = ? ORDER BY serial',
        u.name,
      );
      return listResult(c.params, 'MFADevices', rows, (d) => ({
        UserName: u.name,
        SerialNumber: d.serial,
        EnableDate: d.enable_date ?? undefined,
      }));
    },
  },
};
