// A filesystem with its log on an external device (make-extlog-fixtures.sh):
// the data device and the log device dropped together, in either order, or
// the log device added after the data device; the log replayed to the
// kernel's tree after it recovered a copy of the pair.
import { test, expect } from '@playwright/test';
import { join } from 'node:path';
import { kernelListing, TMP } from './oracle.mjs';

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
