// What the TypeScript benchmark programs share (not run by itself): the SDK loaded from
// $ACPWIRE_NPM_DIR (default <repo>/.cache/npm), the benchmark agent of ts_agent.mjs and
// ts_remote_server.mjs, and the plan of _scenario.py as ts_client.mjs and
// ts_remote_client.mjs run it, mirrored line for line.

import { createRequire } from "node:module";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath, pathToFileURL } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const NPM_DIR = process.env.ACPWIRE_NPM_DIR || path.join(HERE, "..", ".cache", "npm");
const require = createRequire(path.join(NPM_DIR, "package.json"));

/** Import a package (or an SDK entry point) from the benchmark's npm folder. */
export const load = async (name) => import(pathToFileURL(require.resolve(name)).href);

export const acp = await load("@agentclientprotocol/sdk");
const { methods } = acp;
const CWD = path.parse(process.cwd()).root;
const TEXT64 = "acp-bench ".repeat(6) + "data"; // same as _scenario.TEXT64

/** The benchmark agent: "stream N" sends N agent_message_chunk updates (64 bytes of text
 * each) before answering end_turn; any other prompt answers end_turn at once. */
export function createBenchAgent() {
  let sessions = 0;
  return acp
    .agent({ name: "acpwire-bench-ts-agent" })
    .onRequest(methods.agent.initialize, () => ({ protocolVersion: acp.PROTOCOL_VERSION, agentCapabilities: {} }))
    .onRequest(methods.agent.session.new, () => {
      sessions += 1;
      return { sessionId: `ts-${sessions}` };
    })
    .onRequest(methods.agent.session.prompt, async ({ params, client }) => {
      const text = params.prompt[0]?.text ?? "";
      if (text.startsWith("stream ")) {
        const n = Number.parseInt(text.slice(7), 10);
        for (let i = 0; i < n; i += 1) {
          await client.notify(methods.client.session.update, {
            sessionId: params.sessionId,
            update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: TEXT64 } },
          });
        }
      }
      return { stopReason: "end_turn" };
    })
    .onNotification(methods.agent.session.cancel, () => {});
}

/** A client driver (mirrors _scenario.DriverBase): a subclass's start() sets this.conn
 * from app().connect(stream); close() ends it. */
export class BenchDriver {
  constructor() {
    this.updates = 0;
    this.target = 0;
    this.reached = null;
  }

  app() {
    return acp
      .client({ name: "acpwire-bench-ts-client" })
      .onNotification(methods.client.session.update, () => this.onUpdate());
  }

  onUpdate() {
    this.updates += 1;
    if (this.reached && this.updates >= this.target) this.reached();
  }

  async initialize() {
    await this.conn.agent.request(methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
  }

  async newSession() {
    return (await this.conn.agent.request(methods.agent.session.new, { cwd: CWD, mcpServers: [] })).sessionId;
  }

  async prompt(sessionId, text) {
    await this.conn.agent.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] });
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
}

/** The --plan '<json>' argument of a driver program. */
export function planArgument(program) {
  const argv = process.argv.slice(2);
  const index = argv.indexOf("--plan");
  if (index < 0) {
    process.stderr.write(`usage: node ${program} --plan '<json>' ...\n`);
    process.exit(2);
  }
  return JSON.parse(argv[index + 1]);
}

export function quantile(values, q) {
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

export async function runPlan(makeDriver, plan) {
  const out = {};
  const driver = makeDriver();
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
      const d = makeDriver();
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

