#!/usr/bin/env node
'use strict';
// Peer benchmark: runs small flows inside an embedded, headless Node-RED and
// prints one JSON object per scenario on stdout (one per line). Everything else
// goes to stderr. See README.md for what is measured and how.

const fs = require('fs');
const os = require('os');
const path = require('path');
const { performance } = require('perf_hooks');

// ---------------------------------------------------------------------------
// stdout is reserved for results: keep a private handle to it and send any
// console output from Node-RED or its dependencies to stderr.
const writeResult = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');
console.log = console.error;
console.info = console.error;
console.warn = console.error;
console.debug = console.error;
const log = (...a) => console.error('[bench/node-red]', ...a);

// ---------------------------------------------------------------------------
// Options: --name=value on the command line, or BENCH_NAME in the environment.
const ALL_SCENARIOS = ['chain10', 'chain10_jsonata', 'single', 'fanout10'];
function parseArgs(argv) {
    const out = {};
    for (const a of argv) {
        if (a === '-h' || a === '--help') { out.help = true; continue; }
        const m = /^--([a-z0-9-]+)(?:=(.*))?$/.exec(a);
        if (!m) throw new Error(`unknown argument: ${a}`);
        out[m[1]] = m[2] === undefined ? 'true' : m[2];
    }
    return out;
}
const args = parseArgs(process.argv.slice(2));
if (args.help) {
    process.stderr.write(`usage: node run.js [--n=50000] [--lat-n=2000] [--warmup=2000] [--window=256] [--rounds=5]
                   [--scenarios=${ALL_SCENARIOS.join(',')}] [--sync-delivery] [--timeout-s=120]
each option may also be given as an env var: BENCH_N, BENCH_LAT_N, BENCH_WARMUP, BENCH_WINDOW, BENCH_ROUNDS,
BENCH_SCENARIOS, BENCH_SYNC_DELIVERY=1, BENCH_TIMEOUT_S\n`);
    process.exit(0);
}
function opt(name, def) {
    if (args[name] !== undefined) return args[name];
    const env = process.env['BENCH_' + name.toUpperCase().replace(/-/g, '_')];
    return env !== undefined && env !== '' ? env : def;
}
function intOpt(name, def, min) {
    const v = Number(opt(name, String(def)));
    if (!Number.isInteger(v) || v < min) throw new Error(`--${name} must be an integer >= ${min}`);
    return v;
}
const N = intOpt('n', 50000, 1);
const LAT_N = intOpt('lat-n', 2000, 1);
const WARMUP = intOpt('warmup', 2000, 0);
const WINDOW = intOpt('window', 256, 1);
const ROUNDS = intOpt('rounds', 5, 1);
const TIMEOUT_S = intOpt('timeout-s', 120, 1);
const SYNC = ['1', 'true', 'yes'].includes(String(opt('sync-delivery', 'false')).toLowerCase());
const SCENARIOS = String(opt('scenarios', ALL_SCENARIOS.join(','))).split(',').filter(Boolean);
for (const s of SCENARIOS) {
    if (!ALL_SCENARIOS.includes(s)) throw new Error(`unknown scenario: ${s}`);
}

// Hard stop so the script always exits by itself.
setTimeout(() => {
    log(`timed out after ${TIMEOUT_S}s`);
    process.exit(3);
}, TIMEOUT_S * 1000).unref();

// ---------------------------------------------------------------------------
// The payload every scenario sends (the Rust side uses the same):
//   { n: i, v: 0, user: { name: "ada", tags: ["a", "b"] }, text: "hello world" }
// n is the message index within a phase; v is what the hop rules write.
function makePayload(i) {
    return { n: i, v: 0, user: { name: 'ada', tags: ['a', 'b'] }, text: 'hello world' };
}

// ---------------------------------------------------------------------------
// Flow definition.
const TAB = 'bench_tab';
const HOPS = 10;
const FANOUT = 10;
// One rule per hop. "copy": msg.payload.v = msg.payload.n (a msg-typed set,
// i.e. one property read + one property write, no expression engine).
// "jsonata": msg.payload.v = JSONata `payload.v + 1`.
const RULE_COPY = { t: 'set', p: 'payload.v', pt: 'msg', to: 'payload.n', tot: 'msg' };
const RULE_JSONATA = { t: 'set', p: 'payload.v', pt: 'msg', to: 'payload.v + 1', tot: 'jsonata' };

let ypos = 0;
function changeNode(id, rule, wires) {
    return {
        id, type: 'change', z: TAB, name: id,
        rules: [Object.assign({}, rule)],
        action: '', property: '', from: '', to: '', reg: false,
        x: 200, y: (ypos += 20), wires: [wires],
    };
}
function sinkNode(id, tag) {
    return { id, type: 'bench-sink', z: TAB, name: id, tag, x: 400, y: (ypos += 20), wires: [] };
}
function chain(prefix, rule, sinkId, tag) {
    const nodes = [];
    for (let k = 1; k <= HOPS; k++) {
        const id = `${prefix}${String(k).padStart(2, '0')}`;
        const next = k < HOPS ? `${prefix}${String(k + 1).padStart(2, '0')}` : sinkId;
        nodes.push(changeNode(id, rule, [next]));
    }
    nodes.push(sinkNode(sinkId, tag));
    return nodes;
}
function buildFlows() {
    const flows = [{ id: TAB, type: 'tab', label: 'bench', disabled: false, info: '' }];
    // chain10: c01 -> c02 -> ... -> c10 -> chain_sink (messages enter at c01)
    flows.push(...chain('c', RULE_COPY, 'chain_sink', 'chain10'));
    // chain10_jsonata: j01 -> ... -> j10 -> chainj_sink
    flows.push(...chain('j', RULE_JSONATA, 'chainj_sink', 'chain10_jsonata'));
    // single: single_src -> single_hop -> single_sink
    flows.push(changeNode('single_src', RULE_COPY, ['single_hop']));
    flows.push(changeNode('single_hop', RULE_COPY, ['single_sink']));
    flows.push(sinkNode('single_sink', 'single'));
    // fanout10: fan_src -> {fan01..fan10} -> {fan_sink01..fan_sink10}
    const branches = [];
    for (let k = 1; k <= FANOUT; k++) {
        const s = String(k).padStart(2, '0');
        branches.push(`fan${s}`);
        flows.push(changeNode(`fan${s}`, RULE_COPY, [`fan_sink${s}`]));
        flows.push(sinkNode(`fan_sink${s}`, 'fanout10'));
    }
    flows.push(changeNode('fan_src', RULE_COPY, branches));
    return flows;
}

// ---------------------------------------------------------------------------
// Measurement helpers.
const hub = require('./nodes/lib/hub');
const nowUs = () => performance.now() * 1000;

function percentile(sorted, p) {
    if (sorted.length === 0) return NaN;
    const rank = Math.ceil(p * sorted.length) - 1;
    return sorted[Math.min(sorted.length - 1, Math.max(0, rank))];
}
function stats(latUs) {
    const s = Float64Array.from(latUs).sort();
    let sum = 0;
    for (const v of s) sum += v;
    return { p50: percentile(s, 0.5), p99: percentile(s, 0.99), mean: sum / s.length, max: s[s.length - 1] };
}
const r1 = (x) => Math.round(x * 10) / 10;
const r2 = (x) => Math.round(x * 100) / 100;
const r3 = (x) => Math.round(x * 1000) / 1000;

// Drive `total` messages into node `entryId`, keeping at most `window` source
// messages in flight: a new one is sent each time one completes (has reached
// all `fan` sinks tagged `tag`). Resolves with elapsed time and per-message
// end-to-end latency (send -> arrival at the last of its sinks), in µs.
function drive(RED, { entryId, tag, fan, total, window, verify }) {
    const entry = RED.nodes.getNode(entryId);
    if (!entry) throw new Error(`node ${entryId} not found`);
    return new Promise((resolve, reject) => {
        const t0 = new Float64Array(total);
        const lat = new Float64Array(total);
        const counts = fan > 1 ? new Uint8Array(total) : null;
        let sent = 0;
        let completed = 0;
        let failed = false;
        const fail = (e) => { if (!failed) { failed = true; hub.onArrive = () => {}; reject(e); } };
        const sendOne = () => {
            const i = sent++;
            const msg = { payload: makePayload(i) };
            t0[i] = nowUs();
            entry.receive(msg);
        };
        let start = 0;
        hub.onArrive = (t, msg) => {
            const now = nowUs();
            if (t !== tag) return fail(new Error(`message arrived at sink '${t}', expected '${tag}'`));
            const i = msg.payload.n;
            const err = verify(msg);
            if (err) return fail(new Error(`${tag}: message ${i}: ${err}`));
            if (counts && ++counts[i] < fan) return;
            lat[i] = now - t0[i];
            completed++;
            if (completed === total) {
                const elapsed = now - start;
                hub.onArrive = () => fail(new Error(`${tag}: unexpected arrival after completion`));
                // settle one turn so any stray duplicate arrivals would be caught
                setImmediate(() => { if (!failed) { hub.onArrive = null; resolve({ elapsedUs: elapsed, lat }); } });
                return;
            }
            if (sent < total) { credits++; pump(); }
        };
        // Sends run from a trampoline so that a refill requested from inside a
        // sink (which, with runtimeSyncDelivery, is still inside the sender's
        // stack) never nests: it only adds a credit the running loop picks up.
        let credits = Math.min(window, total);
        let pumping = false;
        const pump = () => {
            if (pumping) return;
            pumping = true;
            try {
                while (credits > 0 && sent < total && !failed) { credits--; sendOne(); }
            } catch (e) {
                fail(e);
            } finally {
                pumping = false;
            }
        };
        start = nowUs();
        pump();
    });
}

const SCN = {
    chain10: { entryId: 'c01', tag: 'chain10', fan: 1, verify: (m) => (m.payload.v === m.payload.n ? null : `v=${m.payload.v}`) },
    chain10_jsonata: { entryId: 'j01', tag: 'chain10_jsonata', fan: 1, verify: (m) => (m.payload.v === HOPS ? null : `v=${m.payload.v} want ${HOPS}`) },
    single: { entryId: 'single_src', tag: 'single', fan: 1, verify: (m) => (m.payload.v === m.payload.n ? null : `v=${m.payload.v}`) },
    fanout10: { entryId: 'fan_src', tag: 'fanout10', fan: FANOUT, verify: (m) => (m.payload.v === m.payload.n ? null : `v=${m.payload.v}`) },
};

async function warmup(RED, name) {
    const s = SCN[name];
    if (WARMUP > 0) await drive(RED, { ...s, total: WARMUP, window: WINDOW });
    await drive(RED, { ...s, total: Math.min(200, Math.max(1, WARMUP)), window: 1 });
}
// Throughput: N messages split into ROUNDS consecutive rounds (each with the
// window refilled as above). Several scenarios may be given: their rounds are
// interleaved (a1 b1 a2 b2 ...) so that both see the same machine conditions.
// Per scenario: msgsPerSec = N / sum of round times; medianMsgsPerSec = median
// over rounds; roundUs[r] = µs per message in round r.
function roundSizes() {
    const sizes = [];
    const base = Math.floor(N / ROUNDS);
    for (let r = 0; r < ROUNDS; r++) sizes.push(base + (r < N % ROUNDS ? 1 : 0));
    return sizes.filter((x) => x > 0);
}
function median(xs) {
    const s = [...xs].sort((a, b) => a - b);
    return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}
async function throughput(RED, ...names) {
    const acc = names.map(() => ({ elapsedUs: 0, lat: [], roundUs: [] }));
    for (const size of roundSizes()) {
        for (let k = 0; k < names.length; k++) {
            const r = await drive(RED, { ...SCN[names[k]], total: size, window: WINDOW });
            acc[k].elapsedUs += r.elapsedUs;
            acc[k].lat.push(r.lat);
            acc[k].roundUs.push(r.elapsedUs / size);
        }
    }
    return acc.map((a) => {
        const lat = new Float64Array(N);
        let off = 0;
        for (const l of a.lat) { lat.set(l, off); off += l.length; }
        return {
            msgsPerSec: N / (a.elapsedUs / 1e6), usPerMsg: a.elapsedUs / N,
            medianMsgsPerSec: 1e6 / median(a.roundUs), roundUs: a.roundUs,
            loaded: stats(lat),
        };
    });
}
async function latency(RED, name) {
    const r = await drive(RED, { ...SCN[name], total: LAT_N, window: 1 });
    return { ...stats(r.lat), msgsPerSec: LAT_N / (r.elapsedUs / 1e6) };
}

// A one-off check that Node-RED clones the message for every wire after the
// first one when a node has several wires (so the fanout really does 9 clones).
async function checkFanoutClones(RED) {
    const seen = new Set();
    const entry = RED.nodes.getNode('fan_src');
    await new Promise((resolve, reject) => {
        hub.onArrive = (t, msg) => {
            seen.add(msg); seen.add(msg.payload);
            if (seen.size === 2 * FANOUT) resolve();
        };
        entry.receive({ payload: makePayload(0) });
        setTimeout(() => reject(new Error(`fanout check: saw ${seen.size / 2} distinct messages`)), 2000).unref();
    });
    hub.onArrive = null;
}

// ---------------------------------------------------------------------------
async function main() {
    const tStart = Date.now();
    const RED = require('node-red');
    const nrVersion = require('node-red/package.json').version;
    const userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tiny-bench-node-red-'));
    fs.writeFileSync(path.join(userDir, 'flows.json'), JSON.stringify(buildFlows(), null, 1));
    const settings = {
        userDir,
        flowFile: 'flows.json',
        credentialSecret: false,
        httpAdminRoot: false,
        httpNodeRoot: false,
        disableEditor: true,
        nodesDir: path.join(__dirname, 'nodes'),
        runtimeSyncDelivery: SYNC,
        logging: { console: { level: 'off', metrics: false, audit: false } },
        telemetry: { enabled: false, updateNotification: false },
        diagnostics: { enabled: false },
        runtimeState: { enabled: false },
        externalModules: { autoInstall: false, palette: { allowInstall: false }, modules: { allowInstall: false } },
        functionExternalModules: false,
        editorTheme: { projects: { enabled: false } },
    };
    let exitCode = 0;
    try {
        RED.init(null, settings);
        const flowsStarted = new Promise((resolve) => RED.events.once('flows:started', resolve));
        await RED.start();
        await flowsStarted;
        for (const id of ['c01', 'chain_sink', 'j01', 'single_src', 'fan_src', 'fan_sink10']) {
            if (!RED.nodes.getNode(id)) throw new Error(`flow not deployed: node ${id} missing`);
        }
        log(`node-red ${nrVersion} started in ${Date.now() - tStart} ms; n=${N} lat_n=${LAT_N} warmup=${WARMUP} window=${WINDOW} delivery=${SYNC ? 'sync' : 'async'}`);
        const common = {
            engine: 'node-red', version: nrVersion, node: process.version,
            delivery: SYNC ? 'sync' : 'async',
        };

        for (const name of ['chain10', 'chain10_jsonata']) {
            if (!SCENARIOS.includes(name)) continue;
            const t = Date.now();
            await warmup(RED, name);
            const [tp] = await throughput(RED, name);
            const lt = await latency(RED, name);
            writeResult({
                ...common, scenario: name, hops: HOPS,
                hop_rule: name === 'chain10' ? 'set msg.payload.v = msg.payload.n (msg)' : 'set msg.payload.v = payload.v + 1 (jsonata)',
                n: N, in_flight: WINDOW,
                rounds: ROUNDS,
                msgs_per_sec: r1(tp.msgsPerSec),
                msgs_per_sec_median_round: r1(tp.medianMsgsPerSec),
                us_per_msg: r3(tp.usPerMsg),
                loaded_p50_us: r1(tp.loaded.p50), loaded_p99_us: r1(tp.loaded.p99),
                lat_n: LAT_N,
                p50_us: r1(lt.p50), p99_us: r1(lt.p99), mean_us: r1(lt.mean), max_us: r1(lt.max),
                per_hop_p50_us: r2(lt.p50 / HOPS), per_hop_p99_us: r2(lt.p99 / HOPS),
                serial_msgs_per_sec: r1(lt.msgsPerSec),
            });
            log(`${name} done in ${Date.now() - t} ms`);
        }

        const wantSingle = SCENARIOS.includes('single');
        const wantFan = SCENARIOS.includes('fanout10');
        if (wantSingle || wantFan) {
            const t = Date.now();
            await checkFanoutClones(RED);
            // single and fanout10 are always measured together (back to back,
            // same settings) so the cost ratio compares like with like.
            await warmup(RED, 'single');
            await warmup(RED, 'fanout10');
            const [single, fan] = await throughput(RED, 'single', 'fanout10');
            const singleLat = await latency(RED, 'single');
            const fanLat = await latency(RED, 'fanout10');
            // cost ratio per interleaved round pair; the median is reported
            const pairRatios = fan.roundUs.map((u, r) => u / single.roundUs[r]);
            if (wantSingle) {
                writeResult({
                    ...common, scenario: 'single', hops: 2,
                    hop_rule: 'set msg.payload.v = msg.payload.n (msg)',
                    n: N, in_flight: WINDOW, rounds: ROUNDS,
                    msgs_per_sec: r1(single.msgsPerSec), us_per_msg: r3(single.usPerMsg),
                    msgs_per_sec_median_round: r1(single.medianMsgsPerSec),
                    loaded_p50_us: r1(single.loaded.p50), loaded_p99_us: r1(single.loaded.p99),
                    lat_n: LAT_N, p50_us: r1(singleLat.p50), p99_us: r1(singleLat.p99),
                });
            }
            if (wantFan) {
                writeResult({
                    ...common, scenario: 'fanout10', fanout: FANOUT,
                    hop_rule: 'set msg.payload.v = msg.payload.n (msg)',
                    n: N, in_flight: WINDOW, rounds: ROUNDS,
                    src_msgs_per_sec: r1(fan.msgsPerSec),
                    src_msgs_per_sec_median_round: r1(fan.medianMsgsPerSec),
                    deliveries_per_sec: r1(fan.msgsPerSec * FANOUT),
                    us_per_src_msg: r3(fan.usPerMsg),
                    single_msgs_per_sec: r1(single.msgsPerSec),
                    us_per_single_msg: r3(single.usPerMsg),
                    fanout_cost_ratio: r2(median(pairRatios)),
                    fanout_cost_ratio_total: r2(fan.usPerMsg / single.usPerMsg),
                    fanout_cost_ratio_min: r2(Math.min(...pairRatios)),
                    fanout_cost_ratio_max: r2(Math.max(...pairRatios)),
                    lat_n: LAT_N, p50_us: r1(fanLat.p50), p99_us: r1(fanLat.p99),
                });
            }
            log(`single+fanout10 done in ${Date.now() - t} ms`);
        }
    } catch (e) {
        log('FAILED:', e && e.stack || e);
        exitCode = 1;
    }
    try {
        await RED.stop();
    } catch (e) {
        log('stop failed:', e && e.message);
    }
    try { fs.rmSync(userDir, { recursive: true, force: true }); } catch (e) { /* ignore */ }
    log(`total ${Date.now() - tStart} ms`);
    process.exit(exitCode);
}

// If the event loop drains while a measurement is still waiting (a lost
// message), fail loudly instead of exiting 0 with partial output.
process.on('beforeExit', () => {
    log('FAILED: event loop drained before the benchmark finished (lost messages?)');
    process.exit(1);
});

main().catch((e) => {
    log('FAILED:', e && e.stack || e);
    process.exit(1);
});
