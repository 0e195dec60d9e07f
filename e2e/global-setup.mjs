// Decompress the kernel-made fixtures once for the browser tests.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { FIXTURES, TMP } from './oracle.mjs';

export default function globalSetup() {
  mkdirSync(TMP, { recursive: true });
  for (const f of readdirSync(FIXTURES)) {
    // Images, and the external log devices beside some of them.
    if (!f.endsWith('.img.zst') && !f.endsWith('.log.zst')) continue;
    const out = join(TMP, f.replace(/\.zst$/, ''));
    // Decompress again when the committed fixture is newer than the copy.
    const stale = !existsSync(out) || statSync(out).mtimeMs < statSync(join(FIXTURES, f)).mtimeMs;
    if (stale) execFileSync('zstd', ['-d', '-q', '-f', join(FIXTURES, f), '-o', out]);
  }
}
