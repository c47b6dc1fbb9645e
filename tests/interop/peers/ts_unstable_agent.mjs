#!/usr/bin/env node
// Interop peer AGENT on the official TypeScript SDK's UNSTABLE v1 entry point
// (@agentclientprotocol/sdk/unstable, 2.4.0). It speaks ACP v1 with the unstable
// methods over stdin/stdout; logs go to stderr.
//
// It advertises and serves session/fork, session/archive, session/unarchive,
// session/status, session/set_title, providers/list|set|disable and auth/status
// (sessions and providers in memory), takes MCP servers over ACP
// (mcpCapabilities.acp) and calls them with the SDK's McpOverAcpCaller.
// Prompt commands (one per line):
//   mcp NAME METHOD JSON   one MCP request to the session's ACP server NAME; the turn
//                          sends an agent_message_chunk with
//                          {"outcome": <MCP outcome>, "notes": [<MCP notifications>]}
//   auth STATE             sends auth/status_update with that state
//   echo TEXT              an agent_message_chunk with TEXT
// The SDK is loaded from $ACPWIRE_NPM_DIR/node_modules (default <repo>/.cache/npm).

import { createRequire } from "node:module";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import { fileURLToPath, pathToFileURL } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "..", "..", "..");
const NPM_DIR = process.env.ACPWIRE_NPM_DIR || path.join(ROOT, ".cache", "npm");

async function loadSdk() {
  const require = createRequire(path.join(NPM_DIR, "package.json"));
  return import(pathToFileURL(require.resolve("@agentclientprotocol/sdk/unstable")).href);
}

const acp = await loadSdk();
const { RequestError, methods, McpOverAcpCaller } = acp;

function log(...args) {
  process.stderr.write(`[ts_unstable_agent] ${args.map((a) => (typeof a === "string" ? a : JSON.stringify(a))).join(" ")}\n`);
}

const mcp = new McpOverAcpCaller({ clientInfo: { name: "acpwire-ts-unstable-agent", version: "2.4.0" } });
/** sessionId -> { cwd, title, archived, mcpServers, forkedFrom } */
const sessions = new Map();
let counter = 0;
/** providerId -> ProviderInfo */
const providers = new Map([["main", { providerId: "main", supported: ["anthropic"], required: false }]]);

function getSession(sessionId) {
  const session = sessions.get(sessionId);
  if (!session) throw RequestError.sessionNotFound(sessionId);
  return session;
}

function addSession(params, forkedFrom = null) {
  counter += 1;
  const sessionId = `ts-${counter}`;
  sessions.set(sessionId, {
    cwd: params.cwd,
    title: null,
    archived: false,
    mcpServers: params.mcpServers ?? [],
    forkedFrom,
  });
  return sessionId;
}

async function runCommand(line, sessionId, client) {
  const say = (text) =>
    client.notify(methods.client.session.update, {
      sessionId,
      update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } },
    });
  const [name, ...rest] = line.split(" ");
  if (name === "echo") return say(rest.join(" "));
  if (name === "auth") return client.notify(methods.client.auth.statusUpdate, { state: rest[0] });
  if (name === "mcp") {
    const [serverName, method, ...json] = rest;
    const server = getSession(sessionId).mcpServers.find((s) => s.type === "acp" && s.name === serverName);
    if (!server) return say(JSON.stringify({ error: `no ACP MCP server named ${serverName}` }));
    const notes = [];
    try {
      const outcome = await mcp.request(client, server.serverId, method, JSON.parse(json.join(" ") || "{}"), {
        onNotification: (note) => notes.push(note),
      });
      return say(JSON.stringify({ outcome, notes }));
    } catch (err) {
      return say(JSON.stringify({ acpError: { code: err.code, message: err.message, data: err.data ?? null } }));
    }
  }
  return say(`unknown command: ${line}`);
}

const app = acp
  .agent({ name: "acpwire-ts-unstable-agent" })
  .onRequest(methods.agent.initialize, () => ({
    protocolVersion: acp.PROTOCOL_VERSION,
    agentCapabilities: {
      mcpCapabilities: { acp: true },
      sessionCapabilities: { fork: {}, archive: {}, status: {}, title: {} },
      auth: { status: {} },
      providers: {},
    },
    agentInfo: { name: "acpwire-ts-unstable-agent", version: "2.4.0" },
  }))
  .onRequest(methods.agent.session.new, ({ params }) => ({ sessionId: addSession(params) }))
  .onRequest(methods.agent.session.fork, ({ params }) => {
    const parent = getSession(params.sessionId);
    const sessionId = addSession(params, params.sessionId);
    sessions.get(sessionId).title = parent.title;
    return { sessionId };
  })
  .onRequest(methods.agent.session.archive, ({ params }) => {
    getSession(params.sessionId).archived = true;
    return {};
  })
  .onRequest(methods.agent.session.unarchive, ({ params }) => {
    getSession(params.sessionId).archived = false;
    return {};
  })
  .onRequest(methods.agent.session.status, ({ params }) => ({
    status: getSession(params.sessionId).archived ? "saved" : "open",
  }))
  .onRequest(methods.agent.session.setTitle, ({ params }) => {
    const title = params.title.trim();
    getSession(params.sessionId).title = title;
    return { title };
  })
  .onRequest(methods.agent.providers.list, () => ({ providers: [...providers.values()] }))
  .onRequest(methods.agent.providers.set, ({ params }) => {
    providers.set(params.providerId, {
      providerId: params.providerId,
      supported: [params.apiType],
      required: false,
      current: { apiType: params.apiType, baseUrl: params.baseUrl },
    });
    return {};
  })
  .onRequest(methods.agent.providers.disable, ({ params }) => {
    providers.delete(params.providerId);
    return {};
  })
  .onRequest(methods.agent.auth.status, () => ({
    state: "authenticated",
    accounts: [{ label: "ts", active: true }],
  }))
  .onNotification(methods.agent.mcp.message, mcp.handleNotification)
  .onRequest(methods.agent.session.prompt, async ({ params, client }) => {
    getSession(params.sessionId);
    const text = params.prompt.filter((b) => b.type === "text").map((b) => b.text).join("\n");
    for (const line of text.split("\n").map((l) => l.trim()).filter(Boolean)) {
      await runCommand(line, params.sessionId, client);
    }
    return { stopReason: "end_turn" };
  })
  .onNotification("*", ({ method }) => log(`notification ${method}`));

/**
 * The SDK dispatches an incoming notification asynchronously, so the answer that
 * follows it on the wire can settle first, and McpOverAcpCaller drops notifications
 * of a settled request: progress sent just before an mcp/message answer would be
 * lost. Handing the connection the next message only once a notification has been
 * dispatched keeps wire order (as ts_client.mjs does for session/update).
 */
function oneNotificationAtATime(readable) {
  const reader = readable.getReader();
  return new ReadableStream(
    {
      async pull(controller) {
        const { value, done } = await reader.read();
        if (done) return controller.close();
        controller.enqueue(value);
        if (value && typeof value === "object" && "method" in value && !("id" in value)) {
          await new Promise((resolve) => setImmediate(resolve));
        }
      },
      cancel: (reason) => reader.cancel(reason),
    },
    { highWaterMark: 0 },
  );
}

const wire = acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
const connection = app.connect({ writable: wire.writable, readable: oneNotificationAtATime(wire.readable) });
log("ready");
await connection.closed;
process.exit(0);
