"""The ``tripeaks`` command line itself: ``--version`` and a bare ``tripeaks``."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from client_cli import commands
from client_cli.__main__ import package_version, parse_args
from client_cli.net import DEFAULT_SERVER

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def _project_version() -> str:
    with PYPROJECT.open("rb") as file:
        return str(tomllib.load(file)["project"]["version"])


def test_tripeaks_version_prints_the_package_version_and_exits_0() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "client_cli", "--version"],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"tripeaks {_project_version()}"


def test_the_package_version_is_the_one_in_pyproject() -> None:
    assert package_version() == _project_version()


def test_a_bare_tripeaks_opens_the_full_screen_client_on_its_home_screen() -> None:
    args = parse_args([])
    assert args.command == "play" and args.func is commands._play
    assert args.start == "home" and args.code is None
    assert args.server == DEFAULT_SERVER and not args.plain


def test_a_bare_tripeaks_reads_the_same_as_tripeaks_play() -> None:
    assert vars(parse_args([])) == vars(parse_args(["play"]))


def test_an_unknown_command_is_still_an_error_with_status_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_args(["fly"])
    assert exited.value.code == 2
    assert "fly" in capsys.readouterr().err
