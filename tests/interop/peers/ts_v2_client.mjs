#!/usr/bin/env node
// Interop peer CLIENT on the official TypeScript SDK's ACP v2 DRAFT entry point
// (@agentclientprotocol/sdk/experimental/v2, 2.4.0).
//
//   node ts_v2_client.mjs --agent "<agent command line>" [--cwd DIR] [--prompt TEXT]...
//                         [--cancel TEXT] [--set ID=VALUE]
//
// Spawns the agent and runs: initialize (protocol 2, no capabilities), session/new
// through the SDK's SessionBuilder, each --prompt through ActiveSession.prompt() read
// with nextUpdate() until the idle `stop`, --cancel TEXT (a prompt cancelled with
// session/cancel once the agent reports `running`), --set (session/set_config_option),
// session/list and session/close. Permission requests are answered with the first
// allow option. One JSON object per line on stdout:
//   {"event": "response"|"error", "step": NAME, "result"|"error": ...}
//   {"event": "update", "update": ...}              session/update of the session
//   {"event": "stop", "step": NAME, "stopReason"}   the idle state ending a prompt
//   {"event": "permission", "params": ...}
//   {"event": "done"}
// The SDK is loaded as _ts_peer.mjs says.

import { Readable, Writable } from "node:stream";

import { emit, importSdk, parseArgs, spawnAgent, words } from "./_ts_peer.mjs";

function log(...args) {
  process.stderr.write(`[ts_v2_client] ${args.join(" ")}\n`);
}

async function main() {
  const opts = parseArgs(process.argv.slice(2), { values: { cancel: null, set: null }, lists: ["prompt"] });
  const v2 = await importSdk("@agentclientprotocol/sdk/experimental/v2");
  const { methods } = v2;

  const child = await spawnAgent(words(opts.agent));

  const app = v2.client({ name: "acpwire-ts-v2-client" }).onRequest(methods.client.session.requestPermission, ({ params }) => {
    emit({ event: "permission", params });
    const allow = params.options.find((o) => o.kind.startsWith("allow")) ?? params.options[0];
    return { outcome: { outcome: "selected", optionId: allow.optionId } };
  });

  const stream = v2.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  await app.connectWith(stream, async (agent) => {
    const step = async (name, op) => {
      try {
        const result = await op();
        emit({ event: "response", step: name, result: result ?? null });
        return result;
      } catch (err) {
        emit({ event: "error", step: name, error: { code: err.code, message: err.message, data: err.data ?? null } });
        return null;
      }
    };
    const untilStop = async (session, name, onUpdate) => {
      for (;;) {
        const message = await session.nextUpdate();
        emit({ event: "update", update: message.update });
        if (onUpdate) await onUpdate(message.update);
        if (message.kind === "stop") {
          emit({ event: "stop", step: name, stopReason: message.stopReason ?? null });
          return;
        }
      }
    };
    await step("initialize", () =>
      agent.request(methods.agent.initialize, {
        protocolVersion: v2.PROTOCOL_VERSION,
        info: { name: "acpwire-ts-v2-client", version: "2.4.0" },
      }),
    );
    const session = await agent.buildSession(opts.cwd).start();
    emit({ event: "response", step: "session/new", result: session.newSessionResponse });
    for (const [i, text] of opts.prompt.entries()) {
      const name = `prompt ${i + 1}`;
      if (await step(name, () => session.prompt(text))) await untilStop(session, name);
    }
    if (opts.cancel !== null) {
      if (await step("prompt cancelled", () => session.prompt(opts.cancel))) {
        await untilStop(session, "prompt cancelled", async (update) => {
          if (update.sessionUpdate === "state_update" && update.state === "running") {
            await agent.notify(methods.agent.session.cancel, { sessionId: session.sessionId });
          }
        });
      }
    }
    if (opts.set !== null) {
      const [configId, value] = opts.set.split("=");
      const option = (session.configOptions ?? []).find((o) => o.configId === configId);
      const type = option?.type ?? "select";
      await step("session/set_config_option", () =>
        session.setConfigOption({ configId, type, value: type === "boolean" ? value === "true" : value }),
      );
    }
    await step("session/list", () => agent.request(methods.agent.session.list, {}));
    await step("session/close", () => agent.request(methods.agent.session.close, { sessionId: session.sessionId }));
    session.dispose();
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
