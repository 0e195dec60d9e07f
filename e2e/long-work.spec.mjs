// Every long request shows progress (a stage, and how far when known) from
// inside the work, can be cancelled, and leaves the page usable: the file
// opened again in a new worker and the view shown before back.
import { test, expect } from '@playwright/test';
import { join } from 'node:path';
import { TMP } from './oracle.mjs';

// The fixture with the largest log (8,013 live blocks of 512 bytes).
const BIG = 'log-1k-rmap';

async function open(page, name) {
  await page.goto('/');
  await expect(page.getByText('Ready.')).toBeVisible();
  await page.getByTestId('image-input').setInputFiles(join(TMP, `${name}.img`));
  await expect(page.getByTestId('image-name')).toHaveText(`${name}.img`);
}

// Record every stage and fraction the status shows from now on.
async function recordProgress(page) {
  await page.evaluate(() => {
    window.__stages = [];
    const seen = () => {
      const p = document.querySelector('[data-testid="progress"]');
      if (!p) return;
      const stage = p.querySelector('[data-testid="progress-stage"]')?.textContent ?? '';
      const fraction = p.getAttribute('data-fraction') ?? '';
      const last = window.__stages[window.__stages.length - 1];
      if (!last || last.stage !== stage || last.fraction !== fraction) window.__stages.push({ stage, fraction });
    };
    new MutationObserver(seen).observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true });
  });
}

// Start the work and cancel it in the same task of the page, before any
// answer of the worker can arrive.
async function startAndCancel(page, start) {
  return page.evaluate(async (start) => {
    if (start.hash) location.hash = start.hash;
    else document.querySelector(`[data-testid="${start.click}"]`).click();
    for (let i = 0; i < 100; i++) {
      const b = document.querySelector('[data-testid="cancel"]');
      if (b) { b.click(); return true; }
      await new Promise((r) => setTimeout(r, 0));
    }
    return false;
  }, start);
}

// A view shown in full before the long work: the directory /files.
async function showFiles(page) {
  await page.evaluate(() => { location.hash = '#/path/files'; });
  await expect(page.getByTestId('dir-list')).toBeVisible();
  await expect(page.getByTestId('progress')).toHaveCount(0);
}

const KINDS = [
  {
    kind: 'log decode', start: { hash: '#/log' }, loading: 'finding and decoding the log',
    worker: /^finding and decoding the log: [\d.]+ MiB read$/, done: (page) => expect(page.getByTestId('log-list')).toBeVisible(),
  },
  {
    kind: 'replay', start: { click: 'replay-toggle' }, loading: 'replaying the log',
    worker: /^replaying the log: pass \d/, done: (page) => expect(page.getByTestId('state-badge')).toHaveText('replayed state', { timeout: 60_000 }),
  },
  {
    kind: 'what replay changed', start: { hash: '#/replay' }, loading: 'what replay changed',
    worker: /^what replay changed: /, done: (page) => expect(page.getByTestId('replay-diff')).toBeVisible({ timeout: 60_000 }),
  },
  {
    kind: 'operations and the forkoff scan', start: { hash: '#/ops' }, loading: 'reconstructing the operations of the log',
    worker: /^(reconstructing the operations of the log: \d+ checkpoints|reading every inode in use on disk: \d+)/,
    done: (page) => expect(page.getByTestId('op-kind').first()).toBeVisible({ timeout: 60_000 }),
  },
  {
    kind: 'AG headers scan', start: { hash: '#/ag' }, loading: 'reading the allocation groups',
    worker: /^reading the headers of AG \d+ of \d+/, done: (page) => expect(page.getByTestId('ag').first()).toBeVisible(),
  },
  {
    kind: 'AG map', start: { hash: '#/ag/1' }, loading: 'mapping AG 1',
    worker: /^mapping AG 1: [\d.]+ MiB read$/, done: (page) => expect(page.getByTestId('ag-map')).toBeVisible(),
  },
];

for (const k of KINDS) {
  test(`${k.kind}: progress from the worker, cancel, and the page usable after`, async ({ page }) => {
    await open(page, BIG);
    await showFiles(page);
    expect(await startAndCancel(page, k.start)).toBe(true);
    await expect(page.getByTestId('cancelled')).toContainText(`Cancelled: ${k.loading}`);
    // The view shown before is back, read by the new worker.
    expect(new URL(page.url()).hash).toBe('#/path/files');
    await expect(page.getByTestId('progress')).toHaveCount(0, { timeout: 30_000 });
    await expect(page.getByTestId('replay-toggle')).not.toBeChecked();
    await expect(page.getByTestId('dir-list')).toBeVisible();
    // The same file, open in the new worker, answers.
    await page.evaluate(() => { location.hash = '#/'; });
    await expect(page.getByTestId('image-name')).toHaveText(`${BIG}.img`);
    await page.evaluate(() => { location.hash = '#/inode/64'; });
    await expect(page.getByTestId('inode-picture')).toBeVisible();
    await showFiles(page);
    // The same work run to its end in the new worker: the worker's own
    // progress reached the page, with how far it was when it knew.
    await recordProgress(page);
    await page.evaluate((start) => {
      if (start.hash) location.hash = start.hash;
      else document.querySelector(`[data-testid="${start.click}"]`).click();
    }, k.start);
    await k.done(page);
    const stages = await page.evaluate(() => window.__stages);
    const mine = stages.filter((s) => k.worker.test(s.stage));
    expect(mine.length, JSON.stringify(stages)).toBeGreaterThan(0);
    if (k.kind !== 'AG map') {
      expect(mine.some((s) => s.fraction !== ''), JSON.stringify(stages)).toBe(true);
      for (const s of mine.filter((s) => s.fraction !== '')) {
        expect(Number(s.fraction)).toBeGreaterThanOrEqual(0);
        expect(Number(s.fraction)).toBeLessThanOrEqual(1);
      }
    }
  });
}
