#!/usr/bin/env node
// Benchmark client driver on the official TypeScript SDK's experimental remote clients
// (@agentclientprotocol/sdk 2.4.0: "./experimental/ws-client" with the `ws` package's
// WebSocket, "./experimental/http-client" on node's fetch, HTTP/1.1):
//
//   node ts_remote_client.mjs --url http://127.0.0.1:PORT/acp --kind ws|http --plan '<json>'
//
// Runs the plan of _scenario.py (mirrored in _ts_bench.mjs) against the server at --url
// and prints the figures as one JSON object on stdout.

import { BenchDriver, load, planArgument, runPlan } from "./_ts_bench.mjs";

const { createWebSocketStream } = await load("@agentclientprotocol/sdk/experimental/ws-client");
const { createHttpStream } = await load("@agentclientprotocol/sdk/experimental/http-client");
const ws = await load("ws");
const WebSocket = ws.WebSocket ?? ws.default;

function option(name) {
  const index = process.argv.indexOf(name);
  return index >= 0 ? process.argv[index + 1] : undefined;
}

class RemoteDriver extends BenchDriver {
  constructor(url, kind) {
    super();
    this.url = url;
    this.kind = kind;
  }

  async start() {
    const stream =
      this.kind === "ws"
        ? createWebSocketStream(this.url.replace(/^http/, "ws"), { WebSocket })
        : createHttpStream(this.url);
    this.conn = this.app().connect(stream);
  }

  async close() {
    this.conn.close();
  }
}

const url = option("--url");
const kind = option("--kind") ?? "ws";
const result = await runPlan(() => new RemoteDriver(url, kind), planArgument("ts_remote_client.mjs"));
process.stdout.write(`${JSON.stringify(result)}\n`);
process.exit(0);
