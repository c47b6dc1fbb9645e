"""The cassette format: whole records appended in order, readable while written and
after a recording was cut short (docs/recorder.md, "Format")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acpwire.recorder import CassetteError, CassetteWriter, read_cassette
from acpwire.recorder.cassette import read_records

INIT = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}'
ANSWER = b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true},"agentInfo":{"name":"a","version":"1"}}}'


def test_records_come_back_in_order_with_header_times_and_initialize_info(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    with CassetteWriter(path, mode="in-process", side="client", command=["agent", "-v"]) as w:
        w.message("client", INIT)
        w.messages("agent", [ANSWER, b'{"jsonrpc":"2.0","method":"x/y","params":{}}'])
        w.event("agent-exited", status=0)
    cassette = read_cassette(path)
    assert cassette.header["format"] == "acp-cassette"
    assert cassette.header["mode"] == "in-process"
    assert cassette.header["command"] == ["agent", "-v"]
    kinds = [(r["type"], r.get("from")) for r in cassette.records]
    assert kinds == [
        ("message", "client"),
        ("info", "client"),
        ("message", "agent"),
        ("info", "agent"),
        ("message", "agent"),
        ("event", None),
    ]
    assert cassette.messages[0]["msg"] == json.loads(INIT)
    times = [r["t"] for r in cassette.records]
    assert times == sorted(times)
    assert cassette.info == {
        "protocolVersion": 1,
        "clientCapabilities": {},
        "agentCapabilities": {"loadSession": True},
        "agentInfo": {"name": "a", "version": "1"},
    }
    assert not cassette.damaged and not cassette.truncated


def test_lines_that_are_not_json_or_span_lines_still_make_valid_records(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    with CassetteWriter(path, mode="remote") as w:
        w.messages(
            "agent",
            [
                b"Traceback (most recent call last):",
                b'{\n  "jsonrpc": "2.0",\n  "id": 1, "result": {}}',
                b"\xff\xfe{",
                b"{}",
            ],
            transport={"stream": "connection"},
        )
        w.oversize("client", 10_000_000)
    records = read_cassette(path).records
    assert [r["type"] for r in records] == ["raw", "message", "raw", "message", "oversize"]
    assert records[0]["raw"] == "Traceback (most recent call last):"
    assert records[1]["msg"] == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert records[1]["transport"] == {"stream": "connection"}
    assert records[4]["size"] == 10_000_000
    # Every record is one line.
    assert len(path.read_bytes().splitlines()) == 1 + len(records)


def test_a_recording_cut_short_is_read_up_to_its_last_whole_record(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    with CassetteWriter(path, mode="stdio") as w:
        w.message("client", INIT)
    with path.open("ab") as f:
        f.write(b'{"type":"message","from":"agent","t":1.0,"msg":{"jsonrpc":"2.0","id":0,"res')
    cassette = read_cassette(path)
    assert cassette.truncated
    assert [r["type"] for r in cassette.records] == ["message", "info"]


def test_a_reader_follows_a_cassette_while_it_is_written(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    writer = CassetteWriter(path, mode="stdio")
    try:
        values, offset, _ = read_records(path)
        assert [v["type"] for v in values] == ["header"]
        writer.message("client", INIT)
        writer.flush()
        values, offset, _ = read_records(path, offset)
        assert [v["type"] for v in values] == ["message", "info"]
        values, offset2, _ = read_records(path, offset)
        assert values == [] and offset2 == offset
    finally:
        writer.close()


def test_a_file_that_is_not_a_cassette_is_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello\n")
    with pytest.raises(CassetteError, match="not an ACP cassette"):
        read_cassette(path)
    path.write_text('{"type":"header","format":"acp-cassette","version":99}\n')
    with pytest.raises(CassetteError, match="format version 99"):
        read_cassette(path)
