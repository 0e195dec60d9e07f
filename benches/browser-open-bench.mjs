// Time how long the page takes to open a large image to its superblock in
// headless Chromium: from the file being picked to the superblock's name
// shown. IMAGE defaults to a 100 GiB sparse image made here with mkfs.xfs
// (benches/huge-100g.img, git-ignored), the case issue 20 keeps under
// 0.3 s. Each run uses a fresh browser context (nothing cached in the
// page). Prints every run and the median, and the bytes the page says it
// read.
// Usage: node benches/browser-open-bench.mjs DIST [IMAGE] [RUNS]
import { chromium } from '@playwright/test';
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';

const [dist, imageArg, runsArg] = process.argv.slice(2);
if (!dist) {
  console.error('usage: node benches/browser-open-bench.mjs DIST [IMAGE] [RUNS]');
  process.exit(2);
}
const runs = Number(runsArg || 5);
let image = imageArg;
if (!image) {
  image = new URL('./huge-100g.img', import.meta.url).pathname;
  if (!existsSync(image)) {
    execFileSync('truncate', ['-s', '100G', image]);
    execFileSync('mkfs.xfs', ['-q', '-f', '-L', 'huge-100g', image]);
  }
}
const port = 8290 + Math.floor(Math.random() * 100);
const server = spawn('python3', ['-m', 'http.server', String(port), '--bind', '127.0.0.1', '--directory', dist], { stdio: 'ignore' });
await new Promise((r) => setTimeout(r, 800));
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-dev-shm-usage'],
});
const times = [];
try {
  for (let r = 1; r <= runs; r++) {
    const ctx = await browser.newContext();
    const page = await ctx.newPage();
    await page.goto(`http://127.0.0.1:${port}/`);
    // The worker is up once the page says it is ready for a file.
    await page.getByTestId('image-input').waitFor({ state: 'attached' });
    await page.waitForTimeout(300);
    const t0 = Date.now();
    await page.getByTestId('image-input').setInputFiles(image);
    await page.getByTestId('sb-fname').waitFor({ state: 'visible', timeout: 60_000 });
    const ms = Date.now() - t0;
    const read = await page.getByTestId('bytes-read').getAttribute('data-bytes').catch(() => null);
    console.log(`run ${r}: superblock shown after ${(ms / 1000).toFixed(3)} s; bytes read ${read}`);
    times.push(ms);
    await ctx.close();
  }
} finally {
  await browser.close();
  server.kill();
}
times.sort((a, b) => a - b);
const size = statSync(image).size;
console.log(`${image} (${(size / 2 ** 30).toFixed(1)} GiB): median ${(times[(times.length - 1) >> 1] / 1000).toFixed(3)} s over ${runs} runs`);
