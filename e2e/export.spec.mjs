// The recovered image written as it is made, a piece at a time: to the
// file the user picked (File System Access API) and, where the browser has
// no picker, as a download made of Blob parts. Both equal, byte for byte,
// the command line's `replay -o` of the same image (itself checked against
// the kernel's recovery in tests/replay.rs).
import { test, expect } from '@playwright/test';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TMP } from './oracle.mjs';

// The release command line, or the one XFS_EXPLORER_CLI names.
const CLI = process.env.XFS_EXPLORER_CLI || join(process.cwd(), 'target', 'release', 'xfs-explorer');
// 64 MiB: 16 pieces.
const NAME = 'log-1k-rmap';
let want;

test.beforeAll(() => {
  // The release command line, built here (cargo does nothing when it is current).
  test.setTimeout(20 * 60_000);
  if (!process.env.XFS_EXPLORER_CLI) {
    execFileSync('cargo', ['build', '--release', '--locked', '--bin', 'xfs-explorer'], { stdio: 'inherit' });
  }
  const dir = mkdtempSync(join(tmpdir(), 'export-'));
  try {
    const out = join(dir, 'recovered.img');
    execFileSync(CLI, ['replay', join(TMP, `${NAME}.img`), '-o', out], { stdio: 'ignore' });
    const bytes = readFileSync(out);
    want = { size: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

async function openReplayed(page) {
  await page.goto('/');
  await expect(page.getByText('Ready.')).toBeVisible();
  await page.getByTestId('image-input').setInputFiles(join(TMP, `${NAME}.img`));
  await expect(page.getByTestId('image-name')).toHaveText(`${NAME}.img`);
  await page.getByTestId('replay-toggle').click();
  await expect(page.getByTestId('replay-summary')).toBeVisible({ timeout: 60_000 });
}

test('without a file picker, the recovered image is a download of Blob parts equal to replay -o', async ({ page }) => {
  await page.addInitScript(() => { delete window.showSaveFilePicker; });
  await openReplayed(page);
  const wait = page.waitForEvent('download');
  await page.getByTestId('download-recovered').click();
  const dl = await wait;
  expect(dl.suggestedFilename()).toBe(`${NAME}-recovered.img`);
  const got = readFileSync(await dl.path());
  expect(got.length).toBe(want.size);
  expect(createHash('sha256').update(got).digest('hex')).toBe(want.sha256);
  await expect(page.getByTestId('saved')).toHaveAttribute('data-bytes', String(want.size));
});

test('with a file picker, the recovered image is written to the picked file piece by piece, equal to replay -o', async ({ page }) => {
  // The picker stubbed with a real writable file: one in the origin's
  // private file system, and every write to it recorded.
  await page.addInitScript(() => {
    window.__writes = [];
    window.showSaveFilePicker = async (opts) => {
      window.__suggested = opts && opts.suggestedName;
      const root = await navigator.storage.getDirectory();
      const handle = await root.getFileHandle('picked.img', { create: true });
      const create = handle.createWritable.bind(handle);
      handle.createWritable = async () => {
        const w = await create();
        const write = w.write.bind(w);
        w.write = (data) => { window.__writes.push(data.byteLength); return write(data); };
        return w;
      };
      return handle;
    };
  });
  await openReplayed(page);
  let downloads = 0;
  page.on('download', () => { downloads++; });
  await page.getByTestId('download-recovered').click();
  await expect(page.getByTestId('saved')).toHaveAttribute('data-bytes', String(want.size), { timeout: 60_000 });
  const got = await page.evaluate(async () => {
    const root = await navigator.storage.getDirectory();
    const file = await (await root.getFileHandle('picked.img')).getFile();
    const digest = await crypto.subtle.digest('SHA-256', await file.arrayBuffer());
    const sha256 = [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
    return { size: file.size, sha256, writes: window.__writes, suggested: window.__suggested };
  });
  expect(got.suggested).toBe(`${NAME}-recovered.img`);
  expect(got.size).toBe(want.size);
  expect(got.sha256).toBe(want.sha256);
  // Written as it was made: 4 MiB pieces, never the whole image at once.
  expect(got.writes.length).toBe(Math.ceil(want.size / (4 << 20)));
  for (const n of got.writes) expect(n).toBeLessThanOrEqual(4 << 20);
  expect(downloads).toBe(0);
});

test('an export can be cancelled, and the page works after', async ({ page }) => {
  await page.addInitScript(() => { delete window.showSaveFilePicker; });
  await openReplayed(page);
  let downloads = 0;
  page.on('download', () => { downloads++; });
  const clicked = await page.evaluate(async () => {
    document.querySelector('[data-testid="download-recovered"]').click();
    for (let i = 0; i < 100; i++) {
      const b = document.querySelector('[data-testid="cancel"]');
      if (b) { b.click(); return true; }
      await new Promise((r) => setTimeout(r, 0));
    }
    return false;
  });
  expect(clicked).toBe(true);
  await expect(page.getByTestId('cancelled')).toContainText('Cancelled: writing the recovered image');
  await expect(page.getByTestId('progress')).toHaveCount(0, { timeout: 30_000 });
  await expect(page.getByTestId('image-name')).toHaveText(`${NAME}.img`);
  // The new worker answers, and a new export runs to its end.
  await page.getByTestId('replay-toggle').click();
  await expect(page.getByTestId('replay-summary')).toBeVisible({ timeout: 60_000 });
  const wait = page.waitForEvent('download');
  await page.getByTestId('download-recovered').click();
  const got = readFileSync(await (await wait).path());
  expect(createHash('sha256').update(got).digest('hex')).toBe(want.sha256);
  expect(downloads).toBe(1);
});
