#!/usr/bin/env node
// Node-RED's `http in` -> `http response` flow on a loopback port, for
// `make bench-http` (examples/http/benches/http.rs drives the load).
//
// POST /bench answers the request body as text, as tiny's `http_server` flow and
// the bare hyper server in the same bench do. Prints `{"listening": <port>}` on
// stdout once the flow runs, then serves until stdin closes (the bench ends) or
// --timeout-s (default 300) passes.
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const http = require('http');

const timeoutArg = process.argv.find((a) => a.startsWith('--timeout-s='));
const TIMEOUT_S = timeoutArg ? Number(timeoutArg.split('=')[1]) : 300;

function log(msg) {
    process.stderr.write(`[serve-http] ${msg}\n`);
}

async function main() {
    const RED = require('node-red');
    const express = require('express');
    const userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tiny-bench-node-red-http-'));
    const flows = [
        { id: 'tab', type: 'tab', label: 'bench' },
        { id: 'in', type: 'http in', z: 'tab', url: '/bench', method: 'post', upload: false, wires: [['out']] },
        { id: 'out', type: 'http response', z: 'tab', statusCode: '200', headers: { 'content-type': 'text/plain' }, wires: [] },
    ];
    fs.writeFileSync(path.join(userDir, 'flows.json'), JSON.stringify(flows));
    const app = express();
    const server = http.createServer(app);
    const settings = {
        userDir,
        flowFile: 'flows.json',
        credentialSecret: false,
        httpAdminRoot: false,
        httpNodeRoot: '/',
        disableEditor: true,
        logging: { console: { level: 'off', metrics: false, audit: false } },
        telemetry: { enabled: false, updateNotification: false },
        diagnostics: { enabled: false },
        runtimeState: { enabled: false },
        externalModules: { autoInstall: false, palette: { allowInstall: false }, modules: { allowInstall: false } },
        functionExternalModules: false,
        editorTheme: { projects: { enabled: false } },
    };
    RED.init(server, settings);
    app.use(settings.httpNodeRoot, RED.httpNode);
    const started = new Promise((resolve) => RED.events.once('flows:started', resolve));
    await RED.start();
    await started;
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = server.address().port;
    log(`node-red ${require('node-red/package.json').version} serving POST http://127.0.0.1:${port}/bench`);
    process.stdout.write(JSON.stringify({ listening: port, version: require('node-red/package.json').version }) + '\n');
    const stop = async (code) => {
        try { await RED.stop(); } catch (e) { /* stopping anyway */ }
        server.close();
        fs.rmSync(userDir, { recursive: true, force: true });
        process.exit(code);
    };
    process.stdin.on('end', () => stop(0));
    process.stdin.resume();
    setTimeout(() => { log('timeout'); stop(3); }, TIMEOUT_S * 1000).unref();
}

main().catch((e) => {
    log(`failed: ${e && e.stack || e}`);
    process.exit(1);
});
