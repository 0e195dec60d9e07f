// Reads that overlap the decoding (src/web/worker/read_ahead.rs): the page
// served cross-origin isolated reads the log through the read-ahead worker,
// the page served plainly reads it with FileReaderSync alone, and both show
// what xfs_logprint and the kernel's recovery show.
import { test, expect } from '@playwright/test';
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { FIXTURES, TMP, kernelListing } from './oracle.mjs';

// The two servers of playwright.config.mjs. On the isolated one the page
// asks for the read-ahead worker whatever the machine's cores (it is
// started by default only with more than two).
const PORT = Number(process.env.E2E_PORT || 8091);
const SERVERS = [
  { mode: 'isolated', url: `http://127.0.0.1:${PORT + 1}/?read-ahead=always`, isolated: true },
  { mode: 'plain', url: `http://127.0.0.1:${PORT}/`, isolated: false },
];

/** head, tail, state and the number of transactions from `xfs_logprint -t`. */
function logprint(name) {
  const f = [`${name}.logprint-t.txt`, `${name}.logt.txt`].map((n) => join(FIXTURES, n)).find(existsSync);
  const text = readFileSync(f, 'utf8');
  const m = text.match(/log tail: (\d+) head: (\d+) state: <(\w+)>/);
  return { tail: Number(m[1]), head: Number(m[2]), clean: m[3] === 'CLEAN', trans: text.split(/\n(?=TRANS:)/).length - 1 };
}

function rootEntries(listing) {
  return listing.filter((e) => e.path !== '/' && !e.path.slice(1).includes('/')).map((e) => e.path.slice(1)).sort();
}

/** The worker's timing lines, by request ("log", "replay"). */
function timings(page) {
  const lines = new Map();
  page.on('console', (m) => {
    const t = m.text().match(/^timing ([a-z ]+): .*read ahead (\d+) \(/);
    if (t) lines.set(t[1], Number(t[2]));
  });
  return lines;
}

async function open(page, url, name) {
  await page.goto(url);
  await expect(page.getByText('Ready.')).toBeVisible();
  await page.getByTestId('image-input').setInputFiles(join(TMP, `${name}.img`));
  await expect(page.getByTestId('image-name')).toHaveText(`${name}.img`);
  // The read-ahead worker starts while the worker is idle after the open;
  // reads that come before it runs are made with FileReaderSync.
  await page.waitForTimeout(500);
}

for (const s of SERVERS) {
  for (const name of ['v5-4k-dirty', 'log-wrapped', 'log-acrossend']) {
    test(`${s.mode}: the log of ${name} is what xfs_logprint shows`, async ({ page }) => {
      const want = logprint(name);
      const t = timings(page);
      await open(page, s.url, name);
      expect(await page.evaluate(() => self.crossOriginIsolated)).toBe(s.isolated);
      await page.evaluate(() => { window.location.hash = '#/log'; });
      await expect(page.getByTestId('log-clean')).toHaveText(want.clean ? 'clean' : 'dirty');
      await expect(page.getByTestId('log-head-block')).toHaveText(String(want.head));
      await expect(page.getByTestId('log-tail-block')).toHaveText(String(want.tail));
      await expect(page.getByTestId('log-transactions')).toHaveText(String(want.trans));
      await expect.poll(() => t.get('log')).toBeDefined();
      if (s.isolated) expect(t.get('log')).toBeGreaterThan(0);
      else expect(t.get('log')).toBe(0);
    });
  }

  test(`${s.mode}: the replayed root is the kernel's recovered one`, async ({ page }) => {
    const name = 'v5-4k-dirty';
    const t = timings(page);
    await open(page, s.url, name);
    // Replay runs in the full worker, which the page loads on first need;
    // that worker's reader starts with it and is not up for the reads made
    // at once. The operations view loads the full worker first; replay
    // then finds its reader running.
    await page.evaluate(() => { window.location.hash = '#/ops'; });
    await expect(page.getByTestId('op-kinds').or(page.getByTestId('ops-clean'))).toBeVisible({ timeout: 60_000 });
    await page.waitForTimeout(500);
    await page.evaluate(() => { window.location.hash = '#/path/'; });
    await expect(page.getByTestId('dir-path')).toHaveText('/');
    await page.getByTestId('replay-toggle').click();
    await expect(page.getByTestId('replay-summary')).toBeVisible();
    const want = rootEntries(kernelListing(name, 'recovered-ls.jsonl'));
    expect(want.length).toBeGreaterThan(3);
    await expect(page.getByTestId('dir-entry')).toHaveCount(want.length);
    const got = await page.getByTestId('dir-entry').evaluateAll((els) => els.map((e) => e.dataset.name));
    expect(got.sort()).toEqual(want);
    await expect.poll(() => t.get('replay')).toBeDefined();
    if (s.isolated) expect(t.get('replay')).toBeGreaterThan(0);
    else expect(t.get('replay')).toBe(0);
  });
}

// Left to decide, the worker reads ahead only on a machine with more than
// two logical processors; asked not to, it never does.
for (const query of ['', '?read-ahead=never']) {
  test(`isolated${query ? `, ${query}` : ''}: the read-ahead worker is used only where asked or where the cores allow`, async ({ page }) => {
    const name = 'v5-4k-dirty';
    const want = logprint(name);
    const t = timings(page);
    await open(page, `http://127.0.0.1:${PORT + 1}/${query}`, name);
    expect(await page.evaluate(() => self.crossOriginIsolated)).toBe(true);
    const cores = await page.evaluate(() => navigator.hardwareConcurrency);
    await page.evaluate(() => { window.location.hash = '#/log'; });
    await expect(page.getByTestId('log-transactions')).toHaveText(String(want.trans));
    await expect.poll(() => t.get('log')).toBeDefined();
    if (query === '' && cores > 2) expect(t.get('log')).toBeGreaterThan(0);
    else expect(t.get('log')).toBe(0);
  });
}
