"""``acp view``: a cassette as one self-contained HTML page (docs/recorder.md).

The page is a sequence view of the conversation: the client's messages on the left,
the agent's on the right, in recorded order, each request linked to its answer with the
latency between them; a row opens each turn (a ``session/prompt``) with its session,
prompt, stop reason and duration; tool calls show their diffs and the output of their
terminals, permission requests the options and what was chosen. Filters (session,
method, direction) and a search box work in the page itself.

How it is built, so that a recording of 100,000 messages opens at once: this module
works out every row (pairing, latency, turns, what to show of each message) and puts
the rows in the page as one JSON data block; the page's script draws the rows in
view, a few hundred at a time as the reader scrolls, and filters over the data.

Rules this module keeps:

* What came from the recording is data, never markup: in the data block every ``<``,
  ``>`` and ``&`` is a JSON escape (``\\u003c``), so nothing the agent says can close
  the block or open a tag; the script puts text in the page only as ``textContent``,
  never as HTML; the filters' options are HTML-escaped. As a second wall, the page's
  Content-Security-Policy lets no script run but the page's own (by its hash).
* Nothing is fetched: no external style, script, font or image (``default-src
  'none'``), so the page works offline and tells no server it was opened.
"""

from __future__ import annotations

import base64
import difflib
import hashlib
import html
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, cast

import msgspec

from .cassette import Cassette
from .conversation import Conversation, Step, update_kind

__all__ = ["render_html", "view_rows"]

PREVIEW_CHARS = 4000
"""File text and terminal output longer than this are cut in the row (the message's
JSON, one click away, keeps all of it)."""

Piece = list[Any]
"""What a row shows under its head: ``[css class, text]`` (a class starting ``pre ``
is preformatted text) or ``["diff", [[css class, line], ...]]``."""


def _dict(value: object) -> dict[str, Any]:
    return cast("dict[str, Any]", value) if isinstance(value, dict) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _cut(text: str) -> str:
    if len(text) <= PREVIEW_CHARS:
        return text
    return text[:PREVIEW_CHARS] + f"\n… ({len(text) - PREVIEW_CHARS} more characters)"


def _text_of(blocks: object) -> str:
    """The text of a content block or a list of them (other blocks by their type)."""
    parts: list[str] = []
    for block in _list(blocks) if isinstance(blocks, list) else [blocks]:
        b = _dict(block)
        if b.get("type") == "text" and isinstance(b.get("text"), str):
            parts.append(b["text"])
        elif b.get("type") == "resource_link":
            parts.append(f"[{b.get('name') or b.get('uri')}]")
        elif b:
            parts.append(f"[{b.get('type')}]")
    return "".join(parts)


def _diff(item: dict[str, Any]) -> Piece:
    old = item.get("oldText")
    new = item.get("newText")
    path = str(item.get("path", "?"))
    lines = difflib.unified_diff(
        (old if isinstance(old, str) else "").splitlines(),
        (new if isinstance(new, str) else "").splitlines(),
        path,
        path,
        lineterm="",
        n=2,
    )
    out: list[list[str]] = []
    for line in lines:
        cls = "add" if line.startswith("+") else "del" if line.startswith("-") else "ctx"
        if line.startswith(("+++", "---", "@@")):
            cls = "hunk"
        out.append([cls, line])
    return ["diff", out]


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 10 else f"{seconds:.2f} s"


@dataclass
class _Context:
    """What one message's rows need from the rest of the recording."""

    steps: list[Step]
    terminal_output: dict[str, str] = field(default_factory=dict[str, str])
    turns: dict[int, int] = field(default_factory=dict[int, int])
    """A ``session/prompt`` request's index -> its turn number in its session."""


def _gather(conversation: Conversation) -> _Context:
    ctx = _Context(conversation.steps)
    per_session: dict[str | None, int] = {}
    for step in conversation.steps:
        if step.kind == "request" and step.method == "session/prompt":
            per_session[step.session] = per_session.get(step.session, 0) + 1
            ctx.turns[step.index] = per_session[step.session]
        if step.kind == "response" and step.method == "terminal/output":
            if step.answers is None:
                continue
            terminal = _dict(conversation.steps[step.answers].msg.get("params")).get("terminalId")
            output = _dict(step.msg.get("result")).get("output")
            if isinstance(terminal, str) and isinstance(output, str):
                ctx.terminal_output[terminal] = output
    return ctx


def _tool_call(update: dict[str, Any], ctx: _Context) -> list[Piece]:
    head = " · ".join(
        str(update[k]) for k in ("title", "kind", "status") if isinstance(update.get(k), str)
    )
    pieces: list[Piece] = [["tool", f"tool call {update.get('toolCallId', '')} {head}"]]
    for location in _list(update.get("locations")):
        pieces.append(["loc", str(_dict(location).get("path", ""))])
    for item in _list(update.get("content")):
        item = _dict(item)
        if item.get("type") == "diff":
            pieces.append(_diff(item))
        elif item.get("type") == "terminal":
            terminal = str(item.get("terminalId", ""))
            pieces.append(["loc", f"terminal {terminal}"])
            if terminal in ctx.terminal_output:
                pieces.append(["pre term", _cut(ctx.terminal_output[terminal])])
        elif item.get("type") == "content":
            pieces.append(["pre text", _cut(_text_of(item.get("content")))])
    return pieces


def _update(params: dict[str, Any], ctx: _Context) -> list[Piece]:
    update = _dict(params.get("update"))
    kind = update.get("sessionUpdate")
    if kind in ("agent_message_chunk", "user_message_chunk", "agent_thought_chunk"):
        return [[f"say {kind}", _text_of(update.get("content"))]]
    if kind in ("tool_call", "tool_call_update"):
        return _tool_call(update, ctx)
    if kind == "plan":
        return [
            ["plan", f"[{_dict(x).get('status', '')}] {_dict(x).get('content', '')}"]
            for x in _list(update.get("entries"))
        ]
    return []


def _permission_choice(request: Step, answer: Step | None) -> str:
    if answer is None:
        return "no answer recorded"
    if "error" in answer.msg:
        return "error"
    outcome = _dict(_dict(answer.msg.get("result")).get("outcome"))
    if outcome.get("outcome") != "selected":
        return str(outcome.get("outcome", "?"))
    chosen = outcome.get("optionId")
    for option in _list(_dict(request.msg.get("params")).get("options")):
        if _dict(option).get("optionId") == chosen:
            return f"{_dict(option).get('name', chosen)} ({chosen})"
    return str(chosen)


def _request_pieces(step: Step, ctx: _Context) -> list[Piece]:
    params = _dict(step.msg.get("params"))
    method = step.method
    if method == "session/prompt":
        return [["say prompt", _text_of(params.get("prompt"))]]
    if method == "session/update":
        return _update(params, ctx)
    if method == "session/request_permission":
        answer = ctx.steps[step.answer] if step.answer is not None else None
        tool = _dict(params.get("toolCall"))
        options = ", ".join(
            str(_dict(o).get("name", _dict(o).get("optionId", "")))
            for o in _list(params.get("options"))
        )
        return [
            ["perm", f"permission for {tool.get('title') or tool.get('toolCallId', '')}"],
            ["perm", f"options: {options}"],
            ["perm", f"chosen: {_permission_choice(step, answer)}"],
        ]
    if method in ("fs/read_text_file", "fs/write_text_file"):
        pieces: list[Piece] = [["loc", str(params.get("path", ""))]]
        if isinstance(params.get("content"), str):
            pieces.append(["pre file", _cut(params["content"])])
        return pieces
    if method == "terminal/create":
        argv = [params.get("command", ""), *_list(params.get("args"))]
        return [["loc", "$ " + " ".join(str(a) for a in argv)]]
    if method in ("session/new", "session/load") and isinstance(params.get("cwd"), str):
        return [["loc", params["cwd"]]]
    return []


def _response_pieces(step: Step, ctx: _Context) -> list[Piece]:
    error = step.msg.get("error")
    if isinstance(error, dict):
        error = cast("dict[str, Any]", error)
        return [["err", f"error {error.get('code')}: {error.get('message', '')}"]]
    result = _dict(step.msg.get("result"))
    method = step.method
    if method == "session/prompt":
        return [["loc", f"stop: {result.get('stopReason', '?')}"]]
    if method == "session/request_permission" and step.answers is not None:
        return [["perm", f"chosen: {_permission_choice(ctx.steps[step.answers], step)}"]]
    if method == "session/new":
        return [["loc", f"session {result.get('sessionId', '')}"]]
    if method == "fs/read_text_file" and isinstance(result.get("content"), str):
        return [["pre file", _cut(result["content"])]]
    if method == "terminal/output" and isinstance(result.get("output"), str):
        return [["pre term", _cut(result["output"])]]
    if method == "terminal/wait_for_exit":
        return [["loc", f"exit: {result.get('exitCode')}"]]
    return []


def _label(step: Step) -> str:
    name = step.method or "response"
    if step.kind == "response":
        return f"{name} ⟵ answer" if step.sender == "agent" else f"{name} answer ⟶"
    kind = update_kind(step.msg)
    return f"{name} {kind}" if kind else name


def _message_row(step: Step, ctx: _Context, t0: float) -> dict[str, Any]:
    row: dict[str, Any] = {
        "k": "msg",
        "f": step.sender,
        "s": step.session or "",
        "m": step.method or "",
        "t": f"{step.t - t0:+.3f}s",
        "n": step.index,
        "kind": step.kind,
        "label": _label(step),
        "body": _response_pieces(step, ctx)
        if step.kind == "response"
        else _request_pieces(step, ctx),
        "msg": step.msg,
    }
    if "id" in step.msg:
        row["id"] = msgspec.json.encode(step.msg["id"]).decode()
    if step.answer is not None:
        answer = ctx.steps[step.answer]
        row["pair"] = [answer.index, f"answered after {_ms(answer.t - step.t)}"]
    elif step.answers is not None:
        asked = ctx.steps[step.answers]
        row["pair"] = [asked.index, f"answers #{asked.index} after {_ms(step.t - asked.t)}"]
    elif step.kind == "request":
        row["open"] = "no answer recorded"
    return row


def _turn_row(step: Step, ctx: _Context, t0: float) -> dict[str, Any]:
    answer = ctx.steps[step.answer] if step.answer is not None else None
    prompt = _text_of(_dict(step.msg.get("params")).get("prompt"))
    end = ""
    if answer is not None:
        stop = _dict(answer.msg.get("result")).get("stopReason", "error")
        end = f" · {stop} after {_ms(answer.t - step.t)}"
    text = f"turn {ctx.turns[step.index]} of session {step.session or '?'}: {prompt[:200]}{end}"
    return {
        "k": "turn",
        "f": "",
        "s": step.session or "",
        "m": "session/prompt",
        "t": f"{step.t - t0:+.3f}s",
        "text": text,
    }


def _other_row(record: dict[str, Any], t0: float) -> dict[str, Any]:
    kind = record.get("type")
    t = record.get("t")
    if kind == "raw":
        text = f"{record.get('from', '?')} wrote a line that is not JSON: {record.get('raw', '')}"
    elif kind == "oversize":
        size = record.get("size")
        text = f"{record.get('from', '?')} sent a message too large to keep ({size} bytes)"
    else:
        fields = {k: v for k, v in record.items() if k not in ("type", "t", "wall", "event")}
        text = f"{record.get('event', kind)} {msgspec.json.encode(fields).decode()}"
    return {
        "k": "event",
        "f": "event",
        "s": "",
        "m": "",
        "t": f"{float(t) - t0:+.3f}s" if isinstance(t, (int, float)) else "",
        "text": text,
    }


def view_rows(cassette: Cassette) -> list[dict[str, Any]]:
    """The rows of the page, in order: ``k`` (``msg``, ``turn`` or ``event``), ``f``
    (direction), ``s`` (session), ``m`` (method), ``t`` (time since the first message),
    and for a message ``n`` (its number), ``kind``, ``label``, ``id``, ``pair`` (the
    number of the message it answers or that answers it, and the latency) or ``open``,
    ``body`` (pieces, see :data:`Piece`) and ``msg``; for the others ``text``."""
    conversation = Conversation.from_cassette(cassette)
    ctx = _gather(conversation)
    steps = iter(conversation.steps)
    t0 = conversation.steps[0].t if conversation.steps else 0.0
    rows: list[dict[str, Any]] = []
    for record in cassette.records:
        kind = record.get("type")
        if kind == "info":
            continue
        if kind == "message":
            if not isinstance(record.get("msg"), dict) or record.get("from") not in (
                "client",
                "agent",
            ):
                continue
            step = next(steps)
            if step.index in ctx.turns:
                rows.append(_turn_row(step, ctx, t0))
            rows.append(_message_row(step, ctx, t0))
        else:
            rows.append(_other_row(record, t0))
    return rows


def _summary(cassette: Cassette, conversation_rows: list[dict[str, Any]]) -> str:
    header = cassette.header
    info = cassette.info
    rows: list[tuple[str, object]] = [("file", cassette.path.name)]
    rows += [(k, header[k]) for k in ("created", "mode", "url", "recorder") if k in header]
    if isinstance(header.get("command"), list):
        rows.append(("command", " ".join(str(a) for a in header["command"])))
    if "protocolVersion" in info:
        rows.append(("protocol", info["protocolVersion"]))
    for side in ("client", "agent"):
        about = _dict(info.get(f"{side}Info"))
        if about:
            rows.append((side, f"{about.get('name', '?')} {about.get('version', '')}".strip()))
    messages = [r for r in conversation_rows if r["k"] == "msg"]
    rows.append(("messages", len(messages)))
    rows.append(("sessions", len({r["s"] for r in messages if r["s"]})))
    rows.append(("duration", messages[-1]["t"].lstrip("+") if messages else "0.000s"))
    if cassette.truncated:
        rows.append(("note", "the recording ends in the middle of a record (cut short)"))
    return "".join(f'<dt>{_e(k)}</dt><dd id="sum-{_e(k)}">{_e(v)}</dd>' for k, v in rows)


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _options(values: Iterable[str]) -> str:
    return "".join(f'<option value="{_e(v)}">{_e(v)}</option>' for v in sorted(set(values)) if v)


def _data_block(rows: list[dict[str, Any]]) -> str:
    """The rows as JSON that cannot end the ``<script>`` element it sits in."""
    data = msgspec.json.encode(rows)
    for char, escape in ((b"<", b"\\u003c"), (b">", b"\\u003e"), (b"&", b"\\u0026")):
        data = data.replace(char, escape)
    return data.decode()


STYLE = """
body{font:13px/1.4 system-ui,sans-serif;margin:0;background:#fafafa;color:#222}
header{padding:8px 16px;background:#263238;color:#eceff1}
header dl{display:grid;grid-template-columns:max-content 1fr;gap:0 12px;margin:4px 0}
header dt{color:#90a4ae}header dd{margin:0;word-break:break-all}
nav{position:sticky;top:0;background:#eceff1;padding:6px 16px;border-bottom:1px solid #ccc;z-index:1}
nav select,nav input{margin-right:8px}
.lanes,.row{display:grid;grid-template-columns:70px 1fr 1fr;gap:8px;padding:2px 16px}
.lanes{font-weight:bold;color:#555}
.t{color:#888;font:11px monospace;text-align:right;padding-top:4px}
.bubble{border:1px solid #ccc;border-radius:6px;padding:4px 8px;background:#fff;min-width:0}
.client .bubble{grid-column:2;border-left:4px solid #1e88e5}
.agent .bubble{grid-column:3;border-right:4px solid #43a047}
.response .bubble{background:#f5f5f5}
.turn .bubble,.event .bubble{grid-column:2/4;background:#fff8e1;border-color:#ffcc80}
.event .bubble{background:#eee;border-color:#ddd;color:#555;font-size:12px}
.head .n{color:#999}.method{font-weight:bold}.id{color:#777;font-family:monospace}
.pair{float:right;color:#6a1b9a;font-size:12px}.pair.open{color:#c62828}
pre{white-space:pre-wrap;word-break:break-all;margin:4px 0;font:12px monospace;
background:#f7f7f7;padding:4px;max-height:24em;overflow:auto}
pre.term{background:#212121;color:#e0e0e0}
.diff .add{color:#1b5e20;background:#e8f5e9}.diff .del{color:#b71c1c;background:#ffebee}
.diff .hunk{color:#777}.diff span{display:block}
.say{white-space:pre-wrap}.agent_thought_chunk{color:#777;font-style:italic}
.perm{background:#f3e5f5;padding:0 6px}.err{color:#c62828}
.tool{border-top:1px dashed #ccc;margin-top:2px}.loc,.plan{font-family:monospace;color:#555}
details summary{color:#888;cursor:pointer;font-size:11px}
.row:target .bubble{outline:2px solid #6a1b9a}
#more{height:1px}
"""

SCRIPT = """
'use strict';
let rows = JSON.parse(document.getElementById('acp-data').textContent);
const rowOf = new Map();
function index() {
  rowOf.clear();
  rows.forEach((r, i) => { if (r.k === 'msg') rowOf.set(r.n, i); });
}
index();
const pick = (id) => document.getElementById(id);
const seq = pick('seq'), more = pick('more'), CHUNK = 200;
let list = [], drawn = 0;
function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}
function piece(p) {
  if (p[0] === 'diff') {
    const pre = el('pre', 'diff');
    for (const [cls, line] of p[1]) pre.append(el('span', cls, line));
    return pre;
  }
  const pre = p[0].startsWith('pre ');
  return el(pre ? 'pre' : 'div', pre ? p[0].slice(4) : p[0], p[1]);
}
function jump(n, event) {
  event.preventDefault();
  if (!list.includes(rowOf.get(n))) { reset(); }
  while (!pick('m' + n) && drawn < list.length) draw();
  location.hash = 'm' + n;
}
function render(r) {
  const row = el('div', ['row', r.k, r.f, r.kind].filter(Boolean).join(' '));
  row.append(el('span', 't', r.t));
  const bubble = el('div', 'bubble');
  row.append(bubble);
  if (r.k !== 'msg') { bubble.textContent = r.text; return row; }
  row.id = 'm' + r.n;
  const head = el('div', 'head');
  head.append(el('span', 'n', '#' + r.n), ' ', el('span', 'method', r.label));
  if (r.id !== undefined) head.append(' ', el('span', 'id', 'id ' + r.id));
  if (r.pair) {
    const a = el('a', 'pair', r.pair[1]);
    a.href = '#m' + r.pair[0];
    a.addEventListener('click', (event) => jump(r.pair[0], event));
    head.append(' ', a);
  } else if (r.open) head.append(' ', el('span', 'pair open', r.open));
  bubble.append(head);
  for (const p of r.body) bubble.append(piece(p));
  const details = el('details');
  details.append(el('summary', '', 'JSON'));
  details.addEventListener('toggle', () => {
    if (details.open && !details.querySelector('pre')) {
      details.append(el('pre', '', JSON.stringify(r.msg, null, 2)));
    }
  });
  bubble.append(details);
  return row;
}
function draw() {
  const end = Math.min(list.length, drawn + CHUNK);
  const part = document.createDocumentFragment();
  for (; drawn < end; drawn++) part.append(render(rows[list[drawn]]));
  seq.append(part);
}
function fill() {
  while (drawn < list.length && more.getBoundingClientRect().top < innerHeight + 1500) draw();
}
const texts = [];
function haystack(i) {
  if (texts[i] === undefined) {
    const r = rows[i];
    const parts = [r.label || '', r.text || '', r.msg ? JSON.stringify(r.msg) : ''];
    for (const p of r.body || []) parts.push(p[0] === 'diff' ? p[1].map((x) => x[1]).join(' ') : p[1]);
    texts[i] = parts.join(' ').toLowerCase();
  }
  return texts[i];
}
function apply() {
  const s = pick('f-session').value, m = pick('f-method').value, f = pick('f-from').value;
  const q = pick('f-search').value.toLowerCase();
  list = [];
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i];
    if ((s && r.s !== s) || (m && r.m !== m) || (f && r.f !== f)) continue;
    if (q && !haystack(i).includes(q)) continue;
    list.push(i);
  }
  seq.replaceChildren();
  drawn = 0;
  pick('shown').textContent = list.length + ' of ' + rows.length + ' rows';
  draw();
  fill();
}
function reset() {
  for (const id of ['f-session', 'f-method', 'f-from', 'f-search']) pick(id).value = '';
  apply();
}
let pending;
for (const id of ['f-session', 'f-method', 'f-from', 'f-search']) {
  pick(id).addEventListener('input', () => { clearTimeout(pending); pending = setTimeout(apply, 120); });
}
addEventListener('scroll', fill, { passive: true });
addEventListener('resize', fill);
apply();
document.body.dataset.readyMs = Math.round(performance.now());
function options() {
  for (const [id, key] of [['f-session', 's'], ['f-method', 'm']]) {
    const select = pick(id), have = new Set(Array.from(select.options, (o) => o.value));
    for (const r of rows) {
      if (r.k !== 'msg' || !r[key] || have.has(r[key])) continue;
      have.add(r[key]);
      const option = el('option', '', r[key]);
      option.value = r[key];
      select.append(option);
    }
  }
}
async function follow() {
  let answer;
  try {
    answer = await fetch('rows?size=' + document.body.dataset.size, { cache: 'no-store' });
  } catch (e) { return; }
  if (answer.status !== 200) return;
  const data = await answer.json();
  const atEnd = innerHeight + scrollY >= document.documentElement.scrollHeight - 50;
  const before = drawn;
  document.body.dataset.size = data.size;
  rows = data.rows;
  index();
  texts.length = 0;
  options();
  const messages = rows.filter((r) => r.k === 'msg');
  pick('sum-messages').textContent = messages.length;
  pick('sum-sessions').textContent = new Set(messages.map((r) => r.s).filter(Boolean)).size;
  if (messages.length) pick('sum-duration').textContent = messages[messages.length - 1].t.slice(1);
  apply();
  while (drawn < Math.min(before, list.length) || (atEnd && drawn < list.length)) draw();
  if (atEnd) scrollTo(0, document.documentElement.scrollHeight);
}
if (document.body.dataset.follow) setInterval(follow, 1000);
"""


def render_html(cassette: Cassette, *, follow_size: int | None = None) -> str:
    """The page for ``cassette`` (module docstring). With ``follow_size`` (the size of
    the cassette when it was read), the page asks its server every second for the rows
    of a cassette that has grown (``rows?size=N``: :mod:`.view_server`)."""
    rows = view_rows(cassette)
    script_hash = base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()
    policy = f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{script_hash}'"
    body = "<body>"
    if follow_size is not None:
        policy += "; connect-src 'self'"
        body = f'<body data-follow="1" data-size="{follow_size}">'
    title = f"ACP recording {cassette.path.name}"
    messages = [r for r in rows if r["k"] == "msg"]
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_e(policy)}">'
        f"<title>{_e(title)}</title><style>{STYLE}</style></head>{body}"
        f"<header><b>{_e(title)}</b><dl>{_summary(cassette, rows)}</dl></header>"
        '<nav id="filters"><select id="f-session"><option value="">all sessions</option>'
        f"{_options(r['s'] for r in messages)}</select>"
        '<select id="f-method"><option value="">all methods</option>'
        f"{_options(r['m'] for r in messages)}</select>"
        '<select id="f-from"><option value="">both directions</option>'
        '<option value="client">client → agent</option>'
        '<option value="agent">agent → client</option>'
        '<option value="event">recorder events</option></select>'
        '<input id="f-search" type="search" placeholder="search"> <span id="shown"></span>'
        '</nav><div class="lanes"><span></span><span>client</span><span>agent</span></div>'
        '<main id="seq"></main><div id="more"></div>'
        f'<script type="application/json" id="acp-data">{_data_block(rows)}</script>'
        f"<script>{SCRIPT}</script></body></html>\n"
    )
