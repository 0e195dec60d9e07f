// The replayed view: a crashed image's files appear after replay, as the
// kernel's own recovery of a copy lists them.
import { test, expect } from '@playwright/test';
import { join } from 'node:path';
import { kernelListing, TMP } from './oracle.mjs';

function children(listing, dir) {
  const prefix = dir === '/' ? '/' : `${dir}/`;
  return listing.filter((e) => e.path !== dir && e.path.startsWith(prefix) && !e.path.slice(prefix.length).includes('/'))
    .map((e) => e.path.slice(prefix.length)).sort();
}

test('the replay toggle shows the files the kernel recovers, and back', async ({ page }) => {
  const name = 'v5-4k-dirty';
  const before = kernelListing(name);
  const after = kernelListing(name, 'recovered-ls.jsonl');
  await page.goto('/');
  await expect(page.getByText('Ready.')).toBeVisible();
  await page.getByTestId('image-input').setInputFiles(join(TMP, `${name}.img`));
  await expect(page.getByTestId('image-name')).toHaveText(`${name}.img`);
  await page.evaluate(() => { window.location.hash = '#/path/'; });
  await expect(page.getByTestId('dir-path')).toHaveText('/');
  await expect(page.getByTestId('dir-entry')).toHaveCount(children(before, '/').length);

  await page.getByTestId('replay-toggle').click();
  await expect(page.getByTestId('replay-toggle')).toBeChecked();
  await expect(page.getByTestId('replay-summary')).toBeVisible();
  const want = children(after, '/');
  expect(want.length).toBeGreaterThan(3);
  await expect(page.getByTestId('dir-entry')).toHaveCount(want.length);
  const got = await page.getByTestId('dir-entry').evaluateAll((els) => els.map((e) => e.dataset.name));
  expect(got.sort()).toEqual(want);

  // A file inside a recovered directory, with its size as the kernel has it.
  const f = after.find((e) => e.type === 'file' && e.size > 0 && e.path.split('/').length === 3);
  await page.evaluate((h) => { window.location.hash = h; }, `#/path${f.path}`);
  await expect(page.getByTestId('inode-size')).toHaveText(String(f.size));

  await page.evaluate(() => { window.location.hash = '#/path/'; });
  await page.getByTestId('replay-toggle').click();
  await expect(page.getByTestId('replay-toggle')).not.toBeChecked();
  await expect(page.getByTestId('replay-summary')).toHaveCount(0);
  await expect(page.getByTestId('dir-entry')).toHaveCount(children(before, '/').length);
});

import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { FIXTURES } from './oracle.mjs';

test('the downloaded recovered image equals the kernel-recovered copy outside the log and superblock', async ({ page }) => {
  const name = 'v5-4k-dirty';
  const oracle = readFileSync(join(FIXTURES, `${name}.recovered-blocks.txt`), 'utf8');
  const bs = Number(oracle.match(/# blocksize (\d+)/)[1]);
  const [, logFirst, logLast] = oracle.match(/linear blocks (\d+)\.\.(\d+)/).map(Number);
  const changed = new Map(oracle.split('\n').filter((l) => /^\d+ /.test(l)).map((l) => l.split(' ')).map(([b, h]) => [Number(b), h]));
  // The download path (where the browser cannot write a picked file).
  await page.addInitScript(() => { delete window.showSaveFilePicker; });
  await page.goto('/');
  await expect(page.getByText('Ready.')).toBeVisible();
  await page.getByTestId('image-input').setInputFiles(join(TMP, `${name}.img`));
  await expect(page.getByTestId('image-name')).toHaveText(`${name}.img`);
  await page.getByTestId('replay-toggle').click();
  await expect(page.getByTestId('replay-summary')).toBeVisible();
  const wait = page.waitForEvent('download');
  await page.getByTestId('download-recovered').click();
  const got = readFileSync(await (await wait).path());
  const dirty = readFileSync(join(TMP, `${name}.img`));
  expect(got.length).toBe(dirty.length);
  let compared = 0;
  for (let b = 1; b * bs < got.length; b++) {
    if (b >= logFirst && b <= logLast) continue;
    const block = got.subarray(b * bs, (b + 1) * bs);
    const want = changed.get(b);
    if (want) {
      expect(createHash('sha256').update(block).digest('hex'), `block ${b}`).toBe(want);
      compared++;
    } else {
      expect(Buffer.compare(block, dirty.subarray(b * bs, (b + 1) * bs)), `block ${b} unchanged`).toBe(0);
    }
  }
  expect(compared).toBeGreaterThan(100);
});
