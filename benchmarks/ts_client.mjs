#!/usr/bin/env node
// Benchmark client driver on the official TypeScript SDK (@agentclientprotocol/sdk 2.4.0):
//
//   node ts_client.mjs --plan '<json>'
//
// Spawns ts_agent.mjs (same node), runs the plan of _scenario.py (mirrored in
// _ts_bench.mjs) and prints the figures as one JSON object on stdout.

import { spawn } from "node:child_process";
import { once } from "node:events";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import { fileURLToPath } from "node:url";

import { BenchDriver, acp, planArgument, runPlan } from "./_ts_bench.mjs";

const AGENT = path.join(path.dirname(fileURLToPath(import.meta.url)), "ts_agent.mjs");

class Driver extends BenchDriver {
  async start() {
    this.child = spawn(process.execPath, [AGENT], { stdio: ["pipe", "pipe", "inherit"] });
    await once(this.child, "spawn");
    this.conn = this.app().connect(acp.ndJsonStream(Writable.toWeb(this.child.stdin), Readable.toWeb(this.child.stdout)));
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

const result = await runPlan(() => new Driver(), planArgument("ts_client.mjs"));
process.stdout.write(`${JSON.stringify(result)}\n`);
process.exit(0);
