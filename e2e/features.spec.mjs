// The newest and the oldest on-disk formats dropped on the page: the
// metadata directory tree (mkfs.xfs 6.13 -m metadir=1) shown in its own
// view and checked against xfs_db 6.13's `ls -m` of every directory of it
// (NAME.metadir-ls.txt, make/newer-xfsprogs.sh metadir); a metadir filesystem's
// files after replay against the kernel's listing of its recovery; and v4
// filesystems (crc=0, with and without ftype) against `xfs_db ncheck`.
import { test, expect } from '@playwright/test';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FIXTURES, TMP } from './oracle.mjs';

async function open(page, name) {
  await page.goto('/');
  await expect(page.getByText('Ready.')).toBeVisible();
  await page.getByTestId('image-input').setInputFiles(join(TMP, `${name}.img`));
  await expect(page.getByTestId('image-name')).toHaveText(`${name}.img`);
}

/** xfs_db `ls -m` of every directory: directory -> [name, ino, type] sorted. */
function xfsDbMetadir(name) {
  const dirs = new Map();
  let dir = null;
  for (const l of readFileSync(join(FIXTURES, `${name}.metadir-ls.txt`), 'utf8').split('\n')) {
    if (l.startsWith('#') || !l.trim()) continue;
    if (l.endsWith(':')) { dir = l.slice(0, -1); dirs.set(dir, []); continue; }
    // cookie ino type hash namelen name (good)
    const f = l.trim().split(/\s+/);
    const entry = f[5];
    if (entry === '.' || entry === '..') continue;
    const type = { directory: 'dir', regular: 'file' }[f[2]];
    if (!type) throw new Error(`unknown type in ${l}`);
    dirs.get(dir).push([entry, f[1], type]);
  }
  for (const v of dirs.values()) v.sort();
  return dirs;
}

/** The rows of the directory shown: [name, ino, type], sorted. */
async function shownEntries(page) {
  const rows = await page.getByTestId('dir-entry').evaluateAll((els) => els.map((e) => [
    e.dataset.name, e.querySelector('.eino').textContent, e.querySelector('.kind').textContent]));
  return rows.sort();
}

async function checkMetadir(page, name) {
  const want = xfsDbMetadir(name);
  expect(want.size).toBeGreaterThan(0);
  for (const [dir, entries] of want) {
    await page.evaluate((h) => { window.location.hash = h; }, `#/metadir${dir === '/' ? '/' : dir}`);
    await expect(page.getByTestId('dir-path')).toHaveText(dir);
    await expect(page.getByTestId('dir-count')).toHaveText(String(entries.length));
    expect(await shownEntries(page)).toEqual(entries);
  }
}

test('metadir-rt: the metadata directory tree is the one xfs_db 6.13 lists', async ({ page }) => {
  const name = 'metadir-rt';
  await open(page, name);
  // The tab leads to the tree's root; a directory's entry to its listing.
  await page.getByTestId('metadir-tab').click();
  await expect(page.getByTestId('dir-path')).toHaveText('/');
  await expect(page.locator('section.dir h2')).toContainText('Metadata directory');
  await page.getByTestId('dir-entry').filter({ hasText: 'rtgroups' }).locator('a.ename').click();
  await expect(page.getByTestId('dir-path')).toHaveText('/rtgroups');
  await expect(page.getByTestId('breadcrumb')).toContainText('rtgroups');
  // The sidebar holds the tree's directories, the one shown marked.
  const side = page.getByTestId('metadir-tree');
  await expect(side.locator('[data-testid="tree-node"][data-path="/rtgroups"] > a.current')).toBeVisible();
  await expect(side.locator('[data-testid="tree-node"][data-path="/"] > ul > [data-testid="tree-node"]')).toHaveCount(
    xfsDbMetadir(name).get('/').filter((e) => e[2] === 'dir').length);
  const files = xfsDbMetadir(name).get('/rtgroups');
  expect(files.length).toBe(8);
  expect(await shownEntries(page)).toEqual(files);
  // A file of the tree opens in the inspector.
  await page.getByTestId('dir-entry').filter({ hasText: '0.bitmap' }).locator('a.ename').click();
  await expect(page.getByText(`inode ${files.find((f) => f[0] === '0.bitmap')[1]}`).first()).toBeVisible();
  await checkMetadir(page, name);
});

test('random-5008: after replay, the metadata directory tree and the files are the kernel\'s', async ({ page }) => {
  const name = 'random-5008';
  await open(page, name);
  await page.getByTestId('replay-toggle').click();
  await expect(page.getByTestId('replay-toggle')).toBeChecked();
  await checkMetadir(page, name);
  // The files: the root's entries and the sidebar's directories, as the
  // kernel listed its recovered copy.
  const listing = execFileSync('zstd', ['-dc', join(FIXTURES, `${name}.recovered-ls.jsonl.zst`)]).toString()
    .split('\n').filter(Boolean).map((l) => JSON.parse(l));
  const top = listing.filter((e) => e.path !== '/' && e.path.lastIndexOf('/') === 0);
  expect(top.length).toBeGreaterThan(20);
  await page.evaluate(() => { window.location.hash = '#/path/'; });
  await expect(page.getByTestId('dir-path')).toHaveText('/');
  await expect(page.getByTestId('dir-count')).toHaveText(String(top.length));
  const shown = await shownEntries(page);
  expect(shown.map(([n, i]) => [n, Number(i)])).toEqual(top.map((e) => [e.path.slice(1), e.ino]).sort());
  await expectTreeDirs(page, '/', top.filter((e) => e.type === 'dir').map((e) => e.path));
});

/** The sidebar tree shows exactly `dirs` under `dir` (opened). */
async function expectTreeDirs(page, dir, dirs) {
  const node = page.locator(`[data-testid="tree-node"][data-path="${dir}"]`);
  await expect(node).toBeVisible();
  const kids = node.locator(':scope > ul > [data-testid="tree-node"]');
  await expect(kids).toHaveCount(dirs.length);
  const got = await kids.evaluateAll((els) => els.map((e) => e.dataset.path));
  expect(got.sort()).toEqual([...dirs].sort());
}

/** `xfs_db ncheck`: every path ("dir/." for a directory) as "/path" -> ino. */
function ncheck(name) {
  const out = new Map();
  for (const l of readFileSync(join(FIXTURES, `${name}.ncheck.txt`), 'utf8').split('\n')) {
    if (!l.trim()) continue;
    const [ino, ...rest] = l.trim().split(/\s+/);
    let p = rest.join(' ');
    if (p.endsWith('/.')) p = p.slice(0, -2);
    out.set(`/${p}`, Number(ino));
  }
  return out;
}

/** The entries directly under `dir` in an ncheck map: [name, ino] sorted. */
function ncheckChildren(paths, dir) {
  const prefix = dir === '/' ? '/' : `${dir}/`;
  return [...paths].filter(([p]) => p.startsWith(prefix) && p !== dir && !p.slice(prefix.length).includes('/'))
    .map(([p, i]) => [p.slice(prefix.length), i]).sort();
}

for (const name of ['v4-dirs', 'v4-ftype', 'v4-noftype']) {
  test(`${name}: a v4 filesystem opens and its tree is xfs_db's`, async ({ page }) => {
    await open(page, name);
    const paths = ncheck(name);
    expect(paths.size).toBeGreaterThan(1900);
    // The directories: every path with a path below it.
    const dirs = new Set(['/']);
    for (const p of paths.keys()) {
      for (let i = p.indexOf('/', 1); i > 0; i = p.indexOf('/', i + 1)) dirs.add(p.slice(0, i));
    }
    await page.evaluate(() => { window.location.hash = '#/path/'; });
    await expect(page.getByTestId('dir-path')).toHaveText('/');
    const top = ncheckChildren(paths, '/');
    await expect(page.getByTestId('dir-count')).toHaveText(String(top.length));
    expect((await shownEntries(page)).map(([n, i]) => [n, Number(i)])).toEqual(top);
    await expectTreeDirs(page, '/', top.map(([n]) => `/${n}`).filter((p) => dirs.has(p)));
    // Each directory one level down: its entry count and first rows.
    for (const d of [...dirs].filter((x) => x !== '/' && x.lastIndexOf('/') === 0)) {
      await page.evaluate((h) => { window.location.hash = h; }, `#/path${d}`);
      await expect(page.getByTestId('dir-path')).toHaveText(d);
      const want = ncheckChildren(paths, d);
      await expect(page.getByTestId('dir-count')).toHaveText(String(want.length));
      const shown = (await shownEntries(page)).map(([n, i]) => [n, Number(i)]);
      // The list is virtualised: the rows drawn are some of the entries.
      expect(shown.length).toBeGreaterThan(0);
      const byName = new Map(want);
      for (const [n, i] of shown) expect(byName.get(n), `${d}/${n}`).toBe(i);
    }
  });
}

test('a filesystem without the tree has no metadata tab', async ({ page }) => {
  await open(page, 'v5-4k-dirty');
  await expect(page.getByTestId('image-name')).toHaveText('v5-4k-dirty.img');
  await expect(page.getByTestId('metadir-tab')).toHaveCount(0);
  await page.evaluate(() => { window.location.hash = '#/metadir/'; });
  await expect(page.getByTestId('view-error')).toContainText('no metadata directory tree');
});
