// A transaction's detail, asked for after the list's rows (the worker keeps
// only a summary of each transaction and decodes its items again), against
// xfs_logprint -t of the same kernel-made images: ticket, num_items, every
// item's kind, region count and buffer address, and which intents have no
// done item in the live log (paired as the kernel pairs them at recovery:
// a done item with the latest earlier unpaired intent of its type and id).
import { test, expect } from '@playwright/test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FIXTURES, TMP } from './oracle.mjs';

const KINDS = { BUF: 'buf', ICR: 'icreate', INO: 'inode', EFI: 'efi', EFD: 'efd', ATTRI: 'attri', ATTRD: 'attrd',
  RUI: 'rui', RUD: 'rud', CUI: 'cui', CUD: 'cud', BUI: 'bui', BUD: 'bud', 'DQ ': 'dquot', QOFF: 'quotaoff' };
const DONE_OF = { efd: 'efi', rud: 'rui', cud: 'cui', bud: 'bui', attrd: 'attri' };

/** Transactions of `xfs_logprint -t`: tid, num_items, items (kind, regions, blkno, len, intent id). */
function logprint(name) {
  const lines = readFileSync(join(FIXTURES, `${name}.logt.txt`), 'utf8').split('\n');
  const trans = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const t = line.trim().match(/^TRANS: tid:(0x[0-9a-f]+)\s+#items:(\d+)/);
    if (t) { trans.push({ tid: Number(t[1]), numItems: Number(t[2]), items: [] }); continue; }
    const code = Object.keys(KINDS).find((c) => line.startsWith(`${c}: cnt:`));
    if (!code) continue;
    const item = { kind: KINDS[code], regions: Number(line.match(/cnt:(\d+)/)[1]) };
    const next = lines[i + 1] || '';
    const buf = next.match(/start blkno:0x([0-9a-f]+)\s+len:(\d+)/);
    if (code === 'BUF' && buf) { item.blkno = parseInt(buf[1], 16); item.len = Number(buf[2]); }
    const id = next.match(/id:\s*(0x[0-9a-f]+)/);
    if (id) item.id = id[1];
    trans[trans.length - 1].items.push(item);
  }
  // Intents left without a done item.
  const open = new Map();
  for (const t of trans) {
    for (const it of t.items) {
      if (it.id === undefined) continue;
      if (Object.values(DONE_OF).includes(it.kind)) {
        const k = `${it.kind} ${it.id}`;
        if (!open.has(k)) open.set(k, []);
        open.get(k).push(it);
        it.unfinished = true;
      } else if (DONE_OF[it.kind]) {
        const intent = (open.get(`${DONE_OF[it.kind]} ${it.id}`) || []).pop();
        if (intent) intent.unfinished = false;
      }
    }
  }
  return trans;
}

for (const [name, picks] of [['log-intents', null], ['replay-attri-nodejoin', null], ['log-1k-rmap', [0, 1, 240, 479, 480]]]) {
  test(`transaction details of ${name}, asked for after the rows, are what xfs_logprint shows`, async ({ page }) => {
    test.setTimeout(180_000);
    const want = logprint(name);
    await page.goto('/');
    await expect(page.getByText('Ready.')).toBeVisible();
    await page.getByTestId('image-input').setInputFiles(join(TMP, `${name}.img`));
    await expect(page.getByTestId('image-name')).toHaveText(`${name}.img`);
    await page.evaluate(() => { window.location.hash = '#/log'; });
    await expect(page.getByTestId('log-transactions')).toHaveText(String(want.length));
    // The rows first, down to the last one.
    await page.getByTestId('log-list').evaluate((el) => { el.scrollTop = el.scrollHeight; });
    await expect(page.locator(`[data-testid="log-transaction"][data-index="${want.length - 1}"]`)).toBeVisible();
    let unfinishedSeen = 0;
    let doneSeen = 0;
    for (const i of picks || want.map((_, i) => i)) {
      const t = want[i];
      await page.evaluate((h) => { window.location.hash = h; }, `#/log/${i}`);
      const detail = page.getByTestId('log-detail');
      await expect(detail.locator('h3')).toContainText(`Transaction #${i} · tid 0x${t.tid.toString(16)} ·`);
      await expect(detail).toContainText(`num_items ${t.numItems} ·`);
      const items = detail.getByTestId('log-item');
      await expect(items).toHaveCount(t.items.length);
      const got = await items.evaluateAll((els) => els.map((e) => ({
        kind: e.dataset.kind,
        regions: Number(e.children[2].textContent),
        text: e.children[3].textContent,
        unfinished: e.classList.contains('unfinished'),
      })));
      for (const [j, it] of t.items.entries()) {
        const at = `${name} transaction ${i} item ${j}`;
        expect(got[j].kind, at).toBe(it.kind);
        expect(got[j].regions, at).toBe(it.regions);
        if (it.blkno !== undefined) expect(got[j].text, at).toContain(`blkno ${it.blkno} len ${it.len} `);
        if (it.unfinished !== undefined) {
          expect(got[j].unfinished, at).toBe(it.unfinished);
          expect(got[j].text, at).toContain(it.unfinished ? '(UNFINISHED)' : '(done in #');
          if (it.unfinished) unfinishedSeen++; else doneSeen++;
        }
      }
    }
    if (name === 'log-intents') {
      expect(unfinishedSeen).toBeGreaterThan(0);
      expect(doneSeen).toBeGreaterThan(0);
    }
  });
}
