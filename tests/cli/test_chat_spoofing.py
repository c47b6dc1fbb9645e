"""Nothing an agent sends reaches the terminal as a control sequence, and a permission
prompt says what each option does in acpwire's words (docs/security.md, "What acp chat
shows").

The attack: an agent wrote cursor movements, erase-line, conceal (SGR 8), an OSC 52
clipboard write, an OSC 0 window title and an OSC 8 hyperlink into a tool's title and
its option names, and the user saw "Reject" beside the option that was ``allow_always``.
``hostile_agent.py spoof`` does all of that (and 8-bit C1 controls, a bidi override, a
zero-width space, Rich markup) in every string a client shows; ``acp chat`` runs it on a
real pseudo-terminal, one turn (``--prompt``) and interactively (the Textual app).
"""

from __future__ import annotations

import io
import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console, RenderableType
from rich.text import Text

from acpwire import schema as s
from acpwire.cli import render
from acpwire.cli.chat.session import EXIT_AGENT_ERROR, agent_label, format_auth_required
from acpwire.cli.inspect import TrafficLog
from acpwire.cli.sanitize import json_line, sanitize
from acpwire.client.auth import auth_options
from acpwire.client.state import SessionState, TerminalSnapshot
from acpwire.protocol.errors import RequestError

from .hostile_agent import SPOOF, SPOOF_OPTIONS, spoof_updates
from .pty_terminal import PtyTerminal

HOSTILE = [sys.executable, str(Path(__file__).with_name("hostile_agent.py"))]
ACP = [sys.executable, "-m", "acpwire.cli.main"]

C1 = re.compile("[\x80-\x9f]")
BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
SGR = re.compile(r"\x1b\[([0-9;:]*)m")


def concealing(output: str) -> list[str]:
    """The SGR sequences in ``output`` that turn conceal (8) on."""
    found = []
    for match in SGR.finditer(output):
        params = [int(p or 0) for p in re.split("[;:]", match.group(1))]
        i = 0
        while i < len(params):
            if params[i] in (38, 48, 58):  # extended colour: 5;N or 2;R;G;B follow
                i += 3 if params[i + 1 : i + 2] == [5] else 5
                continue
            if params[i] == 8:
                found.append(match.group())
            i += 1
    return found


def assert_nothing_obeyed(output: str) -> None:
    """What every terminal test checks: no control of the agent's reached the terminal."""
    assert "PWNED" not in output  # only ever inside an OSC string or a link target
    assert not C1.search(output)
    assert not BIDI.search(output)
    assert concealing(output) == []


# ---------------------------------------------------------------------- the function


@pytest.mark.parametrize(
    ("attack", "shown"),
    [
        ("a\x1b[2Kb\x1b[1G\x1b[3Ac", "abc"),  # erase line, column 1, cursor up
        ("\x1b[8mhidden\x1b[28m", "hidden"),  # conceal: the text shows
        ("\x1b]52;c;UFdORUQ=\x07x", "x"),  # OSC 52 clipboard, BEL-terminated
        ("\x1b]0;PWNED\x1b\\x", "x"),  # OSC 0 title, ST-terminated
        ("\x1b]8;;https://evil/\x1b\\Reject\x1b]8;;\x1b\\", "Reject"),  # OSC 8 link
        ("\x9b2J\x9d0;PWNED\x9cx", "x"),  # 8-bit CSI and OSC
        ("\x1bPq#0;2;0;0;0\x1b\\x", "x"),  # DCS (sixel)
        ("\x1b7\x1b(0x\x1bc", "x"),  # save cursor, line drawing set, reset
        ("\u202eReject\u202c \u2066x\u2069", "Reject x"),  # bidi override, isolate
        ("a\x08b\x07c\x00d\x7fe", "abcde"),  # backspace, bell, NUL, DEL
        ("\x1b]0;unterminated", "0;unterminated"),  # an OSC that never ends loses its ESC
        ("[bold]x[/] :warning:", "[bold]x[/] :warning:"),  # markup is not ours to strip
    ],
)
def test_escape_sequences_and_controls_are_removed_and_the_text_kept(
    attack: str, shown: str
) -> None:
    assert sanitize(attack) == shown
    assert sanitize(attack, line=True) == shown


def test_message_text_keeps_newlines_tabs_and_joiners_labels_go_on_one_line() -> None:
    text = "a\r\n\tb\n\u200bc \U0001f468\u200d\U0001f469 Allow\rReject"
    # A lone CR would send the cursor back to overwrite the line: it goes.
    assert sanitize(text) == "a\n\tb\n\u200bc \U0001f468\u200d\U0001f469 AllowReject"
    assert sanitize(text, line=True) == "a  b c \U0001f468\U0001f469 Allow Reject"
    # A title cannot draw lines of its own, such as a fake option list under it.
    assert sanitize("Edit x\n  1) Reject once", line=True) == "Edit x   1) Reject once"


def test_json_lines_keep_the_exact_value_with_c1_and_bidi_escaped() -> None:
    value = {"text": SPOOF, "caf\u00e9": "\u00e9\u2028"}
    line = json_line(value)
    assert json.loads(line) == value
    assert "\n" not in line and "\x1b" not in line
    assert not C1.search(line) and not BIDI.search(line)
    assert "caf\u00e9" in line  # other characters stay as they are


# ---------------------------------------------------------------------- the renderers


def spoofed_state() -> SessionState:
    state = SessionState("sess_spoof")
    state.available_modes = [s.SessionMode(id="ask", name=f"Ask {SPOOF}")]
    state.current_mode_id = "ask"
    for update in spoof_updates(f"term{SPOOF}"):
        state.apply(s.convert(update, s.SessionUpdate))  # type: ignore[arg-type]
    state.record_terminal(
        f"term{SPOOF}",
        TerminalSnapshot(output=f"out {SPOOF}", truncated=False, exit_code=0, exited=True),
    )
    state.apply(s.AgentMessageChunk(content=s.TextContent(text="\x1b")))  # split sequences
    state.apply(s.AgentMessageChunk(content=s.TextContent(text="]0;PWNED\x07 end")))
    return state


def printed(*parts: RenderableType, color: bool = False) -> str:
    buffer = io.StringIO()
    console = Console(
        file=buffer, width=300, color_system="truecolor" if color else None, force_terminal=color
    )
    for part in parts:
        console.print(part)
    return buffer.getvalue()


def test_every_renderer_shows_the_agents_strings_without_their_controls() -> None:
    """No colours: any ESC in the output would be the agent's."""
    state = spoofed_state()
    options = [s.convert(o, s.PermissionOption) for o in SPOOF_OPTIONS]
    parts: list[RenderableType] = [
        *render.conversation_parts(state, agent=f"spoof {SPOOF}", stop_reason=SPOOF),
        *render.conversation_parts(state, agent=SPOOF, stop_reason=SPOOF, plain=True),
        render.render_status(state, agent=SPOOF, width=80),
        render.render_permission_options(options),
        *(render.render_update(s.convert(u, s.SessionUpdate)) for u in spoof_updates(SPOOF)),  # type: ignore[arg-type]
        render.render_notice(
            s.Notice(severity=SPOOF, title=SPOOF, description=SPOOF)  # type: ignore[arg-type]
        ),
        render.safe_renderable(Text(f"a note {SPOOF}", style="red")),
        render.safe_renderable(f"a note {SPOOF}"),
    ]
    for collapsed in (False, True):
        thought = next(e for e in state.transcript if getattr(e, "role", "") == "thought")
        parts.append(render.render_thought(thought, collapsed=collapsed))  # type: ignore[arg-type]
    output = printed(*parts)
    assert "\x1b" not in output
    assert_nothing_obeyed(output)
    assert "[bold red]markup[/] :warning:" in output  # shown as written, not as markup
    assert "a markdown link (https://evil.example/)" in output  # the address is shown


def test_markdown_links_show_their_address_and_make_no_terminal_hyperlink() -> None:
    message = render.render_block(
        s.TextContent(text="[Reject](https://evil.example/allow)"), markdown=True
    )
    output = printed(message, color=True)
    assert "\x1b]8;" not in output
    assert "https://evil.example/allow" in SGR.sub("", output)


def test_permission_options_lead_with_acpwires_label_of_their_kind() -> None:
    options = [
        s.PermissionOption(option_id="a", name="Reject", kind="allow_always"),
        s.PermissionOption(option_id="b", name="Allow", kind="reject_once"),
        s.PermissionOption(option_id="c", name="Sure", kind="allow_once"),
        s.PermissionOption(option_id="d", name="Never", kind="reject_always"),
        s.PermissionOption(option_id="e", name="Maybe", kind="perhaps\x1b[2K"),
    ]
    lines = render.render_permission_options(options).plain.splitlines()
    assert lines == [
        '  1) Allow always  (agent: "Reject")',
        '  2) Reject once  (agent: "Allow")',
        '  3) Allow once  (agent: "Sure")',
        '  4) Reject always  (agent: "Never")',
        '  5) Unknown kind (perhaps)  (agent: "Maybe")',
    ]


def test_agent_names_and_auth_methods_are_one_clean_line() -> None:
    info = s.InitializeResponse(
        protocol_version=1,
        agent_info=s.Implementation(name=f"a\n{SPOOF}", version=f"1\n{SPOOF}"),
        auth_methods=[
            s.convert(
                {"id": f"id{SPOOF}", "name": f"Log\nin {SPOOF}", "description": SPOOF},
                s.AuthMethod,  # type: ignore[arg-type]
            )
        ],
    )
    label = agent_label(info, ["agent"])
    assert "\n" not in label and sanitize(label, line=True) == label
    message = format_auth_required(
        RequestError(-32000, f"login {SPOOF}"), auth_options(info, ["agent"])
    )
    assert len(message.splitlines()) == 2  # the headline and one line per method
    assert_nothing_obeyed(sanitize(message))


def test_acp_inspect_logs_what_peers_sent_without_their_controls() -> None:
    line = json.dumps(
        {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "x": SPOOF}}
    ).encode()
    for json_lines in (False, True):
        out = io.StringIO()
        log = TrafficLog(out, json_lines=json_lines)
        log.message("agent", line)
        log.message("agent", b"not json " + SPOOF.encode())
        logged = out.getvalue()
        assert "\x1b" not in logged and not C1.search(logged) and not BIDI.search(logged)
        if json_lines:  # the exact values, the controls escaped
            assert json.loads(logged.splitlines()[0])["message"]["params"]["x"] == SPOOF


# ---------------------------------------------------------------------- on a real terminal


@pytest.fixture
def terminals() -> Iterator[list[PtyTerminal]]:
    made: list[PtyTerminal] = []
    yield made
    for terminal in made:
        terminal.close()


def chat_on_terminal(tmp_path: Path, *args: str) -> PtyTerminal:
    argv = [*ACP, "chat", "--cwd", str(tmp_path), *args, "--", *HOSTILE, "spoof"]
    env = {**os.environ, "ACPWIRE_DATA_DIR": str(tmp_path / ".data")}
    return PtyTerminal(argv, env)


def test_a_spoofing_agent_on_a_terminal_with_prompt(
    tmp_path: Path, terminals: list[PtyTerminal]
) -> None:
    chat = chat_on_terminal(tmp_path, "--prompt", "hi", "--policy", "ask")
    terminals.append(chat)
    chat.wait_for("choose (number")
    text = chat.text()
    assert '1) Allow always  (agent: "RejectconcealedRejectReject[bold red]markup[/]' in text
    assert '2) Reject once  (agent: "AllowconcealedRejectReject[bold red]markup[/]' in text
    chat.type("2\r")
    assert chat.exit_code() == EXIT_AGENT_ERROR
    output = chat.output
    # Rich draws with colours only: every other escape sequence would be the agent's.
    assert "\x1b" not in SGR.sub("", output), SGR.sub("", output)
    assert_nothing_obeyed(output)
    text = chat.text()
    for shown in ("title concealed", "thinking concealed", "message concealed", "step conc",
                  "terminal concealed", "+new concealed", "failed concealed"):  # fmt: skip
        assert shown in text
    assert "(https://evil.example/)" in text


def test_a_spoofing_agent_in_the_interactive_app(
    tmp_path: Path, terminals: list[PtyTerminal]
) -> None:
    chat = chat_on_terminal(tmp_path)
    terminals.append(chat)
    chat.wait_for("F1 lists keys")
    chat.type("hi\r")
    chat.wait_for("2. Reject once")
    text = chat.text()
    assert "1. Allow always" in text  # the buttons: acpwire's words
    assert '1) Allow always  (agent: "RejectconcealedRejectReject[bold red]markup[/]' in text
    chat.press("escape")
    chat.wait_for("failed concealed")
    chat.press("f2")  # the agent's stderr
    chat.wait_for("agent stderr concealed")
    chat.type("/")  # the hint lists the agent's commands
    chat.wait_for("/cmdconcealedRejectReject[bold red]markup[/]")
    chat.press("ctrl+q")
    assert chat.exit_code() == 0
    output = chat.output
    assert_nothing_obeyed(output)
    # Textual moves the cursor to absolute positions only; the agent's relative moves,
    # erase-line and OSC strings (52 clipboard, 0 title, 8 link) must not be there.
    assert not re.search(r"\x1b\[[0-9;]*[ABGJK]", output)
    osc = re.findall(r"\x1b\](\d*)", output)
    assert set(osc) <= {"22"}, osc  # Textual's own pointer shape, nothing else
    assert "[bold red]markup[/] :warning:" in chat.text()
