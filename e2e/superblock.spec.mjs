// The superblock in the browser, against xfs_db's view of the same image.
import { test, expect } from '@playwright/test';
import { closeSync, openSync, readFileSync, writeSync, ftruncateSync } from 'node:fs';
import { join } from 'node:path';
import { expectedFields, sbFixtures, TMP } from './oracle.mjs';

async function expectSuperblock(page, name) {
  const fields = expectedFields(name);
  expect(fields.length).toBeGreaterThan(40);
  for (const [k, v] of fields) {
    await expect(page.getByTestId(`sb-${k}`), `${name}: sb_${k}`).toHaveText(v);
  }
}

test.beforeEach(async ({ page }) => {
  await page.goto('/');
  await expect(page.getByText('Ready.')).toBeVisible();
});

for (const name of sbFixtures()) {
  test(`picking ${name} shows the superblock xfs_db shows`, async ({ page }) => {
    await page.getByTestId('image-input').setInputFiles(join(TMP, `${name}.img`));
    await expect(page.getByTestId('image-name')).toHaveText(`${name}.img`);
    await expectSuperblock(page, name);
    await expect(page.getByTestId('error')).toHaveCount(0);
  });
}

test('dropping an image onto the drop zone opens it', async ({ page }) => {
  const name = 'v5-1k-rmap';
  // Serve the fixture to the page so it can build a real File to drop.
  await page.route('**/e2e-fixture.img', (route) => route.fulfill({ path: join(TMP, `${name}.img`) }));
  const dt = await page.evaluateHandle(async () => {
    const blob = await (await fetch('/e2e-fixture.img')).blob();
    const dt = new DataTransfer();
    dt.items.add(new File([blob], 'dropped.img'));
    return dt;
  });
  await page.dispatchEvent('#drop-zone', 'dragover', { dataTransfer: dt });
  await page.dispatchEvent('#drop-zone', 'drop', { dataTransfer: dt });
  await expect(page.getByTestId('image-name')).toHaveText('dropped.img');
  await expectSuperblock(page, name);
});

test('the sample button opens the bundled dirty image', async ({ page }) => {
  await page.getByTestId('sample-button').click();
  await expect(page.getByTestId('sb-fname')).toHaveText('sample');
  await expectSuperblock(page, 'v5-4k-dirty');
  await expect(page.getByTestId('sb-crc-ok')).toHaveText('CRC correct');
});

test('a file that is not XFS gets a clear error and the page keeps working', async ({ page }) => {
  await page.getByTestId('image-input').setInputFiles({
    name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('hello, this is not a filesystem\n'.repeat(64)),
  });
  await expect(page.getByTestId('error')).toContainText('not an XFS filesystem: magic is 0x68656c6c ("hell")');
  await expect(page.getByTestId('sb-blocksize')).toHaveCount(0);

  await page.getByTestId('image-input').setInputFiles({ name: 'tiny.bin', mimeType: 'application/octet-stream', buffer: Buffer.from('XFSB') });
  await expect(page.getByTestId('error')).toContainText('beyond the end of the image');

  await page.getByTestId('image-input').setInputFiles(join(TMP, 'v5-sect4k.img'));
  await expect(page.getByTestId('error')).toHaveCount(0);
  await expectSuperblock(page, 'v5-sect4k');
});

test('a 100 GiB sparse image opens without reading the whole file', async ({ page }) => {
  const big = join(TMP, 'huge-sparse.img');
  const head = readFileSync(join(TMP, 'v5-1kinode.img')).subarray(0, 1 << 20);
  const fd = openSync(big, 'w');
  ftruncateSync(fd, 100 * 2 ** 30);
  writeSync(fd, head, 0, head.length, 0);
  closeSync(fd);
  await page.getByTestId('image-input').setInputFiles(big);
  await expect(page.getByTestId('sb-fname')).toHaveText('v5-1kinode');
  const read = Number(await page.getByTestId('bytes-read').getAttribute('data-bytes'));
  expect(read).toBeGreaterThan(0);
  expect(read).toBeLessThanOrEqual(1 << 20);
  await expect(page.getByTestId('bytes-read')).toContainText('of 100.0 GiB');
});
