"""The `pipesim check --json` report (schema pipesim.check/1, docs/json-report.md) as Python objects.

Every class keeps the JSON object it came from in `raw`, so a field this module does not name yet is
still there; the schema only ever adds fields within pipesim.check/1.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

SCHEMA = "pipesim.check/1"

# "a.cu:49:3, called at a.cu:109:9": the innermost place first, then its callers.
_LOCATION = re.compile(r"(?P<file>[^,]+?):(?P<line>\d+):(?P<col>\d+)")


@dataclass(frozen=True)
class Location:
    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


def locations(text: str | None) -> list[Location]:
    """The places of a `where` / `source` string, innermost first ("x.cu:49:3, called at x.cu:89:11")."""
    if not text:
        return []
    return [Location(m["file"].strip(), int(m["line"]), int(m["col"]))
            for part in text.split(", called at ") for m in [_LOCATION.fullmatch(part.strip())] if m]


@dataclass(frozen=True)
class BarrierState:
    """An mbarrier's end state: `phase` completed phases, `pending` arrivals missing, `tx` bytes owed."""
    initialised: bool
    phase: int
    parity: int
    pending: int
    expected: int
    tx: int

    @staticmethod
    def of(j: dict | None) -> BarrierState | None:
        if not j:
            return None
        return BarrierState(j["initialised"], j["phase"], j["parity"], j["pending"], j["expected"], j["tx"])


class _Sited:
    """Where a finding or a wait is: `where` (the scenario or PTX statement) and, for a PTX kernel
    compiled with -lineinfo, `source` (the CUDA line and its callers)."""
    where: str | None
    source: str | None

    @property
    def site(self) -> str | None:
        """The author's own line: the CUDA source of a PTX kernel, else the scenario statement."""
        return self.source or self.where

    @property
    def locations(self) -> list[Location]:
        """`site` parsed: the innermost place first, then its callers (inlined device functions)."""
        return locations(self.site)

    @property
    def location(self) -> Location | None:
        """The innermost place of `site`."""
        places = self.locations
        return places[0] if places else None


@dataclass(frozen=True)
class Finding(_Sited):
    kind: str
    fatal: bool
    message: str
    notes: list[str]
    cta: int | None
    warp: int | None
    role: str | None
    where: str | None
    source: str | None
    statement: str | None
    raw: dict = field(repr=False)

    @staticmethod
    def of(j: dict) -> Finding:
        return Finding(j["kind"], j["fatal"], j["message"], list(j["notes"]), j["cta"], j["warp"], j["role"],
                       j["where"], j.get("source"), j["statement"], j)


@dataclass(frozen=True)
class FindingGroup(_Sited):
    """One finding as the human report prints it: the same kind, site and cause over many CTAs."""
    kind: str
    fatal: bool
    message: str
    notes: list[str]
    impact: str | None
    ctas: list[int]
    ctas_text: str | None
    warps: list[int]
    members: list[Finding]
    where: str | None
    source: str | None
    statement: str | None
    raw: dict = field(repr=False)

    @staticmethod
    def of(j: dict, findings: list[Finding]) -> FindingGroup:
        return FindingGroup(j["kind"], j["fatal"], j["message"], list(j["notes"]), j["impact"], list(j["ctas"]),
                            j["ctas_text"], list(j["warps"]), [findings[i] for i in j["members"]], j["where"],
                            j.get("source"), j["statement"], j)


@dataclass(frozen=True)
class HangGroup(_Sited):
    """Warps stuck in the same situation: the first member is the one described."""
    members: list[tuple[int, int]]
    role: str | None
    waits_on: str
    state: BarrierState | None
    unblockers: list[str]
    hints: list[str]
    where: str | None
    source: str | None
    statement: str | None
    raw: dict = field(repr=False)

    @staticmethod
    def of(j: dict) -> HangGroup:
        return HangGroup([(c, w) for c, w in j["members"]], j["role"], j["waits_on"], BarrierState.of(j["state"]),
                         list(j["unblockers"]), list(j["hints"]), j["where"], j.get("source"), j["statement"], j)

    @property
    def warps(self) -> list[int]:
        return sorted({w for _, w in self.members})

    @property
    def ctas(self) -> list[int]:
        return sorted({c for c, _ in self.members})


@dataclass(frozen=True)
class Report:
    """One checked kernel or scenario."""
    file: str
    kernel: str | None
    arch: str | None
    verdict: str | None            # "ok", "hang", "error", "stopped"; None on bad input
    matches: bool                  # verdict (and error kind) equal the expectation
    expect: str | None             # the expected verdict ("ok" when nothing was said)
    error_kind: str | None
    predicted_ns: float | None     # simulated time of the last event: an ok run's predicted duration
    findings: list[Finding]
    finding_groups: list[FindingGroup]
    hang_groups: list[HangGroup]   # verdict hang (or stopped: what each live warp was doing)
    cycles: list[str]              # wait-for cycles of a hang, rendered
    bad_input: bool
    diagnostic: str | None         # bad input: file:line:col: error: ..., the line and a caret
    text: str                      # the human report, as `pipesim check` prints it
    raw: dict = field(repr=False)

    @staticmethod
    def of(j: dict) -> Report:
        if j.get("schema") != SCHEMA:
            raise ValueError(f"pipesim report schema {j.get('schema')!r}, this module reads {SCHEMA!r}")
        findings = [Finding.of(f) for f in j["findings"]]
        hang = j["hang"] or {}
        expect = j["expect"]
        return Report(j["file"], j["kernel"], j["arch"], j["verdict"], j["matches"],
                      expect["verdict"] if expect else None, j["error_kind"], j["predicted_ns"], findings,
                      [FindingGroup.of(g, findings) for g in j["finding_groups"]],
                      [HangGroup.of(g) for g in hang.get("groups", [])], list(hang.get("cycles", [])),
                      j["bad_input"], j["diagnostic"], j["report"], j)

    @property
    def ok(self) -> bool:
        return self.verdict == "ok"

    @property
    def predicted_us(self) -> float | None:
        return None if self.predicted_ns is None else self.predicted_ns / 1000.0

    @property
    def errors(self) -> list[FindingGroup]:
        return [g for g in self.finding_groups if g.fatal]

    @property
    def warnings(self) -> list[FindingGroup]:
        return [g for g in self.finding_groups if not g.fatal]

    def __str__(self) -> str:
        return self.diagnostic if self.bad_input and self.diagnostic else self.text


def reports_of(document: dict[str, Any]) -> list[Report]:
    """Every report of one `pipesim check --json` output (a `results` list, or one scenario object)."""
    if "results" in document:
        return [Report.of(r) for r in document["results"]]
    return [Report.of(document)]
