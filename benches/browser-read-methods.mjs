// How fast a dedicated worker in headless Chromium gets a file's bytes, by
// method and read size: FileReaderSync (what the worker's synchronous
// decode reads through, src/web/worker/blob_reader.rs) at 4-64 MiB,
// Blob.slice().arrayBuffer() with several reads in flight (what the
// read-ahead worker does, www/read-ahead.js) and Blob.stream(). Each method
// reads the whole FILE; the rounds interleave the methods so that the
// machine's drift falls on all alike. Prints each method's times.
// Usage: node benches/browser-read-methods.mjs FILE [ROUNDS]
import { chromium } from '@playwright/test';
import { createServer } from 'node:http';

const [file, roundsArg] = process.argv.slice(2);
if (!file) {
  console.error('usage: node benches/browser-read-methods.mjs FILE [ROUNDS]');
  process.exit(2);
}
const rounds = Number(roundsArg || 4);

// The worker: reads `file` by `mode` and reports the milliseconds.
const workerJs = `
onmessage = async (e) => {
  const { file, mode, chunk, par } = e.data;
  const t0 = performance.now();
  let touched = 0;
  if (mode === 'sync') {
    const r = new FileReaderSync();
    for (let off = 0; off < file.size; off += chunk) {
      const b = r.readAsArrayBuffer(file.slice(off, Math.min(file.size, off + chunk)));
      touched += new Uint8Array(b).length;
    }
  } else if (mode === 'async') {
    let next = 0;
    const lane = async () => {
      while (next < file.size) {
        const off = next;
        next += chunk;
        const b = await file.slice(off, Math.min(file.size, off + chunk)).arrayBuffer();
        touched += b.byteLength;
      }
    };
    await Promise.all(Array.from({ length: par }, lane));
  } else {
    const rd = file.stream().getReader();
    for (;;) {
      const { value, done } = await rd.read();
      if (done) break;
      touched += value.length;
    }
  }
  postMessage({ ms: performance.now() - t0, touched });
};`;
const pageHtml = `<!DOCTYPE html><input type="file" id="f"><script>
const url = URL.createObjectURL(new Blob([${JSON.stringify(workerJs)}], { type: 'text/javascript' }));
window.readWith = (mode, chunk, par) => new Promise((done) => {
  const w = new Worker(url);
  w.onmessage = (e) => { done(e.data); w.terminate(); };
  w.postMessage({ file: document.getElementById('f').files[0], mode, chunk, par });
});
</script>`;

const server = createServer((req, res) => {
  res.writeHead(req.url === '/' ? 200 : 404, { 'content-type': 'text/html' });
  res.end(req.url === '/' ? pageHtml : '');
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
const MiB = 1 << 20;
const methods = [
  ...[4, 8, 16, 32, 64].map((m) => [`FileReaderSync, ${m} MiB reads`, 'sync', m * MiB, 1]),
  ['Blob.slice().arrayBuffer(), 8 MiB, 4 in flight', 'async', 8 * MiB, 4],
  ['Blob.stream()', 'stream', 0, 1],
];
try {
  const page = await browser.newPage();
  await page.goto(`http://127.0.0.1:${server.address().port}/`);
  await page.setInputFiles('#f', file);
  const times = new Map();
  for (let round = 0; round < rounds; round++) {
    for (const [name, mode, chunk, par] of methods) {
      const r = await page.evaluate(([m, c, p]) => window.readWith(m, c, p), [mode, chunk, par]);
      if (!times.has(name)) times.set(name, []);
      times.get(name).push(Math.round(r.ms));
      if (round === 0 && r.touched === 0) throw new Error(`${name}: nothing read`);
    }
  }
  for (const [name, ms] of times) {
    const sorted = [...ms].sort((a, b) => a - b);
    console.log(`${name}: ${ms.join(' ')} ms (median ${sorted[Math.floor(sorted.length / 2)]})`);
  }
} finally {
  await browser.close();
  server.close();
}
