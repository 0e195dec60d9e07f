// Browser end-to-end tests: Debian's Chromium driven by Playwright against
// the release build in dist/ (made by scripts/test before this runs).
import { defineConfig } from '@playwright/test';

const PORT = Number(process.env.E2E_PORT || 8091);
// The same build served cross-origin isolated (COOP/COEP headers, e2e/serve.py
// --isolated): the worker reads ahead through a SharedArrayBuffer there.
const ISOLATED_PORT = PORT + 1;

export default defineConfig({
  testDir: './e2e',
  outputDir: './e2e/test-results',
  globalSetup: './e2e/global-setup.mjs',
  timeout: 60_000,
  // The worker's wasm starts slower on a loaded 2-core machine than 5 s.
  expect: { timeout: 15_000 },
  workers: 1,
  reporter: [['list']],
  use: {
    baseURL: `http://127.0.0.1:${PORT}/`,
    browserName: 'chromium',
    launchOptions: {
      executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
        '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-dev-shm-usage'],
    },
    screenshot: 'only-on-failure',
  },
  // Every test on the plain server (FileReaderSync reads); those that read
  // the log, replay it or read large files again on the isolated one.
  projects: [
    { name: 'plain' },
    {
      name: 'isolated',
      testMatch: /(log|replay|replay-diff|long-work|extlog|export)\.spec\.mjs$/,
      use: { baseURL: `http://127.0.0.1:${ISOLATED_PORT}/` },
    },
  ],
  webServer: [
    {
      command: `python3 e2e/serve.py ${PORT} dist`,
      url: `http://127.0.0.1:${PORT}/`,
      reuseExistingServer: false,
      timeout: 30_000,
      stdout: 'ignore',
      stderr: 'ignore',
    },
    {
      command: `python3 e2e/serve.py ${ISOLATED_PORT} dist --isolated`,
      url: `http://127.0.0.1:${ISOLATED_PORT}/`,
      reuseExistingServer: false,
      timeout: 30_000,
      stdout: 'ignore',
      stderr: 'ignore',
    },
  ],
});
