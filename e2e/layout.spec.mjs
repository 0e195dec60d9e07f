// Layout with the longest names XFS allows, on a laptop's screen, and the
// page as a screen reader meets it. The fixture (make/shapes.sh long-names)
// nests eight directories of 255-byte names and puts 255-byte names, a
// 1023-byte symlink target and a 255-byte xattr name in the deepest; the
// kernel's own listing of it (find, getfattr) is the oracle for every name.
import { test, expect } from '@playwright/test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FIXTURES, TMP } from './oracle.mjs';

const NAME = 'long-names';

function listing() {
  return readFileSync(join(FIXTURES, `${NAME}.find.txt`), 'utf8').split('\n').filter(Boolean)
    .map((l) => { const [path, type, size, target] = l.split('\t'); return { path, type, size: Number(size), target }; });
}

const hashOf = (p) => `#/path/${p.split('/').map(encodeURIComponent).join('/')}`;

async function open(page) {
  await page.setViewportSize({ width: 1366, height: 768 });
  await page.goto('/');
  await expect(page.getByText('Ready.')).toBeVisible();
  await page.getByTestId('image-input').setInputFiles(join(TMP, `${NAME}.img`));
  await expect(page.getByTestId('image-name')).toHaveText(`${NAME}.img`);
}

/** Nothing makes the page wider than the window, and each of `sel` lies inside it. */
async function fits(page, what, sel) {
  const r = await page.evaluate((s) => ({
    page: document.documentElement.scrollWidth,
    win: window.innerWidth,
    out: [...document.querySelectorAll(s)].map((e) => e.getBoundingClientRect())
      .filter((b) => b.width > 0 && (b.left < -1 || b.right > window.innerWidth + 1)).length,
    n: document.querySelectorAll(s).length,
  }), sel);
  expect(r.page, `${what}: page width`).toBeLessThanOrEqual(r.win);
  expect(r.n, `${what}: ${sel} shown`).toBeGreaterThan(0);
  expect(r.out, `${what}: ${sel} past the window's edge`).toBe(0);
}

test('the longest names fit a laptop screen in every view that shows them', async ({ page }) => {
  const all = listing();
  const deepest = all.filter((e) => e.type === 'd').map((e) => e.path).sort((a, b) => b.length - a.length)
    .find((p) => all.some((e) => e.path.startsWith(`${p}/`) && e.type === 'f'));
  const kids = all.filter((e) => e.path.startsWith(`${deepest}/`) && !e.path.slice(deepest.length + 1).includes('/'));
  expect(kids.length).toBe(4);
  await open(page);
  await page.evaluate((h) => { location.hash = h; }, hashOf(deepest));
  await expect(page.getByTestId('dir-path')).toHaveText(`/${deepest}`);
  await expect(page.getByTestId('dir-entry')).toHaveCount(kids.length);
  const names = await page.getByTestId('dir-entry').evaluateAll((els) => els.map((e) => e.dataset.name).sort());
  expect(names).toEqual(kids.map((k) => k.path.slice(deepest.length + 1)).sort());
  await fits(page, 'directory', '[data-testid="dir-entry"]');
  await fits(page, 'directory path', '[data-testid="dir-path"]');
  await fits(page, 'tree', '[data-testid="tree-node"]');

  const file = kids.find((k) => k.type === 'f' && /^file-/.test(k.path.slice(deepest.length + 1)));
  await page.evaluate((h) => { location.hash = h; }, hashOf(file.path));
  await expect(page.getByTestId('xattr')).toHaveCount(1);
  const fattr = readFileSync(join(FIXTURES, `${NAME}.getfattr.txt`), 'utf8');
  const attr = fattr.match(/^(user\.attr-[^=]+)=/m)[1];
  await expect(page.getByTestId('xattr')).toHaveAttribute('data-name', attr);
  await fits(page, 'file', '[data-testid="xattr"]');
  await fits(page, 'file', '[data-testid="inode-picture"]');

  const link = kids.find((k) => k.type === 'l');
  await page.evaluate((h) => { location.hash = h; }, hashOf(link.path));
  await expect(page.getByTestId('symlink-target')).toHaveText(link.target);
  await fits(page, 'symlink', '[data-testid="symlink-target"]');

  // The search box takes the 2,303-byte path and goes there.
  await page.getByTestId('search').fill(`/${file.path}`);
  await page.getByTestId('search').press('Enter');
  await expect(page.getByTestId('xattr')).toHaveCount(1);
  await fits(page, 'search', '[data-testid="search"]');
});

test('a screen reader meets named landmarks, tabs, lists, tables and pictures', async ({ page }) => {
  await open(page);
  const views = [
    ['#/', 'superblock'], ['#/path/', 'directory'], ['#/ag/0', 'AG map'], ['#/hex/0', 'hex'], ['#/log', 'log'],
  ];
  for (const [hash, what] of views) {
    await page.evaluate((h) => { location.hash = h; }, hash);
    await page.waitForTimeout(300);
    // Every picture, list, grid and search has a name a reader can say.
    const unnamed = await page.evaluate(() => [...document.querySelectorAll('svg[role="img"], [role="list"], [role="grid"], [role="search"] input, table, input, button, select')]
      .filter((e) => {
        if (e.closest('[aria-hidden="true"]')) return false;
        const label = e.getAttribute('aria-label') || e.getAttribute('aria-labelledby') || e.getAttribute('title')
          || (e.tagName === 'TABLE' && (e.querySelector('caption, thead th') !== null))
          || (e.tagName === 'BUTTON' && e.textContent.trim().length > 0)
          || (e.labels && e.labels.length > 0);
        return !label;
      }).map((e) => e.outerHTML.slice(0, 120)));
    expect(unnamed, `${what}: elements without an accessible name`).toEqual([]);
    // The accessibility tree has the page's main parts.
    const snap = await page.locator('body').ariaSnapshot();
    expect(snap, what).toMatch(/navigation|tablist|tab /);
    expect(snap, what).toMatch(/search/);
  }
});
