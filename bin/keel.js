#!/usr/bin/env node
// Runs the TypeScript entry point in this same process through tsx's loader, so `keel` works from
// a checkout without a build. One process: signals reach the daemon itself, and `keel` exits
// when and as the daemon does.
// Before anything loads a native module: better-sqlite3 13 needs Node-API of Node 22 or later
// and crashes on older Node rather than saying so.
const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 12)) {
  process.stderr.write(
    `keel needs Node.js 22.12 or later (24 LTS recommended); this is ${process.version}\n`,
  );
  process.exit(1);
}
const { register } = await import('tsx/esm/api');

register();
await import('../src/main.ts');
