// Runs one Emscripten page (a test or benchmark built by src/webgpu/wasm) in headless Chromium and
// exits with its exit code. Prints the adapter first; fails when there is no adapter, when it does
// not execute work, on any uncaptured WebGPU error, and (with --gtest) unless exactly one test ran.
//
//   node run-page.mjs --dir build/webgpu-wasm/www --script staging-test-webgpu.js \
//        [--gtest 'WebGpuRing.Case'] [--arg X]... [--timeout SECONDS]
// Exit: 0 pass, 1 fail, 77 skipped (no playwright-core or Chromium installed).
import { DEVICE_SETUP, SKIP, launch, loadPlaywright, serve } from './lib.mjs';

function parse(argv) {
  const o = { args: [], timeout: 240 };
  for (let k = 0; k < argv.length; ++k) {
    const a = argv[k];
    const next = () => argv[++k];
    if (a === '--dir') o.dir = next();
    else if (a === '--script') o.script = next();
    else if (a === '--gtest') o.gtest = next();
    else if (a === '--arg') o.args.push(next());
    else if (a === '--timeout') o.timeout = Number(next());
    else throw new Error(`unknown argument ${a}`);
  }
  if (!o.dir || !o.script) throw new Error('usage: run-page.mjs --dir DIR --script X.js [...]');
  if (o.gtest) o.args.push(`--gtest_filter=${o.gtest}`, '--gtest_color=no');
  return o;
}

const opts = parse(process.argv.slice(2));
const playwright = await loadPlaywright();
if (!playwright) process.exit(SKIP);

const page_html = `<!doctype html><meta charset="utf-8"><title>staging wasm page</title><body><script>
${DEVICE_SETUP}
window.__gpuErrors = [];
(async () => {
  const {device, info} = await stagingDevice();
  console.log('adapter: ' + info);
  device.onuncapturederror = (e) => { window.__gpuErrors.push(e.error.message); console.log('WebGPU error: ' + e.error.message); };
  device.lost.then((l) => console.log('device lost: ' + l.message));
  window.Module = {
    preinitializedWebGPUDevice: device,
    arguments: ${JSON.stringify(opts.args)},
    print: (s) => console.log(s),
    printErr: (s) => console.log(s),
    onExit: (code) => { window.__result = {exit: code}; },
    onAbort: (what) => { window.__result = {exit: 'abort', detail: String(what)}; },
  };
  const s = document.createElement('script');
  s.src = ${JSON.stringify(opts.script)};
  s.onerror = () => { window.__result = {exit: 'load', detail: 'could not load ' + s.src}; };
  document.body.appendChild(s);
})().catch((e) => { window.__result = {exit: 'setup', detail: String(e && e.message || e)}; });
</script>`;

const server = await serve(opts.dir, { '/__run.html': page_html });
const browser = await launch(playwright);
const lines = [];
let code = 1;
try {
  const page = await browser.context.newPage();
  page.on('console', (m) => { lines.push(m.text()); console.log(m.text()); });
  page.on('pageerror', (e) => { lines.push(String(e)); console.log(`page error: ${e}`); });
  await page.goto(`${server.url}/__run.html`);
  await page.waitForFunction(() => window.__result !== undefined, null,
                             { timeout: opts.timeout * 1000, polling: 50 });
  await new Promise((r) => setTimeout(r, 100));  // let the last console lines arrive
  const result = await page.evaluate(() => window.__result);
  const gpuErrors = await page.evaluate(() => window.__gpuErrors.length);
  if (typeof result.exit === 'number') {
    code = result.exit;
  } else {
    console.log(`FAILED (${result.exit}): ${result.detail}`);
    code = 1;
  }
  if (gpuErrors > 0) {
    console.log(`FAILED: ${gpuErrors} uncaptured WebGPU error(s)`);
    code = 1;
  }
  if (code === 0 && lines.some((l) => l.startsWith('[  FAILED  ]'))) {
    console.log('FAILED: the page reported failed tests but exited 0');
    code = 1;
  }
  if (opts.gtest && code === 0) {
    const ran = lines.map((l) => /^\[==========\] (\d+) tests? from .* ran\./.exec(l)).find(Boolean);
    if (!ran || Number(ran[1]) !== 1) {
      console.log(`FAILED: --gtest ${opts.gtest} ran ${ran ? ran[1] : 'no'} tests, expected 1`);
      code = 1;
    }
  }
} catch (e) {
  console.log(`FAILED: ${e.message}`);
  code = 1;
} finally {
  await browser.close();
  await server.close();
}
process.exit(code);
