// Partitioned disks and qcow2 images dropped on the page: the partition
// table drawn to scale against sfdisk's, the XFS partition chosen as blkid
// finds it, and the tree and directories against the kernel's listing of
// the mounted partition (make/containers.sh disks).
import { test, expect } from '@playwright/test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FIXTURES, kernelListing, TMP } from './oracle.mjs';

/** Drop fixture `name` on the drop zone as a real File. */
async function drop(page, name) {
  await page.goto('/');
  await expect(page.getByText('Ready.')).toBeVisible();
  await page.route('**/e2e-container.img', (route) => route.fulfill({ path: join(TMP, `${name}.img`) }));
  const dt = await page.evaluateHandle(async (file) => {
    const blob = await (await fetch('/e2e-container.img')).blob();
    const dt = new DataTransfer();
    dt.items.add(new File([blob], file));
    return dt;
  }, `${name}.img`);
  await page.dispatchEvent('#drop-zone', 'dragover', { dataTransfer: dt });
  await page.dispatchEvent('#drop-zone', 'drop', { dataTransfer: dt });
}

function sfdisk(name) {
  return JSON.parse(readFileSync(join(FIXTURES, `${name}.sfdisk.json`), 'utf8')).partitiontable;
}

function blkidXfs(name) {
  return readFileSync(join(FIXTURES, `${name}.blkid.txt`), 'utf8').split('\n').filter(Boolean)
    .map((l) => l.split('\t')).filter(([, t]) => t === 'xfs').map(([n]) => Number(n));
}

/** The top-level names of the kernel's listing. */
function topLevel(listing) {
  return listing.map((e) => e.path).filter((p) => p !== '/' && !p.slice(1).includes('/')).map((p) => p.slice(1)).sort();
}

/** The partition bars: drawn to scale and chosen as the tools say. */
async function expectDiskMap(page, name, chosen) {
  const t = sfdisk(name);
  const ss = t.sectorsize;
  await expect(page.getByTestId('disk-map')).toBeVisible();
  const xfs = blkidXfs(name);
  for (const p of t.partitions) {
    const n = Number(p.node.replace('IMAGE', ''));
    const bar = page.getByTestId(`partition-bar-${n}`);
    await expect(bar).toHaveAttribute('data-xfs', String(xfs.includes(n)));
    await expect(bar).toHaveAttribute('data-chosen', String(n === chosen));
    const row = page.getByTestId(`partition-row-${n}`);
    await expect(row.locator('td').nth(3)).toHaveText(String(p.start * ss));
  }
  await expect(page.locator('[data-testid^="partition-bar-"]')).toHaveCount(t.partitions.length);
}

/** The bars' x and width, in SVG units of a 1000-wide disk. */
async function expectToScale(page, name, diskBytes) {
  const t = sfdisk(name);
  for (const p of t.partitions) {
    const n = Number(p.node.replace('IMAGE', ''));
    const bar = page.getByTestId(`partition-bar-${n}`);
    const x = Number(await bar.getAttribute('data-x'));
    const w = Number(await bar.getAttribute('data-width'));
    expect(Math.abs(x - (1000 * p.start * t.sectorsize) / diskBytes), `${name} ${n} x`).toBeLessThan(0.1);
    expect(Math.abs(w - Math.max(2, (1000 * p.size * t.sectorsize) / diskBytes)), `${name} ${n} width`).toBeLessThan(0.1);
  }
}

async function expectTree(page, name, suffix = 'container-ls.jsonl') {
  const listing = kernelListing(name, suffix);
  await page.evaluate(() => { window.location.hash = '#/path/'; });
  await expect(page.getByTestId('dir-path')).toHaveText('/');
  const want = topLevel(listing);
  await expect(page.getByTestId('dir-entry')).toHaveCount(want.length);
  const got = await page.getByTestId('dir-entry').evaluateAll((els) => els.map((e) => e.dataset.name));
  expect(got.sort()).toEqual(want);
  await expect(page.getByTestId('tree')).toBeVisible();
  // A file deep down, by path: its size as the kernel says.
  const file = listing.find((e) => e.path === '/home/user/docs/random.bin');
  await page.evaluate(() => { window.location.hash = '#/path/home/user/docs'; });
  await expect(page.getByTestId('dir-path')).toHaveText('/home/user/docs');
  await expect(page.locator('[data-testid="dir-entry"][data-name="random.bin"]')).toContainText(String(file.size));
  await expect(page.locator(`[data-testid="dir-entry"][data-name="random.bin"] .eino`)).toHaveText(String(file.ino));
}

const DISKS = [
  // name, chain, the partition opened (the one blkid finds XFS in)
  ['disk-gpt', 'GPT > partition 1', 1],
  ['qcow2-v3-gpt', 'qcow2 v3 > GPT > partition 1', 1],
  ['qcow2-v2-gpt', 'qcow2 v2 > GPT > partition 1', 1],
  ['qcow2-extl2-gpt', 'qcow2 v3 > GPT > partition 1', 1],
  ['disk-mbr', 'MBR > partition 2', 2],
  ['disk-mbr4k', 'MBR > partition 2', 2],
  ['disk-gpt4k', 'GPT > partition 1', 1],
];

for (const [name, chain, chosen] of DISKS) {
  test(`${name}: the partition table is drawn and its XFS partition opens`, async ({ page }) => {
    await drop(page, name);
    await expect(page.getByTestId('image-name')).toHaveText(`${name}.img`);
    await expect(page.getByTestId('container-chain')).toHaveText(chain);
    await expect(page.getByTestId('chosen-partition')).toContainText(`partition ${chosen} is open`);
    await expectDiskMap(page, name, chosen);
    const t = sfdisk(name);
    const bytes = name.startsWith('qcow2')
      ? JSON.parse(readFileSync(join(FIXTURES, `${name}.qemu-img-info.json`), 'utf8'))['virtual-size']
      : 48 << 20;
    expect(t.partitions.length).toBeGreaterThan(1);
    await expectToScale(page, name, bytes);
    if (name.startsWith('qcow2')) await expect(page.getByTestId('qcow2-layer')).toHaveCount(1);
    await expectTree(page, name);
  });
}

test('a disk with two XFS partitions asks which, and opens each', async ({ page }) => {
  const name = 'disk-gpt2xfs';
  await drop(page, name);
  await expect(page.getByTestId('choose-partition')).toContainText('2 partitions that hold an XFS filesystem (1, 2)');
  await expect(page.getByTestId('image-name')).toHaveCount(0);
  await expectDiskMap(page, name, null);
  await page.getByTestId('open-partition-2').click();
  await expect(page.getByTestId('image-name')).toHaveText(`${name}.img`);
  await expect(page.getByTestId('chosen-partition')).toContainText('partition 2 is open');
  await expectDiskMap(page, name, 2);
  await expectTree(page, name, 'container-ls-2.jsonl');
  // Back to the superblock and over to partition 1 by its bar.
  await page.evaluate(() => { window.location.hash = '#/'; });
  await page.getByTestId('partition-bar-1').click();
  await expect(page.getByTestId('chosen-partition')).toContainText('partition 1 is open');
  await expectTree(page, name, 'container-ls.jsonl');
});

test('a 100 GiB qcow2 opens reading a few MiB', async ({ page }) => {
  const name = 'qcow2-big';
  await drop(page, name);
  await expect(page.getByTestId('container-chain')).toHaveText('qcow2 v3 > GPT > partition 1');
  const read = Number(await page.getByTestId('bytes-read').getAttribute('data-bytes'));
  // The filesystem's own reads, in 1 MiB chunks of the 100 GiB partition.
  expect(read).toBeLessThan(8 << 20);
  await expectTree(page, name);
});

test('a compressed qcow2 is refused with the reason', async ({ page }) => {
  await drop(page, 'qcow2-compressed');
  await expect(page.getByTestId('error')).toContainText('compressed cluster (zlib)');
});
