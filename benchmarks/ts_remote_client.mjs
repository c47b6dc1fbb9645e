#!/usr/bin/env node
// Benchmark client driver on the official TypeScript SDK's experimental remote clients
// (@agentclientprotocol/sdk 2.4.0: "./experimental/ws-client" with the `ws` package's
// WebSocket, "./experimental/http-client" on node's fetch, HTTP/1.1):
//
//   node ts_remote_client.mjs --url http://127.0.0.1:PORT/acp --kind ws|http --plan '<json>'
//
// Runs the plan of _scenario.py (as ts_client.mjs mirrors it) against the server at
// --url and prints the figures as one JSON object on stdout.

import { createRequire } from "node:module";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath, pathToFileURL } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const NPM_DIR = process.env.ACPWIRE_NPM_DIR || path.join(HERE, "..", ".cache", "npm");
const require = createRequire(path.join(NPM_DIR, "package.json"));
const load = async (name) => import(pathToFileURL(require.resolve(name)).href);
const acp = await load("@agentclientprotocol/sdk");
const { createWebSocketStream } = await load("@agentclientprotocol/sdk/experimental/ws-client");
const { createHttpStream } = await load("@agentclientprotocol/sdk/experimental/http-client");
const ws = await load("ws");
const WebSocket = ws.WebSocket ?? ws.default;
const { methods } = acp;
const CWD = path.parse(process.cwd()).root;

function option(name) {
  const index = process.argv.indexOf(name);
  return index >= 0 ? process.argv[index + 1] : undefined;
}

class Driver {
  constructor(url, kind) {
    this.url = url;
    this.kind = kind;
    this.updates = 0;
    this.target = 0;
    this.reached = null;
  }

  onUpdate() {
    this.updates += 1;
    if (this.reached && this.updates >= this.target) this.reached();
  }

  async start() {
    const stream =
      this.kind === "ws"
        ? createWebSocketStream(this.url.replace(/^http/, "ws"), { WebSocket })
        : createHttpStream(this.url);
    const app = acp
      .client({ name: "acpwire-bench-ts-remote-client" })
      .onNotification(methods.client.session.update, () => this.onUpdate());
    this.conn = app.connect(stream);
    this.agent = this.conn.agent;
  }

  async initialize() {
    await this.agent.request(methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
  }

  async newSession() {
    return (await this.agent.request(methods.agent.session.new, { cwd: CWD, mcpServers: [] })).sessionId;
  }

  async prompt(sessionId, text) {
    await this.agent.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] });
  }

  async stream(sessionId, n) {
    this.updates = 0;
    this.target = n;
    const reached = new Promise((resolve) => {
      this.reached = resolve;
    });
    const start = performance.now();
    await this.prompt(sessionId, `stream ${n}`);
    const atResponse = this.updates;
    if (this.updates < n) await reached;
    const elapsed = (performance.now() - start) / 1000;
    this.reached = null;
    return [elapsed, atResponse];
  }

  async close() {
    this.conn.close();
  }
}

function quantile(values, q) {
  const ordered = [...values].sort((a, b) => a - b);
  const index = Math.min(ordered.length - 1, Math.max(0, Math.round(q * ordered.length + 0.5) - 1));
  return ordered[index];
}

const median = (values) => quantile(values, 0.5);

function pickStreamN(plan, rate) {
  const target = plan.stream_seconds ?? 0;
  if (!target) return plan.stream_n;
  const wanted = Math.round((rate * target) / 1000) * 1000;
  return Math.max(Math.min(plan.stream_n, 2000), Math.min(plan.stream_n, wanted));
}

async function streamPart(driver, sid, plan) {
  const warmN = Math.min(plan.stream_n, 2000);
  const [warmSeconds] = await driver.stream(sid, warmN);
  const n = pickStreamN(plan, warmN / warmSeconds);
  const runs = [];
  for (let i = 0; i < (plan.stream_runs ?? 3); i += 1) {
    const [seconds, atResponse] = await driver.stream(sid, n);
    runs.push({ seconds, at_response: atResponse });
  }
  const secs = runs.map((r) => r.seconds);
  return {
    n,
    runs,
    msgs_per_s: n / Math.min(...secs),
    msgs_per_s_median: n / median(secs),
    ordered: runs.every((r) => r.at_response === n),
  };
}

async function runPlan(driver, plan) {
  const out = {};
  await driver.start();
  try {
    await driver.initialize();
    const sid = await driver.newSession();
    for (let i = 0; i < (plan.warmup ?? 50); i += 1) await driver.prompt(sid, "noop");
    if (plan.stream_n) out.stream = await streamPart(driver, sid, plan);
    if (plan.rt_n) {
      const lat = [];
      for (let i = 0; i < plan.rt_n; i += 1) {
        const t0 = performance.now();
        await driver.prompt(sid, "noop");
        lat.push((performance.now() - t0) / 1000);
      }
      out.roundtrip = {
        n: plan.rt_n,
        p50_ms: quantile(lat, 0.5) * 1e3,
        p99_ms: quantile(lat, 0.99) * 1e3,
        mean_ms: (lat.reduce((a, b) => a + b, 0) / lat.length) * 1e3,
      };
    }
    if (plan.sessions_n) {
      const t0 = performance.now();
      for (let i = 0; i < plan.sessions_n; i += 1) await driver.newSession();
      const seconds = (performance.now() - t0) / 1000;
      out.sessions = { n: plan.sessions_n, seconds, per_s: plan.sessions_n / seconds };
    }
  } finally {
    await driver.close();
  }
  return out;
}

const plan = JSON.parse(option("--plan") ?? "{}");
const result = await runPlan(new Driver(option("--url"), option("--kind") ?? "ws"), plan);
process.stdout.write(`${JSON.stringify(result)}\n`);
process.exit(0);
