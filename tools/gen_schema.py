"""Generate acpwire's typed models and method table from the official ACP JSON Schema.

Usage::

    python tools/gen_schema.py            # rewrite the generated modules (v1 and v2)
    python tools/gen_schema.py --check    # exit 1 if the committed files differ

Each protocol version the pinned package ships is one :class:`Target`: ACP v1
(``schema/v1/*`` -> ``src/acpwire/schema/_generated_*.py``) and the v2 draft
(``schema/v2/*`` -> ``src/acpwire/schema/v2/_generated_*.py``). Both are read the
same way: models from the unstable schema (a superset), stability from the stable one.

The schema is found by ``tools/schema_source.py`` (npm package
``@agentclientprotocol/sdk`` or ``$ACPWIRE_SCHEMA_DIR``). The output carries
names, types and links to the spec; it copies no descriptive text. The only
hand-kept facts here are the capability gates of the methods (the schema does
not state them) and a few class names for union members the schema leaves
anonymous.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import keyword
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from schema_source import ROOT, find_schema

OUT_DIR = ROOT / "src" / "acpwire" / "schema"
SPEC_URL = re.compile(r"https://agentclientprotocol\.com/[^\s)\]>\"']+")
PRIMITIVES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool"}

X_ANNOTATIONS = {"x-method", "x-side"}

# Which capability must have been advertised before a method may be called:
# (side that advertises, dotted wire path, how to read it). Usually the side that
# handles the method advertises it; a few unstable methods are gated by the
# sender's own capability instead (an agent that advertises ``auth.status`` may
# send ``auth/status_update``; ``mcp/message`` flows only when the agent took MCP
# servers over ACP, ``mcpCapabilities.acp``). Source: each method's page under
# docs/protocol/v1 (see shared/spec/FEATURES.md §1-2) and, for unstable methods,
# the descriptions in schema.unstable.json. The schema annotates no gate, so this
# is the one place they are kept.
V1_GATES: dict[str, tuple[str, str, str]] = {
    "session/load": ("agent", "loadSession", "bool"),
    "session/list": ("agent", "sessionCapabilities.list", "marker"),
    "session/resume": ("agent", "sessionCapabilities.resume", "marker"),
    "session/close": ("agent", "sessionCapabilities.close", "marker"),
    "session/delete": ("agent", "sessionCapabilities.delete", "marker"),
    "logout": ("agent", "auth.logout", "marker"),
    "fs/read_text_file": ("client", "fs.readTextFile", "bool"),
    "fs/write_text_file": ("client", "fs.writeTextFile", "bool"),
    "terminal/create": ("client", "terminal", "bool"),
    "terminal/output": ("client", "terminal", "bool"),
    "terminal/release": ("client", "terminal", "bool"),
    "terminal/wait_for_exit": ("client", "terminal", "bool"),
    "terminal/kill": ("client", "terminal", "bool"),
    "elicitation/create": ("client", "elicitation", "mode"),
    "elicitation/complete": ("client", "elicitation.url", "marker"),
    # unstable
    "session/fork": ("agent", "sessionCapabilities.fork", "marker"),
    "session/archive": ("agent", "sessionCapabilities.archive", "marker"),
    "session/unarchive": ("agent", "sessionCapabilities.archive", "marker"),
    "session/status": ("agent", "sessionCapabilities.status", "marker"),
    "session/set_title": ("agent", "sessionCapabilities.title", "marker"),
    "providers/list": ("agent", "providers", "marker"),
    "providers/set": ("agent", "providers", "marker"),
    "providers/disable": ("agent", "providers", "marker"),
    "auth/status": ("agent", "auth.status", "marker"),
    "auth/status_update": ("agent", "auth.status", "marker"),
    "mcp/message": ("agent", "mcpCapabilities.acp", "bool"),
}

# Which role handles a proxy-chain method. The schema's x-side "proxy" names a
# third party; acpwire maps a proxy chain onto its two roles: the conductor plays
# the client toward each proxy, which answers it as an agent, and
# ``proxy/successor`` travels both ways between them.
PROXY_SIDES: dict[str, tuple[str, ...]] = {
    "proxy/initialize": ("agent",),
    "proxy/successor": ("agent", "client"),
}

# Names for union members that the schema does not name (inline variants), or
# whose natural name is taken by another definition.
V1_VARIANT_NAMES: dict[tuple[str, str], str] = {
    ("SessionUpdate", "tool_call"): "ToolCallStart",
    ("SessionUpdate", "tool_call_update"): "ToolCallProgress",
    ("SessionUpdate", "plan"): "PlanUpdate",
    ("RequestPermissionOutcome", "cancelled"): "CancelledPermissionOutcome",
    ("CreateElicitationResponse", "decline"): "ElicitationDeclineAction",
    ("CreateElicitationResponse", "cancel"): "ElicitationCancelAction",
}

# Unstable-only definitions whose names would take a stable member's name.
V1_UNSTABLE_RENAMES = {"PlanUpdate": "PlanOperationUpdate"}

# v2 names where the schema leaves a member anonymous (a diff's operations share two
# definitions; ``state_update`` is the ``StateUpdate`` union inside ``SessionUpdate``).
V2_VARIANT_NAMES: dict[tuple[str, str], str] = {
    ("SessionUpdate", "tool_call_update"): "ToolCallProgress",
    ("SessionUpdate", "state_update"): "SessionStateUpdate",
    ("RequestPermissionOutcome", "cancelled"): "CancelledPermissionOutcome",
    ("CreateElicitationResponse", "decline"): "ElicitationDeclineAction",
    ("CreateElicitationResponse", "cancel"): "ElicitationCancelAction",
    ("DiffChange", "add"): "DiffAdd",
    ("DiffChange", "delete"): "DiffDelete",
    ("DiffChange", "modify"): "DiffModify",
    ("DiffChange", "move"): "DiffMove",
    ("DiffChange", "copy"): "DiffCopy",
}

# Python method names for params types whose name does not give a good one (keyed by
# the params definition: mcp/message is a request one way and a notification the other).
V1_PYTHON_NAMES = {
    "SessionNotification": "session_update",
    "MessageMcpRequest": "mcp_message",
    "MessageMcpNotification": "mcp_message",
    "ProxySuccessorNotification": "proxy_successor_notification",
}

# The v2 draft's gates (schema/v2 descriptions of AgentCapabilities and
# SessionCapabilities): advertising ``capabilities.session`` at all means the baseline
# session methods are served; ``session/delete`` has its own marker. ``auth/*`` are
# advertised by a non-empty ``authMethods`` list and ``tool_call/cancel`` /
# ``terminal/cancel`` per entity (its ``capabilities.cancel``), not by a capability
# path, so they carry no gate here.
V2_GATES: dict[str, tuple[str, str, str]] = {
    "session/new": ("agent", "session", "marker"),
    "session/list": ("agent", "session", "marker"),
    "session/resume": ("agent", "session", "marker"),
    "session/close": ("agent", "session", "marker"),
    "session/prompt": ("agent", "session", "marker"),
    "session/cancel": ("agent", "session", "marker"),
    "session/set_config_option": ("agent", "session", "marker"),
    "session/delete": ("agent", "session.delete", "marker"),
    "elicitation/create": ("client", "elicitation", "mode"),
    "elicitation/complete": ("client", "elicitation.url", "marker"),
    # unstable
    "session/fork": ("agent", "session.fork", "marker"),
    "session/archive": ("agent", "session.archive", "marker"),
    "session/unarchive": ("agent", "session.archive", "marker"),
    "session/status": ("agent", "session.status", "marker"),
    "session/set_title": ("agent", "session.title", "marker"),
    "providers/list": ("agent", "providers", "marker"),
    "providers/set": ("agent", "providers", "marker"),
    "providers/disable": ("agent", "providers", "marker"),
    "auth/status": ("agent", "auth.status", "marker"),
    "auth/status_update": ("agent", "auth.status", "marker"),
    "mcp/message": ("agent", "session.mcp.acp", "marker"),
}

V2_PYTHON_NAMES = {
    **V1_PYTHON_NAMES,
    "UpdateSessionNotification": "session_update",
    "CancelSessionNotification": "cancel",
    "LoginAuthRequest": "login",
    "LogoutAuthRequest": "logout",
}


@dataclass(frozen=True)
class Target:
    """One protocol version: where its schema is, where its modules go, its hand-kept facts."""

    version: int
    out_dir: Path
    gates: dict[str, tuple[str, str, str]]
    python_names: dict[str, str]
    models_import: str
    """How the methods module reaches the models."""
    base_import: str
    """How the models module reaches ``_base`` (and the methods module ``_method_spec``)."""
    doc_module: str
    variant_names: dict[tuple[str, str], str]
    unstable_renames: dict[str, str]

    @property
    def outputs(self) -> tuple[Path, Path, Path]:
        return (
            self.out_dir / "_generated_models.py",
            self.out_dir / "_generated_methods.py",
            self.out_dir / "_generated_rules.py",
        )


TARGETS = (
    Target(
        1,
        OUT_DIR,
        V1_GATES,
        V1_PYTHON_NAMES,
        "from .. import schema as m",
        ".",
        "acpwire.schema",
        V1_VARIANT_NAMES,
        V1_UNSTABLE_RENAMES,
    ),
    Target(
        2,
        OUT_DIR / "v2",
        V2_GATES,
        V2_PYTHON_NAMES,
        "from .. import v2 as m",
        "..",
        "acpwire.schema.v2",
        V2_VARIANT_NAMES,
        {},
    ),
)


def snake(name: str) -> str:
    if name == "_meta":
        return "meta"
    s = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    s = re.sub(r"(?<=[A-Z])([A-Z][a-z])", r"_\1", s).lower().lstrip("_")
    if keyword.iskeyword(s):
        s += "_"
    return s


def pascal(tag: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[_\-/ ]", tag) if part)


def cast_dict(value: Any) -> dict[str, Any]:
    assert isinstance(value, dict)
    return value


def ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def only_ref(s: dict[str, Any]) -> str | None:
    """The definition a property or variant stands for, if it is just one $ref."""
    if "$ref" in s:
        return ref_name(s["$ref"])
    all_of = s.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1 and "$ref" in all_of[0]:
        return ref_name(all_of[0]["$ref"])
    return None


@dataclass
class Variant:
    tag: str | None
    ref: str | None
    props: dict[str, Any]
    required: list[str]
    title: str | None
    catch_all: bool


@dataclass
class UnionPlan:
    name: str
    field: str | None  # discriminator; None = untagged
    members: list[str] = field(default_factory=list)  # class names (type-check union)
    tags: dict[str, str] = field(default_factory=dict)  # tag -> class
    default: str | None = None
    untagged_choices: list[str] = field(default_factory=list)  # type expressions
    open: bool = True


@dataclass
class ClassPlan:
    name: str
    props: dict[str, Any]
    required: set[str]
    doc_source: str
    base: str = "AcpModel"
    markers: list[str] = field(default_factory=list)
    tag_field: str | None = None
    tag: str | None = None


class Generator:
    def __init__(
        self, schema: dict[str, Any], stable: dict[str, Any], target: Target = TARGETS[0]
    ) -> None:
        self.target = target
        # Models come from the unstable schema (a superset), so fields and
        # members that only unstable peers send still round-trip; the stable
        # schema says which of them are stable.
        self.defs: dict[str, Any] = schema["$defs"]
        self.stable_defs: dict[str, Any] = stable["$defs"]
        self.unmodelled: list[str] = []
        self.split_aliases: dict[str, tuple[str, str]] = {}  # name -> (run time, typing)
        text = json.dumps(self.defs)
        self.refcount = Counter(re.findall(r"#/\$defs/(\w+)", text))
        self.aliases: dict[str, str] = {}  # name -> type expression (runtime and typing)
        self.enums: dict[str, tuple[list[str], bool]] = {}
        self.unions: dict[str, UnionPlan] = {}
        self.classes: dict[str, ClassPlan] = {}
        self.extra_classes: list[ClassPlan] = []
        self.skipped: set[str] = set()
        self.catch_all: set[str] = set()  # unions whose schema admits unlisted members
        self.alternatives: dict[str, list[list[str]]] = {}  # flat class -> variants' required

    # -- classification -------------------------------------------------

    def variants(self, d: dict[str, Any]) -> list[Variant]:
        out = []
        for v in d.get("oneOf") or d.get("anyOf") or []:
            props = dict(v.get("properties", {}))
            tag = None
            tag_field = None
            for key, p in list(props.items()):
                if isinstance(p, dict) and "const" in p and p.get("type") == "string":
                    tag, tag_field = p["const"], key
                    del props[key]
            required = [r for r in v.get("required", []) if r != tag_field]
            out.append(
                Variant(
                    tag=tag,
                    ref=only_ref(v),
                    props=props,
                    required=required,
                    title=v.get("title"),
                    catch_all="not" in v,
                )
            )
        return out

    def tag_field(self, d: dict[str, Any]) -> str | None:
        for v in d.get("oneOf") or d.get("anyOf") or []:
            for key, p in v.get("properties", {}).items():
                if isinstance(p, dict) and "const" in p and p.get("type") == "string":
                    return str(key)
        return None

    def classify(self) -> None:
        for name, d in self.defs.items():
            if name in self.stable_defs:
                self.classify_one(name, d)  # stable definitions must all be modelled
                continue
            saved = copy.deepcopy(
                (
                    self.aliases,
                    self.enums,
                    self.unions,
                    self.classes,
                    self.extra_classes,
                    self.class_tags,
                    self.common_props,
                    self._pending_markers,
                )
            )
            try:
                self.classify_one(name, d)
            except (AssertionError, KeyError, SystemExit):
                (
                    self.aliases,
                    self.enums,
                    self.unions,
                    self.classes,
                    self.extra_classes,
                    self.class_tags,
                    self.common_props,
                    self._pending_markers,
                ) = saved
                if name in self.stable_defs:
                    raise
                # An unstable-only shape this generator does not model: plain JSON.
                self.unmodelled.append(name)
                self.aliases[name] = "Any"

    def classify_one(self, name: str, d: dict[str, Any]) -> None:
        if True:
            if d.get("x-docs-ignore"):
                self.skipped.add(name)
                return
            if name.startswith("Ext") and not d.keys() - {"description"}:
                self.aliases[name] = "Any"
                return
            branches = d.get("oneOf") or d.get("anyOf")
            same_as = only_ref(d)
            if same_as and not d.keys() - {"allOf", "description"} - X_ANNOTATIONS:
                # A definition that is another one under a new name (proxy/initialize's
                # params are initialize's): the same class, named after the method.
                self.split_aliases[name] = (same_as, same_as)
                return
            if (
                branches
                and "type" not in d
                and all(
                    b.get("type") == "object" and "properties" in b and not self.tag_of(b)
                    for b in branches
                )
            ):
                # Alternatives told apart by which key they carry (an mcp/message answer
                # holds ``result`` or ``error``): one class with every key optional.
                self.plan_flat_class(name, {**d, "type": "object", "properties": {}})
                return
            if d.get("type") == "object" and "properties" in d:
                if branches and self.tag_field(d) in d["properties"]:
                    # The discriminator is an optional field of the object itself (an idle
                    # state's ``stopReason``): one class, the variants' fields merged.
                    self.plan_flat_class(name, d)
                elif branches and any(v.get("allOf") and self.tag_of(v) for v in branches):
                    self.plan_tagged_union(
                        name, d, common=d["properties"], common_req=d.get("required", [])
                    )
                elif branches:
                    self.plan_flat_class(name, d)
                else:
                    self.classes[name] = ClassPlan(
                        name, dict(d["properties"]), set(d.get("required", [])), name
                    )
                return
            if d.get("type") == "object":
                self.classes[name] = ClassPlan(name, {}, set(), name)
                return
            if branches and any(not b.keys() - {"title", "description"} for b in branches):
                # A union with an unconstrained member ("Other": any JSON value) admits
                # anything; its named members stay classes of their own.
                self.aliases[name] = "Any"
                return
            if branches:
                self.classify_union(name, d, branches)
                return
            t = d.get("type")
            if isinstance(t, str) and t in PRIMITIVES:
                self.aliases[name] = PRIMITIVES[t]
                return
            raise SystemExit(f"gen_schema: don't know how to model {name}: {sorted(d)}")

    def tag_of(self, v: dict[str, Any]) -> str | None:
        for p in v.get("properties", {}).values():
            if isinstance(p, dict) and "const" in p and p.get("type") == "string":
                return str(p["const"])
        return None

    def classify_union(self, name: str, d: dict[str, Any], branches: list[dict[str, Any]]) -> None:
        kinds = {b.get("type") for b in branches}
        if all("const" in b for b in branches if b.get("title") != "other") and kinds <= {"string"}:
            values = [b["const"] for b in branches if "const" in b]
            self.enums[name] = (values, any(b.get("title") == "other" for b in branches))
            return
        if kinds <= {"integer"}:
            self.aliases[name] = "int"
            return
        if all(b.get("type") in PRIMITIVES or b.get("type") in ("null", "array") for b in branches):
            parts = []
            for b in branches:
                if b.get("type") == "null":
                    parts.append("None")
                elif b.get("type") == "array":
                    parts.append(f"list[{self.pytype(b['items'])}]")
                else:
                    parts.append(PRIMITIVES[b["type"]])
            arrays = [b for b in branches if b.get("type") == "array"]
            if len(arrays) <= 1:
                self.aliases[name] = " | ".join(parts)
                return
            # Several list shapes: decide per item, type the whole as a union of lists.
            items = [only_ref(b["items"]) for b in arrays]
            assert all(items) and len(arrays) == len(branches), name
            plan = UnionPlan(f"{name}Item", None, open=False)
            plan.untagged_choices = [str(i) for i in items]
            plan.members = [str(i) for i in items]
            for item in items:
                self.add_marker(str(item), f"{name}Item")
            self.unions[plan.name] = plan
            self.split_aliases[name] = (f"list[{plan.name}]", " | ".join(parts))
            return
        if self.tag_field(d):
            self.plan_tagged_union(name, d, common={}, common_req=[])
            return
        plan = UnionPlan(name, None)
        for v in self.variants(d):
            assert v.ref, name
            plan.untagged_choices.append(v.ref)
            plan.members.append(v.ref)
            self.add_marker(v.ref, name)
        self.unions[name] = plan

    def add_marker(self, cls: str, union: str) -> None:
        self._pending_markers.setdefault(cls, []).append(union)

    _pending_markers: dict[str, list[str]]

    def plan_tagged_union(
        self, name: str, d: dict[str, Any], common: dict[str, Any], common_req: list[str]
    ) -> None:
        field_name = self.tag_field(d)
        assert field_name
        plan = UnionPlan(name, field_name)
        common = {k: v for k, v in common.items()}
        for v in self.variants(d):
            if v.catch_all:
                self.catch_all.add(name)
                continue
            if v.tag is None:
                # A member told by the absence of the discriminator.
                assert v.ref, name
                plan.default = v.ref
                plan.members.append(v.ref)
                self.add_marker(v.ref, name)
                self.add_common(v.ref, common, common_req)
                continue
            if (
                v.ref
                and self.refcount[v.ref] == 1
                and (name, v.tag) not in self.target.variant_names
            ):
                cls = v.ref
                self.class_tags[cls] = (field_name, v.tag)
                self.add_common(cls, common, common_req)
            elif v.ref and self.is_union(v.ref):
                # A member that is a union itself (v2's ``state_update`` is one of the
                # ``StateUpdate`` states): one class holding every state's fields.
                cls = self.target.variant_names.get((name, v.tag)) or pascal(v.tag) + name
                inner, inner_required, _ = self.flat_fields(self.defs[v.ref])
                self.extra_classes.append(
                    ClassPlan(
                        cls,
                        {**common, **inner},
                        set(common_req) | inner_required,
                        v.ref,
                        tag_field=field_name,
                        tag=v.tag,
                    )
                )
            elif v.ref:
                cls = self.target.variant_names.get((name, v.tag)) or pascal(v.tag)
                if cls in self.defs:
                    cls = pascal(v.tag) + name
                self.extra_classes.append(
                    ClassPlan(
                        cls,
                        dict(common),
                        set(common_req),
                        v.ref,
                        base=v.ref,
                        tag_field=field_name,
                        tag=v.tag,
                    )
                )
            else:
                cls = self.target.variant_names.get((name, v.tag)) or pascal(v.tag) + name
                props = dict(common)
                props.update(v.props)
                self.extra_classes.append(
                    ClassPlan(
                        cls,
                        props,
                        set(common_req) | set(v.required),
                        name,
                        tag_field=field_name,
                        tag=v.tag,
                    )
                )
            plan.tags[v.tag] = cls
            plan.members.append(cls)
            self.add_marker(cls, name)
        self.unions[name] = plan

    def is_union(self, name: str) -> bool:
        """Whether a definition is only a union of members (no fields of its own)."""
        d = self.defs.get(name, {})
        return bool(d.get("oneOf") or d.get("anyOf")) and "properties" not in d

    def add_common(self, cls: str, common: dict[str, Any], common_req: list[str]) -> None:
        if common:
            self.common_props.setdefault(cls, ({}, set()))
            self.common_props[cls][0].update(common)
            self.common_props[cls][1].update(common_req)

    def plan_flat_class(self, name: str, d: dict[str, Any]) -> None:
        props, required, alternatives = self.flat_fields(d)
        self.classes[name] = ClassPlan(name, props, required, name)
        if len(alternatives) > 1 and frozenset() not in alternatives:
            # (an alternative that requires nothing leaves nothing to check)
            self.alternatives[name] = sorted(sorted(a) for a in alternatives)

    def flat_fields(
        self, d: dict[str, Any]
    ) -> tuple[dict[str, Any], set[str], set[frozenset[str]]]:
        """The fields of a definition whose variants are merged into one class: its own,
        then every variant's (a field all variants require is required), and the sets
        of fields each variant requires beyond those."""
        props = dict(d.get("properties", {}))
        required = set(d.get("required", []))
        variants = self.variants(d)
        tag_field = self.tag_field(d)
        variant_props: list[tuple[dict[str, Any], set[str]]] = []
        for v in variants:
            vp = dict(v.props)
            vr = set(v.required)
            if v.ref:
                rd = self.defs[v.ref]
                if rd.get("oneOf") or rd.get("anyOf"):
                    ref_props, ref_required, _ = self.flat_fields(rd)
                else:
                    ref_props, ref_required = rd.get("properties", {}), set(rd.get("required", []))
                vp.update(ref_props)
                vr |= ref_required
            if v.tag is not None:
                vp[tag_field or "type"] = {"type": "string"}
            variant_props.append((vp, vr))
        all_keys: dict[str, list[Any]] = {}
        for vp, _ in variant_props:
            for k, s in vp.items():
                all_keys.setdefault(k, []).append(s)
        for k, schemas in all_keys.items():
            if k in props:
                continue
            unique = []
            for s in schemas:
                if s not in unique:
                    unique.append(s)
            props[k] = unique[0] if len(unique) == 1 else {"anyOf": unique}
            if all(k in vr for _, vr in variant_props):
                required.add(k)
        if tag_field and all(v.tag is not None or tag_field in v.required for v in variants):
            required.add(tag_field)  # every member carries the discriminator
        return props, required, {frozenset(vr - required) for _, vr in variant_props}

    # -- types ------------------------------------------------------------

    def pytype(self, s: dict[str, Any]) -> str:
        if s is True or s == {} or not isinstance(s, dict):
            return "Any"
        r = only_ref(s)
        if r:
            return r
        if "anyOf" in s or "oneOf" in s:
            parts = []
            for b in s.get("anyOf") or s.get("oneOf"):
                parts.append(self.pytype(b))
            return " | ".join(dict.fromkeys(parts))
        t = s.get("type")
        if "const" in s:
            return "str" if t == "string" else "Any"
        if isinstance(t, list):
            parts = [self.pytype({**s, "type": x}) for x in t]
            return " | ".join(dict.fromkeys(parts))
        if t == "null":
            return "None"
        if t in PRIMITIVES:
            return PRIMITIVES[t]
        if t == "array":
            return f"list[{self.pytype(s.get('items', {}))}]"
        if t == "object":
            ap = s.get("additionalProperties", True)
            value = "Any" if ap is True or ap == {} else self.pytype(ap)
            return f"dict[str, {value}]"
        return "Any"

    # -- emission ---------------------------------------------------------

    def run(self) -> tuple[str, str, str]:
        self._pending_markers = {}
        self.class_tags: dict[str, tuple[str, str]] = {}
        self.common_props: dict[str, tuple[dict[str, Any], set[str]]] = {}
        self.classify()
        self.drop_unmodelled()
        for cls, (props, req) in self.common_props.items():
            plan = self.classes[cls]
            merged = dict(props)
            merged.update(plan.props)
            plan.props = merged
            plan.required |= req
        for cls, (tf, tag) in self.class_tags.items():
            self.classes[cls].tag_field, self.classes[cls].tag = tf, tag
        all_plans = {p.name: p for p in [*self.classes.values(), *self.extra_classes]}
        for cls, unions in self._pending_markers.items():
            if cls in all_plans:
                all_plans[cls].markers.extend(f"_{u}Marker" for u in unions)
        return self.emit_models(), self.emit_methods(), self.emit_rules()

    def native(self, plan: UnionPlan) -> bool:
        """Whether msgspec can decode this union natively (all members tagged Structs)."""
        return bool(
            plan.field
            and plan.tags
            and plan.default is None
            and len(plan.members) == len(plan.tags)
        )

    def unknown_name(self, union: str) -> str:
        """The class for members of ``union`` this version does not know."""
        name = f"Unknown{union}"
        return f"Unrecognized{union}" if name in self.defs else name

    def drop_unmodelled(self) -> None:
        """Unions keep only members that became classes; the rest arrive as Unknown."""
        gone = set(self.unmodelled)
        while True:
            extra = [p for p in self.extra_classes if p.base in gone]
            if not extra:
                break
            gone |= {p.name for p in extra}
            self.extra_classes = [p for p in self.extra_classes if p.base not in gone]
        for plan in self.unions.values():
            plan.members = [m for m in plan.members if m not in gone]
            plan.tags = {t: c for t, c in plan.tags.items() if c not in gone}
            plan.untagged_choices = [c for c in plan.untagged_choices if c not in gone]
            if plan.default in gone:
                plan.default = None
        for cls in gone:
            self.class_tags.pop(cls, None)
            self.common_props.pop(cls, None)

    def emit_models(self) -> str:
        out: list[str] = [
            f"# Generated by tools/gen_schema.py from the official ACP v{self.target.version} JSON Schema. Do not edit.",
            f"# Schema sha256: {self.digest}",
            f'"""ACP v{self.target.version} protocol models (generated; see :mod:`{self.target.doc_module}`)."""',
            "",
            "from __future__ import annotations",
            "",
            "from typing import TYPE_CHECKING, Any, Literal, TypeAlias, Union",
            "",
            "from msgspec import UNSET, UnsetType",
            "from msgspec import field as _field",
            "",
            f"from {self.target.base_import}_base import (",
            "    AcpModel,",
            "    UnionMarker,",
            "    UnknownVariant,",
            "    register_native_union,",
            "    register_tagged_union,",
            "    register_untagged_union,",
            ")",
            "",
            "",
        ]
        exported: list[str] = []
        for name, expr in self.aliases.items():
            out.append(f"{name}: TypeAlias = {expr}")
            exported.append(name)
        out.append("")
        for name, (values, _open) in self.enums.items():
            lit = ", ".join(json.dumps(v) for v in values)
            out.append("if TYPE_CHECKING:")
            out.append(f"    {name}: TypeAlias = Union[Literal[{lit}], str]")
            out.append("else:")
            out.append(f"    {name} = str")
            exported.append(name)
        out.append("")
        out.append("")
        # markers
        for name, plan in self.unions.items():
            out.append(f"class _{name}Marker(UnionMarker):")
            out.append("    __slots__ = ()")
            out.append("")
            out.append("")
            if plan.open:
                out.append(f"class {self.unknown_name(name)}(UnknownVariant, _{name}Marker):")
                out.append(
                    f'    """A ``{name}`` member this version does not know; ``raw`` holds it whole."""'
                )
                out.append("")
                out.append("    __slots__ = ()")
                out.append("")
                out.append("")
                exported.append(self.unknown_name(name))
        emitted: set[str] = set()
        plans = list(self.classes.values())
        pending_extra = list(self.extra_classes)
        for plan in plans:
            out += self.emit_class(plan)
            emitted.add(plan.name)
            exported.append(plan.name)
        for plan in pending_extra:
            out += self.emit_class(plan)
            exported.append(plan.name)
        # union aliases
        for name, plan in self.unions.items():
            members = list(plan.members)
            if plan.open:
                members.append(self.unknown_name(name))
            out.append("if TYPE_CHECKING:")
            out.append(f"    {name}: TypeAlias = Union[{', '.join(members)}]")
            out.append("else:")
            if self.native(plan):
                # Every member is a tagged Struct: msgspec decodes the union natively
                # (fast); an unknown tag falls back to the tolerant converter.
                out.append(f"    {name} = Union[{', '.join(plan.members)}]")
            else:
                out.append(f"    {name} = _{name}Marker")
            exported.append(name)
        for name, (runtime, typing_expr) in self.split_aliases.items():
            out.append("if TYPE_CHECKING:")
            out.append(f"    {name}: TypeAlias = {typing_expr}")
            out.append("else:")
            out.append(f"    {name} = {runtime}")
            exported.append(name)
        out.append("")
        for name, plan in self.unions.items():
            if plan.field:
                tags = ", ".join(f"{json.dumps(t)}: {c}" for t, c in plan.tags.items())
                default = f", default={plan.default}" if plan.default else ""
                out.append(
                    f"register_tagged_union(_{name}Marker, {json.dumps(plan.field)}, {{{tags}}}, "
                    f"{self.unknown_name(name)}{default})"
                )
                if self.native(plan):
                    out.append(f"register_native_union({name}, {self.unknown_name(name)})")
            else:
                choices = ", ".join(plan.untagged_choices)
                unknown = f", {self.unknown_name(name)}" if plan.open else ""
                out.append(f"register_untagged_union(_{name}Marker, [{choices}]{unknown})")
        out.append("")
        out.append("__all__ = [")
        for name in sorted(set(exported)):
            out.append(f"    {json.dumps(name)},")
        out.append("]")
        return "\n".join(out) + "\n"

    def emit_class(self, plan: ClassPlan) -> list[str]:
        bases = [plan.base, *plan.markers]
        kwargs = ", kw_only=True"
        if plan.tag_field:
            kwargs += f", tag_field={json.dumps(plan.tag_field)}, tag={json.dumps(plan.tag)}"
        lines = [f"class {plan.name}({', '.join(bases)}{kwargs}):"]
        doc = f"Schema: ``{plan.doc_source}``"
        if plan.doc_source not in self.stable_defs:
            doc = "Unstable (opt-in). " + doc
        if plan.tag:
            doc = f"``{plan.tag_field}: {plan.tag}`` member. " + doc
        url = self.spec_url(plan.doc_source)
        if url:
            doc += f"; spec: {url}"
        lines.append(f'    """{doc}."""')
        lines.append("")
        body = 0
        for wire, s in plan.props.items():
            if plan.tag_field and wire == plan.tag_field:
                continue
            attr = snake(wire)
            typ = self.pytype(s)
            name_arg = f"name={json.dumps(wire)}" if attr != wire else ""
            if wire in plan.required:
                if name_arg:
                    lines.append(f"    {attr}: {typ} = _field({name_arg})")
                else:
                    lines.append(f"    {attr}: {typ}")
            else:
                args = ", ".join(x for x in ("default=UNSET", name_arg) if x)
                lines.append(f"    {attr}: {typ} | UnsetType = _field({args})")
            if self.is_unstable_field(plan, wire):
                lines[-1] += "  # unstable"
            body += 1
        if body == 0 and lines[-1] == "":
            lines.pop()
        lines += ["", ""]
        return lines

    def is_unstable_field(self, plan: ClassPlan, wire: str) -> bool:
        """Whether ``wire`` is a field only the unstable schema gives this model.

        The model's fields may come from several definitions (a union member takes the
        union's common fields); a field counts as stable if any of them has it anywhere
        in the stable schema, so a stable field is never taken for an unstable one.
        """
        own = self.stable_defs.get(plan.doc_source if plan.base == "AcpModel" else plan.base)
        if own is None or (plan.tag and self.stable_branch(own, plan.tag) is None):
            return False  # an unstable-only model: its fields are all the same to it
        sources = {plan.doc_source, plan.base}
        sources |= {m[1 : -len("Marker")] for m in plan.markers}
        stable = [self.stable_defs[n] for n in sources if n in self.stable_defs]
        known: set[str] = set()
        pending: list[Any] = list(stable)
        while pending:
            node = pending.pop()
            if isinstance(node, dict):
                props = node.get("properties")
                if isinstance(props, dict):
                    known |= set(props)
                ref = only_ref(node)
                if ref in self.stable_defs and ref not in sources:
                    sources.add(ref)
                    pending.append(self.stable_defs[ref])
                for key in ("oneOf", "anyOf", "allOf"):
                    pending.extend(node.get(key) or [])
        return wire not in known

    def stable_branch(self, d: dict[str, Any], tag: str) -> dict[str, Any] | None:
        """The branch of a stable union definition that carries ``tag``, if it has one."""
        if not (d.get("oneOf") or d.get("anyOf")):
            return d  # not a union: the definition itself
        for branch in d.get("oneOf") or d.get("anyOf") or []:
            if self.tag_of(branch) == tag:
                return cast_dict(branch)
        return None

    def spec_url(self, name: str) -> str | None:
        d = self.defs.get(name, {})
        m = SPEC_URL.search(d.get("description", ""))
        return m.group(0).rstrip(".") if m else None

    def closed_enum(self, s: Any) -> str | None:
        """The closed enumeration whose values a property (or its list items) must take."""
        if not isinstance(s, dict):
            return None
        r = only_ref(s)
        if r:
            enum = self.enums.get(r)
            return r if enum is not None and not enum[1] else None
        for branch in s.get("anyOf") or s.get("oneOf") or []:
            found = self.closed_enum(branch)
            if found:
                return found
        kind = s.get("type")
        if kind == "array" or (isinstance(kind, list) and "array" in kind):
            return self.closed_enum(s.get("items", {}))
        return None

    def emit_rules(self) -> str:
        out = [
            f"# Generated by tools/gen_schema.py from the official ACP v{self.target.version} JSON Schema. Do not edit.",
            f"# Schema sha256: {self.digest}",
            '"""What the schema says that the models\' run-time types leave out (generated).',
            "",
            "The models take any string for an enumeration and keep unknown union members, so a",
            "newer peer never breaks acpwire. A validator that holds peers to the letter of the",
            "schema (``acp check``) reads these tables.",
            '"""',
            "",
            "from __future__ import annotations",
            "",
            "from collections.abc import Mapping",
            "",
            "ENUM_VALUES: Mapping[str, frozenset[str]] = {",
        ]
        for name, (values, is_open) in self.enums.items():
            if not is_open:
                lit = ", ".join(json.dumps(v) for v in values)
                out.append(f"    {json.dumps(name)}: frozenset({{{lit}}}),")
        out.append("}")
        out.append('"""Closed enumerations and their values."""')
        out.append("")
        out.append("FIELD_ENUMS: Mapping[tuple[str, str], str] = {")
        plans = [*self.classes.values(), *self.extra_classes]
        for plan in plans:
            for wire, prop in plan.props.items():
                if plan.tag_field and wire == plan.tag_field:
                    continue
                enum = self.closed_enum(prop)
                if enum:
                    out.append(
                        f"    ({json.dumps(plan.name)}, {json.dumps(wire)}): {json.dumps(enum)},"
                    )
        out.append("}")
        out.append(
            '"""(model class, wire field) -> the closed enumeration of its strings or list items."""'
        )
        out.append("")
        out.append("REQUIRED_ONE_OF: Mapping[str, tuple[frozenset[str], ...]] = {")
        for name, alternatives in sorted(self.alternatives.items()):
            if name in self.classes:
                sets = ", ".join(
                    "frozenset({" + ", ".join(json.dumps(f) for f in a) + "})"
                    if a
                    else "frozenset()"
                    for a in alternatives
                )
                out.append(f"    {json.dumps(name)}: ({sets},),")
        out.append("}")
        out.append(
            '"""Models merged from alternatives: the fields one of the alternatives requires."""'
        )
        out.append("")
        out.append("UNSTABLE_FIELDS: Mapping[str, frozenset[str]] = {")
        for plan in plans:
            unstable = [
                w for w in plan.props if w != plan.tag_field and self.is_unstable_field(plan, w)
            ]
            if unstable:
                lit = ", ".join(json.dumps(w) for w in unstable)
                out.append(f"    {json.dumps(plan.name)}: frozenset({{{lit}}}),")
        out.append("}")
        out.append(
            '"""Fields of stable models that only the unstable schema has (model class -> wire'
        )
        out.append('names): what a peer that did not opt in to unstable ACP must not send."""')
        out.append("")
        names = sorted(self.unknown_name(u) for u in self.catch_all if u in self.unions)
        out.append("OPEN_UNIONS: frozenset[str] = frozenset(")
        out.append("    {")
        for name in names:
            out.append(f"        {json.dumps(name)},")
        out.append("    }")
        out.append(")")
        out.append(
            '"""``Unknown...`` classes of the unions whose schema admits members it does not list."""'
        )
        return "\n".join(out) + "\n"

    def method_rows(self) -> list[dict[str, Any]]:
        """One row per (method, handling side, kind), from the x-method/x-side annotations."""
        responses: dict[str, str] = {}
        params: list[tuple[str, str, str]] = []
        for name, d in self.defs.items():
            method = d.get("x-method")
            if not method:
                continue
            if name.endswith("Response"):
                responses[method] = name
            else:
                params.append((name, method, d["x-side"]))
        rows = []
        for name, method, side in params:
            kind = "notification" if name.endswith("Notification") else "request"
            result = responses[method] if kind == "request" else None
            stable = self.stable_defs.get(name, {}).get("x-method") == method
            if side == "proxy":
                sides = PROXY_SIDES[method]
            else:
                sides = ({"agent": "agent", "client": "client", "protocol": "both"}[side],)
            for handled_by in sides:
                rows.append(
                    {
                        "name": method,
                        "handled_by": handled_by,
                        "kind": kind,
                        "python_name": self.target.python_names.get(name)
                        or snake(re.sub(r"(Request|Notification)$", "", name)),
                        "params": name,
                        "result": result,
                        "gate": self.target.gates.get(method),
                        "stability": "stable" if stable else "unstable",
                    }
                )
        order = {"agent": 0, "client": 1, "both": 2}
        rows.sort(key=lambda r: (r["stability"], order[r["handled_by"]], r["name"], r["kind"]))
        unknown = set(self.target.gates) - {r["name"] for r in rows}
        if unknown:
            raise SystemExit(f"gen_schema: capability gates for unknown methods: {sorted(unknown)}")
        return rows

    def emit_methods(self) -> str:
        out = [
            f"# Generated by tools/gen_schema.py from the official ACP v{self.target.version} JSON Schema. Do not edit.",
            f"# Schema sha256: {self.digest}",
            f'"""The ACP v{self.target.version} method table, stable and unstable rows (generated; see',
            ':mod:`acpwire.schema.methods`)."""',
            "",
            "from __future__ import annotations",
            "",
            self.target.models_import,
            f"from {self.target.base_import}_method_spec import CapabilityGate, MethodSpec",
            "",
            f"V{self.target.version}_METHODS: tuple[MethodSpec, ...] = (",
        ]
        for row in self.method_rows():
            gate = row["gate"]
            gate_expr = (
                f"CapabilityGate({json.dumps(gate[0])}, {json.dumps(gate[1])}, {json.dumps(gate[2])})"
                if gate
                else "None"
            )
            result = row["result"]
            out.append("    MethodSpec(")
            out.append(f"        name={json.dumps(row['name'])},")
            out.append(f"        handled_by={json.dumps(row['handled_by'])},")
            out.append(f"        kind={json.dumps(row['kind'])},")
            out.append(f"        python_name={json.dumps(row['python_name'])},")
            out.append(f"        params=m.{row['params']},")
            out.append(f"        result={'m.' + result if result else 'None'},")
            out.append(f"        params_def={json.dumps(row['params'])},")
            out.append(f"        result_def={json.dumps(result) if result else None},")
            out.append(f"        gate={gate_expr},")
            out.append(f"        stability={json.dumps(row['stability'])},")
            out.append("    ),")
        out.append(")")
        return "\n".join(out) + "\n"


def generate(schema_path: Path, target: Target = TARGETS[0]) -> dict[Path, str]:
    """``schema_path`` is the stable ``vN/schema.json``; its unstable sibling is read too."""
    raw = schema_path.read_bytes()
    unstable_raw = schema_path.with_name("schema.unstable.json").read_bytes()
    unstable_text = unstable_raw.decode()
    for old, new in target.unstable_renames.items():
        unstable_text = unstable_text.replace(f'"#/$defs/{old}"', f'"#/$defs/{new}"')
    unstable = json.loads(unstable_text)
    for old, new in target.unstable_renames.items():
        unstable["$defs"][new] = unstable["$defs"].pop(old)
    gen = Generator(unstable, json.loads(raw), target)
    gen.digest = hashlib.sha256(raw + unstable_raw).hexdigest()
    return dict(zip(target.outputs, gen.run(), strict=True))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="fail if the committed output is stale"
    )
    parser.add_argument(
        "--schema", type=Path, help="a schema folder holding v1/ and v2/ (default: found)"
    )
    args = parser.parse_args()
    outputs: dict[Path, str] = {}
    for target in TARGETS:
        name = f"v{target.version}/schema.json"
        schema = args.schema / name if args.schema else find_schema(name)
        if schema is None or not schema.is_file():
            print(
                f"gen_schema: ACP schema {name} not found "
                "(run bin/test once, or set ACPWIRE_SCHEMA_DIR)",
                file=sys.stderr,
            )
            return 2
        outputs.update(generate(schema, target))
    stale = [p for p, text in outputs.items() if not p.exists() or p.read_text() != text]
    if args.check:
        for p in stale:
            print(f"gen_schema: {p.relative_to(ROOT)} is out of date", file=sys.stderr)
        return 1 if stale else 0
    for p, text in outputs.items():
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    print(f"gen_schema: wrote {', '.join(str(p.relative_to(ROOT)) for p in outputs)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
