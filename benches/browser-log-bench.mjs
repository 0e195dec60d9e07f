// Time the worker's log decode in headless Chromium: open IMAGE in the page
// at DIST (served on PORT), go to #/log, and read the decode time the
// worker reports; with REPLAY=1 also turn replay on and time it. The
// worker's own spans per request (reads, copies into wasm, encoding,
// postMessage; src/web/worker/timing.rs) are printed as they come. Each run opens
// the page in a fresh browser context and prints the peak resident set
// (VmHWM) of Chromium's largest process in that run (Linux /proc, sampled
// every 250 ms; the processes that outlive a run are the browser's own,
// whose peak is its lifetime's).
// With ISOLATED=1 the page is served cross-origin isolated (e2e/serve.py
// --isolated), so the worker reads ahead through a SharedArrayBuffer
// (src/web/worker/read_ahead.rs) where the machine has more than two
// logical processors, or always with READ_AHEAD=always (never with
// READ_AHEAD=never); without, as a plain static server serves it.
// Usage: [REPLAY=1] [ISOLATED=1 [READ_AHEAD=always|never]] node benches/browser-log-bench.mjs DIST IMAGE [RUNS]
import { chromium } from '@playwright/test';
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// Every process under `root` (itself included).
function descendants(root) {
  const kids = new Map();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const st = readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = Number(st.slice(st.lastIndexOf(')') + 2).split(' ')[1]);
      if (!kids.has(ppid)) kids.set(ppid, []);
      kids.get(ppid).push(Number(d));
    } catch { /* gone */ }
  }
  const out = [];
  const queue = [root];
  while (queue.length) {
    const p = queue.pop();
    out.push(p);
    for (const c of kids.get(p) || []) queue.push(c);
  }
  return out;
}
// Peak resident set of a process in KiB (0 when gone).
function hwm(pid) {
  try {
    const m = readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmHWM:\s+(\d+) kB/);
    return m ? Number(m[1]) : 0;
  } catch { return 0; }
}

const [dist, image, runsArg] = process.argv.slice(2);
const runs = Number(runsArg || 3);
const port = 8190 + Math.floor(Math.random() * 100);
const serve = fileURLToPath(new URL('../e2e/serve.py', import.meta.url));
const isolated = process.env.ISOLATED === '1';
const server = spawn('python3', [serve, String(port), dist, ...(isolated ? ['--isolated'] : [])], { stdio: 'ignore' });
await new Promise((r) => setTimeout(r, 800));
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-dev-shm-usage'],
});
const times = [];
const replays = [];
const peaks = [];
let peak = new Map();
// Chromium's processes are this script's descendants (the server's is
// small).
const sampler = setInterval(() => {
  for (const p of descendants(process.pid)) {
    if (p === process.pid) continue;
    const h = hwm(p);
    if (h > (peak.get(p) || 0)) peak.set(p, h);
  }
}, 250);
try {
  for (let i = 0; i < runs; i++) {
    peak = new Map();
    const context = await browser.newContext();
    const page = await context.newPage();
    page.on('console', (m) => { if (m.text().startsWith('timing ')) console.log(`  worker ${m.text()}`); });
    await page.goto(`http://127.0.0.1:${port}/${process.env.READ_AHEAD ? `?read-ahead=${process.env.READ_AHEAD}` : ''}`);
    await page.getByText('Ready.').waitFor();
    await page.getByTestId('image-input').setInputFiles(image);
    await page.getByTestId('image-name').waitFor();
    // As a person would: the log is asked for a moment after the open
    // (the read-ahead worker starts in between).
    await page.waitForTimeout(300);
    // Walls are timed in the page, from the click to the first frame that
    // shows the answer (Playwright's own waiting polls every 500 ms).
    const wall = await page.evaluate(() => new Promise((done) => {
      const t0 = performance.now();
      window.location.hash = '#/log';
      const check = () => (document.querySelector('[data-testid="log-transactions"]')
        ? done(Math.round(performance.now() - t0)) : requestAnimationFrame(check));
      check();
    }));
    const text = await page.locator('.log p.muted').first().innerText();
    const ms = Number(text.match(/decoded in (\d+) ms/)[1]);
    const tx = await page.getByTestId('log-transactions').innerText();
    times.push(ms);
    console.log(`run ${i + 1}: worker decode ${ms} ms, page wall ${wall} ms, ${tx} transactions`);
    if (process.env.REPLAY === '1') {
      const rw = await page.evaluate(() => new Promise((done) => {
        const t0 = performance.now();
        document.querySelector('[data-testid="replay-toggle"]').click();
        const check = () => (document.querySelector('[data-testid="replay-summary"]')
          ? done(Math.round(performance.now() - t0)) : requestAnimationFrame(check));
        check();
      }));
      replays.push(rw);
      console.log(`run ${i + 1}: replay on, page wall ${rw} ms`);
    }
    const largest = Math.max(0, ...peak.values());
    peaks.push(largest);
    console.log(`run ${i + 1}: largest Chromium process peak ${Math.round(largest / 1024)} MiB`);
    await context.close();
  }
} finally {
  clearInterval(sampler);
  await browser.close();
  server.kill();
}
times.sort((a, b) => a - b);
console.log(`median worker decode: ${times[Math.floor(times.length / 2)]} ms`);
peaks.sort((a, b) => a - b);
console.log(`median largest-process peak: ${Math.round(peaks[Math.floor(peaks.length / 2)] / 1024)} MiB`);
if (replays.length) {
  replays.sort((a, b) => a - b);
  console.log(`median replay (page wall): ${replays[Math.floor(replays.length / 2)]} ms`);
}
