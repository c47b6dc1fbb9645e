"""A hostile agent planting code that git runs: hooks outside ``.git/hooks`` and config git reads.

Every test runs in both roles (see ``roles.py``), against real repositories made and
used with the real ``git``: the agent's write must be refused, and the user's next
``git commit`` / ``git status`` must not run anything the agent wrote. The user's own
git configuration is kept out: ``HOME`` and ``XDG_CONFIG_HOME`` point into the test's
folder and the system config is off for ``git`` (the sandbox reads it anyway; it only
adds folders to protect).
"""

# Fixtures and assertions run git and touch real files synchronously on purpose.

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from waiting import TIMEOUT

from acpwire.protocol.errors import ErrorCode

from .roles import ROLES, files_for, refused

pytestmark = [
    pytest.mark.parametrize("role", ROLES),
    pytest.mark.skipif(shutil.which("git") is None, reason="needs git"),
]

USER_HOOK = "#!/bin/sh\nexit 0\n"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home folder of the test's own, with an empty global git config."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for name in ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_DIR", "GIT_WORK_TREE"):
        monkeypatch.delenv(name, raising=False)
    for variable in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{variable}_NAME", "User")
        monkeypatch.setenv(f"GIT_{variable}_EMAIL", "user@example.com")
    return home


def git(folder: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=folder, capture_output=True, text=True, check=True, timeout=TIMEOUT
    )
    return done.stdout


def make_repository(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    git(folder, "init", "-q")
    (folder / "README.md").write_text("hello\n")
    return folder


def add_user_hook(hooks: Path, name: str = "pre-commit") -> Path:
    """A hook the user wrote: executable, harmless."""
    hooks.mkdir(parents=True, exist_ok=True)
    hook = hooks / name
    hook.write_text(USER_HOOK)
    hook.chmod(0o755)
    return hook


def planted(marker: Path) -> str:
    return f'#!/bin/sh\ntouch "{marker}"\n'


def commit(folder: Path) -> None:
    git(folder, "add", "-A")
    git(folder, "commit", "-q", "-m", "work")


async def test_core_hooks_path_of_the_repository_is_protected(
    role: str, home: Path, tmp_path: Path
) -> None:
    """The reported attack: an executable hook in a repository whose core.hooksPath is not
    .git/hooks (and not a folder name the sandbox knows) was overwritten, and ran."""
    repo = make_repository(tmp_path / "repo")
    git(repo, "config", "core.hooksPath", "tools/hooks")
    hook = add_user_hook(repo / "tools" / "hooks")
    (repo / "link-to-hooks").symlink_to(repo / "tools" / "hooks", target_is_directory=True)
    marker = tmp_path / "hook-ran"
    async with files_for(role, repo) as files:
        for path in (
            "tools/hooks/pre-commit",  # overwrite the user's executable hook
            "tools/hooks/post-commit",  # add one
            "tools/hooks/lib/helpers.sh",  # a file a hook may source
            "link-to-hooks/pre-commit",  # the same folder through a link inside the root
            "TOOLS/hooks/pre-commit",  # one rule whatever the file system's case rules
        ):
            error = await refused(files.write(str(repo / path), planted(marker)))
            assert error.code == ErrorCode.INVALID_PARAMS
            assert error.data["reason"] == "protected_path", path
            assert "core.hooksPath = tools/hooks" in error.message
        # Reading a hook stays allowed, and so does writing next to the folder.
        assert await files.read(str(hook)) == USER_HOOK
        await files.write(str(repo / "tools" / "build.sh"), "echo build\n")
    assert hook.read_text() == USER_HOOK
    assert sorted(p.name for p in hook.parent.iterdir()) == ["pre-commit"]
    commit(repo)
    assert not marker.exists()


async def test_global_hooks_path_and_global_config_are_protected(
    role: str, home: Path, tmp_path: Path
) -> None:
    """A session rooted at the home folder: the global config names an absolute hooks
    folder, the XDG config a relative one; both configs themselves are git config too."""
    git(home, "config", "--global", "core.hooksPath", "~/global-hooks")
    xdg_config = home / ".config" / "git" / "config"
    xdg_config.parent.mkdir(parents=True)
    xdg_config.write_text("[core]\n\thooksPath = .project-hooks\n")
    repo = make_repository(home / "project")
    marker = tmp_path / "ran"
    fsmonitor = f'[core]\n\tfsmonitor = "touch {marker}; false"\n'
    async with files_for(role, home) as files:
        attempts = {
            "global-hooks/pre-commit": "core.hooksPath = ~/global-hooks",
            "project/.project-hooks/pre-commit": "core.hooksPath = .project-hooks",
            ".gitconfig": "configuration file",
            ".config/git/config": "configuration file",
        }
        for path, why in attempts.items():
            error = await refused(files.write(str(home / path), fsmonitor))
            assert error.data["reason"] == "protected_path", path
            assert why in error.message
    assert not (home / "global-hooks").exists()
    assert "fsmonitor" not in (home / ".gitconfig").read_text()
    git(repo, "status")
    commit(repo)
    assert not marker.exists()


async def test_files_included_by_the_repository_config_are_protected(
    role: str, home: Path, tmp_path: Path
) -> None:
    """``[include]`` of a file in the work tree: writing it is writing .git/config."""
    repo = make_repository(tmp_path / "repo")
    git(repo, "config", "include.path", "../team.gitconfig")  # relative to .git/
    git(repo, "config", "includeIf.onbranch:nowhere.path", "../other.gitconfig")
    (repo / "team.gitconfig").write_text("[core]\n\thooksPath = team-hooks\n")
    assert git(repo, "config", "core.hooksPath") == "team-hooks\n"  # git reads it
    marker = tmp_path / "ran"
    async with files_for(role, repo) as files:
        for path in ("team.gitconfig", "other.gitconfig", "team-hooks/pre-commit"):
            error = await refused(
                files.write(str(repo / path), f'[core]\n\tfsmonitor = "touch {marker}"\n')
            )
            assert error.data["reason"] == "protected_path", path
    git(repo, "status")
    commit(repo)
    assert not marker.exists()


async def test_a_linked_worktree_is_protected_by_its_main_repository_config(
    role: str, home: Path, tmp_path: Path
) -> None:
    """``git worktree add``: the worktree's .git is a file naming a git dir whose
    ``commondir`` holds the config; a relative hooksPath is relative to the worktree."""
    main = make_repository(tmp_path / "main")
    git(main, "config", "core.hooksPath", "scripts/hooks")
    add_user_hook(main / "scripts" / "hooks")
    commit(main)
    worktree = tmp_path / "feature"
    git(main, "worktree", "add", "-q", str(worktree))
    hook = worktree / "scripts" / "hooks" / "pre-commit"
    assert os.access(hook, os.X_OK)  # checked out executable
    marker = tmp_path / "ran"
    async with files_for(role, worktree) as files:
        error = await refused(files.write(str(hook), planted(marker)))
        assert error.data["reason"] == "protected_path"
        error = await refused(files.write(str(worktree / ".git"), "gitdir: /elsewhere\n"))
        assert error.data["reason"] == "protected_path"
        await files.write(str(worktree / "feature.txt"), "work\n")
    commit(worktree)
    assert not marker.exists()
    assert hook.read_text() == USER_HOOK


async def test_a_session_rooted_in_the_git_dir_cannot_write_hooks_or_config(
    role: str, home: Path, tmp_path: Path
) -> None:
    """Names below the root are what ``.git`` matching sees; git's own files are known
    by where they are, whatever the root."""
    repo = make_repository(tmp_path / "repo")
    marker = tmp_path / "ran"
    async with files_for(role, repo / ".git") as files:
        for path in ("hooks/pre-commit", "config"):
            error = await refused(files.write(str(repo / ".git" / path), planted(marker)))
            assert error.data["reason"] == "protected_path", path
    commit(repo)
    assert not marker.exists()
