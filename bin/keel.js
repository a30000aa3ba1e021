#!/usr/bin/env node
// Runs the TypeScript entry point in this same process through tsx's loader, so `keel` works from
// a checkout without a build. One process: signals reach the daemon itself, and `keel` exits
// when and as the daemon does.
import { register } from 'tsx/esm/api';

register();
await import('../src/main.ts');
