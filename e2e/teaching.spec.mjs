// The teaching views in the browser: the AG map against xfs_db's btdump,
// the hex view's field outlines against the running kernel's struct layouts
// (pahole on its BTF), the search box against xfs_db convert, the tour on
// the sample, back/forward, keyboard-only use, the dark theme, and a
// screenshot of each main view in both themes.
import { test, expect } from '@playwright/test';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FIXTURES, TMP, xfsDbSuperblock } from './oracle.mjs';

const SHOTS = join(process.cwd(), 'e2e', 'test-results', 'screenshots');

function sbNum(name, field) {
  return Number(xfsDbSuperblock(name).find(([k]) => k === field)[1]);
}

/** pahole's layouts: struct -> member -> [offset, size]. */
function layouts() {
  const out = {};
  let cur = null;
  for (const line of readFileSync(join(FIXTURES, 'kernel-layouts.txt'), 'utf8').split('\n')) {
    const s = line.match(/^struct (\S+) \{$/);
    if (s) { cur = out[s[1]] = {}; continue; }
    if (line.startsWith('}')) { cur = null; continue; }
    const m = line.match(/\s(\w+)(\[\d+\])?;\s+\/\*\s+(\d+)\s+(\d+)\s+\*\//);
    if (cur && m) cur[m[1]] = [Number(m[3]), Number(m[4])];
  }
  return out;
}

/** xfs_db btdump leaf records (first two numbers) of one tree of one AG. */
function btdump(name, agno, tree) {
  const text = readFileSync(join(FIXTURES, `${name}.agbt.txt`), 'utf8');
  const sec = text.split('### ').find((s) => s.split('\n')[0] === `ag ${agno} ${tree}`) || '';
  const recs = [];
  let inRecs = false;
  for (const l of sec.split('\n').slice(1)) {
    if (l.startsWith('recs[')) inRecs = true;
    else if (l.startsWith('keys[') || l.startsWith('ptrs[') || / level \d+ block /.test(l)) inRecs = false;
    else if (inRecs) {
      const m = l.match(/^\s*\d+:\[(\w+),(\w+)/);
      if (m) recs.push([Number(m[1]), Number(m[2])]);
    }
  }
  return recs;
}

async function open(page, name) {
  await page.goto('/');
  await expect(page.getByText('Ready.')).toBeVisible();
  await page.getByTestId('image-input').setInputFiles(join(TMP, `${name}.img`));
  await expect(page.getByTestId('image-name')).toHaveText(`${name}.img`);
}

async function go(page, hash) {
  await page.evaluate((h) => { location.hash = h; }, hash);
}

/** The page's fields whose kernel name is a member: [offset, size] as the kernel has it. */
async function checkFields(page, what, members, prefix, must) {
  const rows = page.locator('[data-testid^="hex-field-"]');
  await expect(rows.first()).toBeVisible();
  const got = await rows.evaluateAll((els) => els.map((e) => [e.dataset.testid.slice('hex-field-'.length), Number(e.dataset.offset), Number(e.dataset.size)]));
  const seen = new Set();
  for (const [name, off, size] of got) {
    const k = members[prefix + name];
    if (!k) continue;
    expect([off, size], `${what}: ${prefix}${name}`).toEqual(k);
    seen.add(name);
  }
  for (const m of must) expect(seen.has(m), `${what}: ${m} shown`).toBe(true);
}

test('the AG map draws the inode chunks and free extents xfs_db lists', async ({ page }) => {
  const name = 'v5-1k-rmap';
  await open(page, name);
  const inopblog = sbNum(name, 'inopblog');
  for (const agno of [0, 1, 3]) {
    await go(page, `#/ag/${agno}`);
    const map = page.getByTestId('ag-map');
    await expect(map).toHaveAttribute('data-agno', String(agno));
    const chunks = await map.getByTestId('ag-map-inode-chunk').evaluateAll((els) => [...new Set(els.map((e) => Number(e.dataset.agbno)))].sort((a, b) => a - b));
    const want = [...new Set(btdump(name, agno, 'ino').map(([s]) => s >> inopblog))].sort((a, b) => a - b);
    expect(want.length).toBeGreaterThan(0);
    expect(chunks, `AG ${agno} inode chunks`).toEqual(want);
    const free = await map.getByTestId('ag-map-free').evaluateAll((els) => els.map((e) => [Number(e.dataset.agbno), Number(e.dataset.len)]));
    expect(free, `AG ${agno} free extents`).toEqual(btdump(name, agno, 'bno'));
    // Owners are drawn on an rmap filesystem.
    await expect(page.getByTestId('ag-map-owners')).toBeVisible();
  }
  // Hovering names a range; clicking an inode chunk opens its first inode.
  const chunk = page.getByTestId('ag-map').getByTestId('ag-map-inode-chunk').first();
  await expect(chunk.locator('title')).toContainText('inode chunk');
  await chunk.click();
  await expect(page).toHaveURL(/#\/inode\/\d+$/);
  await expect(page.getByTestId('inode-picture')).toBeVisible();
});

test('hex view fields sit at the offsets and sizes of the kernel structs', async ({ page }) => {
  const k = layouts();
  const name = 'v5-1k-rmap';
  await open(page, name);
  await go(page, '#/hex/0');
  await expect(page.getByTestId('hex-view')).toHaveAttribute('data-daddr', '0');
  await checkFields(page, 'superblock', k.xfs_dsb, 'sb_', Object.keys(k.xfs_dsb).map((m) => m.slice(3)));
  await expect(page.getByTestId('hex-field-blocksize')).toHaveAttribute('data-offset', '4');
  await expect(page.getByTestId('hex-field-dblocks')).toHaveAttribute('data-size', '8');
  await go(page, '#/hex/1');
  await expect(page.getByTestId('hex-view')).toContainText('AGF');
  await checkFields(page, 'AGF', k.xfs_agf, 'agf_', ['magicnum', 'seqno', 'length', 'bno_root', 'freeblks', 'longest', 'crc']);
  await go(page, '#/hex/2');
  await expect(page.getByTestId('hex-view')).toContainText('AGI');
  await checkFields(page, 'AGI', k.xfs_agi, 'agi_', ['magicnum', 'count', 'root', 'freecount', 'crc']);
  // agi_unlinked a bucket at a time: 64 words tiling the kernel's member.
  const [uoff] = k.xfs_agi.agi_unlinked;
  for (const i of [0, 1, 63]) {
    const f = page.getByTestId(`hex-field-unlinked[${i}]`);
    await expect(f).toHaveAttribute('data-offset', String(uoff + 4 * i));
    await expect(f).toHaveAttribute('data-size', '4');
  }
  // The root inode (64: AG 0 block 8 with 1 KiB blocks and 512-byte inodes).
  const root = sbNum(name, 'rootino');
  const daddr = (root >> sbNum(name, 'inopblog')) * (sbNum(name, 'blocksize') / 512) + (root & ((1 << sbNum(name, 'inopblog')) - 1)) * sbNum(name, 'inodesize') / 512;
  await go(page, `#/hex/${daddr}`);
  await expect(page.getByTestId('hex-view')).toContainText(`inode ${root}`);
  await checkFields(page, 'inode core', k.xfs_dinode, 'di_', ['magic', 'mode', 'format', 'nlink', 'size', 'forkoff', 'aformat', 'crc', 'changecount', 'ino']);
  // /dir40's single directory block (xfs_db bmap: AG 0 block 26).
  await go(page, '#/hex/52');
  await expect(page.getByTestId('hex-view')).toContainText('directory block');
  await checkFields(page, 'dir3 block header', k.xfs_dir3_blk_hdr, '', ['magic', 'crc', 'blkno', 'lsn', 'uuid', 'owner']);
  await checkFields(page, 'dir3 data header', k.xfs_dir3_data_hdr, '', ['pad']);
  // Hovering a field highlights its bytes and names it; clicking a byte names its field.
  await page.getByTestId('hex-field-owner').hover();
  await expect(page.getByTestId('hex-detail')).toContainText('owner');
  await expect(page.locator('.hbytes .b.hl')).toHaveCount(8);
  await page.mouse.move(0, 0);
  await page.locator('.hbytes .b[data-o="9"]').click();
  await expect(page.getByTestId('hex-detail')).toContainText('blkno');
  await expect(page.getByTestId('hex-detail')).toContainText('offset 8');
});

test('a logged buffer shows its dirty runs over its bytes', async ({ page }) => {
  await page.goto('/');
  await page.getByTestId('sample-button').click();
  await expect(page.getByTestId('sb-fname')).toHaveText('sample');
  await go(page, '#/log/0');
  const item = page.getByTestId('log-item').first();
  await expect(item).toHaveAttribute('data-kind', 'buf');
  const runs = await item.getByTestId('bitmap-run').evaluateAll((els) => els.map((e) => [Number(e.dataset.first) * 128, Number(e.dataset.count) * 128]));
  expect(runs.length).toBeGreaterThan(0);
  await item.getByTestId('log-item-bytes').click();
  await expect(page).toHaveURL(/#\/hex\/0$/);
  await expect(page.getByTestId('hex-logged')).toBeVisible();
  const shown = await page.getByTestId('hex-dirty-run').evaluateAll((els) => els.map((e) => [Number(e.dataset.offset), Number(e.dataset.size)]));
  expect(shown).toEqual(runs);
  const dirty = await page.locator('.hbytes .b.dirty').count();
  expect(dirty).toBe(runs.reduce((a, [, n]) => a + Math.min(n, 512), 0));
});

test('the search box resolves each kind of address', async ({ page }) => {
  await open(page, 'v5-1k-rmap');
  const convert = Object.fromEntries(readFileSync(join(FIXTURES, 'v5-1k-rmap.convert.txt'), 'utf8').split('\n')
    .filter((l) => l.includes(' => ')).map((l) => { const [q, a] = l.split(' => '); return [q, a.match(/\((\d+)\)/)[1]]; }));
  const cases = [
    ['/dir40', /#\/path\/dir40$/],
    ['64', /#\/inode\/64$/],
    ['1/5', new RegExp(`#/hex/${convert['agno 1 agbno 5 daddr']}$`)],
    ['3/16383', new RegExp(`#/hex/${convert['agno 3 agbno 16383 daddr']}$`)],
    ['fsb 16475', new RegExp(`#/hex/${convert['fsblock 16475 daddr']}$`)],
    ['b7', new RegExp(`#/hex/${convert['fsblock 7 daddr']}$`)],
    ['d 52', /#\/hex\/52$/],
    ['ag 2', /#\/ag\/2$/],
  ];
  for (const [q, want] of cases) {
    await page.getByTestId('search').fill(q);
    await page.getByTestId('search').press('Enter');
    await expect(page, q).toHaveURL(want);
  }
  await page.getByTestId('search').fill('9/1');
  await page.getByTestId('search').press('Enter');
  await expect(page.getByTestId('search-error')).toContainText('no AG 9');
  // Paths are looked up before the page goes there: one the mounted
  // kernel listed is opened, one it did not list stays an error in place.
  const tree = readFileSync(join(FIXTURES, 'v5-1k-rmap.tree.txt'), 'utf8').split('\n').map((l) => l.split('\t')[0]);
  expect(tree).toContain('./dir1/sub/deeper');
  expect(tree).not.toContain('./dir1/no-such-name');
  await page.getByTestId('search').fill('/dir1/sub/deeper');
  await page.getByTestId('search').press('Enter');
  await expect(page).toHaveURL(/#\/path\/dir1\/sub\/deeper$/);
  await expect(page.getByTestId('search-error')).toHaveCount(0);
  await page.getByTestId('search').fill('/dir1/no-such-name');
  await page.getByTestId('search').press('Enter');
  await expect(page.getByTestId('search-error')).toContainText('no-such-name');
  await expect(page).toHaveURL(/#\/path\/dir1\/sub\/deeper$/);
});

test('a 64 KiB directory block is drawn a window at a time, every byte reachable', async ({ page }) => {
  // v5-64kdir's /dir40 is one extent of 16 4-KiB blocks at AG 0 block 24
  // (xfs_db, v5-64kdir.xfsdb-dirattr.txt): one 64 KiB directory block.
  const db = readFileSync(join(FIXTURES, 'v5-64kdir.xfsdb-dirattr.txt'), 'utf8');
  const ext = db.split('### dir /dir40\n')[1].match(/startblock (\d+) \(0\/\d+\) count (\d+)/);
  const bs = sbNum('v5-64kdir', 'blocksize');
  const daddr = Number(ext[1]) * bs / 512;
  const len = Number(ext[2]) * bs;
  expect(len).toBe(65536);
  const img = readFileSync(join(TMP, 'v5-64kdir.img'));
  const block = img.subarray(daddr * 512, daddr * 512 + len);
  await open(page, 'v5-64kdir');
  await go(page, `#/hex/${daddr}`);
  await expect(page.getByTestId('hex-view')).toContainText('directory block');
  const windows = page.getByTestId('hex-window');
  await expect(windows).toHaveCount(len / 16384);
  for (let w = 0; w < len / 16384; w++) {
    await windows.nth(w).click();
    const first = w * 16384;
    for (const o of [first, first + 8191, first + 16383]) {
      await expect(page.locator(`.hbytes [data-o="${o}"]`)).toHaveText(block[o].toString(16).padStart(2, '0'));
    }
    await expect(page.locator('.hbytes [data-o]')).toHaveCount(16384);
  }
  // Selecting a field in the list brings its window: the block tail's
  // count sits in the last 8 bytes of the block.
  await windows.nth(0).click();
  const tail = page.locator('[data-testid^="hex-field-"]').last();
  const off = Number(await tail.getAttribute('data-offset'));
  expect(off).toBeGreaterThanOrEqual(len - 16384);
  await tail.click();
  await expect(page.locator(`.hbytes [data-o="${off}"]`)).toHaveClass(/hl/);
});

test('the tour runs from start to end on the sample, and resumes', async ({ page }) => {
  await page.goto('/');
  await expect(page.getByText('Ready.')).toBeVisible();
  await page.evaluate(() => localStorage.clear());
  await page.reload();
  await page.getByTestId('tour-start').click();
  const views = ['sb-version', 'ag-map', 'log-ring', 'log-detail', 'hex-view', 'replay-diff', 'dir-list', 'inode-picture', 'xattr', 'ops-view'];
  for (let i = 0; i < views.length; i++) {
    await expect(page.getByTestId('tour')).toHaveAttribute('data-step', String(i));
    await expect(page.getByTestId(views[i]).first(), `step ${i + 1}`).toBeVisible({ timeout: 60_000 });
    if (i === 3) {
      // Leave and come back later: the step is kept.
      await page.keyboard.press('Escape');
      await expect(page.getByTestId('tour')).toHaveCount(0);
      await page.reload();
      await expect(page.getByTestId('tour-start')).toHaveText('resume the tour (step 4)');
      await page.getByTestId('tour-start').click();
      await expect(page.getByTestId('tour')).toHaveAttribute('data-step', '3');
      await expect(page.getByTestId('log-detail')).toBeVisible({ timeout: 60_000 });
    }
    if (i === 4) await expect(page.getByTestId('hex-dirty-run').first()).toBeVisible();
    if (i >= 5) await expect(page.getByTestId('state-badge')).toHaveText('replayed state');
    await page.getByTestId('tour-next').click();
  }
  await expect(page.getByTestId('tour')).toHaveCount(0);
  await expect(page.getByTestId('tour-start')).toHaveText('guided tour of the sample');
});

test('every route round-trips through back and forward', async ({ page }) => {
  await open(page, 'v5-1k-rmap');
  const routes = [
    ['#/', 'sb-version'], ['#/path/dir40', 'dir-list'], ['#/inode/64', 'inode-picture'], ['#/ag', 'ag'],
    ['#/ag/2', 'ag-map'], ['#/hex/52', 'hex-view'], ['#/log', 'log-clean'],
  ];
  for (const [h, id] of routes) {
    await go(page, h);
    await expect(page.getByTestId(id).first(), h).toBeVisible();
  }
  for (let i = routes.length - 2; i >= 0; i--) {
    await page.goBack();
    await expect(page.getByTestId(routes[i][1]).first(), `back to ${routes[i][0]}`).toBeVisible();
    expect(new URL(page.url()).hash || '#/').toBe(routes[i][0]);
  }
  for (let i = 1; i < routes.length; i++) {
    await page.goForward();
    await expect(page.getByTestId(routes[i][1]).first(), `forward to ${routes[i][0]}`).toBeVisible();
    expect(new URL(page.url()).hash).toBe(routes[i][0]);
  }
});

test('keyboard only: search with /, the tabs with arrows, a map range with Enter', async ({ page }) => {
  await open(page, 'v5-1k-rmap');
  await page.locator('body').click({ position: { x: 1, y: 1 } });
  await page.keyboard.press('/');
  await expect(page.getByTestId('search')).toBeFocused();
  await page.keyboard.type('ag 0');
  await page.keyboard.press('Enter');
  await expect(page.getByTestId('ag-map')).toBeVisible();
  await page.keyboard.press('Escape');
  await expect(page.getByTestId('search')).not.toBeFocused();
  // Tab into the tabs and move along them with the arrow keys.
  const tabs = page.locator('nav .tabs a');
  await tabs.first().focus();
  await page.keyboard.press('ArrowRight');
  await expect(tabs.nth(1)).toBeFocused();
  await page.keyboard.press('Enter');
  await expect(page.getByTestId('dir-list')).toBeVisible();
  // The tree and the directory list move with the arrow keys.
  await page.getByTestId('tree').locator('a').first().focus();
  await page.keyboard.press('ArrowDown');
  expect(await page.evaluate(() => document.activeElement.closest('[data-testid="tree"]') !== null
    && document.activeElement !== document.querySelector('[data-testid="tree"] a'))).toBe(true);
  await page.getByTestId('dir-list').locator('a').first().focus();
  const before = await page.evaluate(() => document.activeElement.textContent);
  await page.keyboard.press('ArrowDown');
  const after = await page.evaluate(() => document.activeElement.closest('[data-testid="dir-list"]') && document.activeElement.textContent);
  expect(after && after !== before).toBeTruthy();
  // A range of the map is reachable with Tab and opens with Enter.
  await go(page, '#/ag/0');
  const range = page.getByTestId('ag-map').getByTestId('ag-map-headers').first();
  await range.focus();
  await page.keyboard.press('Enter');
  await expect(page).toHaveURL(/#\/hex\/\d+$/);
  await expect(page.getByTestId('hex-view')).toBeVisible();
  // Field rows are focusable and focusing one shows it.
  await expect(page).toHaveURL(/#\/hex\/0$/);
  await page.getByTestId('hex-field-magicnum').focus();
  await expect(page.getByTestId('hex-detail')).toContainText('magic');
});

test('the dark theme follows the system setting', async ({ page }) => {
  await page.emulateMedia({ colorScheme: 'light' });
  await page.goto('/');
  const light = await page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
  await page.emulateMedia({ colorScheme: 'dark' });
  const dark = await page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
  expect(light).toBe('rgb(251, 251, 250)');
  expect(dark).toBe('rgb(21, 25, 30)');
});

test('screenshots of each main view, light and dark', async ({ page }) => {
  mkdirSync(SHOTS, { recursive: true });
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.goto('/');
  await page.getByTestId('sample-button').click();
  await expect(page.getByTestId('sb-fname')).toHaveText('sample');
  // The sample's files are all in its log: the last views read it replayed.
  const views = [
    ['superblock', '#/', 'sb-version'], ['ag-map', '#/ag/0', 'ag-map'], ['hex-superblock', '#/hex/0', 'hex-view'],
    ['log', '#/log/0', 'log-detail'], ['replay', '#/replay', 'replay-diff', true], ['files', '#/path/after-sync', 'dir-list', true],
    ['inode', '#/inode/131', 'inode-picture', true], ['ops', '#/ops', 'ops-view', true],
  ];
  for (const scheme of ['light', 'dark']) {
    await page.emulateMedia({ colorScheme: scheme });
    for (const [name, hash, id, replayed] of views) {
      await go(page, hash);
      const on = await page.getByTestId('replay-toggle').isChecked();
      if (!!replayed !== on) {
        await page.getByTestId('replay-toggle').click();
        await expect(page.getByTestId('state-badge')).toHaveText(replayed ? 'replayed state' : 'on-disk state', { timeout: 60_000 });
      }
      await expect(page.getByTestId(id).first()).toBeVisible({ timeout: 60_000 });
      await page.screenshot({ path: join(SHOTS, `${name}-${scheme}.png`), fullPage: false });
    }
  }
});

test('parent pointers are shown as the kernel wrote them (xfs_db 6.13 on its recovery)', async ({ page }) => {
  const { execFileSync } = await import('node:child_process');
  const text = execFileSync('zstd', ['-dc', join(FIXTURES, 'random-5008.recovered-pptr.txt.zst')]).toString();
  // ino -> [[name, parent]] from xfs_db's shortform attr prints.
  const want = [];
  for (const sec of text.split('### ino ').slice(1)) {
    const ino = Number(sec.split('\n')[0]);
    const lines = Object.fromEntries(sec.split('\n').filter((l) => l.includes(' = ')).map((l) => l.split(' = ')));
    const out = [];
    for (let i = 0; lines[`a.sfattr.list[${i}].namelen`] !== undefined; i++) {
      if (lines[`a.sfattr.list[${i}].parent`] !== '1') continue;
      out.push([JSON.parse(lines[`a.sfattr.list[${i}].name`]), lines[`a.sfattr.list[${i}].parent_dir.inumber`]]);
    }
    if (out.length) want.push([ino, out]);
  }
  expect(want.length).toBeGreaterThan(5);
  await open(page, 'random-5008');
  await page.getByTestId('replay-toggle').click();
  await expect(page.getByTestId('state-badge')).toHaveText('replayed state', { timeout: 60_000 });
  for (const [ino, pp] of want.slice(0, 6)) {
    await go(page, `#/inode/${ino}`);
    await expect(page.getByTestId('inode-picture')).toBeVisible();
    const got = await page.getByTestId('parent-pointer').evaluateAll((els) => els.map((e) => [e.dataset.name, e.dataset.parent]));
    expect(got.sort(), `inode ${ino}`).toEqual(pp.sort());
  }
});

test('AG btree records page by page, as xfs_db btdump lists them', async ({ page }) => {
  const name = 'v5-1k-rmap';
  await open(page, name);
  for (const tree of ['bno', 'ino', 'rmap']) {
    const want = btdump(name, 1, tree);
    await go(page, `#/ag/1/${tree}/0`);
    const view = page.getByTestId('ag-records');
    await expect(view).toHaveAttribute('data-tree', tree);
    await expect(view).toHaveAttribute('data-total', String(want.length));
    const got = await page.getByTestId('ag-record').evaluateAll((els) => els.map((e) => e.querySelector('td.text').textContent));
    expect(got.length).toBe(Math.min(want.length, 200));
    for (let i = 0; i < got.length; i++) {
      const m = got[i].match(/^(?:startblock|startino) (\d+)/);
      expect(Number(m[1]), `${tree} record ${i}`).toBe(want[i][0]);
    }
  }
});

test('the bytes of a block can look for it in the log', async ({ page }) => {
  await page.goto('/');
  await page.getByTestId('sample-button').click();
  await expect(page.getByTestId('sb-fname')).toHaveText('sample');
  await go(page, '#/hex/0');
  await page.getByTestId('hex-find-in-log').click();
  await expect(page.getByTestId('hex-dirty-run').first()).toBeVisible();
  await expect(page.getByTestId('hex-find-in-log')).toHaveCount(0);
  // A block no buffer item logs says so.
  await go(page, '#/hex/9');
  await expect(page.getByTestId('hex-not-logged')).toBeVisible();
});

test('a transaction links to its log record header, field by field', async ({ page }) => {
  await page.goto('/');
  await page.getByTestId('sample-button').click();
  await expect(page.getByTestId('sb-fname')).toHaveText('sample');
  await go(page, '#/log/0');
  await page.getByTestId('log-record-bytes').click();
  await expect(page.getByTestId('hex-view')).toContainText('log record header');
  const k = layouts().xlog_rec_header;
  await checkFields(page, 'log record header', k, 'h_', ['magicno', 'cycle', 'len', 'lsn', 'tail_lsn', 'crc', 'num_logops', 'fs_uuid']);
  await expect(page.getByTestId('hex-field-magicno')).toContainText('0xfeedbabe');
});

test('the log and operations views explain each item and operation kind they show', async ({ page }) => {
  await page.goto('/');
  await page.getByTestId('sample-button').click();
  await expect(page.getByTestId('sb-fname')).toHaveText('sample');
  await go(page, '#/log/0');
  await expect(page.getByTestId('log-item').first()).toBeVisible();
  const items = await page.getByTestId('log-item').evaluateAll((els) => [...new Set(els.map((e) => e.dataset.kind))].sort());
  const explained = await page.locator('[data-testid="log-glossary"] dt').evaluateAll((els) => els.map((e) => e.dataset.kind).sort());
  expect(explained).toEqual(items);
  const texts = await page.locator('[data-testid="log-glossary"] dd').allTextContents();
  expect(new Set(texts).size).toBe(texts.length);
  for (const t of texts) expect(t.length).toBeGreaterThan(40);
  // Each item's kind and each column carries its explanation as a tooltip.
  for (const t of await page.locator('[data-testid="log-item"] code[title]').evaluateAll((els) => els.map((e) => e.title))) {
    expect(texts).toContain(t);
  }
  await go(page, '#/ops');
  await expect(page.getByTestId('op-kind').first()).toBeVisible();
  const kinds = await page.getByTestId('op-kind').evaluateAll((els) => els.map((e) => e.dataset.kind).sort());
  const glossed = await page.locator('[data-testid="ops-glossary"] dt').evaluateAll((els) => els.map((e) => e.dataset.kind).sort());
  expect(glossed).toEqual(kinds);
  for (const t of await page.locator('[data-testid="ops-glossary"] dd').allTextContents()) expect(t.length).toBeGreaterThan(40);
  await expect(page.locator('[data-testid="op-kinds"] th[title]')).toHaveCount(4);
});

test('the tour opens the sample in place of another image, since its steps are the sample\'s', async ({ page }) => {
  await page.goto('/');
  await expect(page.getByText('Ready.')).toBeVisible();
  await page.evaluate(() => localStorage.clear());
  await open(page, 'v5-1k-rmap');
  await expect(page.getByTestId('sb-fname')).not.toHaveText('sample');
  await page.getByTestId('tour-start').click();
  await expect(page.getByTestId('image-name')).toHaveText('sample.img');
  await expect(page.getByTestId('sb-fname')).toHaveText('sample');
});
