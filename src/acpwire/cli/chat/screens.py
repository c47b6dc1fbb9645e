"""The chat app's modal screens: permission questions, elicitation forms, choices, logins.

Everything the agent wrote goes into widgets as ``Text`` made safe by
:func:`~acpwire.cli.sanitize.sanitize` (a widget given a string would read it as
markup), and widget ids are numbered, never made of the agent's names. A permission
button says what the option does in acpwire's words (its kind), not the agent's.
"""

from __future__ import annotations

import contextlib
from typing import Any, ClassVar, cast

from rich.console import RenderableType
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Label, RichLog, Select, Static

from ... import schema as s
from ...client.auth import AuthOption
from ...client.elicitation import FormRequest
from ...client.permissions import PermissionRequest
from ...schema import unset_to_none
from ..render import OPTION_KIND_LABELS, agent_line, option_label
from ..sanitize import sanitize

__all__ = [
    "AuthProgressScreen",
    "ChoiceScreen",
    "EnvVarScreen",
    "ErrorScreen",
    "FormResult",
    "FormScreen",
    "HelpScreen",
    "PermissionScreen",
]


class PermissionScreen(ModalScreen[str | None]):
    """The agent asks permission: one button per option (or keys 1..9); Esc dismisses.

    ``body`` shows the tool call and the options with the agent's names for them; the
    buttons carry acpwire's label of each option's kind.
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss_none", "Dismiss")]

    def __init__(self, request: PermissionRequest, body: RenderableType) -> None:
        super().__init__()
        self.request = request
        self.body = body

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(Text("The agent asks permission", style="bold yellow"))
            yield Static(self.body, id="permission-call")
            with Horizontal(id="options"):
                for i, option in enumerate(self.request.options):
                    kind = str(option.kind)
                    variant: Any = (
                        "default"
                        if kind not in OPTION_KIND_LABELS
                        else "success"
                        if kind.startswith("allow")
                        else "error"
                    )
                    label = Text(f"{i + 1}. {option_label(kind)}")
                    yield Button(label, id=f"option-{i}", variant=variant)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        index = int((event.button.id or "option-0").split("-")[1])
        self.dismiss(self.request.options[index].option_id)

    def on_key(self, event: events.Key) -> None:
        if event.character and event.character.isdigit():
            index = int(event.character) - 1
            if 0 <= index < len(self.request.options):
                event.stop()
                self.dismiss(self.request.options[index].option_id)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)


FormResult = tuple[str, dict[str, Any] | None]


class FormScreen(ModalScreen[FormResult]):
    """An elicitation form: one field per property (text, number, checkbox, choice)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel_form", "Cancel")]

    def __init__(self, request: FormRequest) -> None:
        super().__init__()
        self.request = request

    def compose(self) -> ComposeResult:
        request = self.request
        with VerticalScroll(id="dialog"):
            yield Label(Text(sanitize(request.message), style="bold"))
            for error in request.errors:
                yield Label(Text(sanitize(error), style="red"))
            required = set(request.required)
            for index, (name, prop) in enumerate(request.properties.items()):
                title = agent_line(unset_to_none(getattr(prop, "title", None)) or name)
                star = " *" if name in required else ""
                yield Label(Text(f"{title}{star}"))
                description = unset_to_none(getattr(prop, "description", None))
                if description:
                    yield Label(Text(sanitize(description), style="dim"))
                value = request.values.get(name)
                widget_id = f"field-{index}"
                if isinstance(prop, s.BooleanPropertySchema):
                    yield Checkbox(Text(title), bool(value), id=widget_id)
                elif isinstance(prop, s.StringPropertySchema) and (
                    bool(unset_to_none(prop.enum)) or bool(unset_to_none(prop.one_of))
                ):
                    choices: list[tuple[Text, str]] = [
                        (Text(agent_line(e)), e) for e in (unset_to_none(prop.enum) or [])
                    ] + [
                        (Text(agent_line(o.title)), o.const)
                        for o in (unset_to_none(prop.one_of) or [])
                    ]
                    yield Select(
                        choices,
                        value=value if isinstance(value, str) else Select.BLANK,
                        id=widget_id,
                    )
                else:
                    kind: Any = "text"
                    if isinstance(prop, s.IntegerPropertySchema):
                        kind = "integer"
                    elif isinstance(prop, s.NumberPropertySchema):
                        kind = "number"
                    text = ""
                    if isinstance(value, list):
                        text = ", ".join(str(v) for v in value)
                    elif value is not None:
                        text = str(value)
                    yield Input(agent_line(text), type=kind, id=widget_id)
            with Horizontal(id="options"):
                yield Button("Submit", id="submit", variant="success")
                yield Button("Decline", id="decline", variant="error")
                yield Button("Cancel", id="cancel")

    def values(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for index, (name, prop) in enumerate(self.request.properties.items()):
            widget = self.query_one(f"#field-{index}")
            if isinstance(widget, Checkbox):
                out[name] = widget.value
            elif isinstance(widget, Select):
                # compose() builds every Select from (title, str) choices.
                selected = cast("Select[str]", widget).value
                if isinstance(selected, str):
                    out[name] = selected
            elif isinstance(widget, Input):
                text = widget.value.strip()
                if not text:
                    continue
                if isinstance(prop, s.IntegerPropertySchema):
                    with contextlib.suppress(ValueError):
                        out[name] = int(text)
                elif isinstance(prop, s.NumberPropertySchema):
                    with contextlib.suppress(ValueError):
                        out[name] = float(text)
                elif isinstance(prop, s.MultiSelectPropertySchema):
                    out[name] = [p.strip() for p in text.split(",") if p.strip()]
                else:
                    out[name] = text
        return out

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "submit":
            self.dismiss(("accept", self.values()))
        else:
            self.dismiss((event.button.id or "cancel", None))

    def on_mount(self) -> None:
        # Typing goes into the first field at once (it was lost to an unfocused screen).
        fields = self.query("#dialog Input, #dialog Checkbox, #dialog Select")
        if fields:
            fields.first().focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter in a text field submits the form, as in a web form."""
        event.stop()
        self.dismiss(("accept", self.values()))

    def action_cancel_form(self) -> None:
        self.dismiss(("cancel", None))


class HelpScreen(ModalScreen[None]):
    """Keys and commands (F1, ``/help``), keys first; the rest scrolls. Esc or F1 closes."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss_none", "Close"),
        Binding("f1", "dismiss_none", "Close"),
    ]

    def __init__(self, body: RenderableType) -> None:
        super().__init__()
        self.body = body

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="dialog", classes="help") as dialog:
            dialog.border_title = "Help (Esc closes)"
            yield Static(self.body)

    def on_mount(self) -> None:
        self.query_one("#dialog").focus()  # arrows and PgUp/PgDn scroll

    def action_dismiss_none(self) -> None:
        self.dismiss(None)


class ErrorScreen(ModalScreen[bool]):
    """A problem the chat cannot go on after (the agent could not be started): what
    happened, then Quit (Enter, or q); Esc closes the screen to read the transcript."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss_false", "Close"),
        Binding("q", "dismiss_true", "Quit"),
    ]

    def __init__(self, headline: str, details: str) -> None:
        super().__init__()
        self.headline = headline
        self.details = details

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="error"):
            yield Label(Text(sanitize(self.headline), style="bold red"))
            if self.details:
                yield Static(Text(sanitize(self.details)))
            with Horizontal(id="options"):
                yield Button("Quit", id="quit", variant="error")
                yield Button("Close", id="close")

    def on_mount(self) -> None:
        self.query_one("#quit", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "quit")

    def action_dismiss_true(self) -> None:
        self.dismiss(True)

    def action_dismiss_false(self) -> None:
        self.dismiss(False)


class ChoiceScreen(ModalScreen[str | None]):
    """A message and a few buttons; the result is the chosen button's key (Esc: None)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss_none", "Dismiss")]

    def __init__(self, body: RenderableType, choices: list[tuple[str, str]]) -> None:
        super().__init__()
        self.body = body
        self.choices = choices

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(self.body)
            with Horizontal(id="options"):
                for i, (_, label) in enumerate(self.choices):
                    yield Button(Text(agent_line(label)), id=f"choice-{i}")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        index = int((event.button.id or "choice-0").split("-")[1])
        self.dismiss(self.choices[index][0])

    def action_dismiss_none(self) -> None:
        self.dismiss(None)


class EnvVarScreen(ModalScreen[dict[str, str] | None]):
    """The variables of an env-var login; secrets are typed unechoed. Enter submits."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss_none", "Cancel")]

    def __init__(self, option: AuthOption) -> None:
        super().__init__()
        self.option = option

    def compose(self) -> ComposeResult:
        option = self.option
        with Vertical(id="dialog"):
            yield Label(Text(agent_line(option.name), style="bold"))
            if option.description:
                yield Label(Text(sanitize(option.description), style="dim"))
            if option.link:
                yield Label(Text(f"get credentials at {agent_line(option.link)}"))
            for index, var in enumerate(option.vars):
                label = agent_line(f"{var.label} ({var.name})" if var.label else var.name)
                yield Label(Text(label + (" (optional)" if var.optional else "")))
                yield Input(password=var.secret, id=f"var-{index}")
            yield Label(Text("The agent is started again with these set.", style="dim"))
            with Horizontal(id="options"):
                yield Button("Start the agent", id="submit", variant="success")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        inputs = self.query(Input)
        if inputs:
            inputs.first().focus()

    def values(self) -> dict[str, str] | None:
        out: dict[str, str] = {}
        for index, var in enumerate(self.option.vars):
            value = self.query_one(f"#var-{index}", Input).value
            if value:
                out[var.name] = value
            elif not var.optional:
                return None
        return out

    def _submit(self) -> None:
        values = self.values()
        if values is None:
            self.notify("fill in every variable that is not optional", severity="warning")
            return
        self.dismiss(values)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._submit()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "submit":
            self._submit()
        else:
            self.dismiss(None)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)


class AuthProgressScreen(ModalScreen[None]):
    """``authenticate`` is running: what the agent prints outside the protocol, elapsed
    time, and Esc to cancel (the app cancels the call when this screen is dismissed)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss_none", "Cancel login")]

    def __init__(self, option: AuthOption) -> None:
        super().__init__()
        self.option = option
        self.elapsed = 0

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(Text(f"Authenticating with {agent_line(self.option.name)}", style="bold"))
            yield Label(
                Text("The agent may print a login URL below or open a browser.", style="dim")
            )
            yield RichLog(id="agent-output", wrap=True, markup=False, highlight=False)
            yield Label(Text("waiting for the agent... (Esc cancels)"), id="progress")

    def on_mount(self) -> None:
        self.set_interval(1.0, self._tick)

    def _tick(self) -> None:
        self.elapsed += 1
        self.query_one("#progress", Label).update(
            f"waiting for the agent... {self.elapsed} s (Esc cancels)"
        )

    def show_output(self, line: str) -> None:
        """A line the agent printed outside the protocol."""
        self.query_one("#agent-output", RichLog).write(Text(sanitize(line)))

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
