"""The sans-IO framing and message core, fed whole and split at every byte."""

from __future__ import annotations

import json

import pytest

from acpwire.protocol import messages as wire
from acpwire.protocol.errors import ErrorCode
from acpwire.protocol.framing import LineSplitter, Oversize

STREAM = (
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}\n'
    b'{"jsonrpc":"2.0","method":"session/update","params":{"t":"line\\u2028sep \xe2\x80\xa8 raw"}}\n'
    b"\n"
    b'{"jsonrpc":"2.0","id":"x","result":{}}\r\n'
)


def split_everywhere(data: bytes, max_size: int = 1 << 20) -> list[list[bytes | Oversize]]:
    results = []
    for cut in range(len(data) + 1):
        splitter = LineSplitter(max_size)
        out = splitter.feed(data[:cut]) + splitter.feed(data[cut:]) + splitter.flush()
        results.append(out)
    return results


def test_messages_are_the_same_however_the_bytes_are_split() -> None:
    """TRANS-003: one message per newline-terminated line; U+2028 inside JSON is not a separator."""
    whole = LineSplitter().feed(STREAM)
    assert len(whole) == 3
    for out in split_everywhere(STREAM):
        assert out == whole


def test_byte_at_a_time_feeding() -> None:
    splitter = LineSplitter()
    out: list[bytes | Oversize] = []
    for i in range(len(STREAM)):
        out += splitter.feed(STREAM[i : i + 1])
    assert out == LineSplitter().feed(STREAM)


def test_an_oversize_line_is_reported_and_skipped_whatever_the_split() -> None:
    data = b'{"a":1}\n' + b"x" * 100 + b"\n" + b'{"b":2}\n'
    for out in split_everywhere(data, max_size=50):
        assert out[0] == b'{"a":1}'
        assert isinstance(out[1], Oversize) and out[1].size == 100
        assert out[2] == b'{"b":2}'


def test_a_final_unterminated_line_counts_at_end_of_input() -> None:
    splitter = LineSplitter()
    assert splitter.feed(b'{"a":1}') == []
    assert splitter.flush() == [b'{"a":1}']


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        (b'{"jsonrpc":"2.0","id":1,"method":"m","params":{}}', wire.Request),
        (b'{"jsonrpc":"2.0","method":"m"}', wire.Notification),
        (b'{"jsonrpc":"2.0","id":1,"result":null}', wire.Response),
        (b'{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}', wire.Response),
        (b"{oops", wire.Invalid),
        (b'{"jsonrpc":"2.0","id":true,"method":"m"}', wire.Invalid),
        (b'{"jsonrpc":"2.0","id":1}', wire.Invalid),
    ],
)
def test_each_line_parses_into_exactly_one_kind_of_message(line: bytes, kind: type) -> None:
    assert isinstance(wire.parse(line), kind)


def test_malformed_json_is_answered_with_a_parse_error_and_null_id() -> None:
    msg = wire.parse(b"{oops")
    assert isinstance(msg, wire.Invalid) and msg.respond and msg.id is None
    assert json.loads(wire.encode_error(msg.id, msg.error)) == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": ErrorCode.PARSE_ERROR, "message": "malformed JSON"},
    }


def test_encoded_messages_are_single_lines() -> None:
    line = wire.encode_notification("m", {"text": "a\nb\u2028c"})
    assert b"\n" not in line
    assert json.loads(line)["params"]["text"] == "a\nb\u2028c"
