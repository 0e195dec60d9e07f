// The log view against xfs_logprint -t of the same kernel-made images.
import { test, expect } from '@playwright/test';
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { FIXTURES, TMP } from './oracle.mjs';

/** head, tail, state and transactions from `xfs_logprint -t`. */
function logprint(name) {
  const f = [`${name}.logprint-t.txt`, `${name}.logt.txt`].map((n) => join(FIXTURES, n)).find(existsSync);
  const text = readFileSync(f, 'utf8');
  const m = text.match(/log tail: (\d+) head: (\d+) state: <(\w+)>/);
  const trans = text.split(/\n(?=TRANS:)/).slice(1).map((t) => {
    const bufs = [];
    const lines = t.split('\n');
    for (let i = 0; i < lines.length - 1; i++) {
      const a = lines[i].match(/^BUF: cnt:(\d+) .*$/);
      const b = lines[i + 1].match(/BUF:\s+#regs:(\d+)\s+start blkno:0x([0-9a-f]+)\s+len:(\d+)/);
      if (a && b) {
        const lens = [...lines[i].matchAll(/len:(\d+)/g)].map((x) => Number(x[1]));
        bufs.push({ regs: Number(b[1]), blkno: parseInt(b[2], 16), len: Number(b[3]), dataBytes: lens.slice(1).reduce((s, x) => s + x, 0) });
      }
    }
    return { bufs };
  });
  return { tail: Number(m[1]), head: Number(m[2]), clean: m[3] === 'CLEAN', trans };
}

async function openLog(page, name) {
  await page.goto('/');
  await expect(page.getByText('Ready.')).toBeVisible();
  await page.getByTestId('image-input').setInputFiles(join(TMP, `${name}.img`));
  await expect(page.getByTestId('image-name')).toHaveText(`${name}.img`);
  await page.evaluate(() => { window.location.hash = '#/log'; });
}

for (const name of ['v5-4k-dirty', 'v5-sect4k', 'log-wrapped', 'log-acrossend', 'log-intents', 'log-1k-rmap']) {
  test(`the log of ${name} has the head, tail, state and transactions xfs_logprint shows`, async ({ page }) => {
    const want = logprint(name);
    await openLog(page, name);
    await expect(page.getByTestId('log-clean')).toHaveText(want.clean ? 'clean' : 'dirty');
    await expect(page.getByTestId('log-head-block')).toHaveText(String(want.head));
    await expect(page.getByTestId('log-tail-block')).toHaveText(String(want.tail));
    await expect(page.getByTestId('log-transactions')).toHaveText(String(want.trans.length));
    if (want.trans.length > 0) await expect(page.getByTestId('log-transaction').first()).toBeVisible();
  });
}

test('unfinished intents stand out', async ({ page }) => {
  await openLog(page, 'log-intents');
  const banner = page.getByTestId('log-unfinished');
  await expect(banner).toBeVisible();
  for (const kind of ['efi', 'rui', 'cui']) await expect(banner).toContainText(kind);
  await expect(page.locator('[data-testid="log-transaction"].unfinished').first()).toBeVisible();
});

test('the transaction list of a wrapped log scrolls to its last transaction', async ({ page }) => {
  const want = logprint('log-wrapped');
  await openLog(page, 'log-wrapped');
  await expect(page.getByTestId('log-transactions')).toHaveText(String(want.trans.length));
  expect(await page.getByTestId('log-transaction').count()).toBeLessThan(150);
  await page.getByTestId('log-list').evaluate((el) => { el.scrollTop = el.scrollHeight; });
  await expect(page.locator(`[data-testid="log-transaction"][data-index="${want.trans.length - 1}"]`)).toBeVisible();
});

test('64 KiB directory blocks show their dirty bitmaps as runs', async ({ page }) => {
  const want = logprint('log-64kdir');
  await openLog(page, 'log-64kdir');
  let checked = 0;
  for (let i = 0; i < want.trans.length; i++) {
    const big = want.trans[i].bufs.filter((b) => b.len === 128);
    if (big.length === 0) continue;
    await page.evaluate((h) => { window.location.hash = h; }, `#/log/${i}`);
    await expect(page.getByTestId('log-detail')).toContainText(`Transaction #${i}`);
    for (const b of big.slice(0, 12)) {
      const item = page.getByTestId('log-item').filter({ hasText: `blkno ${b.blkno} len 128 ` }).first();
      const runs = item.getByTestId('bitmap-run');
      // One run per logged data region (these 64 KiB buffers are contiguous).
      await expect(runs).toHaveCount(b.regs - 1);
      const chunks = await runs.evaluateAll((els) => els.reduce((s, e) => s + Number(e.dataset.count), 0));
      expect(chunks * 128).toBe(b.dataBytes);
      checked++;
    }
  }
  expect(checked).toBeGreaterThan(3);
});
