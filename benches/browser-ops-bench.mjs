// Time the worker's operations analysis in headless Chromium: open IMAGE in
// the page at DIST (served on PORT), go to #/ops, and read the analysis time
// the worker reports and the page's wall time to the counts.
// Usage: node benches/browser-ops-bench.mjs DIST IMAGE [RUNS]
import { chromium } from '@playwright/test';
import { spawn } from 'node:child_process';

const [dist, image, runsArg] = process.argv.slice(2);
const runs = Number(runsArg || 3);
const port = 8290 + Math.floor(Math.random() * 100);
const server = spawn('python3', ['-m', 'http.server', String(port), '--bind', '127.0.0.1', '--directory', dist], { stdio: 'ignore' });
await new Promise((r) => setTimeout(r, 800));
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-dev-shm-usage'],
});
try {
  for (let i = 0; i < runs; i++) {
    const page = await browser.newPage();
    page.on('console', (m) => { if (m.text().startsWith('timing ')) console.log(`  worker ${m.text()}`); });
    await page.goto(`http://127.0.0.1:${port}/`);
    await page.getByText('Ready.').waitFor();
    await page.getByTestId('image-input').setInputFiles(image);
    await page.getByTestId('image-name').waitFor();
    const t0 = Date.now();
    await page.evaluate(() => { window.location.hash = '#/ops'; });
    await page.getByTestId('op-count-create').waitFor({ timeout: 600_000 });
    const wall = Date.now() - t0;
    const creates = await page.getByTestId('op-count-create').innerText();
    const summary = await page.getByTestId('ops-summary').innerText();
    console.log(`run ${i + 1}: page wall ${wall} ms to the counts (${creates} creates); ${summary}`);
    await page.close();
  }
} finally {
  await browser.close();
  server.kill();
}
