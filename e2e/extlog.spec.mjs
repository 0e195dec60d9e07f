// A filesystem with its log on an external device (make/extlog.sh):
// the data device and the log device dropped together, in either order, or
// the log device added after the data device; the log replayed to the
// kernel's tree after it recovered a copy of the pair.
import { test, expect } from '@playwright/test';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FIXTURES, kernelListing, TMP } from './oracle.mjs';

const NAME = 'extlog';

function children(listing, dir) {
  const prefix = dir === '/' ? '/' : `${dir}/`;
  return listing.filter((e) => e.path !== dir && e.path.startsWith(prefix) && !e.path.slice(prefix.length).includes('/'))
    .map((e) => e.path.slice(prefix.length)).sort();
}

async function expectReplayedTree(page) {
  const after = kernelListing(NAME, 'pair-recovered-ls.jsonl');
  await page.evaluate(() => { window.location.hash = '#/path/'; });
  await expect(page.getByTestId('dir-path')).toHaveText('/');
  await page.getByTestId('replay-toggle').click();
  await expect(page.getByTestId('replay-toggle')).toBeChecked();
  await expect(page.getByTestId('replay-summary')).toBeVisible();
  const want = children(after, '/');
  expect(want).toContain('new');
  await expect(page.getByTestId('dir-entry')).toHaveCount(want.length);
  const got = await page.getByTestId('dir-entry').evaluateAll((els) => els.map((e) => e.dataset.name));
  expect(got.sort()).toEqual(want);
  for (const dir of ['/new', '/docs', '/new/sub']) {
    await page.evaluate((h) => { window.location.hash = h; }, `#/path${dir}`);
    await expect(page.getByTestId('dir-path')).toHaveText(dir);
    await expect(page.getByTestId('dir-count')).toHaveText(String(children(after, dir).length));
  }
}

for (const order of [['img', 'log'], ['log', 'img']]) {
  test(`both files dropped (${order.join(' then ')}): the log device is found and the log replays to the kernel's tree`, async ({ page }) => {
    await page.goto('/');
    await expect(page.getByText('Ready.')).toBeVisible();
    await page.getByTestId('image-input').setInputFiles(order.map((x) => join(TMP, `${NAME}.${x}`)));
    await expect(page.getByTestId('image-name')).toHaveText(`${NAME}.img`);
    await expect(page.getByTestId('log-device')).toContainText(`${NAME}.log`);
    await expectReplayedTree(page);
  });
}

test('the data device alone says its log is external; the log device added later replays', async ({ page }) => {
  await page.goto('/');
  await expect(page.getByText('Ready.')).toBeVisible();
  await page.getByTestId('image-input').setInputFiles(join(TMP, `${NAME}.img`));
  await expect(page.getByTestId('image-name')).toHaveText(`${NAME}.img`);
  await expect(page.getByTestId('log-device')).toContainText('external device');
  // The disk as it is still reads: the kernel's listing with norecovery.
  const before = kernelListing(NAME, 'pair-norecovery-ls.jsonl');
  await page.evaluate(() => { window.location.hash = '#/path/'; });
  await expect(page.getByTestId('dir-path')).toHaveText('/');
  await expect(page.getByTestId('dir-entry')).toHaveCount(children(before, '/').length);
  await page.evaluate(() => { window.location.hash = '#/log'; });
  await expect(page.getByTestId('view-error')).toContainText('no log device was given');
  await page.getByTestId('log-device-input').setInputFiles(join(TMP, `${NAME}.log`));
  await expect(page.getByTestId('log-device')).toContainText(`${NAME}.log`);
  await page.evaluate(() => { window.location.hash = '#/'; });
  await expectReplayedTree(page);
});

test('the recovered data device is the kernel\'s, and the recovered log device is a clean log of the same size', async ({ page }) => {
  // The download path (where the browser cannot write a picked file).
  await page.addInitScript(() => { delete window.showSaveFilePicker; });
  await page.goto('/');
  await expect(page.getByText('Ready.')).toBeVisible();
  await page.getByTestId('image-input').setInputFiles([join(TMP, `${NAME}.img`), join(TMP, `${NAME}.log`)]);
  await expect(page.getByTestId('log-device')).toContainText(`${NAME}.log`);
  await page.getByTestId('replay-toggle').click();
  await expect(page.getByTestId('replay-summary')).toBeVisible();
  // block_diff.py of the dirty data device against the kernel's recovered one.
  const oracle = readFileSync(join(FIXTURES, `${NAME}.pair-recovered-blocks.txt`), 'utf8').split('\n');
  const bs = Number(oracle.find((l) => l.startsWith('# blocksize ')).split(' ')[2].replace(';', ''));
  const changed = new Map(oracle.filter((l) => l && !l.startsWith('#')).map((l) => l.split(' ')).map(([b, h]) => [Number(b), h]));
  let wait = page.waitForEvent('download');
  await page.getByTestId('download-recovered').click();
  const got = readFileSync(await (await wait).path());
  const dirty = readFileSync(join(TMP, `${NAME}.img`));
  expect(got.length).toBe(dirty.length);
  let compared = 0;
  // Block 0 holds the superblock, whose LSN and CRC are the kernel's own.
  for (let b = 1; b * bs < got.length; b++) {
    const block = got.subarray(b * bs, (b + 1) * bs);
    const want = changed.get(b);
    if (want) {
      expect(createHash('sha256').update(block).digest('hex'), `block ${b}`).toBe(want);
      compared++;
    } else {
      expect(Buffer.compare(block, dirty.subarray(b * bs, (b + 1) * bs)), `block ${b} unchanged`).toBe(0);
    }
  }
  expect(compared).toBe(changed.size - (changed.has(0) ? 1 : 0));
  wait = page.waitForEvent('download');
  await page.getByTestId('download-recovered-log').click();
  const log = readFileSync(await (await wait).path());
  expect(log.length).toBe(readFileSync(join(TMP, `${NAME}.log`)).length);
  // A log record header (XLOG_HEADER_MAGIC_NUM) at block 0, holding the
  // filesystem's UUID (h_fs_uuid at byte 304).
  expect(log.readUInt32BE(0)).toBe(0xfeedbabe);
  expect(log.subarray(304, 320).toString('hex')).toBe('5a3c0001000040008000000000000040');
});

test("a transaction's record header opens on the log device, where xfs_logprint found the record", async ({ page }) => {
  // The first record xfs_logprint -l printed.
  const lp = readFileSync(join(FIXTURES, `${NAME}.pair-logt.txt`), 'utf8');
  const [, cycle, block] = lp.match(/LOG REC AT LSN cycle (\d+) block (\d+)/);
  await page.goto('/');
  await expect(page.getByText('Ready.')).toBeVisible();
  await page.getByTestId('image-input').setInputFiles([join(TMP, `${NAME}.img`), join(TMP, `${NAME}.log`)]);
  await expect(page.getByTestId('log-device')).toContainText(`${NAME}.log`);
  await page.evaluate(() => { window.location.hash = '#/log/0'; });
  await page.getByTestId('log-record-bytes').click();
  await expect(page).toHaveURL(new RegExp(`#/hex/log/${block}$`));
  await expect(page.getByTestId('hex-view')).toContainText('log record header (external log device)');
  await expect(page.getByTestId('hex-field-magicno')).toContainText('0xfeedbabe');
  await expect(page.getByTestId('hex-field-cycle')).toContainText(cycle);
  const lsn = (BigInt(cycle) << 32n) | BigInt(block);
  await expect(page.getByTestId('hex-field-lsn')).toContainText(lsn.toString());
  // The data device's sector of the same number is something else.
  await page.evaluate((b) => { window.location.hash = `#/hex/${b}`; }, block);
  await expect(page.getByTestId('hex-view')).not.toContainText('log record header');
});
