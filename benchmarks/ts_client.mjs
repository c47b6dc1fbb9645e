#!/usr/bin/env node
// Benchmark client driver on the official TypeScript SDK (@agentclientprotocol/sdk 2.4.0):
//
//   node ts_client.mjs --plan '<json>'
//
// Spawns ts_agent.mjs (same node), runs the plan of _scenario.py (mirrored here
// step by step) and prints the figures as one JSON object on stdout.

import { spawn } from "node:child_process";
import { once } from "node:events";
import { createRequire } from "node:module";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { Readable, Writable } from "node:stream";
import { fileURLToPath, pathToFileURL } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const NPM_DIR = process.env.ACPWIRE_NPM_DIR || path.join(HERE, "..", ".cache", "npm");
const require = createRequire(path.join(NPM_DIR, "package.json"));
const acp = await import(pathToFileURL(require.resolve("@agentclientprotocol/sdk")).href);
const { methods } = acp;
const AGENT = path.join(HERE, "ts_agent.mjs");
const CWD = path.parse(process.cwd()).root;

class Driver {
  constructor() {
    this.updates = 0;
    this.target = 0;
    this.reached = null;
  }

  onUpdate() {
    this.updates += 1;
    if (this.reached && this.updates >= this.target) this.reached();
  }

  async start() {
    this.child = spawn(process.execPath, [AGENT], { stdio: ["pipe", "pipe", "inherit"] });
    await once(this.child, "spawn");
    const app = acp
      .client({ name: "acpwire-bench-ts-client" })
      .onNotification(methods.client.session.update, () => this.onUpdate());
    this.conn = app.connect(acp.ndJsonStream(Writable.toWeb(this.child.stdin), Readable.toWeb(this.child.stdout)));
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
    const exited = once(this.child, "exit");
    this.conn.close();
    this.child.stdin.end();
    const timer = setTimeout(() => this.child.kill("SIGKILL"), 5000);
    await exited;
    clearTimeout(timer);
  }
}

function quantile(values, q) {
  const ordered = [...values].sort((a, b) => a - b);
  const index = Math.min(ordered.length - 1, Math.max(0, Math.round(q * ordered.length + 0.5) - 1));
  return ordered[index];
}

const median = (values) => quantile(values, 0.5);

async function streamPart(driver, sid, plan) {
  // Mirrors _scenario.stream_part: warm-up, pick n from the warm-up rate, runs.
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

function pickStreamN(plan, rate) {
  const target = plan.stream_seconds ?? 0;
  if (!target) return plan.stream_n;
  const wanted = Math.round((rate * target) / 1000) * 1000;
  return Math.max(Math.min(plan.stream_n, 2000), Math.min(plan.stream_n, wanted));
}

async function runPlan(plan) {
  const out = {};
  const driver = new Driver();
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
  if (plan.spawn_runs) {
    const times = [];
    const budgetEnd = performance.now() + (plan.spawn_seconds ?? 1e9) * 1000;
    while (times.length < plan.spawn_runs && (times.length < 3 || performance.now() < budgetEnd)) {
      const d = new Driver();
      const t0 = performance.now();
      try {
        await d.start();
        await d.initialize();
        await d.newSession();
        times.push((performance.now() - t0) / 1000);
      } finally {
        await d.close();
      }
    }
    out.spawn = {
      runs: times.length,
      median_ms: median(times) * 1e3,
      min_ms: Math.min(...times) * 1e3,
      max_ms: Math.max(...times) * 1e3,
    };
  }
  return out;
}

const argv = process.argv.slice(2);
const planIndex = argv.indexOf("--plan");
if (planIndex < 0) {
  process.stderr.write("usage: node ts_client.mjs --plan '<json>'\n");
  process.exit(2);
}
const result = await runPlan(JSON.parse(argv[planIndex + 1]));
process.stdout.write(`${JSON.stringify(result)}\n`);
process.exit(0);
