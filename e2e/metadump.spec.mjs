// Metadumps dropped on the page (make/containers.sh metadump): read in place,
// their log replayed, the tree against the kernel's listing of the same
// dump restored by xfs_mdrestore (before and after the kernel's recovery).
import { test, expect } from '@playwright/test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FIXTURES, kernelListing, TMP } from './oracle.mjs';

function children(listing, dir) {
  const prefix = dir === '/' ? '/' : `${dir}/`;
  return listing.filter((e) => e.path !== dir && e.path.startsWith(prefix) && !e.path.slice(prefix.length).includes('/'))
    .map((e) => e.path.slice(prefix.length)).sort();
}

async function open(page, name) {
  await page.goto('/');
  await expect(page.getByText('Ready.')).toBeVisible();
  await page.getByTestId('image-input').setInputFiles(join(TMP, `${name}.img`));
  await expect(page.getByTestId('image-name')).toHaveText(`${name}.img`);
}

// The root before replay, then after it, against the kernel's listings of
// the restored image (before and after its recovery); then the number of
// entries of `dir` after replay.
async function expectTrees(page, name, dir) {
  const before = kernelListing(name, 'mdrestore-ls.jsonl');
  const after = kernelListing(name, 'mdrestore-recovered-ls.jsonl');
  await page.evaluate(() => { window.location.hash = '#/path/'; });
  await expect(page.getByTestId('dir-path')).toHaveText('/');
  await expect(page.getByTestId('dir-entry')).toHaveCount(children(before, '/').length);
  await page.getByTestId('replay-toggle').click();
  await expect(page.getByTestId('replay-toggle')).toBeChecked();
  const want = children(after, '/');
  expect(want.length).toBeGreaterThan(2);
  await expect(page.getByTestId('dir-entry')).toHaveCount(want.length);
  const got = await page.getByTestId('dir-entry').evaluateAll((els) => els.map((e) => e.dataset.name));
  expect(got.sort()).toEqual(want);
  await page.evaluate((h) => { window.location.hash = h; }, `#/path${dir}`);
  await expect(page.getByTestId('dir-path')).toHaveText(dir);
  await expect(page.getByTestId('dir-count')).toHaveText(String(children(after, dir).length));
}

for (const name of ['md-dirty-v1', 'md-dirty-v2']) {
  test(`${name}: the dump opens in place and its log replays to the kernel's tree`, async ({ page }) => {
    await open(page, name);
    const version = name.slice(-1);
    await expect(page.getByTestId('container-chain')).toHaveText(`metadump v${version}`);
    const info = readFileSync(join(FIXTURES, `${name}.mdrestore-info.txt`), 'utf8');
    const layer = page.getByTestId('metadump-layer');
    await expect(layer).toHaveAttribute('data-dirty-log', String(info.includes('dirty log')));
    await expect(layer).toHaveAttribute('data-obfuscated', String(!info.includes('not obfuscated')));

    await expectTrees(page, name, '/big-dir');
  });
}

test('an obfuscated metadump shows its names as they are', async ({ page }) => {
  const name = 'md-obf-v2';
  await open(page, name);
  await expect(page.getByTestId('metadump-layer')).toHaveAttribute('data-obfuscated', 'true');
  const inodes = readFileSync(join(FIXTURES, `${name}.mdrestore-inodes.jsonl`), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
  // The root's entries: the kernel's objects one level down.
  const top = inodes.filter((o) => o.path_hex !== '' && !Buffer.from(o.path_hex, 'hex').includes(0x2f));
  await page.evaluate(() => { window.location.hash = '#/path/'; });
  await expect(page.getByTestId('dir-path')).toHaveText('/');
  await expect(page.getByTestId('dir-entry')).toHaveCount(top.length);
});

// A version 2 dump made with -l holds the external log device: the page
// reads the log from it (no second file asked for) and replays it to the
// kernel's tree of the restored pair.
test('md-extlog-v2: the log device the dump holds is read and replayed', async ({ page }) => {
  const name = 'md-extlog-v2';
  await open(page, name);
  await expect(page.getByTestId('container-chain')).toHaveText('metadump v2');
  await expect(page.getByTestId('log-device')).toContainText('the log device the metadump holds');
  await expect(page.getByTestId('log-device-input')).toHaveCount(0);
  await expectTrees(page, name, '/new');
});
