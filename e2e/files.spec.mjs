// The file browser and the inode inspector, against the kernel's listing of
// the mounted image and xfs_db's view of its inodes.
import { test, expect } from '@playwright/test';
import { join } from 'node:path';
import { dbNum, FIXTURES, kernelListing, TMP, xfsDbInodes } from './oracle.mjs';

async function open(page, name) {
  await page.goto('/');
  await expect(page.getByText('Ready.')).toBeVisible();
  await page.getByTestId('image-input').setInputFiles(join(TMP, `${name}.img`));
  await expect(page.getByTestId('image-name')).toHaveText(`${name}.img`);
}

test('deep links to inodes show the forkoff and fork formats xfs_db shows', async ({ page }) => {
  const name = 'v5-formats';
  await open(page, name);
  const inodes = xfsDbInodes(name);
  expect(inodes.length).toBeGreaterThan(40);
  for (const { ino, path, fields } of inodes) {
    await page.evaluate((h) => { window.location.hash = h; }, `#/inode/${ino}`);
    const label = `${name} inode ${ino} (${path})`;
    await expect(page.getByTestId('inode-forkoff'), label).toHaveText(dbNum(fields['core.forkoff']));
    await expect(page.getByTestId('inode-format'), label).toHaveText(dbNum(fields['core.format']));
    await expect(page.getByTestId('inode-aformat'), label).toHaveText(dbNum(fields['core.aformat']));
    await expect(page.getByTestId('inode-nextents'), label).toHaveText(dbNum(fields['core.nextents']));
    await expect(page.getByTestId('inode-anextents'), label).toHaveText(dbNum(fields['core.naextents']));
  }
});

test('a deep link opened before the image shows once the image is open', async ({ page }) => {
  const name = 'v5-1kinode';
  const [first] = xfsDbInodes(name).filter((i) => i.path !== '/');
  await page.goto(`/#/inode/${first.ino}`);
  await expect(page.getByText('Ready.')).toBeVisible();
  await page.getByTestId('image-input').setInputFiles(join(TMP, `${name}.img`));
  await expect(page.getByTestId('inode-forkoff')).toHaveText(dbNum(first.fields['core.forkoff']));
});

/** The names in a directory, from the kernel's listing. */
function children(listing, dir) {
  const prefix = dir === '/' ? '/' : `${dir}/`;
  return listing.filter((e) => e.path !== dir && e.path.startsWith(prefix) && !e.path.slice(prefix.length).includes('/'))
    .map((e) => e.path.slice(prefix.length)).sort();
}

test('directories list the entries the kernel lists, in every format', async ({ page }) => {
  const name = 'v5-formats';
  const listing = kernelListing(name);
  await open(page, name);
  for (const dir of ['/', '/dirs/sf', '/dirs/block40', '/files', '/special']) {
    await page.evaluate((h) => { window.location.hash = h; }, `#/path${dir === '/' ? '/' : dir}`);
    await expect(page.getByTestId('dir-path')).toHaveText(dir);
    const want = children(listing, dir);
    await expect(page.getByTestId('dir-entry')).toHaveCount(want.length);
    const got = await page.getByTestId('dir-entry').evaluateAll((els) => els.map((e) => e.dataset.name));
    expect(got.sort(), dir).toEqual(want);
  }
});

test('a node directory of thousands of entries is virtualised and scrolls to its last entry', async ({ page }) => {
  const name = 'v5-formats';
  const listing = kernelListing(name);
  await open(page, name);
  const dir = '/dirs/node3200';
  const want = children(listing, dir);
  expect(want.length).toBeGreaterThan(3000);
  await page.evaluate((h) => { window.location.hash = h; }, `#/path${dir}`);
  await expect(page.getByTestId('dir-path')).toHaveText(dir);
  await expect(page.getByTestId('dir-count')).toHaveText(String(want.length));
  const rendered = await page.getByTestId('dir-entry').count();
  expect(rendered).toBeLessThan(200);
  await page.getByTestId('dir-list').evaluate((el) => { el.scrollTop = el.scrollHeight; });
  const lastShown = page.getByTestId('dir-entry').last();
  const names = await page.getByTestId('dir-entry').evaluateAll((els) => els.map((e) => e.dataset.name));
  // The entries are in directory order; every name shown is one of the kernel's.
  for (const n of names) expect(want).toContain(n);
  await expect(lastShown).toBeVisible();
});

test('following a file from its directory, back and forward work', async ({ page }) => {
  const name = 'v5-formats';
  const listing = kernelListing(name);
  await open(page, name);
  await page.evaluate(() => { window.location.hash = '#/path/files'; });
  await expect(page.getByTestId('dir-path')).toHaveText('/files');
  const file = listing.find((e) => e.path === '/files/small');
  await page.locator('[data-testid="dir-entry"][data-name="small"] a.ename').click();
  await expect(page.getByTestId('inode-size')).toHaveText(String(file.size));
  await page.goBack();
  await expect(page.getByTestId('dir-path')).toHaveText('/files');
  await page.goForward();
  await expect(page.getByTestId('inode-size')).toHaveText(String(file.size));
});

test('xattr values are shown on demand and symlink targets and devices match the kernel', async ({ page }) => {
  const name = 'v5-formats';
  const listing = kernelListing(name);
  await open(page, name);
  const link = listing.find((e) => e.type === 'symlink' && e.target.length > 500);
  await page.evaluate((h) => { window.location.hash = h; }, `#/inode/${link.ino}`);
  await expect(page.getByTestId('symlink-target')).toHaveText(link.target);
  const dev = listing.find((e) => e.type === 'chardev');
  await page.evaluate((h) => { window.location.hash = h; }, `#/inode/${dev.ino}`);
  await expect(page.getByTestId('rdev')).toHaveText(`${dev.rdev[0]}:${dev.rdev[1]}`);
  const withX = listing.find((e) => Object.keys(e.xattrs_sha256).length > 0 && Object.keys(e.xattrs_sha256).length < 10);
  await page.evaluate((h) => { window.location.hash = h; }, `#/inode/${withX.ino}`);
  const names = Object.keys(withX.xattrs_sha256).sort();
  // The inode is read by the worker: wait for its attributes to arrive.
  await expect(page.getByTestId('xattr')).toHaveCount(names.length);
  const shown = await page.getByTestId('xattr').evaluateAll((els) => els.map((e) => e.dataset.name));
  expect(shown.sort()).toEqual(names);
  await expect(page.getByTestId('xattr-value')).toHaveCount(0);
  await page.locator(`[data-testid="xattr"][data-name="${names[0]}"] button`).first().click();
  await expect(page.getByTestId('xattr-value')).toHaveCount(1);
});

test('the allocation groups view shows every AG', async ({ page }) => {
  await open(page, 'v5-1k-rmap');
  await page.evaluate(() => { window.location.hash = '#/ag'; });
  await expect(page.getByTestId('ag')).toHaveCount(4);
});

import { createHash } from 'node:crypto';
import { copyFileSync, readFileSync, truncateSync } from 'node:fs';

async function downloadSha256(page, click) {
  const wait = page.waitForEvent('download');
  await click();
  const dl = await wait;
  return createHash('sha256').update(readFileSync(await dl.path())).digest('hex');
}

test('downloaded files and xattr values hash as the kernel reads them', async ({ page }) => {
  const name = 'v5-formats';
  const listing = kernelListing(name);
  await open(page, name);
  for (const path of ['/files/multi-extent', '/files/sparse']) {
    const e = listing.find((x) => x.path === path);
    expect(e, path).toBeTruthy();
    await page.evaluate((h) => { window.location.hash = h; }, `#/inode/${e.ino}`);
    await expect(page.getByTestId('inode-size')).toHaveText(String(e.size));
    const sha = await downloadSha256(page, () => page.getByTestId('download-file').click());
    expect(sha, path).toBe(e.sha256);
  }
  const r = listing.find((x) => x.path === '/xattrs/remote');
  await page.evaluate((h) => { window.location.hash = h; }, `#/inode/${r.ino}`);
  for (const [xname, want] of Object.entries(r.xattrs_sha256)) {
    const sha = await downloadSha256(page, () => page.locator(`[data-testid="xattr"][data-name="${xname}"] button`).nth(1).click());
    expect(sha, xname).toBe(want);
  }
});

test('the sidebar tree opens the path and lists the subdirectories the kernel lists', async ({ page }) => {
  const name = 'v5-formats';
  const listing = kernelListing(name);
  await open(page, name);
  await page.evaluate(() => { window.location.hash = '#/path/dirs/leaf400'; });
  await expect(page.getByTestId('dir-path')).toHaveText('/dirs/leaf400');
  const subdirs = (dir) => listing.filter((e) => e.type === 'dir' && e.path.startsWith(`${dir}/`)
    && !e.path.slice(dir.length + 1).includes('/')).map((e) => e.path).sort();
  for (const dir of ['/dirs']) {
    for (const p of subdirs(dir)) {
      await expect(page.locator(`[data-testid="tree-node"][data-path="${p}"]`), p).toHaveCount(1);
    }
  }
  const rootDirs = listing.filter((e) => e.type === 'dir' && e.path !== '/' && !e.path.slice(1).includes('/')).map((e) => e.path);
  for (const p of rootDirs) await expect(page.locator(`[data-testid="tree-node"][data-path="${p}"]`), p).toHaveCount(1);
  await page.locator('[data-testid="tree-node"][data-path="/files"] > a').click();
  await expect(page.getByTestId('dir-path')).toHaveText('/files');
});

test('a download asked for just before the full worker takes over still hashes as the kernel reads the file', async ({ page }) => {
  const name = 'v5-formats';
  const e = kernelListing(name).find((x) => x.path === '/files/multi-extent');
  await open(page, name);
  await page.evaluate((h) => { window.location.hash = h; }, `#/inode/${e.ino}`);
  await expect(page.getByTestId('inode-size')).toHaveText(String(e.size));
  // The download goes to the light worker; the operations view, asked for
  // in the same turn, needs the full worker, which takes the light one's place.
  const sha = await downloadSha256(page, () => page.evaluate(() => {
    document.querySelector('[data-testid="download-file"]').click();
    window.location.hash = '#/ops';
  }));
  expect(sha).toBe(e.sha256);
  // The full worker answered the operations view (the image's log is clean).
  await expect(page.getByTestId('ops-clean')).toBeVisible();
});

test('a download that fails after the full worker took over shows its error, and nothing is saved', async ({ page }) => {
  // As above, on the cut image: the light worker, already replaced when
  // its read fails, sends the error that stopped the read just before the
  // read's failed end.
  const e = await openCut(page, 'v5-formats-cut2');
  const downloads = [];
  page.on('download', (d) => downloads.push(d));
  await page.evaluate(() => {
    document.querySelector('[data-testid="download-file"]').click();
    window.location.hash = '#/ops';
  });
  await expect(page.getByTestId('view-error')).toContainText(`reading inode ${e.ino}`);
  await expect(page.getByTestId('ops-error')).toContainText('does not fit in the image');
  await expect.poll(() => page.workers().filter((w) => w.url().includes('worker-light')).length).toBe(0);
  expect(downloads).toHaveLength(0);
});

// The kernel's FIEMAP of a file in a fixture: its extents' first 512-byte
// sectors, in file order.
function fiemapSectors(name, path) {
  const text = readFileSync(join(FIXTURES, `${name}.fiemap.txt`), 'utf8');
  const block = text.split('### ').find((b) => b.split('\n')[0].endsWith(` path .${path}`));
  return [...block.matchAll(/^\s*\d+: \[\d+\.\.\d+\]:\s+(\d+)\.\./gm)].map((m) => Number(m[1]));
}

/** v5-formats cut short where /files/multi-extent's fifth extent starts
 * (its first four extents read, the fifth lies past the end), saved as
 * `cut`, opened, with that file's inode shown; its kernel listing entry. */
async function openCut(page, cut) {
  const e = kernelListing('v5-formats').find((x) => x.path === '/files/multi-extent');
  const sectors = fiemapSectors('v5-formats', '/files/multi-extent');
  expect(sectors.length).toBeGreaterThan(4);
  copyFileSync(join(TMP, 'v5-formats.img'), join(TMP, `${cut}.img`));
  truncateSync(join(TMP, `${cut}.img`), sectors[4] * 512);
  await open(page, cut);
  await page.evaluate((h) => { window.location.hash = h; }, `#/inode/${e.ino}`);
  await expect(page.getByTestId('inode-size')).toHaveText(String(e.size));
  return e;
}

test('a file whose read fails part-way is not saved: the error shows, and the light worker still stops at the switch', async ({ page }) => {
  const e = await openCut(page, 'v5-formats-cut');
  const downloads = [];
  page.on('download', (d) => downloads.push(d));
  await page.getByTestId('download-file').click();
  await expect(page.getByTestId('view-error')).toContainText(`reading inode ${e.ino}`);
  // The operations view needs the full worker; the light one, its read
  // over, is stopped. (The cut image has lost its log: the full worker
  // answers with that error.)
  await page.evaluate(() => { window.location.hash = '#/ops'; });
  await expect(page.getByTestId('ops-error')).toContainText('does not fit in the image');
  await expect.poll(() => page.workers().filter((w) => w.url().includes('worker-light')).length).toBe(0);
  expect(downloads).toHaveLength(0);
});
