#!/usr/bin/env node
// Benchmark agent on the official TypeScript SDK (@agentclientprotocol/sdk 2.4.0,
// stable v1 app API): agent().onRequest(...).connect(ndJsonStream(stdout, stdin)).
//
// Prompt "stream N" sends N agent_message_chunk updates (64 bytes of text each)
// before answering end_turn; any other prompt answers end_turn at once.
// The SDK is loaded from $ACPWIRE_NPM_DIR/node_modules (default <repo>/.cache/npm).

import { createRequire } from "node:module";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import { fileURLToPath, pathToFileURL } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const NPM_DIR = process.env.ACPWIRE_NPM_DIR || path.join(HERE, "..", ".cache", "npm");
const require = createRequire(path.join(NPM_DIR, "package.json"));
const acp = await import(pathToFileURL(require.resolve("@agentclientprotocol/sdk")).href);
const { methods } = acp;

const TEXT64 = "acp-bench ".repeat(6) + "data"; // same as _scenario.TEXT64
let sessions = 0;

const app = acp
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

const connection = app.connect(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
await connection.closed;
process.exit(0);
