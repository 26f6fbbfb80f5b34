// Shared by run-page.mjs and screenshot.mjs: a static file server on 127.0.0.1 and Debian's
// Chromium, headless, through playwright-core (which downloads no browser of its own).
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const SKIP = 77;
const here = path.dirname(fileURLToPath(import.meta.url));

/// The Chromium flags this machine needs: root without a sandbox, no GPU process (WebGPU then
/// runs on SwiftShader), and no background connections (the network is closed).
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--enable-unsafe-webgpu',
];

export function chromiumPath() {
  return process.env.STAGING_CHROMIUM || '/usr/bin/chromium';
}

/// playwright-core from this folder's node_modules, or null (with the reason printed).
export async function loadPlaywright() {
  const entry = path.join(here, 'node_modules', 'playwright-core', 'index.mjs');
  if (!fs.existsSync(entry)) {
    console.log(`skipped: playwright-core is not installed in ${here} ` +
                '(scripts/test installs it: npm ci there)');
    return null;
  }
  if (!fs.existsSync(chromiumPath())) {
    console.log(`skipped: no Chromium at ${chromiumPath()} (scripts/test installs Debian's chromium)`);
    return null;
  }
  return import(entry);
}

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.wasm': 'application/wasm',
  '.css': 'text/css; charset=utf-8',
  '.png': 'image/png',
  '.json': 'application/json',
};

/// Serves the files under `root` (and `pages`: {'/name.html': 'content'}) on 127.0.0.1 at a free
/// port. Returns {url, close}.
export async function serve(root, pages = {}) {
  const base = path.resolve(root);
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://127.0.0.1');
    let name = decodeURIComponent(url.pathname);
    if (name === '/') name = '/index.html';
    if (name === '/favicon.ico') { res.writeHead(204); res.end(); return; }
    if (pages[name] !== undefined) {
      res.writeHead(200, { 'content-type': TYPES['.html'], 'cache-control': 'no-store' });
      res.end(pages[name]);
      return;
    }
    const file = path.resolve(base, '.' + name);
    if (!file.startsWith(base + path.sep) || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
      res.writeHead(404);
      res.end('not found');
      return;
    }
    res.writeHead(200, {
      'content-type': TYPES[path.extname(file)] || 'application/octet-stream',
      'cache-control': 'no-store',
    });
    fs.createReadStream(file).pipe(res);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((r) => server.close(r)) };
}

/// Launches headless Chromium with a fresh profile. Returns {context, close}.
export async function launch(playwright, viewport = { width: 1280, height: 800 }) {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'staging-chromium-'));
  const context = await playwright.chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath(),
    headless: true,
    args: CHROMIUM_ARGS,
    viewport,
  });
  return {
    context,
    close: async () => {
      await context.close().catch(() => {});
      fs.rmSync(profile, { recursive: true, force: true });
    },
  };
}

/// Page-side JavaScript: requests the adapter, describes it, checks that it executes work (a
/// buffer copy read back through MAP_READ) and makes the device. Defines `stagingDevice()`,
/// which resolves to {device, info} or throws an Error whose message starts with "adapter:".
export const DEVICE_SETUP = String.raw`
async function stagingDevice() {
  if (!('gpu' in navigator)) throw new Error('adapter: navigator.gpu is missing (WebGPU is off)');
  const adapter = await navigator.gpu.requestAdapter();
  if (!adapter) throw new Error('adapter: requestAdapter() returned none');
  const i = adapter.info || {};
  const info = 'vendor=' + (i.vendor || '?') + ' architecture=' + (i.architecture || '?') +
      ' device=' + (i.device || '-') + ' description=' + (i.description || '-') +
      ' fallback=' + (i.isFallbackAdapter === undefined ? '?' : i.isFallbackAdapter);
  const device = await adapter.requestDevice();
  // Known answer: a real implementation executes a copy and maps the result back.
  const words = new Uint32Array(1024);
  for (let k = 0; k < words.length; ++k) words[k] = (k * 2654435761) >>> 0;
  const src = device.createBuffer({size: 4096, usage: GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST});
  const dst = device.createBuffer({size: 4096, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST});
  device.queue.writeBuffer(src, 0, words);
  const enc = device.createCommandEncoder();
  enc.copyBufferToBuffer(src, 0, dst, 0, 4096);
  device.queue.submit([enc.finish()]);
  await dst.mapAsync(GPUMapMode.READ);
  const back = new Uint32Array(dst.getMappedRange().slice(0));
  dst.unmap(); src.destroy(); dst.destroy();
  for (let k = 0; k < words.length; ++k)
    if (back[k] !== words[k]) throw new Error('adapter: ' + info + ' is not a real implementation (a copied buffer read back wrong at word ' + k + ')');
  return {device, info};
}
`;
