// The demo page: gets a WebGPU device, hands it to the wasm (Module.preinitializedWebGPUDevice),
// then per requestAnimationFrame runs one frame of uploads through the ring (demo_frame), reads the
// streamed texture back onto the canvas, and draws the slots' states, their history and the stats.
// With ?frames=N in the URL (the screenshot harness) the page stops after N frames, once the last
// readback has landed, and sets window.demoDone: the frame number it shows is then N exactly.
'use strict';

const COLORS = {
  Empty: '#6e7681', Ready: '#3fb950', Recording: '#58a6ff',
  InFlight: '#d29922', Abandoned: '#a371f7', Failed: '#f85149',
};
const HISTORY = 160;
const history = [];  // per frame: array of slot states
window.demoFrame = 0;
window.demoError = null;
window.demoDone = false;
const stopAt = Number(new URLSearchParams(window.location.search).get('frames')) || 0;
window.addEventListener('error', (e) => fail(String(e.message)));

function kib(bytes) {
  return bytes >= 1 << 20 ? (bytes / (1 << 20)).toFixed(1) + ' MiB' : Math.round(bytes / 1024) + ' KiB';
}

function fail(message) {
  window.demoError = message;
  const p = document.getElementById('adapter');
  p.textContent = message;
  p.className = 'error';
}

async function main() {
  if (!('gpu' in navigator)) return fail('WebGPU is not available in this browser.');
  const adapter = await navigator.gpu.requestAdapter();
  if (!adapter) return fail('No WebGPU adapter.');
  const i = adapter.info || {};
  document.getElementById('adapter').textContent =
      `adapter: ${i.vendor || '?'} / ${i.architecture || '?'}` +
      `${i.description ? ' — ' + i.description : ''}${i.isFallbackAdapter ? ' (fallback adapter)' : ''}`;
  const device = await adapter.requestDevice();
  device.onuncapturederror = (e) => console.log('WebGPU error: ' + e.error.message);
  window.Module = {
    preinitializedWebGPUDevice: device,
    print: (s) => console.log(s),
    printErr: (s) => console.log(s),
    postRun: [() => start(device)],  // after main(), which made the ring and the texture
  };
  const script = document.createElement('script');
  script.src = 'staging-webgpu-demo.js';
  script.onerror = () => fail('Could not load staging-webgpu-demo.js');
  document.body.appendChild(script);
}

function start(device) {
  // The streamed texture is shown by reading it back (MAP_READ) into a 2D canvas: presenting a
  // WebGPU canvas loses the device in headless Chromium without a GPU process, and the readback
  // shows the bytes that actually landed in the texture.
  const view = document.getElementById('world').getContext('2d');
  const image = view.createImageData(512, 512);
  const readback = device.createBuffer({
    size: 512 * 512 * 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
  });
  let reading = false;
  // The wasm's WGPUTexture handle → the GPUTexture object (Emscripten's WebGPU object table).
  const world = WebGPU.mgrTexture.get(Module._demo_world_texture());
  const legend = document.getElementById('legend');
  for (const [name, color] of Object.entries(COLORS))
    legend.insertAdjacentHTML('beforeend', `<span><i style="background:${color}"></i>${name}</span>`);
  const t0 = performance.now();
  function tick(now) {
    Module._demo_frame((now - t0) / 1000);
    const state = JSON.parse(Module.UTF8ToString(Module._demo_state_json()));
    if (!reading) {
      reading = true;
      const band = state.band;  // the band this readback shows written last
      const encoder = device.createCommandEncoder();
      encoder.copyTextureToBuffer({ texture: world }, { buffer: readback, bytesPerRow: 2048 },
                                  [512, 512]);
      device.queue.submit([encoder.finish()]);
      readback.mapAsync(GPUMapMode.READ).then(() => {
        image.data.set(new Uint8Array(readback.getMappedRange()));
        readback.unmap();
        view.putImageData(image, 0, 0);
        sweep(view, band);
        reading = false;
      }, (e) => fail('readback failed: ' + e.message));
    }
    history.push(state.slots.map((s) => s.state));
    if (history.length > HISTORY) history.shift();
    draw(state);
    window.demoFrame = state.frame;
    if (stopAt > 0 && state.frame >= stopAt) {
      document.getElementById('frame').textContent += ` · stopped after ${state.frame} frames`;
      const settle = () => (reading ? setTimeout(settle, 10) : (window.demoDone = true));
      settle();
      return;
    }
    requestAnimationFrame(tick);
  }
  requestAnimationFrame(tick);
}

// Marks the band the last frame wrote: a light wash over its rows and a bright edge where the
// sweep goes on (the plasma below the edge is the previous pass's, above it this pass's).
function sweep(view, band) {
  const [y0, y1] = band;
  if (y1 - y0 >= 512) return;  // a whole-image frame: nothing sweeps
  const wash = view.createLinearGradient(0, y0, 0, y1);
  wash.addColorStop(0, 'rgba(255, 255, 255, 0)');
  wash.addColorStop(1, 'rgba(255, 255, 255, 0.22)');
  view.fillStyle = wash;
  view.fillRect(0, y0, 512, y1 - y0);
  view.fillStyle = 'rgba(255, 255, 255, 0.9)';
  view.fillRect(0, y1 - 2, 512, 2);
}

function draw(state) {
  document.getElementById('frame').textContent = `· frame ${state.frame} · last: ${state.last}`;
  const max = state.stats.max_slot_bytes;
  document.getElementById('slots').innerHTML = state.slots.map((s, n) => `
    <div class="slot" style="border-color:${COLORS[s.state]}">
      <div class="name">slot ${n}</div>
      <div class="state" style="color:${COLORS[s.state]}">${s.state}</div>
      <div class="cap">${s.capacity ? kib(s.capacity) : 'no buffer'} of ${kib(max)} max</div>
      <div class="bar"><div style="width:${Math.max(2, 100 * s.capacity / max)}%;
        background:${COLORS[s.state]}"></div></div>
    </div>`).join('');

  const tl = document.getElementById('timeline');
  const g = tl.getContext('2d');
  g.clearRect(0, 0, tl.width, tl.height);
  const rows = state.slots.length, rowH = tl.height / rows, colW = tl.width / HISTORY;
  history.forEach((states, x) => states.forEach((s, y) => {
    g.fillStyle = COLORS[s];
    g.fillRect(x * colW, y * rowH + 2, Math.ceil(colW), rowH - 4);
  }));
  g.fillStyle = '#c9d1d9';
  g.font = '11px ui-monospace, monospace';
  for (let y = 0; y < rows; ++y) g.fillText(`slot ${y}`, 4, y * rowH + rowH / 2 + 4);

  const s = state.stats;
  const row = (k, v) => `<tr><td>${k}</td><td class="v">${v}</td></tr>`;
  document.getElementById('stats').innerHTML = [
    row('frames (slot / queue-write)', `${s.frames_begun} / ${s.queue_write_frames}`),
    row('uploads by slot', `${s.slot_uploads} · ${kib(s.slot_bytes)}`),
    row('uploads by queue write', `${s.queue_write_uploads} · ${kib(s.queue_write_bytes)}`),
    row('texture rows repacked to 256 B', s.rows_repacked),
    row('bytes through heap mirrors', kib(s.mirrored_bytes)),
    row('refused: all in flight', s.refusals_all_in_flight),
    row('refused: too large', s.refusals_too_large),
    row('slot buffers created / grown', `${s.slots_created} / ${s.slots_grown}`),
    row('replaced (abandoned / failed)', `${s.slots_replaced} (${s.abandoned_seen} / ${s.failed_seen})`),
    row('re-maps ok / failed', `${s.maps_completed} / ${s.maps_failed}`),
    row('slot memory now', kib(s.bytes_allocated)),
  ].join('');
  // In the order they happened (oldest first), so the list's numbers follow time.
  document.getElementById('events').innerHTML = state.events.map((e) => `<li>${e}</li>`).join('');
}

main().catch((e) => fail(String(e && e.message || e)));
