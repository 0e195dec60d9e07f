// Time the worker's log decode in headless Chromium: open IMAGE in the page
// at DIST (served on PORT), go to #/log, and read the decode time the
// worker reports; with REPLAY=1 also turn replay on and time it. The
// worker's own spans per request (reads, copies into wasm, encoding,
// postMessage; src/web/timing.rs) are printed as they come.
// Usage: [REPLAY=1] node benches/browser-log-bench.mjs DIST IMAGE [RUNS]
import { chromium } from '@playwright/test';
import { spawn } from 'node:child_process';

const [dist, image, runsArg] = process.argv.slice(2);
const runs = Number(runsArg || 3);
const port = 8190 + Math.floor(Math.random() * 100);
const server = spawn('python3', ['-m', 'http.server', String(port), '--bind', '127.0.0.1', '--directory', dist], { stdio: 'ignore' });
await new Promise((r) => setTimeout(r, 800));
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-dev-shm-usage'],
});
const times = [];
const replays = [];
try {
  for (let i = 0; i < runs; i++) {
    const page = await browser.newPage();
    page.on('console', (m) => { if (m.text().startsWith('timing ')) console.log(`  worker ${m.text()}`); });
    await page.goto(`http://127.0.0.1:${port}/`);
    await page.getByText('Ready.').waitFor();
    await page.getByTestId('image-input').setInputFiles(image);
    await page.getByTestId('image-name').waitFor();
    const t0 = Date.now();
    await page.evaluate(() => { window.location.hash = '#/log'; });
    await page.getByTestId('log-transactions').waitFor({ timeout: 600_000 });
    const wall = Date.now() - t0;
    const text = await page.locator('.log p.muted').first().innerText();
    const ms = Number(text.match(/decoded in (\d+) ms/)[1]);
    const tx = await page.getByTestId('log-transactions').innerText();
    times.push(ms);
    console.log(`run ${i + 1}: worker decode ${ms} ms, page wall ${wall} ms, ${tx} transactions`);
    if (process.env.REPLAY === '1') {
      const r0 = Date.now();
      await page.getByTestId('replay-toggle').click();
      await page.getByTestId('replay-summary').waitFor({ timeout: 900_000 });
      const rw = Date.now() - r0;
      replays.push(rw);
      console.log(`run ${i + 1}: replay on, page wall ${rw} ms`);
    }
    await page.close();
  }
} finally {
  await browser.close();
  server.kill();
}
times.sort((a, b) => a - b);
console.log(`median worker decode: ${times[Math.floor(times.length / 2)]} ms`);
if (replays.length) {
  replays.sort((a, b) => a - b);
  console.log(`median replay (page wall): ${replays[Math.floor(replays.length / 2)]} ms`);
}
