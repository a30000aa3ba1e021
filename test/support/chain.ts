import { randomBytes } from 'node:crypto';
import type { Chain } from '../../src/core/chain.js';
import { ChainKey, openChain } from '../../src/core/chain.js';
import type { Db } from '../../src/core/database.js';

/** The audit chain of a test database, under a fresh key unless one is given. */
export const testChain = (db: Db, masterKey: Buffer = randomBytes(32)): Chain =>
  openChain(db, new ChainKey(masterKey));
