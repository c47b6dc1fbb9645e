#!/usr/bin/env node
// Interop peer CLIENT on the official TypeScript SDK's UNSTABLE v1 entry point
// (@agentclientprotocol/sdk/unstable, 2.4.0).
//
//   node ts_unstable_client.mjs --agent "<agent command line>" [--cwd DIR]
//
// Spawns the agent and runs one fixed script over every unstable method the SDK
// routes: initialize, session/new with an MCP server offered over ACP (the SDK's
// McpOverAcpProvider, a hand-written MCP 2026-07-28 handler with the tools `shout`,
// `count` (progress notifications) and `boom` (an MCP error), no server/discover),
// session/fork, archive, status, unarchive, set_title, providers/list|set|disable,
// auth/status, prompts that make the agent use the MCP server and send
// auth/status_update, then the server is disposed and used once more.
// It prints one JSON object per line on stdout:
//   {"event": "response"|"error", "step": NAME, "result"|"error": ...}
//   {"event": "update", "update": ...}            session/update
//   {"event": "notification", "method", "params"} any other agent notification
//   {"event": "mcp", "method", "params"}          an MCP request the provider served
//   {"event": "done"}
// The SDK is loaded as _ts_peer.mjs says.

import { Readable, Writable } from "node:stream";

import { emit, importSdk, parseArgs, spawnAgent, words } from "./_ts_peer.mjs";

function log(...args) {
  process.stderr.write(`[ts_unstable_client] ${args.join(" ")}\n`);
}

/** A hand-written MCP 2026-07-28 server: what a TypeScript user would register. */
function tools(McpProtocolError) {
  return async (ctx) => {
    emit({ event: "mcp", method: ctx.method, params: ctx.params ?? null });
    if (ctx.method === "tools/list") {
      return {
        result: {
          tools: [
            {
              name: "shout",
              description: "Upper-cases its text",
              inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
            },
            { name: "count", inputSchema: { type: "object", properties: { n: { type: "integer" } } } },
          ],
          resultType: "complete",
          cacheScope: "public",
          ttlMs: 0,
        },
      };
    }
    if (ctx.method === "tools/call") {
      const { name, arguments: args = {} } = ctx.params ?? {};
      const token = ctx.params?._meta?.progressToken;
      if (name === "shout") {
        return { result: { content: [{ type: "text", text: String(args.text).toUpperCase() }], isError: false, resultType: "complete" } };
      }
      if (name === "count") {
        for (let i = 1; i <= (args.n ?? 1); i += 1) {
          if (token !== undefined) await ctx.notify("notifications/progress", { progressToken: token, progress: i });
        }
        return { result: { content: [{ type: "text", text: "counted" }], isError: false, resultType: "complete" } };
      }
      if (name === "boom") throw new McpProtocolError(-32602, "boom is not allowed", { tool: "boom" });
    }
    throw new McpProtocolError(-32601, `Method not found: ${ctx.method}`);
  };
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const acp = await importSdk("@agentclientprotocol/sdk/unstable");
  const { methods, McpOverAcpProvider, McpProtocolError } = acp;

  const child = await spawnAgent(words(opts.agent));

  const provider = new McpOverAcpProvider();
  const app = acp
    .client({ name: "acpwire-ts-unstable-client" })
    .onRequest(methods.client.mcp.message, provider.handleRequest)
    .onNotification(methods.client.session.update, ({ params }) => emit({ event: "update", update: params.update }))
    .onNotification("*", ({ method, params }) => emit({ event: "notification", method, params: params ?? null }));

  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  await app.connectWith(stream, async (agent) => {
    const step = async (name, method, params) => {
      try {
        const result = await agent.request(method, params);
        emit({ event: "response", step: name, result: result ?? null });
        return result;
      } catch (err) {
        emit({ event: "error", step: name, error: { code: err.code, message: err.message, data: err.data ?? null } });
        return null;
      }
    };
    await step("initialize", methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
    const server = provider.registerServer(agent, { name: "ts-tools", handler: tools(McpProtocolError) });
    const created = await step("session/new", methods.agent.session.new, {
      cwd: opts.cwd,
      mcpServers: [server.declaration],
    });
    const sessionId = created.sessionId;
    await step("session/fork", methods.agent.session.fork, { sessionId, cwd: opts.cwd });
    await step("session/archive", methods.agent.session.archive, { sessionId });
    await step("session/status archived", methods.agent.session.status, { sessionId });
    await step("session/unarchive", methods.agent.session.unarchive, { sessionId });
    await step("session/status", methods.agent.session.status, { sessionId });
    await step("session/status unknown", methods.agent.session.status, { sessionId: "nope" });
    await step("session/set_title", methods.agent.session.setTitle, { sessionId, title: " Interop " });
    await step("providers/list", methods.agent.providers.list, {});
    await step("providers/set", methods.agent.providers.set, {
      providerId: "gateway",
      apiType: "openai",
      baseUrl: "https://gateway.example/v1",
      headers: { "x-team": "acp" },
    });
    await step("providers/disable", methods.agent.providers.disable, { providerId: "main" });
    await step("providers/list after", methods.agent.providers.list, {});
    await step("auth/status", methods.agent.auth.status, {});
    const turn = [
      'tool ts-tools shout {"text": "hi"}',
      'mcp ts-tools tools/call {"name": "count", "arguments": {"n": 2}, "_meta": {"progressToken": "p1"}}',
      'mcp ts-tools tools/call {"name": "boom"}',
      "auth unauthenticated",
    ].join("\n");
    await step("session/prompt", methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: turn }] });
    await server.dispose();
    await step("session/prompt disposed", methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "mcp ts-tools tools/list {}" }],
    });
  });
  emit({ event: "done" });
  child.stdin.end();
  const timer = setTimeout(() => child.kill("SIGTERM"), 2000);
  timer.unref();
}

main().catch((err) => {
  log(err?.stack ?? String(err));
  process.exit(1);
});
