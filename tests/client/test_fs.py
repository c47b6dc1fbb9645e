"""WorkspaceFiles: the client's sandbox behind fs/read_text_file and fs/write_text_file."""

# Fixtures and assertions touch real files synchronously on purpose.

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from acpwire.client.fs import WorkspaceFiles
from acpwire.protocol.errors import ErrorCode, InvalidParams, RequestError, ResourceNotFound

BIG_FILE_LINES = 500_000


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    root.mkdir()
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    other = tmp_path / "outside"
    other.mkdir()
    (other / "secret.txt").write_text("top secret\n")
    return other


@pytest.fixture
def files(workspace: Path) -> WorkspaceFiles:
    return WorkspaceFiles(workspace)


@pytest.fixture(scope="module")
def big_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """About 50 MB of numbered lines, written once for the module."""
    root = tmp_path_factory.mktemp("big")
    path = root / "big.txt"
    filler = "x" * 90
    with path.open("w", encoding="utf-8", newline="") as f:
        for start in range(1, BIG_FILE_LINES + 1, 10_000):
            f.write("".join(f"line {n:07d} {filler}\n" for n in range(start, start + 10_000)))
    return path


def assert_outside(error: RequestError) -> None:
    assert error.code == ErrorCode.INVALID_PARAMS
    assert "outside the workspace" in error.message
    assert error.data["reason"] == "outside_workspace"
    assert "secret" not in str(error.data.get("content", ""))


# ---------------------------------------------------------------------------- reading


async def test_reads_the_whole_file(files: WorkspaceFiles, workspace: Path) -> None:
    (workspace / "a.txt").write_text("hello\nworld\n")
    assert await files.read_text(str(workspace / "a.txt")) == "hello\nworld\n"


async def test_relative_path_is_invalid_params(files: WorkspaceFiles, workspace: Path) -> None:
    (workspace / "a.txt").write_text("hello")
    with pytest.raises(InvalidParams) as caught:
        await files.read_text("a.txt")
    assert caught.value.code == ErrorCode.INVALID_PARAMS
    assert "absolute" in caught.value.message


async def test_missing_file_answers_resource_not_found(
    files: WorkspaceFiles, workspace: Path
) -> None:
    with pytest.raises(ResourceNotFound) as caught:
        await files.read_text(str(workspace / "nope.txt"))
    assert caught.value.code == ErrorCode.RESOURCE_NOT_FOUND
    assert caught.value.to_wire()["code"] == -32002
    assert caught.value.data == {"path": str(workspace / "nope.txt")}


async def test_file_below_a_regular_file_is_not_found(
    files: WorkspaceFiles, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("x")
    with pytest.raises(ResourceNotFound):
        await files.read_text(str(workspace / "a.txt" / "b.txt"))


async def test_reading_a_directory_is_invalid_params(
    files: WorkspaceFiles, workspace: Path
) -> None:
    (workspace / "sub").mkdir()
    with pytest.raises(InvalidParams) as caught:
        await files.read_text(str(workspace / "sub"))
    assert caught.value.data["reason"] == "is_directory"


async def test_reading_a_fifo_is_refused_without_hanging(
    files: WorkspaceFiles, workspace: Path
) -> None:
    fifo = workspace / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(InvalidParams) as caught:
        await files.read_text(str(fifo))
    assert caught.value.data["reason"] == "not_regular_file"


async def test_dotdot_escaping_the_workspace_is_refused(
    files: WorkspaceFiles, workspace: Path, outside: Path
) -> None:
    sneaky = f"{workspace}/../outside/secret.txt"
    with pytest.raises(RequestError) as caught:
        await files.read_text(sneaky)
    assert_outside(caught.value)


async def test_dotdot_staying_inside_the_workspace_is_fine(
    files: WorkspaceFiles, workspace: Path
) -> None:
    (workspace / "sub").mkdir()
    (workspace / "a.txt").write_text("inside")
    assert await files.read_text(f"{workspace}/sub/../a.txt") == "inside"


async def test_file_symlink_pointing_outside_is_refused(
    files: WorkspaceFiles, workspace: Path, outside: Path
) -> None:
    (workspace / "link.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(RequestError) as caught:
        await files.read_text(str(workspace / "link.txt"))
    assert_outside(caught.value)


async def test_directory_symlink_pointing_outside_is_refused(
    files: WorkspaceFiles, workspace: Path, outside: Path
) -> None:
    (workspace / "linkdir").symlink_to(outside, target_is_directory=True)
    with pytest.raises(RequestError) as caught:
        await files.read_text(str(workspace / "linkdir" / "secret.txt"))
    assert_outside(caught.value)


async def test_symlink_inside_the_workspace_is_followed(
    files: WorkspaceFiles, workspace: Path
) -> None:
    (workspace / "real.txt").write_text("real content")
    (workspace / "alias.txt").symlink_to(workspace / "real.txt")
    assert await files.read_text(str(workspace / "alias.txt")) == "real content"


async def test_outside_path_that_does_not_exist_is_still_outside(
    files: WorkspaceFiles, outside: Path
) -> None:
    """The answer does not reveal whether a file outside the workspace exists."""
    with pytest.raises(RequestError) as caught:
        await files.read_text(str(outside / "missing.txt"))
    assert_outside(caught.value)


async def test_workspace_given_through_a_symlink_still_works(tmp_path: Path) -> None:
    real = tmp_path / "real-root"
    real.mkdir()
    (real / "a.txt").write_text("via link")
    (tmp_path / "root-link").symlink_to(real, target_is_directory=True)
    files = WorkspaceFiles(tmp_path / "root-link")
    assert files.roots == (real,)
    assert await files.read_text(str(tmp_path / "root-link" / "a.txt")) == "via link"
    assert await files.read_text(str(real / "a.txt")) == "via link"


async def test_additional_directories_are_part_of_the_workspace(
    tmp_path: Path, workspace: Path
) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "e.txt").write_text("extra")
    later = tmp_path / "later"
    later.mkdir()
    (later / "l.txt").write_text("later")
    files = WorkspaceFiles(workspace, [extra])
    assert files.roots == (workspace.resolve(), extra.resolve())
    assert await files.read_text(str(extra / "e.txt")) == "extra"
    with pytest.raises(InvalidParams):
        await files.read_text(str(later / "l.txt"))
    files.add_root(later)
    assert await files.read_text(str(later / "l.txt")) == "later"
    assert files.roots[-1] == later.resolve()


def test_relative_root_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="absolute"):
        WorkspaceFiles("relative/dir")


async def test_line_and_limit_are_one_based(files: WorkspaceFiles, workspace: Path) -> None:
    path = workspace / "lines.txt"
    path.write_text("one\ntwo\nthree\nfour\n")
    p = str(path)
    assert await files.read_text(p, line=1, limit=1) == "one\n"
    assert await files.read_text(p, line=2, limit=2) == "two\nthree\n"
    assert await files.read_text(p, line=3) == "three\nfour\n"
    assert await files.read_text(p, limit=2) == "one\ntwo\n"
    assert await files.read_text(p, line=4, limit=10) == "four\n"


async def test_range_past_the_end_is_empty(files: WorkspaceFiles, workspace: Path) -> None:
    path = workspace / "lines.txt"
    path.write_text("one\ntwo")
    assert await files.read_text(str(path), line=3) == ""
    assert await files.read_text(str(path), line=100, limit=5) == ""
    assert await files.read_text(str(path), line=2, limit=5) == "two"
    assert await files.read_text(str(path), limit=0) == ""


@pytest.mark.parametrize(("line", "limit"), [(0, None), (-1, 2), (None, -1)])
async def test_line_below_one_or_negative_limit_is_invalid_params(
    files: WorkspaceFiles, workspace: Path, line: int | None, limit: int | None
) -> None:
    (workspace / "a.txt").write_text("a\n")
    with pytest.raises(InvalidParams):
        await files.read_text(str(workspace / "a.txt"), line=line, limit=limit)


async def test_crlf_line_endings_are_preserved(files: WorkspaceFiles, workspace: Path) -> None:
    path = workspace / "dos.txt"
    path.write_bytes(b"one\r\ntwo\r\nthree\nfour\r\n")
    assert await files.read_text(str(path)) == "one\r\ntwo\r\nthree\nfour\r\n"
    assert await files.read_text(str(path), line=2, limit=2) == "two\r\nthree\n"


async def test_non_utf8_file_is_refused_without_replacement_characters(
    files: WorkspaceFiles, workspace: Path
) -> None:
    path = workspace / "latin1.txt"
    path.write_bytes("caf\u00e9\n".encode("latin-1"))
    with pytest.raises(InvalidParams) as caught:
        await files.read_text(str(path))
    assert "UTF-8" in caught.value.message
    assert caught.value.data == {"path": str(path), "reason": "not_utf8"}


async def test_utf8_text_with_multibyte_characters_round_trips(
    files: WorkspaceFiles, workspace: Path
) -> None:
    text = "\ufeffh\u00e9llo \u20ac \U0001f600\n\u65e5\u672c\u8a9e\n"
    await files.write_text(str(workspace / "u.txt"), text)
    assert (workspace / "u.txt").read_bytes() == text.encode("utf-8")
    assert await files.read_text(str(workspace / "u.txt")) == text
    assert await files.read_text(str(workspace / "u.txt"), line=2) == "\u65e5\u672c\u8a9e\n"


@pytest.mark.slow
async def test_big_file_is_refused_whole_but_readable_in_slices(big_file: Path) -> None:
    files = WorkspaceFiles(big_file.parent)
    assert big_file.stat().st_size > files.max_read_bytes
    with pytest.raises(InvalidParams) as caught:
        await files.read_text(str(big_file))
    assert caught.value.data["reason"] == "too_large"
    assert caught.value.data["size"] == big_file.stat().st_size
    assert "line and limit" in caught.value.message

    near_end = await files.read_text(str(big_file), line=BIG_FILE_LINES - 2, limit=2)
    lines = near_end.splitlines()
    assert [ln.split()[1] for ln in lines] == [
        f"{BIG_FILE_LINES - 2:07d}",
        f"{BIG_FILE_LINES - 1:07d}",
    ]
    last = await files.read_text(str(big_file), line=BIG_FILE_LINES)
    assert last.startswith(f"line {BIG_FILE_LINES:07d} ")
    assert await files.read_text(str(big_file), line=BIG_FILE_LINES + 1) == ""


async def test_a_range_larger_than_max_read_bytes_is_refused(
    workspace: Path,
) -> None:
    path = workspace / "a.txt"
    path.write_text("".join(f"{n}\n" for n in range(1000)))
    files = WorkspaceFiles(workspace, max_read_bytes=100)
    assert await files.read_text(str(path), line=10, limit=5) == "9\n10\n11\n12\n13\n"
    with pytest.raises(InvalidParams) as caught:
        await files.read_text(str(path), line=10)
    assert caught.value.data["reason"] == "too_large"
    with pytest.raises(InvalidParams):
        await files.read_text(str(path), line=10, limit=500)


async def test_unsaved_editor_buffer_is_served_instead_of_the_disk(
    workspace: Path, outside: Path
) -> None:
    (workspace / "open.txt").write_text("on disk\n")
    (workspace / "closed.txt").write_text("closed on disk\n")
    asked: list[Path] = []

    def buffers(path: Path) -> str | None:
        asked.append(path)
        return "unsaved\nedits\r\n" if path.name == "open.txt" else None

    files = WorkspaceFiles(workspace, buffer_provider=buffers)
    assert await files.read_text(str(workspace / "open.txt")) == "unsaved\nedits\r\n"
    assert await files.read_text(str(workspace / "open.txt"), line=2, limit=1) == "edits\r\n"
    assert await files.read_text(str(workspace / "closed.txt")) == "closed on disk\n"
    with pytest.raises(InvalidParams):
        await files.read_text(str(outside / "secret.txt"))
    assert all(p.is_relative_to(workspace.resolve()) for p in asked)


# ---------------------------------------------------------------------------- writing


async def test_write_creates_a_missing_file(files: WorkspaceFiles, workspace: Path) -> None:
    """FS-003: fs/write_text_file creates the file if missing."""
    await files.write_text(str(workspace / "new.txt"), "fresh\n")
    assert (workspace / "new.txt").read_text() == "fresh\n"


async def test_write_creates_missing_parent_folders(files: WorkspaceFiles, workspace: Path) -> None:
    """FS-003, with folders that do not exist yet."""
    target = workspace / "a" / "b" / "c.txt"
    await files.write_text(str(target), "deep")
    assert target.read_text() == "deep"


async def test_write_replaces_content_exactly_and_leaves_no_temp_files(
    files: WorkspaceFiles, workspace: Path
) -> None:
    target = workspace / "f.txt"
    target.write_text("old content that is longer\n")
    await files.write_text(str(target), "new\r\nlines\n")
    assert target.read_bytes() == b"new\r\nlines\n"
    assert sorted(p.name for p in workspace.iterdir()) == ["f.txt"]


async def test_write_keeps_the_existing_file_mode(files: WorkspaceFiles, workspace: Path) -> None:
    target = workspace / "notes.txt"
    target.write_text("old\n")
    target.chmod(0o640)
    await files.write_text(str(target), "new\n")
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    script = workspace / "script.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o751)
    await files.write_text(str(script), "#!/bin/sh\necho hi\n", confirmed={"executable"})
    assert stat.S_IMODE(script.stat().st_mode) == 0o751


async def test_new_file_gets_the_umask_mode(files: WorkspaceFiles, workspace: Path) -> None:
    old = os.umask(0o022)
    try:
        await files.write_text(str(workspace / "n.txt"), "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((workspace / "n.txt").stat().st_mode) == 0o644


async def test_write_with_relative_path_is_invalid_params(files: WorkspaceFiles) -> None:
    with pytest.raises(InvalidParams):
        await files.write_text("x.txt", "x")


async def test_write_through_symlink_pointing_outside_is_refused(
    files: WorkspaceFiles, workspace: Path, outside: Path
) -> None:
    (workspace / "link.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(RequestError) as caught:
        await files.write_text(str(workspace / "link.txt"), "pwned")
    assert_outside(caught.value)
    assert (outside / "secret.txt").read_text() == "top secret\n"
    assert (workspace / "link.txt").is_symlink()


async def test_write_through_dangling_symlink_pointing_outside_creates_nothing(
    files: WorkspaceFiles, workspace: Path, outside: Path
) -> None:
    (workspace / "dangling.txt").symlink_to(outside / "planted.txt")
    with pytest.raises(RequestError) as caught:
        await files.write_text(str(workspace / "dangling.txt"), "pwned")
    assert_outside(caught.value)
    assert not (outside / "planted.txt").exists()


async def test_write_into_directory_symlink_pointing_outside_is_refused(
    files: WorkspaceFiles, workspace: Path, outside: Path
) -> None:
    (workspace / "linkdir").symlink_to(outside, target_is_directory=True)
    with pytest.raises(RequestError) as caught:
        await files.write_text(str(workspace / "linkdir" / "new" / "planted.txt"), "pwned")
    assert_outside(caught.value)
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


async def test_write_with_dotdot_escape_creates_nothing_outside(
    files: WorkspaceFiles, workspace: Path, outside: Path
) -> None:
    target = f"{workspace}/newdir/../../outside/sub/planted.txt"
    with pytest.raises(RequestError) as caught:
        await files.write_text(target, "pwned")
    assert_outside(caught.value)
    assert not (workspace / "newdir").exists()
    assert not (outside / "sub").exists()


async def test_write_through_symlink_inside_updates_the_target_and_keeps_the_link(
    files: WorkspaceFiles, workspace: Path
) -> None:
    (workspace / "real.txt").write_text("old")
    (workspace / "alias.txt").symlink_to(workspace / "real.txt")
    await files.write_text(str(workspace / "alias.txt"), "new")
    assert (workspace / "alias.txt").is_symlink()
    assert (workspace / "real.txt").read_text() == "new"


async def test_writing_onto_a_directory_is_invalid_params(
    files: WorkspaceFiles, workspace: Path
) -> None:
    (workspace / "sub").mkdir()
    with pytest.raises(InvalidParams) as caught:
        await files.write_text(str(workspace / "sub"), "x")
    assert caught.value.data["reason"] == "is_directory"


async def test_writing_below_a_regular_file_is_invalid_params(
    files: WorkspaceFiles, workspace: Path
) -> None:
    (workspace / "file.txt").write_text("x")
    with pytest.raises(InvalidParams) as caught:
        await files.write_text(str(workspace / "file.txt" / "child.txt"), "x")
    assert caught.value.data["reason"] == "parent_not_directory"


async def test_content_with_unpaired_surrogate_is_invalid_params(
    files: WorkspaceFiles, workspace: Path
) -> None:
    with pytest.raises(InvalidParams):
        await files.write_text(str(workspace / "bad.txt"), "half \ud800 pair")
    assert not (workspace / "bad.txt").exists()


# ---------------------------------------------------------------------------- races, made deterministic
# The sandbox resolves a path, then opens it from the root's descriptor without following
# links. Swapping a folder between the two steps is what a racing attacker does; here the
# swap happens exactly there, every time.


def swap_for_link(folder: Path, target: Path) -> None:
    folder.rename(folder.with_name(folder.name + "-moved"))
    folder.symlink_to(target, target_is_directory=target.is_dir())


async def test_folder_swapped_for_a_link_after_resolution_is_not_followed_on_read(
    files: WorkspaceFiles, workspace: Path, outside: Path
) -> None:
    (workspace / "dir").mkdir()
    (workspace / "dir" / "secret.txt").write_text("inside\n")
    target = await files.locate(str(workspace / "dir" / "secret.txt"))
    swap_for_link(workspace / "dir", outside)
    with pytest.raises(InvalidParams) as caught:
        await files.read_text(target)
    assert caught.value.data == {
        "path": str(workspace / "dir" / "secret.txt"),
        "reason": "path_changed",
    }


async def test_folder_swapped_for_a_link_after_resolution_gets_no_write(
    files: WorkspaceFiles, workspace: Path, outside: Path
) -> None:
    (workspace / "dir").mkdir()
    target = await files.locate(str(workspace / "dir" / "new" / "planted.txt"))
    swap_for_link(workspace / "dir", outside)
    with pytest.raises(InvalidParams) as caught:
        await files.write_text(target, "pwned")
    assert caught.value.data["reason"] == "path_changed"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


async def test_file_swapped_for_a_link_after_resolution_is_neither_read_nor_replaced(
    files: WorkspaceFiles, workspace: Path, outside: Path
) -> None:
    (workspace / "notes.txt").write_text("mine\n")
    target = await files.locate(str(workspace / "notes.txt"))
    swap_for_link(workspace / "notes.txt", outside / "secret.txt")
    for attempt in (lambda: files.read_text(target), lambda: files.write_text(target, "pwned")):
        with pytest.raises(InvalidParams) as caught:
            await attempt()
        assert caught.value.data["reason"] == "path_changed"
    assert (outside / "secret.txt").read_text() == "top secret\n"
    assert (workspace / "notes.txt").is_symlink()


async def test_a_symlink_loop_inside_is_reported_as_a_loop(
    files: WorkspaceFiles, workspace: Path
) -> None:
    (workspace / "a").symlink_to(workspace / "b")
    (workspace / "b").symlink_to(workspace / "a")
    for attempt in (
        lambda: files.read_text(str(workspace / "a")),
        lambda: files.write_text(str(workspace / "a"), "x"),
    ):
        with pytest.raises(InvalidParams) as caught:
            await attempt()
        assert caught.value.data["reason"] == "symlink_loop"


async def test_a_failed_write_leaves_the_old_content_and_no_temp_file(
    files: WorkspaceFiles, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = workspace / "f.txt"
    target.write_text("old\n")

    def disk_error(fd: int) -> None:
        raise OSError(5, "Input/output error, with OS text that must not reach the agent")

    monkeypatch.setattr(os, "fsync", disk_error)
    with pytest.raises(RequestError) as caught:
        await files.write_text(str(target), "new\n")
    assert caught.value.code == ErrorCode.INTERNAL_ERROR
    assert caught.value.data == {"path": str(target), "errno": "EIO"}
    assert "Input/output" not in str(caught.value.to_wire())
    assert target.read_text() == "old\n"
    assert sorted(p.name for p in workspace.iterdir()) == ["f.txt"]


async def test_reading_or_writing_the_root_itself_is_a_directory_error(
    files: WorkspaceFiles, workspace: Path
) -> None:
    for attempt in (
        lambda: files.read_text(str(workspace)),
        lambda: files.write_text(str(workspace), "x"),
    ):
        with pytest.raises(InvalidParams) as caught:
            await attempt()
        assert caught.value.data["reason"] == "is_directory"


# ---------------------------------------------------------------------------- protected names


async def test_protected_names_are_configurable(workspace: Path) -> None:
    (workspace / ".git").mkdir()
    open_files = WorkspaceFiles(workspace, protected=(), protect_git=False)
    await open_files.write_text(str(workspace / ".git" / "config"), "[core]\n")
    assert (workspace / ".git" / "config").read_text() == "[core]\n"
    # Without protect_git=False, git's own config stays out of reach.
    with pytest.raises(InvalidParams) as caught:
        await WorkspaceFiles(workspace, protected=()).write_text(
            str(workspace / ".git" / "config"), "[user]\n"
        )
    assert caught.value.data["reason"] == "protected_path"

    keys = WorkspaceFiles(workspace, protected=["*.PEM", "secrets"])
    for path in ("server.pem", "deploy/secrets/token.txt", "Secrets"):
        with pytest.raises(InvalidParams) as caught:
            await keys.write_text(str(workspace / path), "x")
        assert caught.value.data["reason"] == "protected_path"
        assert not (workspace / path).exists()
    await keys.write_text(str(workspace / ".git" / "description"), "mine\n")
    await keys.write_text(str(workspace / "pem.txt"), "fine")


def test_protected_names_must_be_a_collection() -> None:
    with pytest.raises(TypeError, match="collection"):
        WorkspaceFiles("/tmp", protected=".git")
