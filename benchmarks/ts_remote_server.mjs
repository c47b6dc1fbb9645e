#!/usr/bin/env node
// The official TypeScript SDK's experimental remote server (@agentclientprotocol/sdk 2.4.0,
// "./experimental/server" + "./experimental/node") hosting the benchmark agent of
// ts_agent.mjs on http://127.0.0.1:PORT/acp: Streamable HTTP on node:http (HTTP/1.1),
// or node:http2 (h2c) with --http2, and WebSocket upgrades through the `ws` package.
//
//   node ts_remote_server.mjs [--http2] [--port N]
//
// Prints "URL http://127.0.0.1:PORT/acp" on stdout once listening; runs until killed.

import http from "node:http";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const NPM_DIR = process.env.ACPWIRE_NPM_DIR || path.join(HERE, "..", ".cache", "npm");
const require = createRequire(path.join(NPM_DIR, "package.json"));
const load = async (name) => import(pathToFileURL(require.resolve(name)).href);
const acp = await load("@agentclientprotocol/sdk");
const { AcpServer } = await load("@agentclientprotocol/sdk/experimental/server");
const { createNodeHttpHandler, createNodeWebSocketUpgradeHandler } = await load(
  "@agentclientprotocol/sdk/experimental/node",
);
const ws = await load("ws");
const WebSocketServer = ws.WebSocketServer ?? ws.default.WebSocketServer ?? ws.default.Server;
const { methods } = acp;

const TEXT64 = "acp-bench ".repeat(6) + "data"; // same as _scenario.TEXT64

function createAgent() {
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

const args = process.argv.slice(2);
const portIndex = args.indexOf("--port");
const port = portIndex >= 0 ? Number(args[portIndex + 1]) : 0;

const acpServer = new AcpServer({ createAgent });
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
