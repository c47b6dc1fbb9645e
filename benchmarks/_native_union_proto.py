"""Yardstick for the decode micro-benchmark: msgspec's own tagged unions.

Not acpwire. A few hand-made Structs mirroring SessionNotification ->
``agent_message_chunk`` -> text content whose union fields are plain unions of
tagged Structs, decoded natively by msgspec. acpwire's generated models resolve
their open unions in a ``dec_hook`` instead (``acpwire/schema/_base.py``: each
union level is decoded to Python objects, then ``msgspec.convert``-ed), and this
shows what that design costs per message. (No ``from __future__ import
annotations`` here: msgspec resolves the annotations at run time.)
"""

from typing import Any

import msgspec
from msgspec import UNSET, UnsetType, field


class Text(msgspec.Struct, kw_only=True, tag_field="type", tag="text"):
    annotations: Any = UNSET
    text: str
    meta: dict[str, Any] | UnsetType | None = field(default=UNSET, name="_meta")


class Image(msgspec.Struct, kw_only=True, tag_field="type", tag="image"):
    data: str
    mime_type: str = field(name="mimeType")
    meta: dict[str, Any] | UnsetType | None = field(default=UNSET, name="_meta")


class Chunk(msgspec.Struct, kw_only=True):
    content: Text | Image
    message_id: str | UnsetType | None = field(default=UNSET, name="messageId")
    meta: dict[str, Any] | UnsetType | None = field(default=UNSET, name="_meta")


class AgentChunk(Chunk, kw_only=True, tag_field="sessionUpdate", tag="agent_message_chunk"):
    pass


class UserChunk(Chunk, kw_only=True, tag_field="sessionUpdate", tag="user_message_chunk"):
    pass


class ThoughtChunk(Chunk, kw_only=True, tag_field="sessionUpdate", tag="agent_thought_chunk"):
    pass


class Notification(msgspec.Struct, kw_only=True):
    session_id: str = field(name="sessionId")
    update: AgentChunk | UserChunk | ThoughtChunk
    meta: dict[str, Any] | UnsetType | None = field(default=UNSET, name="_meta")


def native_decoder() -> "msgspec.json.Decoder[Notification]":
    return msgspec.json.Decoder(Notification)
