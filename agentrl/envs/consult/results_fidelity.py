"""Test-result fidelity of AgentClinic cases: every result reachable by name, none contradicted.

For each case of an AgentClinic file (either layout) the env's measurement unit
(:func:`~agentrl.envs.consult.measurement.run_test`) is asked:

* for each of the case's own **results** (the leaves of its findings: ``"Complete Blood Count / WBC"``,
  ``"Ultrasound"``), by its own name (the last part of its name path, e.g. ``"WBC"``, and the whole
  path) and, when it is filed under a catalogue test, by that test's name: the result is **reachable**
  when every such request returns its text verbatim; a request that is refused (an error) is counted
  under **refused**;
* for every catalogue test name and synonym and every part of the case's own result names: a
  **contradiction** is a *normal* catalogue result returned while one of the case's results could
  match the request (:func:`~agentrl.envs.consult.measurement.could_match`). It must be 0.

Run: ``python -m agentrl.envs.consult.results_fidelity agentclinic_medqa.jsonl agentclinic_nejm.jsonl ...``
(exit code 1 when a file has a contradiction or an unreachable result).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from agentrl.envs.consult.catalog import TESTS, normalize_test_name
from agentrl.envs.consult.measurement import _case_spec, case_results, could_match, run_test
from agentrl.envs.consult.tasks import Case

__all__ = ["FileFidelity", "case_fidelity", "file_fidelity", "main"]


@dataclass
class FileFidelity:
    """The figures of one file (see the module docstring)."""

    file: str
    cases: int = 0
    layouts: dict[str, int] = field(default_factory=dict)
    image_cases: int = 0
    defaulted_sex: int = 0
    results: int = 0
    reachable: int = 0
    refused: int = 0
    contradictions: int = 0
    examples: list[str] = field(default_factory=list)


def _request_names(label: str, case: Case) -> list[str]:
    parts = [p.strip() for p in label.split(" / ") if p.strip()]
    names = [parts[-1], label]
    spec = _case_spec(label)
    own_names = {normalize_test_name(p) for other in case_results(case.tests) for p in other.split(" / ")}
    # the catalogue test it is filed under, unless the case has a result of that very name (which wins)
    if not spec.key.startswith("case:") and normalize_test_name(spec.name) not in own_names:
        names.append(spec.name)
    return list(dict.fromkeys(names))


def case_fidelity(case: Case) -> tuple[int, int, int, int, list[str]]:
    """``(results, reachable, refused, contradictions, examples)`` of one case."""
    own = case_results(case.tests)
    reachable = refused = contradictions = 0
    examples: list[str] = []
    leaves = {label: text for label, text in own.items() if not any(o.startswith(label + " / ") for o in own)}
    for label, text in leaves.items():
        ok = True
        for name in _request_names(label, case):
            outcome = run_test(name, case.tests, sex=case.sex)
            if outcome.spec is None:
                refused += 1
                ok = False
                examples.append(f"{case.id}: {name!r} refused: {outcome.error}")
            elif text not in outcome.text:
                ok = False
                examples.append(f"{case.id}: {name!r} did not return {label!r}: {outcome.text[:120]!r}")
        reachable += ok
    requests = {name for spec in TESTS.values() for name in (spec.name, *spec.synonyms)}
    requests |= {p.strip() for label in own for p in label.split(" / ")}
    for name in sorted(requests):
        outcome = run_test(name, case.tests, sex=case.sex)
        spec = outcome.spec
        if spec is None or spec.key in case.tests or spec.key.startswith("case:"):
            continue
        if outcome.text == f"[result] {spec.name}: {spec.normal}":
            matching = [label for label in own if could_match(name, label)]
            if matching:
                contradictions += 1
                examples.append(f"{case.id}: {name!r} answered normal although the case has {matching[0]!r}")
    return len(leaves), reachable, refused, contradictions, examples


def file_fidelity(path: str | os.PathLike[str]) -> FileFidelity:
    """The figures of one AgentClinic file."""
    from agentrl.envs.consult.datasets import load_agentclinic

    report = FileFidelity(Path(path).name)
    for case in load_agentclinic(path):
        report.cases += 1
        layout = str(case.extra.get("layout", "medqa"))
        report.layouts[layout] = report.layouts.get(layout, 0) + 1
        report.image_cases += bool(case.extra.get("image_case"))
        report.defaulted_sex += "sex" in case.extra.get("defaulted", ())
        results, reachable, refused, contradictions, examples = case_fidelity(case)
        report.results += results
        report.reachable += reachable
        report.refused += refused
        report.contradictions += contradictions
        report.examples.extend(examples[: max(0, 10 - len(report.examples))])
    return report


def main(argv: Sequence[str] | None = None) -> int:
    """Print one line (or JSON) per file; exit 1 when a file has a contradiction or an unreachable result.

    A file that cannot be read as AgentClinic's (missing, another format) is named on stderr with the
    reason, the others are still reported, and the exit status is 2.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", help="AgentClinic JSONL files (MedQA or NEJM layout)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    reports, unreadable = [], []
    for name in args.files:
        try:
            reports.append(file_fidelity(name))
        except (OSError, ValueError) as exc:  # TaskFormatError is a ValueError: not an AgentClinic file
            unreadable.append(name)
            print(f"{name}: not read: {exc}", file=sys.stderr)
    if unreadable and not reports:
        return 2
    if args.json:
        print(json.dumps([asdict(r) for r in reports], indent=2))
    else:
        print(f"{'file':40} {'cases':>5} {'images':>6} {'results':>7} {'reachable':>9} {'refused':>7} "
              f"{'contradictions':>14}")
        for r in reports:
            print(f"{r.file:40} {r.cases:5d} {r.image_cases:6d} {r.results:7d} {r.reachable:9d} {r.refused:7d} "
                  f"{r.contradictions:14d}")
            for example in r.examples[:5]:
                print(f"    {example}")
    if unreadable:
        return 2
    return int(any(r.contradictions or r.reachable < r.results for r in reports))


if __name__ == "__main__":
    sys.exit(main())
