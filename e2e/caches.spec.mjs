// The page's stores of what was browsed have caps: browsing past them (the
// caps lowered with `?caps=`) keeps each store under its cap, and the page
// still shows what the kernel reads: the sidebar tree's listings, xattr
// values, rows of the log's transaction list.
import { test, expect } from '@playwright/test';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FIXTURES, kernelListing, TMP } from './oracle.mjs';

async function open(page, name, caps) {
  await page.goto(`/?caps=${caps}`);
  await expect(page.getByText('Ready.')).toBeVisible();
  await page.getByTestId('image-input').setInputFiles(join(TMP, `${name}.img`));
  await expect(page.getByTestId('image-name')).toHaveText(`${name}.img`);
}

const go = (page, hash) => page.evaluate((h) => { window.location.hash = h; }, hash);
const num = async (loc, attr) => Number(await loc.getAttribute(attr));

test('the sidebar tree keeps at most its cap of listings and still shows what the kernel lists', async ({ page }) => {
  const name = 'v5-formats';
  const listing = kernelListing(name);
  const subdirs = (dir) => listing.filter((e) => e.type === 'dir' && e.path !== dir
    && e.path.startsWith(dir === '/' ? '/' : `${dir}/`)
    && !e.path.slice(dir === '/' ? 1 : dir.length + 1).includes('/')).map((e) => e.path).sort();
  await open(page, name, 'tree:4');
  const tree = page.getByTestId('tree');
  // Every directory the kernel lists, deepest last: far more than 4.
  const dirs = listing.filter((e) => e.type === 'dir' && e.path !== '/').map((e) => e.path).sort();
  expect(dirs.length).toBeGreaterThan(12);
  for (const dir of dirs) {
    await go(page, `#/path${dir.split('/').map(encodeURIComponent).join('/')}`);
    await expect(page.getByTestId('dir-path'), dir).toHaveText(dir);
    // The current directory's node, and the kernel's subdirectories under it.
    await expect(tree.locator(`[data-testid="tree-node"][data-path="${dir}"]`), dir).toHaveCount(1);
    for (const sub of subdirs(dir)) {
      await expect(tree.locator(`[data-testid="tree-node"][data-path="${sub}"]`), sub).toHaveCount(1);
    }
    expect(await num(tree, 'data-cap')).toBe(4);
    expect(await num(tree, 'data-kept'), dir).toBeLessThanOrEqual(4);
  }
  // The first directory's listing went (it is no ancestor of the last):
  // shown again, it is read again and lists what the kernel lists.
  const gone = subdirs(dirs[0])[0];
  await expect(tree.locator(`[data-testid="tree-node"][data-path="${gone}"]`)).toHaveCount(0);
  await go(page, `#/path${dirs[0]}`);
  await expect(page.getByTestId('dir-path')).toHaveText(dirs[0]);
  for (const sub of subdirs(dirs[0])) {
    await expect(tree.locator(`[data-testid="tree-node"][data-path="${sub}"]`), sub).toHaveCount(1);
  }
  expect(await num(tree, 'data-kept')).toBeLessThanOrEqual(4);
});

test('xattr values shown past the cap let the oldest go and show again when asked', async ({ page }) => {
  const name = 'v5-formats';
  const node = kernelListing(name).find((e) => e.path === '/xattrs/node');
  const names = Object.keys(node.xattrs_sha256).sort();
  expect(names.length).toBeGreaterThan(10);
  await open(page, name, 'xattrs:3');
  await go(page, `#/inode/${node.ino}`);
  await expect(page.getByTestId('xattr')).toHaveCount(names.length);
  const main = page.locator('main');
  const sha = (text) => createHash('sha256').update(text).digest('hex');
  const show = async (xname) => {
    const row = page.locator(`[data-testid="xattr"][data-name="${xname}"]`);
    await row.locator('button').first().click();
    await expect(row.getByTestId('xattr-value'), xname).toHaveCount(1);
    // The value as the kernel reads it (these values are text).
    expect(sha(await row.getByTestId('xattr-value').textContent()), xname).toBe(node.xattrs_sha256[xname]);
  };
  for (const xname of names.slice(0, 10)) {
    await show(xname);
    expect(await num(main, 'data-xattr-values')).toBeLessThanOrEqual(3);
    await expect(page.getByTestId('xattr-value').count()).resolves.toBeLessThanOrEqual(3);
  }
  // The first went; asked again, it is shown again.
  await expect(page.locator(`[data-testid="xattr"][data-name="${names[0]}"]`).getByTestId('xattr-value')).toHaveCount(0);
  await show(names[0]);
  expect(await num(main, 'data-xattr-values')).toBe(3);
});

test('the transaction list keeps at most its cap of rows and shows every row scrolled to', async ({ page }) => {
  const name = 'log-1k-rmap';
  const trans = readFileSync(join(FIXTURES, `${name}.logt.txt`), 'utf8').split('\n').filter((l) => l.startsWith('TRANS:')).length;
  expect(trans).toBeGreaterThan(400);
  await open(page, name, 'log-rows:250');
  await go(page, '#/log');
  await expect(page.getByTestId('log-transactions')).toHaveText(String(trans));
  const main = page.locator('main');
  const list = page.getByTestId('log-list');
  const row = (i) => page.locator(`[data-testid="log-transaction"][data-index="${i}"]`);
  await expect(row(0)).toBeVisible();
  const first = await row(0).textContent();
  // Scroll to the end a screen at a time: every row in view arrives.
  for (let i = 0; i < trans; i += 40) {
    await list.evaluate((el, top) => { el.scrollTop = top; }, i * 24);
    await expect(row(i), `row ${i}`).toBeVisible();
    expect(await num(main, 'data-log-rows')).toBeLessThanOrEqual(250);
  }
  await list.evaluate((el) => { el.scrollTop = el.scrollHeight; });
  await expect(row(trans - 1)).toBeVisible();
  expect(await num(main, 'data-log-rows')).toBeLessThanOrEqual(250);
  // Back at the top, the first rows went and are read again, the same.
  await list.evaluate((el) => { el.scrollTop = 0; });
  await expect(row(0)).toBeVisible();
  expect(await row(0).textContent()).toBe(first);
  expect(await num(main, 'data-log-rows')).toBeLessThanOrEqual(250);
});
