"""acpwire._gitconfig reads core.hooksPath and includes as git does: checked against real git."""

# Tests write config files and run git synchronously on purpose.

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from waiting import TIMEOUT

from acpwire._gitconfig import git_paths, parse_config

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def git_values(config: Path, key: str) -> list[str]:
    """What ``git config --get-all`` answers for ``key`` in ``config`` alone."""
    done = subprocess.run(
        ["git", "config", "--file", str(config), "--get-all", key],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode in (0, 1), done.stderr  # 1: no such key
    return done.stdout.splitlines()


def our_values(config: Path, section: str, name: str) -> list[str]:
    return [
        value or ""
        for sec, sub, key, value in parse_config(config.read_text())
        if (sec, sub, key) == (section, None, name)
    ]


@pytest.mark.parametrize(
    "value",
    [
        "tools/hooks",
        "with space",
        " leading and trailing ",
        'with "quotes"',
        "back\\slash",
        "semi;colon and hash#sign",
        "tab\there",
        "~/hooks",
    ],
)
def test_values_written_by_git_are_read_back_as_git_reads_them(tmp_path: Path, value: str) -> None:
    config = tmp_path / "config"
    subprocess.run(
        ["git", "config", "--file", str(config), "core.hooksPath", value],
        check=True,
        timeout=TIMEOUT,
    )
    assert our_values(config, "core", "hookspath") == git_values(config, "core.hooksPath")
    assert our_values(config, "core", "hookspath") == [value]


def test_hand_written_syntax_is_read_as_git_reads_it(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.write_text(
        "# a comment\n"
        "; another\n"
        "[Core]\n"
        "\tHOOKSPATH = first ; a comment after the value\n"
        '[core] hooksPath = "second # not a comment"\n'
        "[core]\n"
        "\thooksPath = con\\\n"
        "tinued\n"
        '[remote "origin"]\n'
        "\thooksPath = not-core\n"
        "[core.sub]\n"
        "\thooksPath = legacy-subsection\n"
        "[core]\n"
        "\tbare\n"
        "\thooksPath=  spaced  \n"
    )
    ours = our_values(config, "core", "hookspath")
    assert ours == git_values(config, "core.hooksPath")
    assert ours == ["first", "second # not a comment", "continued", "spaced"]
    assert our_values(config, "core", "bare") == [""]  # a bare name is git's "true"


def test_includes_are_followed_whatever_their_condition_up_to_a_depth(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    git_dir = repo / ".git"
    git_dir.mkdir(parents=True)
    (git_dir / "config").write_text(
        '[includeIf "gitdir:/nowhere/"]\n\tpath = ../conditional.cfg\n[include]\n\tpath = loop.cfg\n'
    )
    (repo / "conditional.cfg").write_text("[core]\n\thooksPath = conditional-hooks\n")
    (git_dir / "loop.cfg").write_text("[include]\n\tpath = loop.cfg\n[core]\n\thooksPath = h\n")
    found = git_paths(repo / "file.txt", environ={"HOME": str(tmp_path / "home")})
    assert (repo / "conditional-hooks").resolve() in found.hooks
    assert (repo / "h").resolve() in found.hooks
    assert (git_dir / "hooks").resolve() in found.hooks  # the default one
    assert {(repo / "conditional.cfg").resolve(), (git_dir / "loop.cfg").resolve()} <= (
        found.config_files
    )


def test_a_file_outside_any_repository_has_only_the_global_configs(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[core]\n\thooksPath = relative-only\n")
    found = git_paths(tmp_path / "loose" / "file.txt", environ={"HOME": str(home)})
    assert (home / ".gitconfig").resolve() in found.config_files
    # A relative global hooksPath names a folder in each repository; here there is none.
    assert not any(p.name == "relative-only" for p in found.hooks)
