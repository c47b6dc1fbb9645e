// What the TypeScript SDK client peers share: where the SDK is installed, their
// JSON-lines output, their command line, and starting the agent under test.
// The SDK is loaded from $ACPWIRE_NPM_DIR/node_modules (default <repo>/.cache/npm).

import { spawn } from "node:child_process";
import { once } from "node:events";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const NPM_DIR = process.env.ACPWIRE_NPM_DIR || path.join(HERE, "..", "..", "..", ".cache", "npm");

/** Print one event as a JSON line on stdout (the test reads these). */
export function emit(event) {
  process.stdout.write(`${JSON.stringify(event)}\n`);
}

/** The SDK module at `entry` (e.g. "@agentclientprotocol/sdk/unstable"). */
export async function importSdk(entry) {
  const require = createRequire(path.join(NPM_DIR, "package.json"));
  return import(pathToFileURL(require.resolve(entry)).href);
}

/**
 * `--agent CMD` (required), `--cwd DIR` (default: the current directory), and the
 * extra options: `values` maps each to its default, `lists` names repeatable ones.
 */
export function parseArgs(argv, { values = {}, lists = [] } = {}) {
  const opts = { cwd: process.cwd(), ...values };
  for (const name of lists) opts[name] = [];
  for (let i = 0; i < argv.length; i += 1) {
    const name = argv[i].startsWith("--") ? argv[i].slice(2) : "";
    if (lists.includes(name)) opts[name].push(argv[++i]);
    else if (name === "agent" || name in opts) opts[name] = argv[++i];
    else throw new Error(`unknown argument ${argv[i]}`);
  }
  if (!opts.agent) throw new Error("--agent is required");
  return opts;
}

/** A command line split into words (double or single quotes group). */
export function words(commandLine) {
  return commandLine.match(/(?:[^\s"']+|"[^"]*"|'[^']*')+/g).map((w) => w.replace(/^["']|["']$/g, ""));
}

/** The agent started from `argv` with piped stdin/stdout; throws if it cannot start. */
export async function spawnAgent(argv) {
  const child = spawn(argv[0], argv.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
  const failed = await Promise.race([once(child, "spawn").then(() => null), once(child, "error").then(([e]) => e)]);
  if (failed) throw new Error(`cannot start agent: ${failed.message}`);
  return child;
}
