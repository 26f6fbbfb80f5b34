// Serves a page directory on 127.0.0.1, opens it in headless Chromium with ?frames=N, waits until
// the page has run exactly N frames and stopped (window.demoDone), and saves a screenshot: the
// frame number on the page is the one this prints. With --serve it then keeps serving
// (for a person's browser) until interrupted.
//
//   node screenshot.mjs --dir build/webgpu-wasm/www --out out/webgpu-demo.png [--frames 230]
//        [--page index.html] [--timeout 120] [--serve]
// Exit: 0 saved, 1 failed (no adapter, page error, timeout), 77 no playwright-core / Chromium.
import fs from 'node:fs';
import path from 'node:path';
import { SKIP, launch, loadPlaywright, serve } from './lib.mjs';

const o = { page: 'index.html', frames: 230, timeout: 120, serve: false };
const argv = process.argv.slice(2);
for (let k = 0; k < argv.length; ++k) {
  const a = argv[k];
  if (a === '--dir') o.dir = argv[++k];
  else if (a === '--out') o.out = argv[++k];
  else if (a === '--page') o.page = argv[++k];
  else if (a === '--frames') o.frames = Number(argv[++k]);
  else if (a === '--timeout') o.timeout = Number(argv[++k]);
  else if (a === '--serve') o.serve = true;
  else { console.log(`unknown argument ${a}`); process.exit(1); }
}
if (!o.dir || !o.out) { console.log('usage: screenshot.mjs --dir DIR --out PNG [...]'); process.exit(1); }

const playwright = await loadPlaywright();
if (!playwright) process.exit(SKIP);
const server = await serve(o.dir);
const browser = await launch(playwright, { width: 1400, height: 860 });
let code = 1;
try {
  const page = await browser.context.newPage();
  page.on('console', (m) => console.log(`page: ${m.text()}`));
  page.on('pageerror', (e) => console.log(`page error: ${e}`));
  await page.goto(`${server.url}/${o.page}?frames=${o.frames}`);
  await page.waitForFunction(() => window.demoError || window.demoDone, null,
                             { timeout: o.timeout * 1000, polling: 100 });
  const error = await page.evaluate(() => window.demoError);
  if (error) throw new Error(`the page failed: ${error}`);
  fs.mkdirSync(path.dirname(path.resolve(o.out)), { recursive: true });
  await page.screenshot({ path: o.out, fullPage: true });
  const frame = await page.evaluate(() => window.demoFrame);
  console.log(`screenshot after ${frame} frames: ${path.resolve(o.out)}`);
  code = 0;
} catch (e) {
  console.log(`FAILED: ${e.message}`);
}
await browser.close();
if (o.serve && code === 0) {
  console.log(`serving ${path.resolve(o.dir)} at ${server.url}/${o.page} (Ctrl-C to stop; ` +
              'open it in a browser with WebGPU)');
  await new Promise(() => {});
}
await server.close();
process.exit(code);
