// What replay changed, in the browser, against the kernel: the paths the
// view lists as added are those the kernel's listing of a recovered copy
// has and its listing of the image on disk has not (removed: the reverse);
// the replayed superblock holds the counters xfs_db reads from the
// kernel-recovered copy.
import { test, expect } from '@playwright/test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expectedFields, kernelListing, FIXTURES, TMP } from './oracle.mjs';

async function open(page, name) {
  await page.goto('/');
  await expect(page.getByText('Ready.')).toBeVisible();
  await page.getByTestId('image-input').setInputFiles(join(TMP, `${name}.img`));
  await expect(page.getByTestId('image-name')).toHaveText(`${name}.img`);
}

async function go(page, hash) {
  await page.evaluate((h) => { window.location.hash = h; }, hash);
}

/** Every row with `testid` over all pages of the current part, following "next". */
async function allRows(page, testid) {
  const out = [];
  for (;;) {
    await expect(page.getByTestId('replay-diff-pager').first()).toContainText(out.length ? `rows ${out.length + 1}–` : /rows 1–|no rows/);
    out.push(...await page.getByTestId(testid).evaluateAll((els) => els.map((e) => ({ ...e.dataset }))));
    const next = page.getByTestId('replay-diff-next').first();
    if (await next.count() === 0) return out;
    await next.click();
  }
}

/** Paths only one of the kernel's listings has: [added, removed]. */
function kernelDifference(name) {
  const before = new Map(kernelListing(name).map((e) => [e.path, e]));
  const after = new Map(kernelListing(name, 'recovered-ls.jsonl').map((e) => [e.path, e]));
  const only = (a, b) => [...a.keys()].filter((p) => !b.has(p)).sort();
  return [only(after, before), only(before, after), after];
}

for (const name of ['v5-4k-dirty', 'log-acrossend', 'log-intents']) {
  test(`${name}: the paths replay added and removed are the kernel's`, async ({ page }) => {
    const [added, removed, after] = kernelDifference(name);
    expect(added.length + removed.length).toBeGreaterThan(50);
    await open(page, name);
    await go(page, '#/replay');
    await expect(page.getByTestId('replay-diff')).toBeVisible({ timeout: 30_000 });
    await expect(page.getByTestId('replay-diff-paths-added')).toHaveText(String(added.length));
    await expect(page.getByTestId('replay-diff-paths-removed')).toHaveText(String(removed.length));
    const rows = await allRows(page, 'replay-diff-entry');
    const got = (c) => rows.filter((r) => r.change === c).map((r) => r.path).sort();
    expect(got('added')).toEqual(added);
    expect(got('removed')).toEqual(removed);
    // Each added path names the inode the kernel lists at that path.
    for (const r of rows.filter((r) => r.change === 'added')) {
      expect(Number(r.ino), r.path).toBe(after.get(r.path).ino);
    }
    // The filters split the same rows.
    await go(page, '#/replay/paths/removed/0');
    const onlyRemoved = await allRows(page, 'replay-diff-entry');
    expect(onlyRemoved.map((r) => r.path).sort()).toEqual(removed);
    expect(onlyRemoved.every((r) => r.change === 'removed')).toBe(true);
  });
}

test('v5-4k-dirty: every inode the kernel lists only after recovery is listed as created', async ({ page }) => {
  const name = 'v5-4k-dirty';
  const before = new Set(kernelListing(name).map((e) => e.ino));
  const fresh = [...new Set(kernelListing(name, 'recovered-ls.jsonl').map((e) => e.ino))].filter((i) => !before.has(i));
  expect(fresh.length).toBeGreaterThan(100);
  await open(page, name);
  await go(page, '#/replay/inodes/created/0');
  await expect(page.getByTestId('replay-diff')).toBeVisible({ timeout: 30_000 });
  const rows = await allRows(page, 'replay-diff-inode');
  const created = new Set(rows.map((r) => Number(r.ino)));
  for (const ino of fresh) expect(created.has(ino), `inode ${ino}`).toBe(true);
  // The root directory (on disk before and after) changed: nlink and size
  // as the kernel's two listings have them.
  const root = (l) => l.find((e) => e.path === '/');
  const [b, a] = [root(kernelListing(name)), root(kernelListing(name, 'recovered-ls.jsonl'))];
  await go(page, '#/replay/inodes/changed/0');
  const row = page.locator(`[data-testid="replay-diff-inode"][data-ino="${a.ino}"]`);
  await expect(row).toContainText(`nlink ${b.nlink} → ${a.nlink}`);
  await expect(row).toContainText(`size ${b.size} → ${a.size}`);
  // Its link opens the inode in the replayed view.
  await row.getByRole('link', { name: String(a.ino) }).click();
  await expect(page.getByTestId('replay-toggle')).toBeChecked();
  await expect(page.getByTestId('inode-size')).toHaveText(String(a.size));
});

test('an added path links to the file in the replayed view', async ({ page }) => {
  const name = 'v5-4k-dirty';
  const after = kernelListing(name, 'recovered-ls.jsonl');
  const f = after.find((e) => e.type === 'file' && e.size > 0 && e.path.split('/').length === 3);
  await open(page, name);
  await expect(page.getByTestId('replay-toggle')).not.toBeChecked();
  await go(page, '#/replay');
  const row = page.locator(`[data-testid="replay-diff-entry"][data-path="${f.path}"]`);
  await expect(row).toHaveAttribute('data-change', 'added');
  await row.getByRole('link', { name: f.path }).click();
  await expect(page.getByTestId('replay-toggle')).toBeChecked();
  await expect(page.getByTestId('inode-size')).toHaveText(String(f.size));
});

test('log-intents: the intents xfs_logprint shows unfinished are named in the notes', async ({ page }) => {
  const name = 'log-intents';
  const facts = readFileSync(join(FIXTURES, `${name}.logfacts.txt`), 'utf8');
  const ids = [...new Set([...facts.matchAll(/^unfinished: (\w+) id (0x[0-9a-f]+)/gm)].map((m) => m[2]))];
  expect(ids.length).toBeGreaterThan(0);
  await open(page, name);
  await go(page, '#/replay');
  await expect(page.getByTestId('replay-diff-notes')).toBeVisible({ timeout: 30_000 });
  for (const id of ids) {
    await expect(page.getByTestId('replay-diff-note').filter({ hasText: id }).first()).toBeVisible();
  }
});

test('the superblock tab in the replayed view shows the kernel-recovered counters, changes marked', async ({ page }) => {
  const name = 'v5-4k-dirty';
  const disk = new Map(expectedFields(name));
  const recovered = new Map(expectedFields(name, 'recovered-sb.txt'));
  // What the kernel's recovery and mount changed, by xfs_db.
  const kernelChanged = [...recovered.keys()].filter((k) => disk.get(k) !== recovered.get(k)).sort();
  expect(kernelChanged).toEqual(expect.arrayContaining(['icount', 'ifree', 'fdblocks']));
  await open(page, name);
  await expect(page.getByTestId('sb-icount')).toHaveText(disk.get('icount'));
  await page.getByTestId('replay-toggle').click();
  await expect(page.getByTestId('sb-replayed')).toBeVisible();
  for (const f of ['icount', 'ifree', 'fdblocks']) {
    await expect(page.getByTestId(`sb-${f}`), f).toHaveText(recovered.get(f));
    await expect(page.getByTestId(`sb-was-${f}`), f).toContainText(disk.get(f));
  }
  // Every other field equals the kernel's, except the LSN of the last
  // superblock write and the CRC over it: the kernel's came from the log
  // it wrote at unmount, ours from the clean log of the recovered image.
  for (const [k, v] of recovered) {
    if (k === 'lsn' || k === 'crc') continue;
    await expect(page.getByTestId(`sb-${k}`), k).toHaveText(v);
  }
  const marked = await page.locator('[data-testid="sb-row"][data-changed="true"]').evaluateAll((els) => els.map((e) => e.dataset.field));
  expect(marked.sort()).toEqual(kernelChanged);
  // Back to the disk.
  await page.getByTestId('replay-toggle').click();
  await expect(page.getByTestId('sb-replayed')).toHaveCount(0);
  await expect(page.getByTestId('sb-icount')).toHaveText(disk.get('icount'));
  await expect(page.locator('[data-testid="sb-row"][data-changed="true"]')).toHaveCount(0);
});
