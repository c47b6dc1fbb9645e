#!/usr/bin/env node
// Interop peer CLIENT on the official TypeScript SDK's UNSTABLE v1 entry point
// (@agentclientprotocol/sdk/unstable, 2.4.0), for high-tier agents that keep sessions:
//
//   node ts_fork_client.mjs --agent "<agent command line>" [--cwd DIR]
//
// One fixed script: initialize, session/new, a prompt, session/fork, one prompt in
// the fork and one in the parent, session/set_title on the fork, session/archive of
// the parent with session/list (default, "only"), session/unarchive, session/status
// (the fork, an unknown id), then session/load of the fork and of the parent, whose
// replays show each history. It prints one JSON object per line on stdout:
//   {"event": "response"|"error", "step": NAME, "result"|"error": ...}
//   {"event": "update", "sessionId": ..., "update": ...}     session/update
//   {"event": "done"}
// The SDK is loaded as _ts_peer.mjs says.

import { Readable, Writable } from "node:stream";

import { emit, importSdk, parseArgs, spawnAgent } from "./_ts_peer.mjs";

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const acp = await importSdk("@agentclientprotocol/sdk/unstable");
  const { methods } = acp;

  const child = await spawnAgent(JSON.parse(opts.agent));

  const app = acp
    .client({ name: "acpwire-ts-fork-client" })
    .onNotification(methods.client.session.update, ({ params }) =>
      emit({ event: "update", sessionId: params.sessionId, update: params.update }),
    );

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
    const text = (t) => [{ type: "text", text: t }];
    const cwd = opts.cwd;
    await step("initialize", methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
    const { sessionId: parent } = await step("session/new", methods.agent.session.new, { cwd, mcpServers: [] });
    await step("prompt shared", methods.agent.session.prompt, { sessionId: parent, prompt: text("shared words") });
    const forked = await step("session/fork", methods.agent.session.fork, { sessionId: parent, cwd });
    const fork = forked.sessionId;
    await step("prompt fork", methods.agent.session.prompt, { sessionId: fork, prompt: text("fork words") });
    await step("prompt parent", methods.agent.session.prompt, { sessionId: parent, prompt: text("parent words") });
    await step("session/set_title", methods.agent.session.setTitle, { sessionId: fork, title: "  The fork " });
    await step("session/archive", methods.agent.session.archive, { sessionId: parent });
    await step("session/list", methods.agent.session.list, { cwd });
    await step("session/list only", methods.agent.session.list, { cwd, archived: "only" });
    await step("session/unarchive", methods.agent.session.unarchive, { sessionId: parent });
    await step("session/list after", methods.agent.session.list, { cwd, archived: "include" });
    await step("session/status", methods.agent.session.status, { sessionId: fork });
    await step("session/status unknown", methods.agent.session.status, { sessionId: "sess_nope" });
    await step("session/load fork", methods.agent.session.load, { sessionId: fork, cwd, mcpServers: [] });
    await step("session/load parent", methods.agent.session.load, { sessionId: parent, cwd, mcpServers: [] });
  });
  emit({ event: "done" });
  child.stdin.end();
  const timer = setTimeout(() => child.kill("SIGTERM"), 2000);
  timer.unref();
}

main().catch((err) => {
  process.stderr.write(`[ts_fork_client] ${err?.stack ?? String(err)}\n`);
  process.exit(1);
});
