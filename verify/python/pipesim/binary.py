"""Run the `pipesim` binary and read its `--json` report.

A thin wrapper, on purpose: the binary is the contract. One engine answers the command line, CI and
Python alike; the JSON schema (docs/json-report.md) is versioned and only grows; nothing here is
built against the C++ ABI, so any pipesim build on PATH serves any Python (no pybind11 module to
rebuild per interpreter, compiler or platform). A check costs one process start (milliseconds)
beside a run that takes milliseconds to seconds.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from pipesim.report import Report, reports_of


class PipesimError(Exception):
    """pipesim could not be run, or refused its command line (no report came back)."""


class BadInput(PipesimError):
    """pipesim read the input and refused it: `diagnostic` is its file:line:col sentence."""

    def __init__(self, report: Report):
        super().__init__(report.diagnostic or f"{report.file}: bad input")
        self.report = report
        self.diagnostic = report.diagnostic


def binary() -> str:
    """The pipesim executable: $PIPESIM_BIN, else `pipesim` on PATH."""
    exe = os.environ.get("PIPESIM_BIN")
    if exe:
        if not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
            raise PipesimError(f"PIPESIM_BIN={exe} is not an executable file")
        return exe
    exe = shutil.which("pipesim")
    if not exe:
        raise PipesimError("no pipesim binary: set PIPESIM_BIN=/path/to/pipesim (after a build: "
                           "build/verify/pipesim) or put pipesim on PATH")
    return exe


def _options(defines: Mapping[str, object] | None, launch: str | os.PathLike | None, expect: str | None,
             timing: Mapping[str, object] | None, args: Iterable[str]) -> list[str]:
    opts: list[str] = []
    if launch is not None:
        opts += ["--launch", os.fspath(launch)]
    for name, value in (defines or {}).items():
        opts += ["-D", f"{name}={value}"]
    for name, value in (timing or {}).items():
        opts += ["--timing", f"{name}={value}"]
    if expect is not None:
        opts += ["--expect", expect]
    return opts + list(args)


def _run(paths: list[str], opts: list[str], timeout: float | None, shown_as: tuple[str, str] | None = None) -> list[Report]:
    """shown_as (path, name): the report names `path` (a temporary file) `name` instead."""
    cmd = [binary(), "check", "--json", *paths, *opts]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as e:
        raise PipesimError(f"pipesim check ran past {timeout} s: {' '.join(cmd)}") from e
    out = done.stdout.replace(shown_as[0], shown_as[1]) if shown_as else done.stdout
    try:
        document = json.loads(out)
    except json.JSONDecodeError:
        # Exit 2 before any input was read (an unknown option, a missing file): stderr says why.
        raise PipesimError((done.stderr or done.stdout).strip() or f"pipesim check exited {done.returncode}") from None
    return reports_of(document)


def _is_text(target: str | os.PathLike) -> bool:
    return isinstance(target, str) and ("\n" in target or not os.path.exists(target))


def check(target: str | os.PathLike, *, defines: Mapping[str, object] | None = None,
          launch: str | os.PathLike | None = None, expect: str | None = None,
          timing: Mapping[str, object] | None = None, args: Iterable[str] = (),
          timeout: float | None = None) -> Report:
    """Check one scenario file, one scenario given as text, or one PTX kernel (with `launch`).

    defines: `-D NAME=VALUE` each (scenario `let`s; for a kernel `entry`, `grid`, `param.K` ...).
    expect: `--expect` for a PTX kernel ("hang", "error stale_wait" ...); a scenario has its own line.
    timing: `--timing NAME=VALUE` each. args: any further `pipesim check` options ("--seed", "3").
    Raises BadInput when pipesim refuses the input, PipesimError when no report came back.
    """
    opts = _options(defines, launch, expect, timing, args)
    if _is_text(target):
        if "\n" not in target and Path(target).suffix in (".scn", ".ptx"):
            raise PipesimError(f"{target}: no such file")
        with tempfile.TemporaryDirectory(prefix="pipesim-") as tmp:
            path = os.path.join(tmp, "scenario.scn")
            Path(path).write_text(target)
            reports = _run([path], opts, timeout, shown_as=(path, "<text>"))
    else:
        reports = _run([os.fspath(target)], opts, timeout)
    if len(reports) != 1:
        raise PipesimError(f"{target}: expected one report, got {len(reports)} (a directory? use check_files)")
    report = reports[0]
    if report.bad_input:
        raise BadInput(report)
    return report


def check_files(*paths: str | os.PathLike, defines: Mapping[str, object] | None = None,
                timing: Mapping[str, object] | None = None, args: Iterable[str] = (),
                timeout: float | None = None) -> list[Report]:
    """Check files and directories of scenarios in one run; bad inputs come back as reports with
    `bad_input` set (their `diagnostic` says why) instead of raising."""
    return _run([os.fspath(p) for p in paths], _options(defines, None, None, timing, args), timeout)
