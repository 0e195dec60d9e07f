// The page's security: names from the image are inert text, the
// Content-Security-Policy holds with no violation, and no request leaves
// the page's origin.
import { test, expect } from '@playwright/test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FIXTURES, TMP } from './oracle.mjs';

/** Record CSP violations and any dialog from the first script on. */
test.beforeEach(async ({ page }) => {
  await page.addInitScript(() => {
    window.__csp = [];
    document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(`${e.violatedDirective} ${e.blockedURI}`));
  });
  page.on('dialog', (d) => { throw new Error(`a dialog opened: ${d.message()}`); });
});

async function noScriptRan(page) {
  expect(await page.evaluate(() => window.__pwned)).toBeUndefined();
  expect(await page.evaluate(() => document.querySelectorAll('[onerror], [onload], img[src="x"]').length)).toBe(0);
  expect(await page.evaluate(() => window.__csp)).toEqual([]);
}

// hostile-names.find.txt: path, type, symlink target (find -printf, mounted).
const tree = readFileSync(join(FIXTURES, 'hostile-names.find.txt'), 'utf8').trim().split('\n').map((l) => l.split('\t'));

test('names, xattrs and symlink targets holding HTML and script are shown as text', async ({ page }) => {
  await page.goto('/');
  await expect(page.getByText('Ready.')).toBeVisible();
  await page.getByTestId('image-input').setInputFiles(join(TMP, 'hostile-names.img'));
  await page.evaluate(() => { location.hash = '#/path/'; });
  const top = tree.filter(([p]) => !p.includes('/'));
  for (const [name] of top) {
    await expect(page.locator(`[data-testid="dir-entry"][data-name="${name.replace(/["\\]/g, '\\$&')}"] .ename`)).toHaveText(name);
  }
  await noScriptRan(page);
  // Every file, directory and symlink, opened by its path.
  for (const [path, type, target] of tree) {
    await page.evaluate((p) => { location.hash = '#/path/' + p.split('/').map(encodeURIComponent).join('/'); }, path);
    if (type === 'd') {
      await expect(page.getByTestId('dir-path')).toHaveText('/' + path);
    } else {
      await expect(page.getByTestId('inode-picture')).toBeVisible();
      await expect(page.getByTestId('breadcrumb')).toContainText(path.split('/').pop());
      if (type === 'l') await expect(page.getByTestId('symlink-target')).toHaveText(target);
    }
    await noScriptRan(page);
  }
  // xattr names and values (getfattr of the mounted image).
  await page.evaluate(() => { location.hash = '#/path/' + encodeURIComponent('<b>bold<i>x'); });
  const xname = 'user.<img src=x onerror=window.__pwned=7>';
  const x = page.getByTestId('xattr').filter({ hasText: xname });
  await expect(x).toHaveCount(1);
  await x.getByRole('button').first().click();
  await expect(page.getByTestId('xattr-value').first()).toContainText('<script>window.__pwned=8</script>');
  await noScriptRan(page);
  // A download's file name is the name as it is.
  await page.evaluate(() => { location.hash = '#/path/' + encodeURIComponent('<script>window.__pwned=4<'); });
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('download-file').click()]);
  expect(download.suggestedFilename()).toMatch(/window\.__pwned=4/);
  await noScriptRan(page);
});

test('the page carries a Content-Security-Policy that allows only its own origin', async ({ page }) => {
  await page.goto('/');
  const csp = await page.locator('meta[http-equiv="Content-Security-Policy"]').getAttribute('content');
  expect(csp).toContain("default-src 'self'");
  expect(csp).toContain("style-src 'self'");
  expect(csp).not.toContain('unsafe-inline');
  expect(csp).toMatch(/script-src 'self' 'wasm-unsafe-eval' 'sha256-[A-Za-z0-9+/=]+'$|script-src 'self' 'wasm-unsafe-eval' 'sha256-[A-Za-z0-9+/=]+';/);
  await expect(page.getByText('Ready.')).toBeVisible();
});

test('the light worker starter loads the page module from the page origin only', async ({ page, baseURL }) => {
  const origin = new URL(baseURL).origin;
  const outside = [];
  page.on('request', (r) => { if (!r.url().startsWith(origin + '/')) outside.push(r.url()); });
  await page.goto('/');
  await expect(page.getByText('Ready.')).toBeVisible();
  // www/worker-light.js given another origin's module, and a page-origin
  // address that is not a module: each worker fails before importing.
  const errors = await page.evaluate(async () => {
    const start = (js) => new Promise((resolve) => {
      const w = new Worker(`/worker-light.js?js=${encodeURIComponent(js)}`, { type: 'module' });
      w.onerror = (e) => { e.preventDefault(); w.terminate(); resolve(e.message); };
      w.onmessage = () => { w.terminate(); resolve('answered'); };
      setTimeout(() => { w.terminate(); resolve('no error'); }, 10_000);
    });
    return [await start('http://example.invalid/pwn.js'), await start('/index.html')];
  });
  expect(errors[0]).toContain("loads the page's module from this origin only");
  expect(errors[1]).toContain("loads the page's module from this origin only");
  expect(outside).toEqual([]);
});

test('no request leaves the page origin while an image is opened and browsed', async ({ page, baseURL }) => {
  const origin = new URL(baseURL).origin;
  const outside = [];
  page.on('request', (r) => {
    const u = r.url();
    if (!(u.startsWith(origin + '/') || u.startsWith('blob:') || u.startsWith('data:'))) outside.push(u);
  });
  await page.goto('/');
  await page.getByTestId('sample-button').click();
  await expect(page.getByTestId('sb-fname')).toHaveText('sample');
  for (const [hash, id] of [['#/log/0', 'log-detail'], ['#/ag/0', 'ag-map'], ['#/hex/0', 'hex-view'], ['#/ops', 'ops-view'], ['#/replay', 'replay-diff']]) {
    await page.evaluate((h) => { location.hash = h; }, hash);
    await expect(page.getByTestId(id).first(), hash).toBeVisible({ timeout: 60_000 });
  }
  // The sample's files are in its log: browse them replayed.
  await page.getByTestId('replay-toggle').click();
  await expect(page.getByTestId('state-badge')).toHaveText('replayed state', { timeout: 60_000 });
  await page.evaluate(() => { location.hash = '#/path/dir1'; });
  await expect(page.getByTestId('dir-list')).toBeVisible();
  await page.evaluate(() => { location.hash = '#/inode/131'; });
  await expect(page.getByTestId('inode-picture')).toBeVisible();
  expect(outside).toEqual([]);
  expect(await page.evaluate(() => window.__csp)).toEqual([]);
});

test('a long request can be cancelled and the page stays usable', async ({ page }) => {
  await page.goto('/');
  await expect(page.getByText('Ready.')).toBeVisible();
  await page.getByTestId('image-input').setInputFiles(join(TMP, 'random-5008.img'));
  await expect(page.getByTestId('image-name')).toHaveText('random-5008.img');
  // Ask for the replay and cancel it while the worker works on it (in one
  // task of the page, before the worker's answer can arrive).
  const clicked = await page.evaluate(async () => {
    document.querySelector('[data-testid="replay-toggle"]').click();
    for (let i = 0; i < 50; i++) {
      const b = document.querySelector('[data-testid="cancel"]');
      if (b) { b.click(); return true; }
      await new Promise((r) => setTimeout(r, 0));
    }
    return false;
  });
  expect(clicked).toBe(true);
  await expect(page.getByTestId('cancelled')).toContainText('Cancelled: replaying the log');
  await expect(page.getByTestId('progress')).toHaveCount(0, { timeout: 30_000 });
  expect(new URL(page.url()).hash).toBe('#/');
  await expect(page.getByTestId('replay-toggle')).not.toBeChecked();
  await expect(page.getByTestId('state-badge')).toHaveText('on-disk state');
  await expect(page.getByTestId('image-name')).toHaveText('random-5008.img');
  // The new worker has the same file open and answers.
  await page.evaluate(() => { location.hash = '#/ag'; });
  await expect(page.getByTestId('ag').first()).toBeVisible();
  await page.getByTestId('replay-toggle').click();
  await expect(page.getByTestId('state-badge')).toHaveText('replayed state', { timeout: 60_000 });
});

// The fixture whose log has the most live blocks between tail and head
// (log-1k-rmap: 8,013 of 512 bytes, by its logfacts), taken through every
// request that holds state in the worker: the decoded log, a transaction,
// replay, what replay changed, and the operations. The worker reports its
// wasm memory after each request; it must stay under the budget for a log
// of this size.
const WORKER_BUDGET = 256 * 1024 * 1024;

test('the worker stays under its memory budget on the largest fixture log', async ({ page }) => {
  const facts = Object.fromEntries(readFileSync(join(FIXTURES, 'log-1k-rmap.logfacts.txt'), 'utf8').split('\n')
    .filter((l) => l.includes(': ')).map((l) => l.split(': ')));
  expect(Number(facts.head_block) - Number(facts.tail_block)).toBeGreaterThan(8000);
  await page.goto('/');
  await expect(page.getByText('Ready.')).toBeVisible();
  await page.getByTestId('image-input').setInputFiles(join(TMP, 'log-1k-rmap.img'));
  await expect(page.getByTestId('image-name')).toHaveText('log-1k-rmap.img');
  const seen = [];
  const memory = async () => {
    const m = page.getByTestId('worker-memory');
    await expect(m).toBeVisible();
    const b = Number(await m.getAttribute('data-bytes'));
    seen.push(b);
    return b;
  };
  await memory();
  await page.evaluate(() => { location.hash = '#/log/0'; });
  await expect(page.getByTestId('log-detail')).toBeVisible();
  await memory();
  await page.getByTestId('replay-toggle').click();
  await expect(page.getByTestId('replay-toggle')).toBeChecked();
  await expect(page.getByTestId('replay-summary')).toBeVisible();
  await page.evaluate(() => { location.hash = '#/replay'; });
  await expect(page.getByTestId('replay-diff')).toBeVisible();
  await memory();
  await page.evaluate(() => { location.hash = '#/ops'; });
  await expect(page.getByTestId('ops-view')).toBeVisible();
  await expect(page.getByTestId('op-kind').first()).toBeVisible();
  const last = await memory();
  console.log(`worker wasm memory on log-1k-rmap: ${seen.map((b) => (b / 1048576).toFixed(0)).join(' → ')} MiB`);
  expect(last).toBeGreaterThan(0);
  for (const b of seen) expect(b).toBeLessThanOrEqual(WORKER_BUDGET);
});
