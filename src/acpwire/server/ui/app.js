// The acpwire web client: one ES module, no dependencies (docs/webui.md).
//
// Rules this file keeps:
// - Agent text never becomes markup: everything the agent sends is put on the
//   page with textContent or text nodes, never parsed as HTML.
// - The token lives in this tab only (sessionStorage), never in the URL or a
//   cookie. A browser cannot set Authorization on a WebSocket, so it goes in
//   Sec-WebSocket-Protocol ("acpwire.bearer" + "acpwire.bearer.<base64url>").
// - Every request the agent makes is answered: permission requests by the
//   person (or "cancelled" on cancel), anything else with "method not found".

const PROTOCOL_VERSION = 1;
const TOKEN_KEY = "acpwire.token";
const $ = (id) => document.getElementById(id);

let socket = null;
let nextId = 1;
const pending = new Map(); // our request id -> {resolve, reject}
const permissions = new Map(); // agent request id -> the element asking
const tools = new Map(); // toolCallId -> element
let sessionId = null;
let agentText = null; // the agent message being streamed into, a text node

function status(text) {
  $("status").textContent = text;
}

function block(cls, text) {
  const el = document.createElement("div");
  el.className = cls;
  if (text !== undefined) el.textContent = text;
  $("transcript").append(el);
  el.scrollIntoView({ block: "end" });
  return el;
}

function base64url(text) {
  let binary = "";
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function send(message) {
  socket.send(JSON.stringify({ jsonrpc: "2.0", ...message }));
}

function request(method, params) {
  const id = nextId++;
  send({ id, method, params });
  return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
}

function connect(token) {
  const url = new URL("/acp", location.href);
  url.protocol = location.protocol === "https:" ? "wss:" : "ws:";
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, ["acpwire.bearer", "acpwire.bearer." + base64url(token)]);
    ws.onopen = () => resolve(ws);
    ws.onerror = () => reject(new Error("the server refused the connection (wrong token?)"));
    ws.onmessage = (event) => receive(event.data);
    ws.onclose = (event) => {
      status(`Disconnected (${event.code}${event.reason ? ": " + event.reason : ""}).`);
      $("composer").hidden = true;
      $("signin").hidden = false;
      for (const { reject: fail } of pending.values()) fail(new Error("disconnected"));
      pending.clear();
    };
  });
}

function receive(data) {
  let message;
  try {
    message = JSON.parse(data);
  } catch {
    return;
  }
  if (message.method !== undefined && message.id !== undefined) {
    agentRequest(message);
  } else if (message.method !== undefined) {
    if (message.method === "session/update") update(message.params.update);
  } else if (pending.has(message.id)) {
    const { resolve, reject } = pending.get(message.id);
    pending.delete(message.id);
    if (message.error) reject(new Error(message.error.message));
    else resolve(message.result);
  }
}

function agentRequest(message) {
  if (message.method === "session/request_permission") {
    askPermission(message.id, message.params);
    return;
  }
  send({ id: message.id, error: { code: -32601, message: "Method not found" } });
}

function textOf(content) {
  return content && content.type === "text" ? content.text : `[${content ? content.type : "?"}]`;
}

function update(u) {
  switch (u.sessionUpdate) {
    case "agent_message_chunk":
      if (agentText === null) {
        agentText = document.createTextNode("");
        block("agent").append(agentText);
      }
      agentText.appendData(textOf(u.content));
      return;
    case "agent_thought_chunk":
      block("thought", textOf(u.content));
      break;
    case "tool_call":
    case "tool_call_update":
      tool(u);
      break;
    case "plan":
      block("note", "Plan: " + u.entries.map((e) => `${e.content} (${e.status})`).join("; "));
      break;
    default:
      return; // not shown yet (docs/webui.md lists what is left)
  }
  agentText = null;
}

function tool(u) {
  let el = tools.get(u.toolCallId);
  if (el === undefined) {
    el = block("tool");
    el.dataset.toolCallId = u.toolCallId;
    const title = document.createElement("span");
    title.className = "title";
    const state = document.createElement("span");
    state.className = "status";
    el.append(title, state);
    tools.set(u.toolCallId, el);
  }
  if (u.title) el.querySelector(".title").textContent = `${u.kind ? u.kind + ": " : ""}${u.title}`;
  if (u.status) el.querySelector(".status").textContent = u.status;
}

function askPermission(id, params) {
  const el = block("permission");
  const call = params.toolCall || {};
  const question = document.createElement("p");
  question.textContent = `Permission: ${call.title || call.toolCallId || "a tool call"}`;
  el.append(question);
  for (const option of params.options) {
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = `${option.name} (${option.kind})`;
    button.dataset.kind = option.kind;
    button.addEventListener("click", () =>
      answerPermission(id, { outcome: "selected", optionId: option.optionId }, option.name),
    );
    el.append(button);
  }
  permissions.set(id, el);
  el.querySelector("button")?.focus();
}

function answerPermission(id, outcome, shown) {
  const el = permissions.get(id);
  if (el === undefined) return;
  permissions.delete(id);
  send({ id, result: { outcome } });
  for (const button of el.querySelectorAll("button")) button.disabled = true;
  const said = document.createElement("p");
  said.className = "note";
  said.textContent = `Answered: ${shown}`;
  el.append(said);
}

async function signIn(event) {
  event.preventDefault();
  const token = $("token").value;
  status("Connecting…");
  try {
    socket = await connect(token);
    sessionStorage.setItem(TOKEN_KEY, token);
    const init = await request("initialize", {
      protocolVersion: PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
      clientInfo: { name: "acpwire-web", version: "0.1" },
    });
    const session = await request("session/new", { cwd: $("cwd").value, mcpServers: [] });
    sessionId = session.sessionId;
    const agent = init.agentInfo ? `${init.agentInfo.name} ${init.agentInfo.version}` : "the agent";
    status(`Connected to ${agent}; session ${sessionId}.`);
    $("signin").hidden = true;
    $("composer").hidden = false;
    $("prompt").focus();
  } catch (error) {
    status(`Could not connect: ${error.message}`);
    if (socket) socket.close();
  }
}

async function prompt(event) {
  event.preventDefault();
  const text = $("prompt").value;
  if (!text.trim()) return;
  $("prompt").value = "";
  block("user", text);
  agentText = null;
  $("send").disabled = true;
  $("cancel").disabled = false;
  try {
    const result = await request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text }],
    });
    block("note", `Turn ended: ${result.stopReason}.`);
  } catch (error) {
    block("error", `The turn failed: ${error.message}`);
  } finally {
    agentText = null;
    $("send").disabled = false;
    $("cancel").disabled = true;
  }
}

function cancel() {
  if (sessionId === null) return;
  send({ method: "session/cancel", params: { sessionId } });
  for (const id of [...permissions.keys()]) answerPermission(id, { outcome: "cancelled" }, "cancelled");
}

document.addEventListener("DOMContentLoaded", () => {
  $("token").value = sessionStorage.getItem(TOKEN_KEY) || "";
  $("signin").addEventListener("submit", signIn);
  $("composer").addEventListener("submit", prompt);
  $("cancel").addEventListener("click", cancel);
});
