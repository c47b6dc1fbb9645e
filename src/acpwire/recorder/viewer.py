"""``acp view``: a cassette as one self-contained HTML page (docs/recorder.md).

The page is a sequence view of the conversation: the client's messages on the left,
the agent's on the right, in recorded order, each request linked to its answer with the
latency between them; a row opens each turn (a ``session/prompt``) with its session,
prompt, stop reason and duration; tool calls show their diffs and the output of their
terminals, permission requests the options and what was chosen. Filters (session,
method, direction) and a search box work in the page itself.

Rules this module keeps:

* Everything that came from the recording is text, never markup: each value goes
  through :func:`html.escape` on its way into the page (the agent can say
  ``<script>``, and the page shows it). As a second wall, the page's
  Content-Security-Policy lets no script run but the page's own (by its hash).
* Nothing is fetched: no external style, script, font or image (``default-src
  'none'``), so the page works offline and tells no server it was opened.
"""

from __future__ import annotations

import base64
import difflib
import hashlib
import html
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, cast

from .cassette import Cassette
from .conversation import Conversation, Step, update_kind

__all__ = ["render_html"]

PREVIEW_CHARS = 4000
"""File text and terminal output longer than this are cut in the page (the JSON of
the message, one click away, keeps all of it)."""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _dict(value: object) -> dict[str, Any]:
    return cast("dict[str, Any]", value) if isinstance(value, dict) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _cut(text: str) -> str:
    if len(text) <= PREVIEW_CHARS:
        return text
    return text[:PREVIEW_CHARS] + f"\n… ({len(text) - PREVIEW_CHARS} more characters)"


def _pre(text: str, cls: str) -> str:
    return f'<pre class="{cls}">{_e(_cut(text))}</pre>'


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


def _diff(item: dict[str, Any]) -> str:
    old = item.get("oldText") if isinstance(item.get("oldText"), str) else ""
    new = item.get("newText") if isinstance(item.get("newText"), str) else ""
    path = str(item.get("path", "?"))
    lines = difflib.unified_diff(
        str(old).splitlines(), str(new).splitlines(), path, path, lineterm="", n=2
    )
    out: list[str] = []
    for line in lines:
        cls = "add" if line.startswith("+") else "del" if line.startswith("-") else "ctx"
        if line.startswith(("+++", "---", "@@")):
            cls = "hunk"
        out.append(f'<span class="{cls}">{_e(line)}</span>')
    return f'<pre class="diff">{chr(10).join(out)}</pre>'


@dataclass
class _Context:
    """What one message's rendering needs from the rest of the recording."""

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
        if (
            step.kind == "response"
            and step.method == "terminal/output"
            and step.answers is not None
        ):
            terminal = _dict(conversation.steps[step.answers].msg.get("params")).get("terminalId")
            output = _dict(step.msg.get("result")).get("output")
            if isinstance(terminal, str) and isinstance(output, str):
                ctx.terminal_output[terminal] = output
    return ctx


def _tool_call(update: dict[str, Any], ctx: _Context) -> str:
    head = " · ".join(
        _e(update[k]) for k in ("title", "kind", "status") if isinstance(update.get(k), str)
    )
    out = [f'<div class="tool">tool call <code>{_e(update.get("toolCallId", ""))}</code> {head}']
    for location in _list(update.get("locations")):
        out.append(f'<div class="loc">{_e(_dict(location).get("path", ""))}</div>')
    for item in _list(update.get("content")):
        item = _dict(item)
        if item.get("type") == "diff":
            out.append(_diff(item))
        elif item.get("type") == "terminal":
            terminal = str(item.get("terminalId", ""))
            out.append(f'<div class="loc">terminal <code>{_e(terminal)}</code></div>')
            if terminal in ctx.terminal_output:
                out.append(_pre(ctx.terminal_output[terminal], "term"))
        elif item.get("type") == "content":
            out.append(_pre(_text_of(item.get("content")), "text"))
    out.append("</div>")
    return "".join(out)


def _update(params: dict[str, Any], ctx: _Context) -> str:
    update = _dict(params.get("update"))
    kind = update.get("sessionUpdate")
    if kind in ("agent_message_chunk", "user_message_chunk", "agent_thought_chunk"):
        return f'<div class="say {_e(kind)}">{_e(_text_of(update.get("content")))}</div>'
    if kind in ("tool_call", "tool_call_update"):
        return _tool_call(update, ctx)
    if kind == "plan":
        entries = "".join(
            f"<li>[{_e(_dict(x).get('status', ''))}] {_e(_dict(x).get('content', ''))}</li>"
            for x in _list(update.get("entries"))
        )
        return f'<ul class="plan">{entries}</ul>'
    return ""


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


def _request_body(step: Step, ctx: _Context) -> str:
    params = _dict(step.msg.get("params"))
    method = step.method
    if method == "session/prompt":
        return f'<div class="say prompt">{_e(_text_of(params.get("prompt")))}</div>'
    if method == "session/update":
        return _update(params, ctx)
    if method == "session/request_permission":
        answer = ctx.steps[step.answer] if step.answer is not None else None
        tool = _dict(params.get("toolCall"))
        options = ", ".join(
            _e(_dict(o).get("name", _dict(o).get("optionId", "")))
            for o in _list(params.get("options"))
        )
        chose = _e(_permission_choice(step, answer))
        return (
            f'<div class="perm">permission for {_e(tool.get("title") or tool.get("toolCallId", ""))}'
            f"<br>options: {options}<br>chosen: <b>{chose}</b></div>"
        )
    if method in ("fs/read_text_file", "fs/write_text_file"):
        text = f'<div class="loc">{_e(params.get("path", ""))}</div>'
        if isinstance(params.get("content"), str):
            text += _pre(params["content"], "file")
        return text
    if method == "terminal/create":
        argv = [params.get("command", ""), *_list(params.get("args"))]
        return f'<div class="loc">$ {_e(" ".join(str(a) for a in argv))}</div>'
    if method in ("session/new", "session/load") and isinstance(params.get("cwd"), str):
        return f'<div class="loc">{_e(params["cwd"])}</div>'
    return ""


def _response_body(step: Step, ctx: _Context) -> str:
    error = step.msg.get("error")
    if isinstance(error, dict):
        error = cast("dict[str, Any]", error)
        return (
            f'<div class="err">error {_e(error.get("code"))}: {_e(error.get("message", ""))}</div>'
        )
    result = _dict(step.msg.get("result"))
    method = step.method
    if method == "session/prompt":
        return f'<div class="loc">stop: <b>{_e(result.get("stopReason", "?"))}</b></div>'
    if method == "session/request_permission" and step.answers is not None:
        chose = _permission_choice(ctx.steps[step.answers], step)
        return f'<div class="perm">chosen: <b>{_e(chose)}</b></div>'
    if method == "session/new":
        return f'<div class="loc">session <code>{_e(result.get("sessionId", ""))}</code></div>'
    if method == "fs/read_text_file" and isinstance(result.get("content"), str):
        return _pre(result["content"], "file")
    if method == "terminal/output" and isinstance(result.get("output"), str):
        return _pre(result["output"], "term")
    if method == "terminal/wait_for_exit":
        return f'<div class="loc">exit: {_e(result.get("exitCode"))}</div>'
    return ""


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 10 else f"{seconds:.2f} s"


def _label(step: Step) -> str:
    kind = update_kind(step.msg)
    name = step.method or "response"
    if step.kind == "response":
        return f"{name} ⟵ answer" if step.sender == "agent" else f"{name} answer ⟶"
    return f"{name} {kind}" if kind else name


def _message_row(step: Step, ctx: _Context, t0: float) -> str:
    body = _response_body(step, ctx) if step.kind == "response" else _request_body(step, ctx)
    pairing = ""
    if step.answer is not None:
        answer = ctx.steps[step.answer]
        pairing = (
            f'<a class="pair" href="#m{answer.index}">answered after {_ms(answer.t - step.t)}</a>'
        )
    elif step.answers is not None:
        asked = ctx.steps[step.answers]
        pairing = (
            f'<a class="pair" href="#m{asked.index}">answers #{asked.index} after '
            f"{_ms(step.t - asked.t)}</a>"
        )
    elif step.kind == "request":
        pairing = '<span class="pair open">no answer recorded</span>'
    msg_id = (
        f' <span class="id">id {_e(json.dumps(step.msg["id"]))}</span>' if "id" in step.msg else ""
    )
    pretty = json.dumps(step.msg, indent=2, ensure_ascii=False)
    return (
        f'<div class="row msg {step.sender} {step.kind}" id="m{step.index}" '
        f'data-from="{step.sender}" data-session="{_e(step.session or "")}" '
        f'data-method="{_e(step.method or "")}">'
        f'<span class="t">{step.t - t0:+.3f}s</span>'
        f'<div class="bubble"><div class="head"><span class="n">#{step.index}</span> '
        f'<span class="method">{_e(_label(step))}</span>{msg_id} {pairing}</div>'
        f"{body}<details><summary>JSON</summary><pre>{_e(pretty)}</pre></details></div></div>"
    )


def _turn_row(step: Step, ctx: _Context, t0: float) -> str:
    answer = ctx.steps[step.answer] if step.answer is not None else None
    prompt = _text_of(_dict(step.msg.get("params")).get("prompt"))
    end = ""
    if answer is not None:
        stop = _dict(answer.msg.get("result")).get("stopReason", "error")
        end = f" · {_e(stop)} after {_ms(answer.t - step.t)}"
    return (
        f'<div class="row turn" data-from="" data-session="{_e(step.session or "")}" '
        f'data-method="session/prompt"><span class="t">{step.t - t0:+.3f}s</span>'
        f'<div class="bubble">turn {ctx.turns[step.index]} of session '
        f"<code>{_e(step.session or '?')}</code>: {_e(prompt[:200])}{end}</div></div>"
    )


def _other_row(record: dict[str, Any], t0: float) -> str:
    kind = record.get("type")
    t = record.get("t")
    when = f"{float(t) - t0:+.3f}s" if isinstance(t, (int, float)) else ""
    if kind == "raw":
        text = f"{record.get('from', '?')} wrote a line that is not JSON: {record.get('raw', '')}"
    elif kind == "oversize":
        text = f"{record.get('from', '?')} sent a message too large to keep ({record.get('size')} bytes)"
    else:
        fields = {k: v for k, v in record.items() if k not in ("type", "t", "wall", "event")}
        text = f"{record.get('event', kind)} {json.dumps(fields, ensure_ascii=False)}"
    return (
        f'<div class="row event" data-from="event" data-session="" data-method="">'
        f'<span class="t">{_e(when)}</span><div class="bubble">{_e(text)}</div></div>'
    )


def _options(values: Iterable[str]) -> str:
    return "".join(f'<option value="{_e(v)}">{_e(v)}</option>' for v in sorted(set(values)) if v)


def _summary(cassette: Cassette, conversation: Conversation) -> str:
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
    sessions = {s.session for s in conversation.steps if s.session}
    rows.append(("messages", len(conversation.steps)))
    rows.append(("sessions", len(sessions)))
    if conversation.steps:
        rows.append(("duration", _ms(conversation.steps[-1].t - conversation.steps[0].t)))
    if cassette.truncated:
        rows.append(("note", "the recording ends in the middle of a record (cut short)"))
    return "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in rows)


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
.perm{background:#f3e5f5;padding:2px 6px}.err{color:#c62828}
.tool{border-top:1px dashed #ccc;margin-top:2px}.loc{font-family:monospace;color:#555}
details summary{color:#888;cursor:pointer;font-size:11px}
.row:target .bubble{outline:2px solid #6a1b9a}
.row[hidden]{display:none}
"""

SCRIPT = """
const rows = Array.from(document.querySelectorAll('#seq .row'));
const pick = (id) => document.getElementById(id);
const texts = new Map();
function apply() {
  const s = pick('f-session').value, m = pick('f-method').value, f = pick('f-from').value;
  const q = pick('f-search').value.toLowerCase();
  let shown = 0;
  for (const r of rows) {
    let ok = (!s || r.dataset.session === s) && (!m || r.dataset.method === m) &&
      (!f || r.dataset.from === f);
    if (ok && q) {
      if (!texts.has(r)) texts.set(r, r.textContent.toLowerCase());
      ok = texts.get(r).includes(q);
    }
    r.hidden = !ok;
    if (ok) shown++;
  }
  pick('shown').textContent = shown + ' of ' + rows.length + ' shown';
}
for (const id of ['f-session', 'f-method', 'f-from', 'f-search']) {
  pick(id).addEventListener('input', apply);
}
apply();
"""


def render_html(cassette: Cassette) -> str:
    """The page for ``cassette`` (module docstring)."""
    conversation = Conversation.from_cassette(cassette)
    ctx = _gather(conversation)
    steps = iter(conversation.steps)
    t0 = conversation.steps[0].t if conversation.steps else 0.0
    rows: list[str] = []
    for record in cassette.records:
        kind = record.get("type")
        if kind == "info":
            continue
        if kind == "message":
            msg = record.get("msg")
            if not isinstance(msg, dict) or record.get("from") not in ("client", "agent"):
                continue
            step = next(steps)
            if step.index in ctx.turns:
                rows.append(_turn_row(step, ctx, t0))
            rows.append(_message_row(step, ctx, t0))
        else:
            rows.append(_other_row(record, t0))
    script_hash = base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()
    policy = f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{script_hash}'"
    title = f"ACP recording {cassette.path.name}"
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_e(policy)}">'
        f"<title>{_e(title)}</title><style>{STYLE}</style></head><body>"
        f"<header><b>{_e(title)}</b><dl>{_summary(cassette, conversation)}</dl></header>"
        '<nav id="filters"><select id="f-session"><option value="">all sessions</option>'
        f"{_options(s.session or '' for s in conversation.steps)}</select>"
        '<select id="f-method"><option value="">all methods</option>'
        f"{_options(s.method or '' for s in conversation.steps)}</select>"
        '<select id="f-from"><option value="">both directions</option>'
        '<option value="client">client → agent</option>'
        '<option value="agent">agent → client</option>'
        '<option value="event">recorder events</option></select>'
        '<input id="f-search" type="search" placeholder="search"> <span id="shown"></span>'
        '</nav><div class="lanes"><span></span><span>client</span><span>agent</span></div>'
        f'<main id="seq">{"".join(rows)}</main>'
        f"<script>{SCRIPT}</script></body></html>\n"
    )
