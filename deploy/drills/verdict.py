"""The verdict table every drill prints, and the checks behind it."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field


@dataclass
class Verdict:
    drill: str
    requests_sent: int = 0
    answered: int = 0
    lost: int = 0
    duplicated: int = 0
    non_identical_duplicates: int = 0
    offsets_lost: int = 0
    generations_back: int = 0
    sessions_expired_by_outage: int = 0
    time_to_recover_s: list[float] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    checks: dict[str, bool] = field(default_factory=dict)

    @classmethod
    def from_fleet(cls, drill: str, fleet, committed: dict) -> "Verdict":
        ledger = fleet.ledger
        lost_offsets = fleet.offsets_lost(committed)
        back = ledger.generations_back()
        v = cls(drill, requests_sent=len(ledger.sent), answered=len(ledger.sent) - len(ledger.unanswered()),
                lost=len(ledger.unanswered()), duplicated=len(ledger.duplicated()),
                non_identical_duplicates=len(ledger.non_identical()), offsets_lost=len(lost_offsets),
                generations_back=len(back))
        v.notes += [f"offset lost: {x}" for x in lost_offsets[:10]]
        v.notes += [f"generations went back in {g}: {gens}" for g, gens in list(back.items())[:5]]
        v.notes += [f"unanswered: {rid} {ledger.sent[rid].body.get('api')}" for rid in ledger.unanswered()[:10]]
        v.notes += [f"non-identical duplicate: {rid}" for rid in ledger.non_identical()[:10]]
        v.notes += ledger.unexpected[:10]
        if ledger.errors:
            v.notes.append("error answers (api:code count): " + ", ".join(f"{k} {n}" for k, n in
                                                                          sorted(ledger.errors.items())))
        return v

    def correctness(self) -> dict[str, bool]:
        """The properties a drill must never violate (the tests assert these)."""
        return {
            "every request answered": self.lost == 0,
            "duplicates byte-identical": self.non_identical_duplicates == 0,
            "no committed offset lost": self.offsets_lost == 0,
            "generations never go back": self.generations_back == 0,
            **self.checks,
        }

    @property
    def passed(self) -> bool:
        return all(self.correctness().values())

    def table(self) -> str:
        recover = ", ".join(f"{t:.1f}" for t in self.time_to_recover_s) or "-"
        rows = [
            ("requests sent", self.requests_sent), ("answered", self.answered), ("lost", self.lost),
            ("duplicated (delivered twice)", self.duplicated),
            ("duplicates not byte-identical", self.non_identical_duplicates),
            ("offsets lost", self.offsets_lost), ("generations gone back", self.generations_back),
            ("sessions expired by the outage", self.sessions_expired_by_outage),
            ("time to recover (s)", recover),
        ]
        width = max(len(name) for name, _ in rows)
        lines = [f"drill: {self.drill}", f"| {'measure'.ljust(width)} | value |", f"|{'-' * (width + 2)}|-------|"]
        lines += [f"| {name.ljust(width)} | {value} |" for name, value in rows]
        lines.append("")
        for name, ok in self.correctness().items():
            lines.append(f"  [{'PASS' if ok else 'FAIL'}] {name}")
        sessions_ok = self.sessions_expired_by_outage == 0
        lines.append(f"  [{'PASS' if sessions_ok else 'FAIL'}] sessions not expired by the outage itself")
        lines.append(f"verdict: {'PASS' if self.passed and sessions_ok else 'FAIL'}")
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)

    def to_json(self) -> str:
        return json.dumps({**asdict(self), "correctness": self.correctness(), "passed": self.passed})
