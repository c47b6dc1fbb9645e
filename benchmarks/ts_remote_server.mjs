#!/usr/bin/env node
// The official TypeScript SDK's experimental remote server (@agentclientprotocol/sdk 2.4.0,
// "./experimental/server" + "./experimental/node") hosting the benchmark agent
// (_ts_bench.mjs) on http://127.0.0.1:PORT/acp: Streamable HTTP on node:http (HTTP/1.1)
// and WebSocket upgrades through the `ws` package. (Under node:http2 its node adapter
// fails: it copies the ":method" pseudo-header into a Fetch Headers object, which
// refuses it.)
//
//   node ts_remote_server.mjs [--port N]
//
// Prints "URL http://127.0.0.1:PORT/acp" on stdout once listening; runs until killed.

import http from "node:http";

import { createBenchAgent, load } from "./_ts_bench.mjs";

const { AcpServer } = await load("@agentclientprotocol/sdk/experimental/server");
const { createNodeHttpHandler, createNodeWebSocketUpgradeHandler } = await load(
  "@agentclientprotocol/sdk/experimental/node",
);
const ws = await load("ws");
const WebSocketServer = ws.WebSocketServer ?? ws.default.WebSocketServer ?? ws.default.Server;

const args = process.argv.slice(2);
const portIndex = args.indexOf("--port");
const port = portIndex >= 0 ? Number(args[portIndex + 1]) : 0;

const acpServer = new AcpServer({ createAgent: createBenchAgent });
const handler = createNodeHttpHandler(acpServer);
const server = http.createServer(handler);
// ws's defaults, as a stock deployment of the SDK's server has them: per-message
// deflate is accepted from clients that offer it.
const wss = new WebSocketServer({ noServer: true });
server.on("upgrade", createNodeWebSocketUpgradeHandler(acpServer, wss));
server.listen(port, "127.0.0.1", () => {
  process.stdout.write(`URL http://127.0.0.1:${server.address().port}/acp\n`);
});
const stop = async () => {
  await acpServer.close();
  process.exit(0);
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
