#!/usr/bin/env node
// Interop peer AGENT on the official TypeScript SDK's ACP v2 DRAFT entry point
// (@agentclientprotocol/sdk/experimental/v2, 2.4.0), over stdin/stdout; logs go to stderr.
//
//   node ts_v2_agent.mjs            a v2-only agent (a v1 client is refused -32022)
//   node ts_v2_agent.mjs --router   the SDK's agentProtocolRouter(): a v1 client gets the
//                                   v1 agent below (stable entry point), a v2 client this one
//
// v2 agent: advertises `capabilities.session` (the baseline session methods), keeps
// sessions in memory (new, list, close), accepts a prompt by inserting the user message
// (a `user_message` update, then the answer `{messageId}`) and runs the turn after the
// answer: `running`, the commands, then `idle` with the stop reason. Prompt commands,
// one per line:
//   echo TEXT      an agent_message_chunk with TEXT (messageId `agent-<turn>`)
//   stream N       N agent_message_chunks `chunk <i>` of one message
//   think TEXT     an agent_thought_chunk
//   plan           a plan_update with 3 entries
//   tool           tool_call_update pending, in_progress, a tool_call_content_chunk, completed
//   permission     requires_action, session/request_permission, running; says the outcome
//   slow           waits up to 30 s; session/cancel ends the turn with `cancelled`
//   refuse         the turn ends with `refusal`
// v1 agent (--router only): `echo TEXT` per line, the prompt answers end_turn.
// The SDK is loaded from $ACPWIRE_NPM_DIR/node_modules (default <repo>/.cache/npm).

import { createRequire } from "node:module";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import { fileURLToPath, pathToFileURL } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "..", "..", "..");
const NPM_DIR = process.env.ACPWIRE_NPM_DIR || path.join(ROOT, ".cache", "npm");
const ROUTER = process.argv.includes("--router");

async function load(entry) {
  const require = createRequire(path.join(NPM_DIR, "package.json"));
  return import(pathToFileURL(require.resolve(entry)).href);
}

const v2 = await load("@agentclientprotocol/sdk/experimental/v2");
const v1 = ROUTER ? await load("@agentclientprotocol/sdk") : null;

function log(...args) {
  process.stderr.write(`[ts_v2_agent] ${args.map((a) => (typeof a === "string" ? a : JSON.stringify(a))).join(" ")}\n`);
}

/** sessionId -> { cwd, turns, cancel: (() => void) | null } */
const sessions = new Map();
let sessionCount = 0;

function getSession(sessionId) {
  const session = sessions.get(sessionId);
  if (!session) throw v2.RequestError.sessionNotFound(sessionId);
  return session;
}

async function runTurn(client, sessionId, session, text, turn) {
  const update = (u) => client.notify(v2.methods.client.session.update, { sessionId, update: u });
  const messageId = `agent-${turn}`;
  const say = (t) => update({ sessionUpdate: "agent_message_chunk", messageId, content: { type: "text", text: t } });
  let stopReason = "end_turn";
  let cancelled = false;
  const cancelledSignal = new Promise((resolve) => {
    session.cancel = () => {
      cancelled = true;
      resolve();
    };
  });
  await update({ sessionUpdate: "state_update", state: "running" });
  let tools = 0;
  for (const line of text.split("\n").map((l) => l.trim()).filter(Boolean)) {
    if (cancelled) break;
    const [name, ...rest] = line.split(" ");
    if (name === "echo") await say(rest.join(" "));
    else if (name === "stream") for (let i = 0; i < Number(rest[0] ?? 1); i += 1) await say(`chunk ${i}`);
    else if (name === "think")
      await update({ sessionUpdate: "agent_thought_chunk", messageId: `thought-${turn}`, content: { type: "text", text: rest.join(" ") } });
    else if (name === "plan")
      await update({
        sessionUpdate: "plan_update",
        plan: {
          type: "items",
          planId: `plan-${turn}`,
          entries: [
            { content: "look", priority: "high", status: "pending" },
            { content: "change", priority: "medium", status: "in_progress" },
            { content: "check", priority: "low", status: "completed" },
          ],
        },
      });
    else if (name === "tool") {
      tools += 1;
      const toolCallId = `t${turn}-${tools}`;
      await update({ sessionUpdate: "tool_call_update", toolCallId, title: "Tool", kind: "other", status: "pending" });
      await update({ sessionUpdate: "tool_call_update", toolCallId, status: "in_progress" });
      await update({ sessionUpdate: "tool_call_content_chunk", toolCallId, content: { type: "content", content: { type: "text", text: "working" } } });
      await update({ sessionUpdate: "tool_call_update", toolCallId, status: "completed" });
    } else if (name === "permission") {
      await update({ sessionUpdate: "state_update", state: "requires_action" });
      const answer = await client.request(v2.methods.client.session.requestPermission, {
        sessionId,
        title: "May I?",
        options: [
          { optionId: "allow", name: "Allow", kind: "allow_once" },
          { optionId: "reject", name: "Reject", kind: "reject_once" },
        ],
      });
      await update({ sessionUpdate: "state_update", state: "running" });
      await say(`permission: ${answer.outcome.outcome === "selected" ? answer.outcome.optionId : "cancelled"}`);
    } else if (name === "slow") {
      await Promise.race([cancelledSignal, new Promise((resolve) => setTimeout(resolve, 30000))]);
    } else if (name === "refuse") stopReason = "refusal";
    else await say(`unknown command: ${line}`);
  }
  session.cancel = null;
  await update({ sessionUpdate: "state_update", state: "idle", stopReason: cancelled ? "cancelled" : stopReason });
}

const v2App = v2
  .agent({ name: "acpwire-ts-v2-agent" })
  .onRequest(v2.methods.agent.initialize, () => ({
    protocolVersion: v2.PROTOCOL_VERSION,
    info: { name: "acpwire-ts-v2-agent", version: "2.4.0" },
    capabilities: { session: {} },
  }))
  .onRequest(v2.methods.agent.session.new, ({ params }) => {
    sessionCount += 1;
    const sessionId = `ts2-${sessionCount}`;
    sessions.set(sessionId, { cwd: params.cwd, turns: 0, cancel: null });
    return { sessionId };
  })
  .onRequest(v2.methods.agent.session.list, () => ({
    sessions: [...sessions.entries()].map(([sessionId, s]) => ({ sessionId, cwd: s.cwd })),
  }))
  .onRequest(v2.methods.agent.session.close, ({ params }) => {
    sessions.get(params.sessionId)?.cancel?.();
    sessions.delete(params.sessionId);
    return {};
  })
  .onRequest(v2.methods.agent.session.prompt, async ({ params, client }) => {
    const session = getSession(params.sessionId);
    session.turns += 1;
    const turn = session.turns;
    const messageId = `user-${turn}`;
    await client.notify(v2.methods.client.session.update, {
      sessionId: params.sessionId,
      update: { sessionUpdate: "user_message", messageId, content: params.prompt },
    });
    const text = params.prompt.filter((b) => b.type === "text").map((b) => b.text).join("\n");
    // The answer acknowledges the insertion; the turn runs after it.
    setImmediate(() => runTurn(client, params.sessionId, session, text, turn).catch((err) => log("turn failed", String(err))));
    return { messageId };
  })
  .onNotification(v2.methods.agent.session.cancel, ({ params }) => {
    sessions.get(params.sessionId)?.cancel?.();
  });

function v1App() {
  return v1
    .agent({ name: "acpwire-ts-v1-agent" })
    .onRequest(v1.methods.agent.initialize, () => ({
      protocolVersion: v1.PROTOCOL_VERSION,
      agentCapabilities: {},
      agentInfo: { name: "acpwire-ts-v1-agent", version: "2.4.0" },
    }))
    .onRequest(v1.methods.agent.session.new, () => ({ sessionId: "ts1-1" }))
    .onRequest(v1.methods.agent.session.prompt, async ({ params, client }) => {
      const text = params.prompt.filter((b) => b.type === "text").map((b) => b.text).join("\n");
      for (const line of text.split("\n").map((l) => l.trim()).filter(Boolean)) {
        const [name, ...rest] = line.split(" ");
        const said = name === "echo" ? rest.join(" ") : `unknown command: ${line}`;
        await client.notify(v1.methods.client.session.update, {
          sessionId: params.sessionId,
          update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: said } },
        });
      }
      return { stopReason: "end_turn" };
    });
}

const stream = v2.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
const connection = ROUTER ? v2.agentProtocolRouter().withV1(v1App()).withV2(v2App).connect(stream) : v2App.connect(stream);
log(ROUTER ? "ready (router: v1 and v2)" : "ready (v2)");
await connection.closed;
process.exit(0);
