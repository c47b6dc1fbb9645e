#!/usr/bin/env node
// Interop peer CLIENT on the official TypeScript SDK (@agentclientprotocol/sdk 2.4.0,
// stable v1 entrypoint, app API: client().onRequest(...).connectWith(ndJsonStream(...))).
//
//   node ts_client.mjs --agent "<agent command line>" --scenario FILE|-
//
// Spawns the agent, runs the scenario of tests/interop/PEERS.md and prints one JSON
// object per line on stdout (response / error / update / request / notification /
// done). It serves fs/* on the real disk, terminal/* with real child processes,
// permission requests per the scenario's policy and elicitation by accepting
// {"name": "acp", "age": 3}. Diagnostics go to stderr; exit status 0 after
// {"event": "done"}, non-zero (message on stderr) on a crash.
//
// The SDK is loaded from $ACPWIRE_NPM_DIR/node_modules (default: <repo>/.cache/npm).

import { spawn } from "node:child_process";
import { once } from "node:events";
import { createRequire } from "node:module";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import { fileURLToPath, pathToFileURL } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "..", "..", "..");
const NPM_DIR = process.env.ACPWIRE_NPM_DIR || path.join(ROOT, ".cache", "npm");
const SDK_VERSION = "2.4.0";

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

function log(...args) {
  process.stderr.write(`[ts_client] ${args.map((a) => (typeof a === "string" ? a : JSON.stringify(a))).join(" ")}\n`);
}

function emit(event) {
  process.stdout.write(`${JSON.stringify(event)}\n`);
}

/** Lets every message already read from the agent be dispatched first. */
async function settle() {
  for (let i = 0; i < 3; i += 1) {
    await new Promise((resolve) => setImmediate(resolve));
  }
}

// ---------------------------------------------------------------------------
// Command line
// ---------------------------------------------------------------------------

/** Splits a command line roughly like a POSIX shell (quotes and backslashes). */
export function splitCommandLine(line) {
  const words = [];
  let word = "";
  let inWord = false;
  let quote = null;
  for (let i = 0; i < line.length; i += 1) {
    const ch = line[i];
    if (quote === "'") {
      if (ch === "'") quote = null;
      else word += ch;
    } else if (quote === '"') {
      if (ch === '"') quote = null;
      else if (ch === "\\" && i + 1 < line.length && '"\\$`'.includes(line[i + 1])) word += line[++i];
      else word += ch;
    } else if (ch === "'" || ch === '"') {
      quote = ch;
      inWord = true;
    } else if (ch === "\\" && i + 1 < line.length) {
      word += line[++i];
      inWord = true;
    } else if (/\s/.test(ch)) {
      if (inWord) words.push(word);
      word = "";
      inWord = false;
    } else {
      word += ch;
      inWord = true;
    }
  }
  if (quote) throw new Error(`unbalanced ${quote} in --agent command line`);
  if (inWord) words.push(word);
  return words;
}

function parseArgs(argv) {
  const opts = {};
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i];
    const eq = arg.indexOf("=");
    const [key, inline] = arg.startsWith("--") && eq !== -1 ? [arg.slice(0, eq), arg.slice(eq + 1)] : [arg, undefined];
    if (key === "--agent" || key === "--scenario") {
      const value = inline ?? argv[++i];
      if (value === undefined) throw new Error(`${key} needs a value`);
      opts[key.slice(2)] = value;
    } else if (key === "-h" || key === "--help") {
      process.stdout.write('usage: ts_client.mjs --agent "<command line>" --scenario FILE|-\n');
      process.exit(0);
    } else {
      throw new Error(`unknown argument ${arg}`);
    }
  }
  if (!opts.agent) throw new Error("--agent is required");
  if (!opts.scenario) throw new Error("--scenario is required");
  return opts;
}

async function readScenario(source) {
  let text;
  if (source === "-") {
    const chunks = [];
    for await (const chunk of process.stdin) chunks.push(chunk);
    text = Buffer.concat(chunks).toString("utf8");
  } else {
    text = await readFile(source, "utf8");
  }
  const scenario = JSON.parse(text);
  if (typeof scenario !== "object" || scenario === null || !Array.isArray(scenario.steps)) {
    throw new Error("the scenario must be a JSON object with a steps array");
  }
  return scenario;
}

/**
 * The SDK dispatches incoming notifications concurrently, through handler chains
 * of different lengths (session/update passes the SDK's session router first), so
 * two notifications could reach our handlers out of wire order. This pass-through
 * hands the connection the next message only after a notification has been fully
 * dispatched (all microtasks drained), which keeps the printed events in wire order.
 */
function oneNotificationAtATime(readable) {
  const reader = readable.getReader();
  return new ReadableStream(
    {
      async pull(controller) {
        const { value, done } = await reader.read();
        if (done) {
          controller.close();
          return;
        }
        controller.enqueue(value);
        if (value && typeof value === "object" && "method" in value && !("id" in value)) {
          await new Promise((resolve) => setImmediate(resolve));
        }
      },
      cancel(reason) {
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
}

// ---------------------------------------------------------------------------
// Terminals: real child processes
// ---------------------------------------------------------------------------

class Terminal {
  constructor(id, child, outputByteLimit) {
    this.id = id;
    this.child = child;
    this.limit = outputByteLimit ?? null;
    this.buffer = Buffer.alloc(0);
    this.truncated = false;
    this.exitStatus = null;
    this.exited = new Promise((resolve) => {
      child.on("close", (exitCode, signal) => {
        this.exitStatus = { exitCode: exitCode ?? null, signal: signal ?? null };
        resolve(this.exitStatus);
      });
    });
    child.stdout.on("data", (data) => this.append(data));
    child.stderr.on("data", (data) => this.append(data));
  }

  append(data) {
    let buffer = Buffer.concat([this.buffer, data]);
    if (this.limit !== null && buffer.length > this.limit) {
      buffer = buffer.subarray(buffer.length - this.limit);
      // Never start in the middle of a UTF-8 character.
      let start = 0;
      while (start < buffer.length && (buffer[start] & 0xc0) === 0x80) start += 1;
      buffer = buffer.subarray(start);
      this.truncated = true;
    }
    this.buffer = buffer;
  }

  get running() {
    return this.exitStatus === null;
  }

  kill() {
    if (!this.running) return;
    this.child.kill("SIGTERM");
    const timer = setTimeout(() => {
      if (this.running) this.child.kill("SIGKILL");
    }, 3000);
    timer.unref();
  }
}

const terminals = new Map();
let terminalCounter = 0;

function getTerminal(terminalId) {
  const terminal = terminals.get(terminalId);
  if (!terminal) throw new RequestErrorClass(-32002, `Resource not found: terminal ${terminalId}`, { terminalId });
  return terminal;
}

function killAllTerminals() {
  for (const terminal of terminals.values()) {
    if (terminal.running) terminal.child.kill("SIGKILL");
  }
}

// ---------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------

let RequestErrorClass = Error;
let agentProcess = null;

function clientCapabilities(spec) {
  if (spec && typeof spec === "object") return spec;
  if (spec === "empty") return {};
  return {
    fs: { readTextFile: true, writeTextFile: true },
    terminal: true,
    elicitation: { form: {}, url: {} },
    session: { configOptions: { boolean: {} } },
    auth: { terminal: true },
  };
}

function errorObject(err) {
  if (err instanceof RequestErrorClass) {
    const error = { code: err.code, message: err.message };
    if (err.data !== undefined) error.data = err.data;
    return error;
  }
  return { code: -32603, message: err?.message ?? String(err) };
}

function abortable(promise, signal) {
  if (!signal) return promise;
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(RequestErrorClass.requestCancelled());
    if (signal.aborted) return onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (err) => {
        signal.removeEventListener("abort", onAbort);
        reject(err);
      },
    );
  });
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const scenario = await readScenario(opts.scenario);
  const acp = await loadSdk();
  const { RequestError, methods } = acp;
  RequestErrorClass = RequestError;

  const defaultCwd = scenario.cwd ?? process.cwd();
  const policy = scenario.permission ?? "allow";
  /** Sessions whose current turn this client has cancelled. */
  const cancelledSessions = new Set();

  const argv = splitCommandLine(opts.agent);
  if (argv.length === 0) throw new Error("--agent is empty");
  const child = spawn(argv[0], argv.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
  agentProcess = child;
  const spawned = await Promise.race([
    once(child, "spawn").then(() => null),
    once(child, "error").then(([err]) => err),
  ]);
  if (spawned) throw new Error(`cannot start agent ${JSON.stringify(argv)}: ${spawned.message}`);
  child.stdin.on("error", (err) => log("agent stdin:", err.message));
  child.on("exit", (code, signal) => log(`agent exited (code ${code}, signal ${signal})`));

  /** Wraps a client-side request handler so every served request is reported. */
  const served =
    (fn) =>
    async (ctx) => {
      try {
        const answer = await fn(ctx);
        emit({ event: "request", method: ctx.method, params: ctx.params ?? null, answer: answer ?? {} });
        return answer;
      } catch (err) {
        emit({ event: "request", method: ctx.method, params: ctx.params ?? null, error: errorObject(err) });
        throw err;
      }
    };

  const pickOption = (options, kinds) => {
    for (const kind of kinds) {
      const option = options.find((o) => o.kind === kind);
      if (option) return option.optionId;
    }
    return null;
  };

  const app = acp
    .client({ name: "acpwire-ts-peer-client" })
    .onNotification(methods.client.session.update, ({ params }) => {
      emit({ event: "update", sessionId: params.sessionId, update: params.update });
    })
    .onNotification(methods.client.elicitation.complete, ({ method, params }) => {
      emit({ event: "notification", method, params: params ?? null });
    })
    .onNotification("*", ({ method, params }) => {
      emit({ event: "notification", method, params: params ?? null });
    })
    .onRequest(
      methods.client.session.requestPermission,
      served(async ({ params, agent, signal }) => {
        const cancelled = { outcome: { outcome: "cancelled" } };
        if (signal.aborted || cancelledSessions.has(params.sessionId)) return cancelled;
        if (policy === "cancel-turn") {
          cancelledSessions.add(params.sessionId);
          await agent.notify(methods.agent.session.cancel, { sessionId: params.sessionId });
          return cancelled;
        }
        const kinds = {
          allow: ["allow_once", "allow_always"],
          always: ["allow_always", "allow_once"],
          reject: ["reject_once", "reject_always"],
        }[policy];
        if (!kinds) throw new Error(`unknown permission policy ${policy}`);
        const optionId = pickOption(params.options, kinds);
        if (optionId === null) return cancelled;
        return { outcome: { outcome: "selected", optionId } };
      }),
    )
    .onRequest(
      methods.client.fs.readTextFile,
      served(async ({ params }) => {
        if (!path.isAbsolute(params.path)) {
          throw RequestError.invalidParams({ path: params.path }, "path must be absolute");
        }
        let text;
        try {
          text = await readFile(params.path, "utf8");
        } catch (err) {
          if (err.code === "ENOENT") throw RequestError.resourceNotFound(pathToFileURL(params.path).href);
          throw RequestError.internalError({ path: params.path }, err.message);
        }
        if (params.line != null || params.limit != null) {
          const lines = text.split("\n");
          const start = Math.max((params.line ?? 1) - 1, 0);
          const end = params.limit != null ? start + params.limit : lines.length;
          text = lines.slice(start, end).join("\n");
        }
        return { content: text };
      }),
    )
    .onRequest(
      methods.client.fs.writeTextFile,
      served(async ({ params }) => {
        if (!path.isAbsolute(params.path)) {
          throw RequestError.invalidParams({ path: params.path }, "path must be absolute");
        }
        try {
          await mkdir(path.dirname(params.path), { recursive: true });
          await writeFile(params.path, params.content, "utf8");
        } catch (err) {
          throw RequestError.internalError({ path: params.path }, err.message);
        }
        return {};
      }),
    )
    .onRequest(
      methods.client.terminal.create,
      served(async ({ params }) => {
        const env = { ...process.env };
        for (const variable of params.env ?? []) env[variable.name] = variable.value;
        const cwd = params.cwd ?? defaultCwd;
        const proc = spawn(params.command, params.args ?? [], { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
        const failed = await Promise.race([
          once(proc, "spawn").then(() => null),
          once(proc, "error").then(([err]) => err),
        ]);
        if (failed) {
          throw RequestError.internalError({ command: params.command }, `cannot start ${params.command}: ${failed.message}`);
        }
        terminalCounter += 1;
        const terminalId = `term_${terminalCounter}`;
        terminals.set(terminalId, new Terminal(terminalId, proc, params.outputByteLimit));
        return { terminalId };
      }),
    )
    .onRequest(
      methods.client.terminal.output,
      served(({ params }) => {
        const terminal = getTerminal(params.terminalId);
        const result = { output: terminal.buffer.toString("utf8"), truncated: terminal.truncated };
        if (terminal.exitStatus) result.exitStatus = terminal.exitStatus;
        return result;
      }),
    )
    .onRequest(
      methods.client.terminal.waitForExit,
      served(async ({ params, signal }) => {
        const terminal = getTerminal(params.terminalId);
        return abortable(terminal.exited, signal);
      }),
    )
    .onRequest(
      methods.client.terminal.kill,
      served(({ params }) => {
        getTerminal(params.terminalId).kill();
        return {};
      }),
    )
    .onRequest(
      methods.client.terminal.release,
      served(({ params }) => {
        const terminal = getTerminal(params.terminalId);
        terminal.kill();
        terminals.delete(params.terminalId);
        return {};
      }),
    )
    .onRequest(
      methods.client.elicitation.create,
      served(({ params }) => {
        if (params.mode === "form") return { action: "accept", content: { name: "acp", age: 3 } };
        if (params.mode === "url") return { action: "accept" };
        return { action: "decline" };
      }),
    )
    .onRequest(
      "*",
      served(({ method, params }) => {
        if (method === "_acpwire/ping" || method === "_acpwire/echo") return params ?? {};
        throw RequestError.methodNotFound(method);
      }),
    );

  const wire = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const stream = { writable: wire.writable, readable: oneNotificationAtATime(wire.readable) };

  await app.connectWith(stream, async (ctx) => {
    let lastSessionId = null;
    const resolveSession = (value) => (value === "$last" || value === undefined ? lastSessionId : value);

    const SESSION_METHODS = new Set([
      "session/prompt",
      "session/load",
      "session/resume",
      "session/close",
      "session/delete",
      "session/set_mode",
      "session/set_config_option",
      "session/cancel",
    ]);
    const STEP_ONLY_KEYS = new Set(["call", "text", "cancelAfterMs", "cancelRequestAfterMs"]);

    const buildParams = (step) => {
      const params = {};
      for (const [key, value] of Object.entries(step)) {
        if (!STEP_ONLY_KEYS.has(key)) params[key] = value;
      }
      const method = step.call;
      if (SESSION_METHODS.has(method)) params.sessionId = resolveSession(params.sessionId);
      switch (method) {
        case "initialize":
          params.protocolVersion ??= 1;
          params.clientCapabilities ??= clientCapabilities(scenario.clientCapabilities);
          params.clientInfo ??= {
            name: "acpwire-ts-peer-client",
            title: "acpwire peer client (TypeScript SDK)",
            version: SDK_VERSION,
          };
          break;
        case "session/new":
        case "session/load":
        case "session/resume":
          params.cwd ??= defaultCwd;
          params.mcpServers ??= [];
          break;
        case "session/prompt":
          params.prompt ??= [{ type: "text", text: step.text ?? "" }];
          break;
        case "session/set_config_option":
          if (typeof params.value === "boolean") params.type ??= "boolean";
          break;
        default:
          break;
      }
      return params;
    };

    const report = async (index, method, promise) => {
      try {
        const result = await promise;
        await settle();
        emit({ event: "response", step: index, method, result: result ?? null });
        return result;
      } catch (err) {
        if (!(err instanceof RequestError)) throw err;
        await settle();
        emit({ event: "error", step: index, method, error: errorObject(err) });
        return undefined;
      }
    };

    for (const [index, step] of scenario.steps.entries()) {
      const call = step.call;
      if (call === "ext_notify") {
        await ctx.notify(step.method, step.params ?? {});
        continue;
      }
      if (call === "ext" || call === "raw") {
        await report(index, step.method, ctx.request(step.method, call === "ext" ? (step.params ?? {}) : step.params));
        continue;
      }
      const params = buildParams(step);
      if (call === "session/cancel") {
        cancelledSessions.add(params.sessionId);
        await ctx.notify(call, params);
        continue;
      }
      if (call === "session/prompt") {
        const timers = [];
        const options = {};
        cancelledSessions.delete(params.sessionId);
        if (step.cancelAfterMs != null) {
          timers.push(
            setTimeout(() => {
              cancelledSessions.add(params.sessionId);
              ctx.notify(methods.agent.session.cancel, { sessionId: params.sessionId }).catch((err) => log("session/cancel:", err.message));
            }, step.cancelAfterMs),
          );
        }
        if (step.cancelRequestAfterMs != null) {
          const controller = new AbortController();
          options.cancellationSignal = controller.signal;
          timers.push(setTimeout(() => controller.abort(), step.cancelRequestAfterMs));
        }
        try {
          await report(index, call, ctx.request(call, params, options));
        } finally {
          timers.forEach(clearTimeout);
          cancelledSessions.delete(params.sessionId);
        }
        continue;
      }
      const result = await report(index, call, ctx.request(call, params));
      if (call === "session/new" && result?.sessionId) lastSessionId = result.sessionId;
      if ((call === "session/load" || call === "session/resume") && result) lastSessionId = params.sessionId;
    }

    // Give late notifications (after the last response) a moment to arrive.
    await new Promise((resolve) => setTimeout(resolve, 50));
    await settle();
  });
  emit({ event: "done" });
}

async function stopAgent() {
  killAllTerminals();
  const child = agentProcess;
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, "exit");
  // End of input first, so an agent can shut down cleanly (and flush, e.g. coverage
  // data); SIGTERM after a grace period, SIGKILL if it still runs.
  child.stdin.end();
  const term = setTimeout(() => child.kill("SIGTERM"), 1000);
  const kill = setTimeout(() => child.kill("SIGKILL"), 3000);
  await exited;
  clearTimeout(term);
  clearTimeout(kill);
}

function flushStdout() {
  return new Promise((resolve) => process.stdout.write("", resolve));
}

try {
  await main();
  await stopAgent();
  await flushStdout();
  process.exit(0);
} catch (err) {
  process.stderr.write(`ts_client: ${err?.stack ?? err}\n`);
  try {
    await stopAgent();
  } catch {
    // best effort
  }
  await flushStdout();
  process.exit(1);
}
