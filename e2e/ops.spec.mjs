// The operations view (#/ops) against the command line's `ops --json` of
// the same image, and against the kernel's own count (the xfs_trans_commit
// tracepoint, recorded as NAME.truth.json, on a log forced after every
// operation): counts per kind, the timeline's entries and their links, and
// the forkoff histogram of the disk's state and of the replayed one.
import { test, expect } from '@playwright/test';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FIXTURES, TMP } from './oracle.mjs';

const KINDS = ['create', 'mkdir', 'mknod', 'symlink', 'link', 'unlink', 'rmdir', 'rename', 'setxattr', 'removexattr',
  'write', 'truncate', 'setattr'];
const CLI = join(process.cwd(), 'target', 'release', 'xfs-explorer');

// The kernel-made fixture of every operation kind, each operation in a
// checkpoint of its own; and the forged log of typed transactions.
const MAIN = 'ops-each-cp';
const NAMES = [MAIN, 'ops-typed'].filter((n) => existsSync(join(FIXTURES, `${n}.img.zst`)));
// A log of 481 checkpoints and about 2000 operations: the timeline in pages.
const LONG = 'log-1k-rmap';

const cli = {};

test.beforeAll(() => {
  // The release command line, built here (cargo does nothing when it is current).
  test.setTimeout(20 * 60_000);
  execFileSync('cargo', ['build', '--release', '--locked', '--bin', 'xfs-explorer'], { stdio: 'inherit' });
  for (const n of [...NAMES, LONG]) {
    cli[n] = JSON.parse(execFileSync(CLI, ['--replay', 'ops', join(TMP, `${n}.img`), '--json'], { maxBuffer: 1 << 30 }));
  }
});

async function open(page, name) {
  await page.goto('/');
  await expect(page.getByText('Ready.')).toBeVisible();
  await page.getByTestId('image-input').setInputFiles(join(TMP, `${name}.img`));
  await expect(page.getByTestId('image-name')).toHaveText(`${name}.img`);
}

/** Open #/ops through the navigation; the milliseconds until the counts show. */
async function openOps(page) {
  const t0 = Date.now();
  await page.getByRole('link', { name: 'Operations', exact: true }).click();
  await expect(page).toHaveURL(/#\/ops$/);
  await expect(page.getByTestId('op-kinds').or(page.getByTestId('ops-clean')).or(page.getByTestId('ops-error'))).toBeVisible({ timeout: 60_000 });
  await expect(page.getByTestId('ops-timeline')).toBeVisible();
  return Date.now() - t0;
}

/** Every timeline entry over all pages: {checkpoint, index, kind, ino}. */
async function allEntries(page) {
  const out = [];
  for (;;) {
    await expect(page.getByTestId('ops-pager').first()).toBeVisible();
    out.push(...await page.getByTestId('ops-checkpoint').evaluateAll((cps) => cps.flatMap((cp) =>
      [...cp.querySelectorAll('[data-testid="ops-entry"]')].map((e) => ({
        checkpoint: Number(cp.dataset.index), index: Number(e.dataset.index), kind: e.dataset.kind, ino: Number(e.dataset.ino),
        path: e.dataset.path,
      })))));
    const next = page.getByTestId('ops-next').first();
    if (await next.count() === 0) return out;
    // The page the worker delivered, not only the address, must be the
    // next one before its entries are read.
    const href = await next.getAttribute('href');
    const [, start = '0', skip = '0'] = href.match(/#\/ops(?:\/(\d+))?(?:\/(\d+))?$/) ?? [];
    await next.click();
    await expect(page.getByTestId('ops-timeline')).toHaveAttribute('data-page', `${start}/${skip}`);
  }
}

for (const name of NAMES) {
  test(`${name}: the count of each operation kind and its transactions are the command line's`, async ({ page }) => {
    const want = cli[name];
    expect(want.clean).toBe(false);
    await open(page, name);
    const ms = await openOps(page);
    const worker = await page.getByTestId('ops-summary').textContent();
    const note = `${name}: #/ops showed its counts ${ms} ms after the click (${worker.match(/reconstructed in \d+ ms/)?.[0]})`;
    console.log(note);
    test.info().annotations.push({ type: 'timing', description: note });
    let present = 0;
    for (const k of KINDS) {
      const [ops, tx] = [want.operations[k] ?? 0, want.transactions[k] ?? 0];
      if (ops === 0 && tx === 0) {
        await expect(page.getByTestId(`op-count-${k}`), k).toHaveCount(0);
        continue;
      }
      present++;
      await expect(page.getByTestId(`op-count-${k}`), k).toHaveText(String(ops));
      await expect(page.getByTestId(`op-transactions-${k}`), k).toHaveText(String(tx));
    }
    expect(present).toBeGreaterThan(3);
    // Typed transactions of no operation kind, as the command line counts them.
    for (const [type, n] of Object.entries(want.other_transactions)) {
      await expect(page.locator(`[data-testid="op-other"][data-type="${type}"] td`).nth(2), type).toHaveText(String(n));
    }
    // Against the kernel's count: every operation that committed a
    // transaction, and the transactions, per kind.
    const truthFile = join(FIXTURES, `${name}.truth.json`);
    const truth = existsSync(truthFile) ? JSON.parse(readFileSync(truthFile, 'utf8')) : null;
    if (truth?.by_kind) {
      for (const k of KINDS) {
        const ran = truth.operations.filter((o) => o.kind === k && o.transactions > 0);
        if (ran.length === 0) continue;
        const committed = ran.reduce((n, o) => n + o.transactions, 0);
        await expect(page.getByTestId(`op-count-${k}`), k).toHaveText(String(ran.length));
        await expect(page.getByTestId(`op-transactions-${k}`), k).toHaveText(String(committed));
      }
    }
  });

  test(`${name}: the timeline lists every operation of each checkpoint and links to its inode`, async ({ page }) => {
    const want = cli[name];
    await open(page, name);
    await openOps(page);
    const entries = await allEntries(page);
    const expected = want.checkpoints.flatMap((cp) => cp.operations.map((i) => ({
      checkpoint: cp.index, index: i, kind: want.operation_list[i].kind, ino: want.operation_list[i].ino,
      path: want.operation_list[i].path ?? '',
    })));
    expect(entries).toEqual(expected);
    // The paths the operations ran on are shown.
    expect(entries.filter((e) => e.path !== '').length).toBeGreaterThan(0);
    // An entry's inode link opens the inode view of that inode, and its
    // directory link (entry operations) the directory's.
    await page.goto(page.url().replace(/#.*$/, '#/ops'));
    await expect(page.getByTestId('ops-timeline')).toBeVisible({ timeout: 30_000 });
    const withDir = page.locator('[data-testid="ops-entry"]').filter({ has: page.getByTestId('ops-dir-link') });
    const hasDir = want.operation_list.some((o) => o.dir !== undefined);
    const entry = hasDir ? withDir.first() : page.getByTestId('ops-entry').first();
    const ino = await entry.getAttribute('data-ino');
    await entry.getByTestId('ops-ino-link').click();
    await expect(page).toHaveURL(new RegExp(`#/inode/${ino}$`));
    await expect(page.locator('section.inode h2')).toContainText(`Inode ${ino}`);
    await expect(page.getByTestId('inode-forkoff')).toBeVisible();
    if (!hasDir) return;
    await page.goBack();
    await expect(page.getByTestId('ops-timeline')).toBeVisible({ timeout: 30_000 });
    const link = withDir.first().getByTestId('ops-dir-link');
    const dir = await link.getAttribute('data-ino');
    await link.click();
    await expect(page).toHaveURL(new RegExp(`#/inode/${dir}$`));
    await expect(page.locator('section.inode h2')).toContainText(`Inode ${dir}`);
    await expect(page.locator('section.inode h2')).toContainText('· dir ·');
  });

  test(`${name}: the forkoff histogram counts the inodes in use the command line counts, on disk and after replay`, async ({ page }) => {
    const want = cli[name];
    await open(page, name);
    await openOps(page);
    for (const [state, d] of [['disk', want.forkoff], ['replayed', want.forkoff_replayed]]) {
      if (state === 'replayed') {
        await page.getByTestId('ops-show-replayed').click();
        await expect(page.getByTestId('replay-toggle')).toBeChecked();
      }
      await expect(page.getByTestId(`forkoff-inodes-${state}`)).toHaveText(String(d.inodes), { timeout: 30_000 });
      await expect(page.getByTestId(`forkoff-attr-${state}`)).toHaveText(String(d.with_attr_fork));
      const bars = await page.getByTestId(`forkoff-bar-${state}`).evaluateAll((els) =>
        Object.fromEntries(els.map((e) => [e.dataset.forkoff, Number(e.dataset.inodes)])));
      expect(bars).toEqual(d.by_value);
      const readings = await page.getByTestId(`forkoff-readings-${state}`).getByTestId('forkoff-reading').evaluateAll((els) =>
        Object.fromEntries(els.map((e) => [e.dataset.reading, Number(e.dataset.inodes)])));
      expect(readings).toEqual(d.by_reading);
    }
    // The disk's histogram stays next to the replayed one.
    await expect(page.getByTestId('forkoff-inodes-disk')).toHaveText(String(want.forkoff.inodes));
  });
}

test(`${LONG}: the timeline pages through every checkpoint; a bar of the chart opens its checkpoints`, async ({ page }) => {
  const want = cli[LONG];
  expect(want.checkpoints.length).toBeGreaterThan(100);
  await open(page, LONG);
  const ms = await openOps(page);
  const note = `${LONG}: #/ops showed its counts ${ms} ms after the click (${(await page.getByTestId('ops-summary').textContent()).match(/reconstructed in \d+ ms/)?.[0]})`;
  console.log(note);
  test.info().annotations.push({ type: 'timing', description: note });
  const entries = await allEntries(page);
  expect(entries.length).toBe(want.operation_list.length);
  expect(entries).toEqual(want.checkpoints.flatMap((cp) => cp.operations.map((i) => ({
    checkpoint: cp.index, index: i, kind: want.operation_list[i].kind, ino: want.operation_list[i].ino,
    path: want.operation_list[i].path ?? '',
  }))));
  // The last page goes back to the one before it.
  const last = page.url();
  await page.getByTestId('ops-prev').first().click();
  await expect(page).not.toHaveURL(last);
  await page.getByTestId('ops-next').first().click();
  await expect(page).toHaveURL(last);
  // A bar of the items-per-checkpoint chart opens the timeline at its first checkpoint.
  const bar = page.getByTestId('ops-checkpoint-bar').nth(100);
  const first = await bar.getAttribute('data-first');
  await bar.click();
  await expect(page).toHaveURL(new RegExp(`#/ops/${first}$`));
  await expect(page.getByTestId('ops-checkpoint').first()).toHaveAttribute('data-index', first);
  // The page holds a page of the timeline, not the whole log.
  expect(await page.getByTestId('ops-entry').count()).toBeLessThanOrEqual(400);
  expect(await page.getByTestId('ops-checkpoint').count()).toBeLessThanOrEqual(25);
});

test(`${MAIN}: a screenshot of the view`, async ({ page }) => {
  await page.setViewportSize({ width: 1280, height: 900 });
  await open(page, MAIN);
  await openOps(page);
  await page.getByTestId('ops-show-replayed').click();
  await expect(page.getByTestId('forkoff-replayed')).toBeVisible({ timeout: 30_000 });
  await page.screenshot({ path: '/tmp/ops-view.png', fullPage: true });
});

test('errors of the analysis show in the view; the rest of the page keeps working', async ({ page }) => {
  // log-xattrs with its log overwritten by garbage: the log cannot be
  // walked, the inodes can still be read.
  const src = readFileSync(join(TMP, 'log-xattrs.img'));
  const sb = (off) => src.readUInt32BE(off);
  const blocksize = sb(4);
  const logstart = Number(src.readBigUInt64BE(48));
  const agblocks = sb(84);
  const agblklog = src[124];
  const daddr = (Math.floor(logstart / 2 ** agblklog) * agblocks + logstart % 2 ** agblklog) * blocksize;
  const logblocks = sb(96);
  const broken = Buffer.from(src);
  for (let i = daddr; i < daddr + logblocks * blocksize; i += 512) broken.fill(0xa5, i, i + 512);
  writeFileSync(join(TMP, 'broken-log.img'), broken);
  await open(page, 'broken-log');
  await page.evaluate(() => { window.location.hash = '#/ops'; });
  await expect(page.getByTestId('ops-error')).toBeVisible({ timeout: 30_000 });
  await expect(page.getByTestId('forkoff-inodes-disk')).toHaveText(/^\d+$/);
  await page.getByRole('link', { name: 'Superblock', exact: true }).click();
  await expect(page.getByTestId('sb-blocksize')).toHaveText(String(blocksize));
});
