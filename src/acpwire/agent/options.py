"""Session modes and config options, declared once on an app and kept per session.

An app declares :class:`Mode` values and :class:`Select` / :class:`Toggle`
options; :class:`ConfigSpec` turns those declarations into the wire objects
(``modes``, ``configOptions``) and validates ``session/set_mode`` and
``session/set_config_option`` against them (session-modes.mdx,
session-config-options.mdx).

Rules applied here, with the requirement ids they come from:

* When modes are declared, a ``select`` option with category ``mode`` mirrors
  them, and both always hold the same value (CFG-015, CFG-016).
* Every option always has a current value; a select's value is one of its
  choices (CFG-010). Unknown ids and values are rejected (MODE-003, CFG-014).
* ``boolean`` options are only shown to clients that advertised
  ``session.configOptions.boolean`` (CFG-003); for other clients they do not
  exist, and keep their default value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from .. import schema as s
from ..protocol.errors import InvalidParams
from ..schema import none_to_unset

__all__ = [
    "MODE_OPTION_ID",
    "Choice",
    "ChoiceGroup",
    "ConfigSpec",
    "ConfigValue",
    "Mode",
    "Select",
    "Toggle",
]

ConfigValue = str | bool
"""The value of one config option: a choice's value (select) or a boolean (toggle)."""

MODE_OPTION_ID = "mode"
"""Id of the ``select`` option that mirrors the declared modes."""


@dataclass(frozen=True)
class Mode:
    """A session mode (``availableModes`` entry)."""

    id: str
    name: str
    description: str | None = None


@dataclass(frozen=True)
class Choice:
    """One value of a :class:`Select` option."""

    value: str
    name: str
    description: str | None = None


@dataclass(frozen=True)
class ChoiceGroup:
    """A named group of choices inside a :class:`Select` option."""

    group: str
    name: str
    choices: Sequence[Choice]


@dataclass(frozen=True)
class Select:
    """A ``select`` config option. ``default`` is the first choice when not given.

    ``category`` is a UX hint: ``mode``, ``model``, ``model_config``,
    ``thought_level`` or a ``_custom`` value (CFG-019).
    """

    id: str
    name: str
    choices: Sequence[Choice | ChoiceGroup | str]
    default: str | None = None
    category: str | None = None
    description: str | None = None

    def values(self) -> list[str]:
        """Every choice value, groups flattened, in order."""
        out: list[str] = []
        for item in self.choices:
            if isinstance(item, ChoiceGroup):
                out.extend(c.value for c in item.choices)
            else:
                out.append(item if isinstance(item, str) else item.value)
        return out

    @property
    def initial(self) -> str:
        return self.default if self.default is not None else self.values()[0]


@dataclass(frozen=True)
class Toggle:
    """A ``boolean`` config option, shown only to clients that support it."""

    id: str
    name: str
    default: bool = False
    category: str | None = None
    description: str | None = None


Option = Select | Toggle


def _choice(item: Choice | str) -> s.SessionConfigSelectOption:
    if isinstance(item, str):
        return s.SessionConfigSelectOption(value=item, name=item)
    return s.SessionConfigSelectOption(
        value=item.value, name=item.name, description=none_to_unset(item.description)
    )


def _wire_choices(option: Select) -> s.SessionConfigSelectOptions:
    """The ``options`` list of a select option on the wire: its choices, or its groups."""
    if any(isinstance(item, ChoiceGroup) for item in option.choices):
        return [
            s.SessionConfigSelectGroup(
                group=g.group, name=g.name, options=[_choice(c) for c in g.choices]
            )
            for g in option.choices
            if isinstance(g, ChoiceGroup)
        ]
    return [_choice(c) for c in option.choices if not isinstance(c, ChoiceGroup)]


@dataclass
class ConfigSpec:
    """The modes and options an app declares, and the rules for changing them."""

    modes: Sequence[Mode] = ()
    options: Sequence[Option] = ()
    default_mode: str | None = None
    _by_id: dict[str, Option] = field(init=False, repr=False)
    # Derived once from the declarations (every session/new reads them): the
    # defaults, each select's values, the wire lists of modes and choices.
    _initial: dict[str, ConfigValue] = field(init=False, repr=False)
    _mode_ids: frozenset[str] = field(init=False, repr=False)
    _choice_values: dict[str, frozenset[str]] = field(init=False, repr=False)
    _wire_modes: list[s.SessionMode] = field(init=False, repr=False)
    _wire_choices: dict[str, s.SessionConfigSelectOptions] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        options = list(self.options)
        mode_ids = [m.id for m in self.modes]
        if len(set(mode_ids)) != len(mode_ids):
            raise ValueError("mode ids must be unique")
        if self.default_mode is not None and self.default_mode not in mode_ids:
            raise ValueError(f"default_mode {self.default_mode!r} is not a declared mode")
        if self.modes and not any(o.id == MODE_OPTION_ID for o in options):
            default = self.default_mode or mode_ids[0]
            choices = [Choice(m.id, m.name, m.description) for m in self.modes]
            options.insert(
                0, Select(MODE_OPTION_ID, "Mode", choices, default=default, category="mode")
            )
        self.options = tuple(options)
        self._by_id = {}
        for option in self.options:
            if option.id in self._by_id:
                raise ValueError(f"config option id {option.id!r} is declared twice")
            if isinstance(option, Select):
                values = option.values()
                if not values:
                    raise ValueError(f"select option {option.id!r} has no choices")
                if len(set(values)) != len(values):
                    raise ValueError(f"select option {option.id!r} repeats a value")
                groups = [isinstance(c, ChoiceGroup) for c in option.choices]
                if any(groups) and not all(groups):
                    raise ValueError(f"select option {option.id!r} mixes groups and plain choices")
                if option.initial not in values:
                    raise ValueError(f"default of {option.id!r} is not one of its choices")
            self._by_id[option.id] = option
        mirror = self._by_id.get(MODE_OPTION_ID)
        if self.modes and isinstance(mirror, Select) and set(mirror.values()) != set(mode_ids):
            raise ValueError(f"option {MODE_OPTION_ID!r} must offer exactly the declared modes")
        self._initial = {
            o.id: (o.initial if isinstance(o, Select) else o.default) for o in self.options
        }
        self._mode_ids = frozenset(mode_ids)
        selects = [o for o in self.options if isinstance(o, Select)]
        self._choice_values = {o.id: frozenset(o.values()) for o in selects}
        self._wire_modes = [
            s.SessionMode(id=m.id, name=m.name, description=none_to_unset(m.description))
            for m in self.modes
        ]
        self._wire_choices = {o.id: _wire_choices(o) for o in selects}

    @property
    def has_modes(self) -> bool:
        return bool(self.modes)

    @property
    def has_options(self) -> bool:
        return bool(self.options)

    def initial_values(self) -> dict[str, ConfigValue]:
        """Every option's default value."""
        return dict(self._initial)

    def restore(
        self, stored: Mapping[str, ConfigValue], mode_id: str | None
    ) -> dict[str, ConfigValue]:
        """Stored values that are still valid, defaults for the rest (the app may have changed)."""
        values = self.initial_values()
        for key, value in stored.items():
            option = self._by_id.get(key)
            if isinstance(option, Toggle) and isinstance(value, bool):
                values[key] = value
            elif (
                isinstance(option, Select)
                and isinstance(value, str)
                and value in self._choice_values[key]
            ):
                values[key] = value
        if mode_id is not None and mode_id in self._mode_ids:
            values[MODE_OPTION_ID] = mode_id
        return values

    def check_mode(self, mode_id: str) -> str:
        """``mode_id`` if declared; else :class:`InvalidParams` (MODE-003)."""
        if not self.modes:
            raise InvalidParams("this agent has no session modes")
        if mode_id not in self._mode_ids:
            raise InvalidParams(
                f"unknown mode {mode_id!r}",
                {"modeId": mode_id, "availableModes": [m.id for m in self.modes]},
            )
        return mode_id

    def check_value(self, config_id: str, value: object, *, booleans: bool) -> ConfigValue:
        """The validated new value of ``config_id``; :class:`InvalidParams` otherwise (CFG-014)."""
        option = self._by_id.get(config_id)
        if option is None or (isinstance(option, Toggle) and not booleans):
            raise InvalidParams(f"unknown config option {config_id!r}", {"configId": config_id})
        if isinstance(option, Toggle):
            if not isinstance(value, bool):
                raise InvalidParams(
                    f"config option {config_id!r} takes a boolean value", {"configId": config_id}
                )
            return value
        if not isinstance(value, str) or value not in option.values():
            raise InvalidParams(
                f"{value!r} is not a value of config option {config_id!r}",
                {"configId": config_id, "values": option.values()},
            )
        return value

    def mode_state(self, values: Mapping[str, ConfigValue]) -> s.SessionModeState | None:
        """The ``modes`` object of a session, or None when no modes are declared.

        Its ``available_modes`` list is built once and shared by every session: read it.
        """
        if not self.modes:
            return None
        current = values.get(MODE_OPTION_ID)
        return s.SessionModeState(
            current_mode_id=current if isinstance(current, str) else self.modes[0].id,
            available_modes=self._wire_modes,  # shared: encoded, never changed
        )

    def render(
        self, values: Mapping[str, ConfigValue], *, booleans: bool
    ) -> list[s.SessionConfigOption]:
        """The complete ``configOptions`` list, in declaration order (CFG-012, CFG-018).

        The list is new at each call; each select's ``options`` (its choices) is built
        once and shared by every session: read it.
        """
        out: list[s.SessionConfigOption] = []
        for option in self.options:
            current = values.get(option.id)
            if isinstance(option, Toggle):
                if booleans:
                    out.append(
                        s.SessionConfigBoolean(
                            id=option.id,
                            name=option.name,
                            description=none_to_unset(option.description),
                            category=none_to_unset(option.category),
                            current_value=current if isinstance(current, bool) else option.default,
                        )
                    )
                continue
            out.append(
                s.SessionConfigSelect(
                    id=option.id,
                    name=option.name,
                    description=none_to_unset(option.description),
                    category=none_to_unset(option.category),
                    current_value=current if isinstance(current, str) else option.initial,
                    options=self._wire_choices[option.id],  # shared: encoded, never changed
                )
            )
        return out
