// Loads a zerosearch HTML report in headless Chromium over the DevTools protocol (pipe
// transport, no network, no npm packages) and checks: no console errors or exceptions, no
// network requests, the table sorts both ways, the feasible filter hides OOM rows, the timeline
// SVG renders with data. Usage: node check_report.js CHROMIUM REPORT.html PROFILE_DIR [LOAD_LIMIT_MS]
// [PARTS]: PARTS, comma-separated classes (a2a, cp) the timeline must draw inside its passes.
'use strict';
const { spawn } = require('child_process');
const path = require('path');

const [chrome, report, profile, limitArg, partsArg] = process.argv.slice(2);
// The page must load within this many milliseconds (run_report.sh's LOAD_LIMIT_MS); 0: no limit.
const loadLimitMs = Number(limitArg || 0);
const proc = spawn(chrome, [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-extensions',
  '--remote-debugging-pipe', `--user-data-dir=${profile}`, 'about:blank',
], { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] });
let stderr = '';
proc.stderr.on('data', (d) => { stderr += d; });
const toChrome = proc.stdio[3];
const fromChrome = proc.stdio[4];

let nextId = 1;
const pending = new Map();
const listeners = [];
let buffer = Buffer.alloc(0);
fromChrome.on('data', (chunk) => {
  buffer = Buffer.concat([buffer, chunk]);
  let end;
  while ((end = buffer.indexOf(0)) >= 0) {
    const msg = JSON.parse(buffer.subarray(0, end).toString('utf8'));
    buffer = buffer.subarray(end + 1);
    if (msg.id && pending.has(msg.id)) {
      const { resolve, reject } = pending.get(msg.id);
      pending.delete(msg.id);
      if (msg.error) reject(new Error(JSON.stringify(msg.error))); else resolve(msg.result);
    } else if (msg.method) {
      listeners.forEach((l) => l(msg));
    }
  }
});
function send(method, params = {}, sessionId) {
  const id = nextId++;
  const msg = { id, method, params };
  if (sessionId) msg.sessionId = sessionId;
  toChrome.write(JSON.stringify(msg) + '\0');
  return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
}
function waitFor(method, timeoutMs) {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`timeout waiting for ${method}`)), timeoutMs);
    listeners.push((m) => { if (m.method === method) { clearTimeout(t); resolve(m); } });
  });
}

const failures = [];
function check(cond, what) {
  if (!cond) failures.push(what);
  console.log(`${cond ? 'ok  ' : 'FAIL'} ${what}`);
}

(async () => {
  const errors = [];
  const requests = [];
  listeners.push((m) => {
    if (m.method === 'Runtime.exceptionThrown') errors.push(JSON.stringify(m.params.exceptionDetails));
    if (m.method === 'Runtime.consoleAPICalled' && (m.params.type === 'error' || m.params.type === 'warning')) {
      errors.push(m.params.args.map((a) => a.value).join(' '));
    }
    if (m.method === 'Log.entryAdded' && m.params.entry.level === 'error') errors.push(m.params.entry.text);
    if (m.method === 'Network.requestWillBeSent' && !m.params.request.url.startsWith('file:')
        && !m.params.request.url.startsWith('data:')) requests.push(m.params.request.url);
  });
  const { targetId } = await send('Target.createTarget', { url: 'about:blank' });
  const { sessionId } = await send('Target.attachToTarget', { targetId, flatten: true });
  for (const d of ['Runtime', 'Log', 'Page', 'Network']) await send(`${d}.enable`, {}, sessionId);
  const loaded = waitFor('Page.loadEventFired', 20000);
  const t0 = Date.now();
  await send('Page.navigate', { url: 'file://' + path.resolve(report) }, sessionId);
  await loaded;
  const loadMs = Date.now() - t0;
  check(loadMs > 0 && (loadLimitMs === 0 || loadMs < loadLimitMs),
        `the page loads and renders in ${loadMs} ms` + (loadLimitMs ? ` (limit ${loadLimitMs} ms)` : ''));
  const evaluate = async (expr) => {
    const r = await send('Runtime.evaluate', { expression: expr, returnByValue: true }, sessionId);
    if (r.exceptionDetails) throw new Error(JSON.stringify(r.exceptionDetails));
    return r.result.value;
  };
  const rows = await evaluate("document.querySelectorAll('#rows tbody tr').length");
  check(rows > 0, `table has rows (${rows})`);
  const stepCol = await evaluate(
    "Array.from(document.querySelectorAll('#rows th')).findIndex(h => h.textContent === 'step (s)')");
  check(stepCol >= 0, 'table has a step column');
  const column = (c) => `Array.from(document.querySelectorAll('#rows tbody tr')).map(r => parseFloat(r.cells[${c}].getAttribute('data-v')))`;
  const sorted = (v, dir) => v.every((x, i) => i === 0 || dir * (x - v[i - 1]) >= 0);
  await evaluate(`document.querySelectorAll('#rows th')[${stepCol}].click()`);
  const asc = await evaluate(column(stepCol));
  check(sorted(asc, 1), 'click on "step (s)" sorts ascending');
  await evaluate(`document.querySelectorAll('#rows th')[${stepCol}].click()`);
  const desc = await evaluate(column(stepCol));
  check(sorted(desc, -1) && desc[0] > desc[desc.length - 1], 'second click sorts descending');
  const memCol = await evaluate(
    "Array.from(document.querySelectorAll('#rows th')).findIndex(h => h.textContent === 'memory (GiB)')");
  await evaluate(`document.querySelectorAll('#rows th')[${memCol}].click()`);
  check(sorted(await evaluate(column(memCol)), 1), 'memory column sorts ascending');
  const oom = await evaluate("document.querySelectorAll('#rows tbody tr.oom').length");
  await evaluate("(() => { const b = document.getElementById('feasible'); b.checked = true; b.dispatchEvent(new Event('change')); })()");
  const visible = await evaluate(
    "Array.from(document.querySelectorAll('#rows tbody tr')).filter(r => r.style.display !== 'none').length");
  check(oom > 0 && visible === rows - oom, `feasible filter shows ${visible} of ${rows} rows (${oom} OOM hidden)`);
  const count = await evaluate("document.getElementById('count').textContent");
  check(count === `${visible} of ${rows} rows shown`, `row counter says "${count}"`);
  const boxes = await evaluate("document.querySelectorAll('#timeline svg rect.fwd').length");
  const width = await evaluate("document.querySelector('#timeline svg').getBoundingClientRect().width");
  const box = await evaluate("(() => { const r = document.querySelector('#timeline svg rect.fwd').getBBox(); return r.width * r.height; })()");
  check(boxes > 0 && width > 100 && box > 0, `timeline renders ${boxes} forward boxes, ${Math.round(width)} px wide`);
  // The all-to-all and cp parts: each rendered, inside the pass box drawn just before it.
  for (const cls of (partsArg || '').split(',').filter(Boolean)) {
    const [n, outside] = await evaluate(`(() => {
      const parts = Array.from(document.querySelectorAll('#timeline svg rect.${cls}'));
      let outside = 0;
      for (const r of parts) {
        let pass = r.previousElementSibling;
        while (pass && (pass.classList.contains('a2a') || pass.classList.contains('cp'))) pass = pass.previousElementSibling;
        const a = r.getBBox(), b = pass ? pass.getBBox() : null;
        if (!b || a.width <= 0 || a.height <= 0 || a.x < b.x - 0.01 || a.x + a.width > b.x + b.width + 0.51
            || a.y < b.y - 0.01 || a.y + a.height > b.y + b.height + 0.01) outside++;
      }
      return [parts.length, outside];
    })()`);
    check(n > 0 && outside === 0, `timeline draws ${n} ${cls} parts, ${outside} outside their pass`);
  }
  check(errors.length === 0, `no console errors or exceptions${errors.length ? ': ' + errors.join(' | ') : ''}`);
  check(requests.length === 0, `no network requests${requests.length ? ': ' + requests.join(' ') : ''}`);
  await send('Browser.close').catch(() => {});
})().catch((e) => { failures.push(String(e)); console.log('FAIL ' + e + '\n' + stderr); })
  .finally(() => {
    setTimeout(() => { proc.kill(); process.exit(failures.length ? 1 : 0); }, 200);
  });
