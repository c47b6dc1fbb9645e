#!/usr/bin/env node
// Interop peer AGENT on the official TypeScript SDK (@agentclientprotocol/sdk 2.4.0,
// stable v1 entrypoint, app API: agent().onRequest(...).connect(ndJsonStream(...))).
//
// It speaks ACP v1 over stdin/stdout and implements the prompt command language of
// tests/interop/PEERS.md. Logs go to stderr only.
//
// The SDK is loaded from $ACPWIRE_NPM_DIR/node_modules (default: <repo>/.cache/npm),
// which tests/interop/sdk_install.py installs.

import { createRequire } from "node:module";
import { randomUUID } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import { fileURLToPath, pathToFileURL } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "..", "..", "..");
const NPM_DIR = process.env.ACPWIRE_NPM_DIR || path.join(ROOT, ".cache", "npm");

async function loadSdk() {
  const require = createRequire(path.join(NPM_DIR, "package.json"));
  let entry;
  try {
    entry = require.resolve("@agentclientprotocol/sdk");
  } catch (err) {
    throw new Error(
      `@agentclientprotocol/sdk is not installed under ${NPM_DIR}/node_modules ` +
        `(run tests/interop/sdk_install.py or bin/test): ${err.message}`,
    );
  }
  return import(pathToFileURL(entry).href);
}

const acp = await loadSdk();
const { RequestError, methods } = acp;

const SDK_VERSION = "2.4.0";
const PAGE_SIZE = 2;
const SLOW_MS = 600_000; // longer than any test waits: a lost cancel fails by timeout

function log(...args) {
  process.stderr.write(`[ts_agent] ${args.map((a) => (typeof a === "string" ? a : JSON.stringify(a))).join(" ")}\n`);
}

// ---------------------------------------------------------------------------
// State
// ---------------------------------------------------------------------------

/** clientCapabilities as parsed by the SDK from `initialize`. */
let clientCaps = {};
let authenticated = false;

/**
 * sessionId -> {
 *   sessionId, cwd, additionalDirectories, title, updatedAt, modeId, model,
 *   history: [{sessionUpdate, content, messageId}], active, turn, toolCounter }
 */
const sessions = new Map();

const MODES = [
  { id: "ask", name: "Ask", description: "Ask before changing anything" },
  { id: "code", name: "Code", description: "Change code without asking" },
];
const MODEL_VALUES = [
  { value: "fast", name: "Fast", description: "Quick answers" },
  { value: "smart", name: "Smart", description: "Careful answers" },
];

function modeState(session) {
  return { currentModeId: session.modeId, availableModes: MODES };
}

function configOptions(session) {
  return [
    {
      id: "model",
      name: "Model",
      description: "Which model answers",
      category: "model",
      type: "select",
      currentValue: session.model,
      options: MODEL_VALUES,
    },
  ];
}

function now() {
  return new Date().toISOString();
}

function newSessionId() {
  return `sess_${randomUUID().replace(/-/g, "").slice(0, 20)}`;
}

function getSession(sessionId, { activeOnly = true } = {}) {
  const session = sessions.get(sessionId);
  if (!session || (activeOnly && !session.active)) {
    throw RequestError.sessionNotFound(sessionId);
  }
  return session;
}

function absolutePath(session, p) {
  return path.isAbsolute(p) ? p : path.resolve(session.cwd, p);
}

function checkAbsolute(p, field) {
  if (typeof p !== "string" || !path.isAbsolute(p)) {
    throw RequestError.invalidParams({ [field]: p }, `${field} must be an absolute path`);
  }
}

/** Cancels the turn in flight (if any) of a session. */
function cancelTurn(session, reason) {
  if (session.turn && !session.turn.controller.signal.aborted) {
    log(`cancelling turn of ${session.sessionId}: ${reason}`);
    session.turn.controller.abort(new Error(reason));
  }
}

// ---------------------------------------------------------------------------
// Turn helpers
// ---------------------------------------------------------------------------

class TurnCancelled extends Error {}
class TurnStop extends Error {
  constructor(stopReason) {
    super(stopReason);
    this.stopReason = stopReason;
  }
}

/** A prompt turn: sends updates for its session and tracks cancellation. */
class Turn {
  constructor(session, client) {
    this.session = session;
    this.client = client;
    this.controller = new AbortController();
  }

  get signal() {
    return this.controller.signal;
  }

  checkCancelled() {
    if (this.signal.aborted) throw new TurnCancelled();
  }

  async update(update) {
    await this.client.notify(methods.client.session.update, {
      sessionId: this.session.sessionId,
      update,
    });
  }

  /** Sends a content chunk and remembers it for session/load replay. */
  async chunk(kind, text, { messageId, meta } = {}) {
    const update = {
      sessionUpdate: kind,
      content: { type: "text", text },
      messageId: messageId ?? randomUUID(),
    };
    if (meta) update._meta = meta;
    if (kind === "user_message_chunk" || kind === "agent_message_chunk") {
      this.session.history.push(update);
    }
    await this.update(update);
  }

  async message(text) {
    await this.chunk("agent_message_chunk", text);
  }

  nextToolCallId() {
    this.session.toolCounter += 1;
    return `t${this.session.toolCounter}`;
  }

  /** Sends a client request; aborting the turn sends `$/cancel_request` for it. */
  request(method, params) {
    return this.client.request(method, params, { cancellationSignal: this.signal });
  }

  /** Asks for permission; returns the selected optionId or "cancelled". */
  async permission(toolCall) {
    const response = await this.request(methods.client.session.requestPermission, {
      sessionId: this.session.sessionId,
      toolCall,
      options: [
        { optionId: "allow", name: "Allow once", kind: "allow_once" },
        { optionId: "always", name: "Always allow", kind: "allow_always" },
        { optionId: "reject", name: "Reject", kind: "reject_once" },
      ],
    });
    const outcome = response?.outcome;
    if (outcome?.outcome === "selected") return outcome.optionId;
    return "cancelled";
  }

  sleep(ms) {
    return new Promise((resolve) => {
      if (this.signal.aborted) return resolve(false);
      const timer = setTimeout(() => {
        this.signal.removeEventListener("abort", onAbort);
        resolve(true);
      }, ms);
      const onAbort = () => {
        clearTimeout(timer);
        resolve(false);
      };
      this.signal.addEventListener("abort", onAbort, { once: true });
    });
  }
}

function errorText(err) {
  if (err instanceof RequestError) return `${err.code} ${err.message}`;
  return err?.message ?? String(err);
}

function isAllowed(optionId) {
  return optionId === "allow" || optionId === "always";
}

// ---------------------------------------------------------------------------
// Commands
// ---------------------------------------------------------------------------

const COMMANDS = {
  async echo(turn, rest) {
    await turn.message(rest);
  },

  async stream(turn, rest) {
    const n = Number.parseInt(rest, 10);
    const count = Number.isFinite(n) && n > 0 ? n : 0;
    const messageId = randomUUID();
    for (let i = 0; i < count; i += 1) {
      turn.checkCancelled();
      await turn.chunk("agent_message_chunk", `chunk ${i}`, { messageId });
    }
  },

  async think(turn, rest) {
    await turn.chunk("agent_thought_chunk", rest);
  },

  async user(turn, rest) {
    await turn.chunk("user_message_chunk", rest);
  },

  async plan(turn) {
    await turn.update({
      sessionUpdate: "plan",
      entries: [
        { content: "Read the code", priority: "high", status: "pending" },
        { content: "Change the code", priority: "medium", status: "in_progress" },
        { content: "Run the tests", priority: "low", status: "completed" },
      ],
    });
  },

  async tool(turn) {
    const toolCallId = turn.nextToolCallId();
    await turn.update({
      sessionUpdate: "tool_call",
      toolCallId,
      title: "Demo tool",
      kind: "other",
      status: "pending",
      rawInput: { demo: true },
    });
    await turn.update({ sessionUpdate: "tool_call_update", toolCallId, status: "in_progress" });
    await turn.update({
      sessionUpdate: "tool_call_update",
      toolCallId,
      status: "completed",
      content: [{ type: "content", content: { type: "text", text: "tool done" } }],
      rawOutput: { ok: true },
    });
  },

  async read(turn, rest) {
    const [rawPath, lineArg, limitArg] = rest.split(/\s+/).filter(Boolean);
    if (!rawPath) {
      await turn.message("read failed: missing PATH");
      return;
    }
    const filePath = absolutePath(turn.session, rawPath);
    const line = lineArg !== undefined ? Number.parseInt(lineArg, 10) : undefined;
    const limit = limitArg !== undefined ? Number.parseInt(limitArg, 10) : undefined;
    const toolCallId = turn.nextToolCallId();
    await turn.update({
      sessionUpdate: "tool_call",
      toolCallId,
      title: `Read ${filePath}`,
      kind: "read",
      status: "pending",
      locations: [line !== undefined ? { path: filePath, line } : { path: filePath }],
      rawInput: { path: filePath, line, limit },
    });
    let content;
    try {
      if (clientCaps.fs?.readTextFile) {
        const params = { sessionId: turn.session.sessionId, path: filePath };
        if (line !== undefined) params.line = line;
        if (limit !== undefined) params.limit = limit;
        content = (await turn.request(methods.client.fs.readTextFile, params)).content;
      } else {
        // No fs capability: the agent reads the disk itself (spec: fall back).
        content = await readLocal(filePath, line, limit);
      }
    } catch (err) {
      turn.checkCancelled();
      await turn.update({
        sessionUpdate: "tool_call_update",
        toolCallId,
        status: "failed",
        content: [{ type: "content", content: { type: "text", text: errorText(err) } }],
      });
      await turn.message(`read failed: ${errorText(err)}`);
      return;
    }
    await turn.message(content);
    await turn.update({
      sessionUpdate: "tool_call_update",
      toolCallId,
      status: "completed",
      content: [{ type: "content", content: { type: "text", text: content } }],
    });
  },

  async write(turn, rest) {
    const match = /^(\S+)\s?([\s\S]*)$/.exec(rest);
    if (!match) {
      await turn.message("write failed: missing PATH");
      return;
    }
    const filePath = absolutePath(turn.session, match[1]);
    const text = match[2];
    const toolCallId = turn.nextToolCallId();
    const toolCall = {
      toolCallId,
      title: `Write ${filePath}`,
      kind: "edit",
      status: "pending",
      locations: [{ path: filePath }],
      content: [{ type: "diff", path: filePath, oldText: null, newText: text }],
      rawInput: { path: filePath, content: text },
    };
    await turn.update({ sessionUpdate: "tool_call", ...toolCall });
    const optionId = await turn.permission(toolCall);
    if (isAllowed(optionId) && !turn.signal.aborted) {
      await turn.update({ sessionUpdate: "tool_call_update", toolCallId, status: "in_progress" });
      try {
        if (clientCaps.fs?.writeTextFile) {
          await turn.request(methods.client.fs.writeTextFile, {
            sessionId: turn.session.sessionId,
            path: filePath,
            content: text,
          });
        } else {
          await writeFile(filePath, text, "utf8");
        }
        await turn.update({ sessionUpdate: "tool_call_update", toolCallId, status: "completed" });
      } catch (err) {
        await turn.update({
          sessionUpdate: "tool_call_update",
          toolCallId,
          status: "failed",
          content: [{ type: "content", content: { type: "text", text: errorText(err) } }],
        });
        await turn.message(`permission: ${optionId}`);
        await turn.message(`write failed: ${errorText(err)}`);
        return;
      }
    } else {
      await turn.update({ sessionUpdate: "tool_call_update", toolCallId, status: "failed" });
    }
    await turn.message(`permission: ${optionId}`);
  },

  async run(turn, rest) {
    await runInTerminal(turn, rest, false);
  },

  async kill(turn, rest) {
    await runInTerminal(turn, rest, true);
  },

  async permission(turn) {
    const toolCallId = turn.nextToolCallId();
    const optionId = await turn.permission({
      toolCallId,
      title: "May I?",
      kind: "other",
      status: "pending",
    });
    await turn.message(`permission: ${optionId}`);
  },

  async mode(turn, rest) {
    const modeId = rest.trim();
    if (!MODES.some((m) => m.id === modeId)) {
      await turn.message(`unknown mode: ${modeId}`);
      return;
    }
    turn.session.modeId = modeId;
    await turn.update({ sessionUpdate: "current_mode_update", currentModeId: modeId });
  },

  async config(turn) {
    await turn.update({ sessionUpdate: "config_option_update", configOptions: configOptions(turn.session) });
  },

  async commands(turn) {
    await turn.update({
      sessionUpdate: "available_commands_update",
      availableCommands: [
        { name: "help", description: "List the commands of the peer agent" },
        { name: "test", description: "Run the tests", input: { hint: "test name or pattern" } },
      ],
    });
  },

  async elicit(turn) {
    if (!clientCaps.elicitation?.form) {
      await turn.message("elicit: unsupported (client has no elicitation.form capability)");
      return;
    }
    let response;
    try {
      response = await turn.request(methods.client.elicitation.create, {
        sessionId: turn.session.sessionId,
        mode: "form",
        message: "Tell me about you",
        requestedSchema: {
          type: "object",
          properties: {
            name: { type: "string", title: "Name" },
            age: { type: "integer", title: "Age", minimum: 0 },
          },
          required: ["name", "age"],
        },
      });
    } catch (err) {
      turn.checkCancelled();
      await turn.message(`elicit: error ${errorText(err)}`);
      return;
    }
    await turn.message(`elicit: ${response?.action} ${JSON.stringify(response?.content ?? null)}`);
  },

  async usage(turn) {
    await turn.update({
      sessionUpdate: "usage_update",
      used: 100,
      size: 1000,
      cost: { amount: 0.01, currency: "USD" },
    });
  },

  async title(turn, rest) {
    turn.session.title = rest;
    turn.session.updatedAt = now();
    await turn.update({ sessionUpdate: "session_info_update", title: rest, updatedAt: turn.session.updatedAt });
  },

  async ext(turn) {
    let text;
    try {
      const result = await turn.request("_acpwire/ping", { n: 1 });
      text = JSON.stringify(result ?? null);
    } catch (err) {
      turn.checkCancelled();
      text = err instanceof RequestError ? String(err.code) : errorText(err);
    }
    await turn.message(`ext: ${text}`);
    await turn.client.notify("_acpwire/note", { n: 2 });
  },

  async meta(turn) {
    await turn.chunk("agent_message_chunk", "meta", { meta: { "acpwire/test": { nested: [1, 2] } } });
  },

  async slow(turn) {
    const finished = await turn.sleep(SLOW_MS);
    if (!finished) throw new TurnCancelled();
  },

  async refuse() {
    throw new TurnStop("refusal");
  },

  async fail() {
    throw RequestError.internalError({ command: "fail" }, "the fail command failed on purpose");
  },
};

async function readLocal(filePath, line, limit) {
  let text;
  try {
    text = await readFile(filePath, "utf8");
  } catch (err) {
    if (err.code === "ENOENT") throw RequestError.resourceNotFound(pathToFileURL(filePath).href);
    throw err;
  }
  if (line === undefined && limit === undefined) return text;
  const lines = text.split("\n");
  const start = Math.max((line ?? 1) - 1, 0);
  const end = limit === undefined ? lines.length : start + limit;
  return lines.slice(start, end).join("\n");
}

async function runInTerminal(turn, rest, killIt) {
  const [command, ...args] = rest.split(/\s+/).filter(Boolean);
  if (!command) {
    await turn.message(`${killIt ? "kill" : "run"} failed: missing CMD`);
    return;
  }
  const toolCallId = turn.nextToolCallId();
  const toolCall = {
    toolCallId,
    title: `${killIt ? "Kill" : "Run"}: ${[command, ...args].join(" ")}`,
    kind: "execute",
    status: "pending",
    rawInput: { command, args },
  };
  await turn.update({ sessionUpdate: "tool_call", ...toolCall });
  const optionId = await turn.permission(toolCall);
  if (!isAllowed(optionId) || turn.signal.aborted) {
    await turn.update({ sessionUpdate: "tool_call_update", toolCallId, status: "failed" });
    await turn.message(`permission: ${optionId}`);
    return;
  }
  if (!clientCaps.terminal) {
    await turn.update({ sessionUpdate: "tool_call_update", toolCallId, status: "failed" });
    await turn.message(`permission: ${optionId}`);
    await turn.message(`${killIt ? "kill" : "run"} failed: client has no terminal capability`);
    return;
  }
  await turn.message(`permission: ${optionId}`);
  let terminal;
  try {
    terminal = await turn.client.createTerminal({
      sessionId: turn.session.sessionId,
      command,
      args,
      cwd: turn.session.cwd,
      outputByteLimit: 64 * 1024,
    });
  } catch (err) {
    turn.checkCancelled();
    await turn.update({ sessionUpdate: "tool_call_update", toolCallId, status: "failed" });
    await turn.message(`${killIt ? "kill" : "run"} failed: ${errorText(err)}`);
    return;
  }
  let exit;
  let output;
  try {
    await turn.update({
      sessionUpdate: "tool_call_update",
      toolCallId,
      status: "in_progress",
      content: [{ type: "terminal", terminalId: terminal.id }],
    });
    if (killIt) await terminal.kill();
    // Not terminal.waitForExit(): TerminalHandle takes no cancellation signal, so a
    // cancelled turn could not send $/cancel_request for this wait (PEERS.md says it does).
    exit = await turn.request(methods.client.terminal.waitForExit, {
      sessionId: turn.session.sessionId,
      terminalId: terminal.id,
    });
    output = await terminal.currentOutput();
  } finally {
    await terminal.release().catch((err) => log("terminal/release failed:", errorText(err)));
  }
  const exitText = exit.exitCode ?? exit.signal ?? "null";
  await turn.update({
    sessionUpdate: "tool_call_update",
    toolCallId,
    status: exit.exitCode === 0 || killIt ? "completed" : "failed",
    rawOutput: { exitCode: exit.exitCode ?? null, signal: exit.signal ?? null, truncated: output.truncated },
  });
  if (killIt) {
    await turn.message(`killed: ${exit.signal ?? exit.exitCode ?? "null"}`);
  } else {
    await turn.message(`exit: ${exitText} output: ${output.output.replace(/\s+$/, "")}`);
  }
}

async function runTurn(turn, prompt) {
  const texts = [];
  for (const block of prompt) {
    if (block.type === "text") {
      texts.push(block.text);
    }
  }
  for (const rawLine of texts.join("\n").split("\n")) {
    const line = rawLine.trim();
    if (!line) continue;
    turn.checkCancelled();
    const space = line.search(/\s/);
    const name = space === -1 ? line : line.slice(0, space);
    const rest = space === -1 ? "" : line.slice(space + 1);
    const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
    if (command) {
      await command(turn, rest);
    } else {
      await turn.message(`unknown command: ${line}`);
    }
  }
  turn.checkCancelled();
  return "end_turn";
}

// ---------------------------------------------------------------------------
// Handlers
// ---------------------------------------------------------------------------

function sessionSetup(session) {
  return { modes: modeState(session), configOptions: configOptions(session) };
}

function attachSession(session, params) {
  checkAbsolute(params.cwd, "cwd");
  session.cwd = params.cwd;
  if (params.additionalDirectories) {
    params.additionalDirectories.forEach((d) => checkAbsolute(d, "additionalDirectories"));
    session.additionalDirectories = [...params.additionalDirectories];
  }
  session.active = true;
  session.updatedAt = now();
}

const app = acp
  .agent({ name: "acpwire-ts-peer-agent" })
  .onRequest(methods.agent.initialize, ({ params }) => {
    clientCaps = params.clientCapabilities ?? {};
    log("initialize", { protocolVersion: params.protocolVersion, clientInfo: params.clientInfo });
    return {
      // ACP v1 is the only version this agent speaks: answer 1 whatever was asked.
      protocolVersion: acp.PROTOCOL_VERSION,
      agentCapabilities: {
        loadSession: true,
        promptCapabilities: { image: true, audio: true, embeddedContext: true },
        mcpCapabilities: { http: false, sse: false },
        sessionCapabilities: { list: {}, resume: {}, close: {}, delete: {}, additionalDirectories: {} },
        auth: { logout: {} },
        _meta: { "acpwire/peer": { sdk: "typescript", sdkVersion: SDK_VERSION, commandLanguage: true } },
      },
      agentInfo: { name: "acpwire-ts-peer-agent", title: "acpwire peer agent (TypeScript SDK)", version: SDK_VERSION },
      authMethods: [{ id: "token", name: "Token", description: "Accepts any token; always succeeds" }],
    };
  })
  .onRequest(methods.agent.authenticate, ({ params }) => {
    if (params.methodId !== "token") {
      throw RequestError.invalidParams({ methodId: params.methodId }, `unknown auth method ${params.methodId}`);
    }
    authenticated = true;
    return {};
  })
  .onRequest(methods.agent.logout, () => {
    authenticated = false;
    return {};
  })
  .onRequest(methods.agent.session.new, ({ params }) => {
    const session = {
      sessionId: newSessionId(),
      cwd: params.cwd,
      additionalDirectories: [],
      title: null,
      updatedAt: now(),
      modeId: "ask",
      model: "fast",
      history: [],
      active: true,
      turn: null,
      toolCounter: 0,
    };
    attachSession(session, params);
    sessions.set(session.sessionId, session);
    return { sessionId: session.sessionId, ...sessionSetup(session) };
  })
  .onRequest(methods.agent.session.load, async ({ params, client }) => {
    const session = getSession(params.sessionId, { activeOnly: false });
    cancelTurn(session, "session/load");
    attachSession(session, params);
    for (const update of session.history) {
      await client.notify(methods.client.session.update, { sessionId: session.sessionId, update });
    }
    return sessionSetup(session);
  })
  .onRequest(methods.agent.session.resume, ({ params }) => {
    const session = getSession(params.sessionId, { activeOnly: false });
    attachSession(session, params);
    return sessionSetup(session);
  })
  .onRequest(methods.agent.session.close, async ({ params }) => {
    const session = getSession(params.sessionId);
    cancelTurn(session, "session/close");
    await session.turn?.done;
    session.active = false;
    return {};
  })
  .onRequest(methods.agent.session.delete, async ({ params }) => {
    const session = sessions.get(params.sessionId);
    if (session) {
      cancelTurn(session, "session/delete");
      await session.turn?.done;
      sessions.delete(params.sessionId);
    }
    return {};
  })
  .onRequest(methods.agent.session.list, ({ params }) => {
    let all = [...sessions.values()];
    if (params.cwd) all = all.filter((s) => s.cwd === params.cwd);
    let start = 0;
    if (params.cursor) {
      start = Number.parseInt(params.cursor, 10);
      if (!/^\d+$/.test(params.cursor) || start > all.length) {
        throw RequestError.invalidParams({ cursor: params.cursor }, "invalid cursor");
      }
    }
    const page = all.slice(start, start + PAGE_SIZE).map((s) => {
      const info = { sessionId: s.sessionId, cwd: s.cwd, updatedAt: s.updatedAt };
      if (s.title !== null) info.title = s.title;
      if (s.additionalDirectories.length) info.additionalDirectories = [...s.additionalDirectories];
      return info;
    });
    const result = { sessions: page };
    if (start + PAGE_SIZE < all.length) result.nextCursor = String(start + PAGE_SIZE);
    return result;
  })
  .onRequest(methods.agent.session.setMode, ({ params }) => {
    const session = getSession(params.sessionId);
    if (!MODES.some((m) => m.id === params.modeId)) {
      throw RequestError.invalidParams({ modeId: params.modeId }, `unknown mode ${params.modeId}`);
    }
    session.modeId = params.modeId;
    return {};
  })
  .onRequest(methods.agent.session.setConfigOption, ({ params }) => {
    const session = getSession(params.sessionId);
    if (params.configId !== "model") {
      throw RequestError.invalidParams({ configId: params.configId }, `unknown config option ${params.configId}`);
    }
    if (params.type === "boolean" || !MODEL_VALUES.some((v) => v.value === params.value)) {
      throw RequestError.invalidParams({ value: params.value }, `invalid value for model: ${JSON.stringify(params.value)}`);
    }
    session.model = params.value;
    return { configOptions: configOptions(session) };
  })
  .onRequest(methods.agent.session.prompt, async ({ params, client, signal }) => {
    const session = getSession(params.sessionId);
    if (session.turn) {
      throw RequestError.invalidRequest({ sessionId: session.sessionId }, "a prompt turn is already running");
    }
    const turn = new Turn(session, client);
    let finish;
    turn.done = new Promise((resolve) => {
      finish = resolve;
    });
    session.turn = turn;
    // `$/cancel_request` for this prompt aborts `signal`: treat it like session/cancel.
    const onRequestCancelled = () => cancelTurn(session, "$/cancel_request");
    if (signal.aborted) onRequestCancelled();
    signal.addEventListener("abort", onRequestCancelled, { once: true });
    const userMessageId = randomUUID();
    for (const block of params.prompt) {
      session.history.push({ sessionUpdate: "user_message_chunk", content: block, messageId: userMessageId });
    }
    session.updatedAt = now();
    try {
      const stopReason = await runTurn(turn, params.prompt);
      return { stopReason };
    } catch (err) {
      if (err instanceof TurnStop) return { stopReason: err.stopReason };
      if (err instanceof TurnCancelled || turn.signal.aborted) return { stopReason: "cancelled" };
      throw err;
    } finally {
      signal.removeEventListener("abort", onRequestCancelled);
      session.turn = null;
      finish();
    }
  })
  .onNotification(methods.agent.session.cancel, ({ params }) => {
    const session = sessions.get(params.sessionId);
    if (session) cancelTurn(session, "session/cancel");
    else log(`session/cancel for unknown session ${params.sessionId}`);
  })
  .onRequest(
    "_acpwire/echo",
    (params) => params,
    ({ params }) => params ?? {},
  )
  .onNotification("*", ({ method, params }) => {
    log(`notification ${method} ${JSON.stringify(params ?? null)}`);
  });

const stream = acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
const connection = app.connect(stream);
log(`ready (SDK ${SDK_VERSION}, authenticated=${authenticated})`);
await connection.closed;
log("connection closed");
process.exit(0);
