"""`make mutants`: plants each named mutation (tests/mutants/mutations.py) in a scratch copy of the
repository, one at a time, and runs the fast suites against it: the model test at `make test`'s
budget (SUNDIAL_MODEL_EXAMPLES, SUNDIAL_MODEL_STEPS), then the unit and adapter tests. Prints which
tests killed each mutation and how long each took. The working tree is never touched.

    python -m tests.mutants [--only NAME,...] [--model-only] [--seed N] [--no-baseline] [--list]
    python -m tests.mutants --model-mutations [--only NAME,...] [--list]

Exits non-zero when the model test missed a mutation it must kill, or a mutation no longer applies.
`--model-mutations` plants the scale model's mutations instead (tests/mutants/model.py): each drops
a limit of AWS from bench/scale and must change the `make scale` goals it names.
"""

from __future__ import annotations

import argparse
import difflib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from xml.etree import ElementTree

from tests.mutants.model import run_model_mutations
from tests.mutants.mutations import MODEL_MUTATIONS, MUTATIONS, Mutation, MutationGone

ROOT = Path(__file__).resolve().parents[2]
COPIED_OUT = {".git", ".venv", "node_modules", "cdk.out", ".hypothesis", ".mypy_cache", ".ruff_cache"}
MODEL_TEST = "tests/model/test_engine_machine.py::test_engine_machine"
OTHER_SUITES = ["tests/unit", "tests/adapter", "tests/model"]
PRISTINE = ".pristine-shared"


@dataclass
class Run:
    """One pytest run against one mutant: the tests that failed, and its wall time."""

    failed: list[str] = field(default_factory=list)
    seconds: float = 0.0
    first_line: str = ""

    @property
    def killed(self) -> bool:
        return bool(self.failed)


def main() -> int:
    args = _arguments()
    registry = MODEL_MUTATIONS if args.model_mutations else MUTATIONS
    chosen = [m for m in registry if not args.only or m.name in args.only.split(",")]
    if args.list:
        for mutation in chosen:
            goals = ", ".join(f"{goal} at scale {scale:g}" for goal, scale in mutation.scale_goals)
            print(f"{mutation.name}: {mutation.bug}" + (f" (must change {goals})" if goals else ""))
        return 0
    unknown = set(args.only.split(",")) - {m.name for m in registry} if args.only else set()
    if unknown:
        print(f"no such mutation: {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    scratch = Path(tempfile.mkdtemp(prefix="sundial-mutants-"))
    try:
        shutil.copytree(ROOT, scratch, dirs_exist_ok=True, ignore=lambda _d, names: COPIED_OUT & set(names))
        if args.model_mutations:
            _check_imports(scratch, "bench.scale")
            return run_model_mutations(chosen, scratch, _environment(None))
        # What each mutant starts from: sundial/shared/ as it was when the run began.
        shutil.copytree(scratch / "sundial" / "shared", scratch / PRISTINE)
        _check_imports(scratch)
        env = _environment(args.seed)
        print(_budget(env))
        if not args.no_baseline and not _baseline(scratch, env, args.model_only):
            return 1
        return _report([(m, _try(m, scratch, env, args.model_only)) for m in chosen])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tests.mutants", description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="comma-separated mutation names")
    parser.add_argument("--model-only", action="store_true", help="run the model test alone")
    parser.add_argument("--seed", type=int, default=None, help="Hypothesis seed (default: random)")
    parser.add_argument("--no-baseline", action="store_true", help="skip the run on the code as it is")
    parser.add_argument("--list", action="store_true", help="list the mutations and stop")
    parser.add_argument(
        "--model-mutations",
        action="store_true",
        help="plant the scale model's mutations and compare their `make scale` goals instead",
    )
    return parser.parse_args()


def _environment(seed: int | None) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("SUNDIAL_MODEL_EXAMPLES", "40")
    env.setdefault("SUNDIAL_MODEL_STEPS", "30")
    env["SUNDIAL_MODEL_SHRINK"] = "0"  # the time to the first failing example, not to its shrinking
    env.pop("PYTHONPATH", None)
    if seed is not None:
        env["SUNDIAL_MUTANTS_SEED"] = str(seed)
    return env


def _budget(env: dict[str, str]) -> str:
    seed = env.get("SUNDIAL_MUTANTS_SEED", "random")
    return (
        f"model budget: {env['SUNDIAL_MODEL_EXAMPLES']} examples x {env['SUNDIAL_MODEL_STEPS']} steps, "
        f"seed {seed}, no shrinking"
    )


def _check_imports(scratch: Path, package: str = "sundial.shared") -> None:
    """The scratch copy's package must be the one imported there, not the editable install's."""
    found = subprocess.run(
        [sys.executable, "-c", f"import {package}; print({package}.__file__)"],
        cwd=scratch,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    if not Path(found).resolve().is_relative_to(scratch.resolve()):
        raise SystemExit(f"the scratch copy imports {package} from {found}, not from {scratch}")


def _baseline(scratch: Path, env: dict[str, str], model_only: bool) -> bool:
    """The code as it is must pass what the mutants are judged by."""
    model = _pytest(scratch, env, [MODEL_TEST, "-x"], "baseline-model")
    print(f"baseline: model test {'FAILED' if model.killed else 'passed'} in {model.seconds:.0f} s")
    other = Run() if model_only else _pytest(scratch, env, _other_suites(), "baseline-other")
    if not model_only:
        verdict = "FAILED" if other.killed else "passed"
        print(f"baseline: unit and adapter tests {verdict} in {other.seconds:.0f} s")
    for name in model.failed + other.failed:
        print(f"  failed: {name}")
    if model.first_line:
        print(f"  {model.first_line}")
    return not (model.killed or other.killed)


def _try(mutation: Mutation, scratch: Path, env: dict[str, str], model_only: bool) -> tuple[Run, Run] | str:
    """The model's run and the other suites' run against the mutant, or why it no longer applies."""
    shutil.rmtree(scratch / "sundial" / "shared")
    shutil.copytree(scratch / PRISTINE, scratch / "sundial" / "shared")
    try:
        mutation.apply(scratch)
    except MutationGone as gone:
        print(f"\n== {mutation.name}: mutation no longer applies: {gone}")
        return f"no longer applies: {gone}"
    print(f"\n== {mutation.name}: {mutation.bug}")
    print(_diff(scratch), end="")
    model = _pytest(scratch, env, [MODEL_TEST, "-x"], mutation.name)
    verdict = f"killed in {model.seconds:.0f} s" if model.killed else f"survived {model.seconds:.0f} s"
    print(f"   model test: {verdict}{': ' + model.first_line if model.first_line else ''}")
    other = Run() if model_only else _pytest(scratch, env, _other_suites(), mutation.name)
    if not model_only:
        print(f"   unit and adapter tests: {len(other.failed)} failed in {other.seconds:.0f} s")
        for name in other.failed:
            print(f"     {name}")
    return model, other


def _other_suites() -> list[str]:
    return [*OTHER_SUITES, f"--deselect={MODEL_TEST}"]


def _diff(scratch: Path) -> str:
    lines: list[str] = []
    for mutated in sorted((scratch / "sundial" / "shared").rglob("*.py")):
        relative = mutated.relative_to(scratch)
        before = (
            (scratch / PRISTINE / relative.relative_to("sundial/shared"))
            .read_text()
            .splitlines(keepends=True)
        )
        after = mutated.read_text().splitlines(keepends=True)
        lines += difflib.unified_diff(before, after, f"a/{relative}", f"b/{relative}", n=0)
    return "".join(f"   {line}" for line in lines)


def _pytest(scratch: Path, env: dict[str, str], targets: list[str], name: str) -> Run:
    shutil.rmtree(scratch / ".hypothesis", ignore_errors=True)  # no example found for another mutant
    report = scratch / f".junit-{name}.xml"
    seed = env.get("SUNDIAL_MUTANTS_SEED")
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:logging"]
    command += ["-o", "timeout=0", f"--junitxml={report}", *(["--hypothesis-seed", seed] if seed else [])]
    started = time.monotonic()
    subprocess.run([*command, *targets], cwd=scratch, env=env, capture_output=True, text=True, check=False)
    run = Run(seconds=time.monotonic() - started)
    if not report.exists():
        run.failed.append("(pytest wrote no report)")
        return run
    for case in ElementTree.parse(report).iter("testcase"):
        problem = case.find("failure")
        problem = problem if problem is not None else case.find("error")
        if problem is not None:
            run.failed.append(f"{case.get('classname', '')}::{case.get('name', '')}")
            run.first_line = run.first_line or _first_line(problem.get("message", ""))
    return run


def _first_line(message: str) -> str:
    return message.replace("AssertionError: ", "").strip().splitlines()[0][:200] if message.strip() else ""


def _report(results: list[tuple[Mutation, tuple[Run, Run] | str]]) -> int:
    print("\n| mutation | model test | unit and adapter tests |\n| --- | --- | --- |")
    bad = 0
    for mutation, result in results:
        if isinstance(result, str):
            print(f"| {mutation.name} | {result} | |")
            bad += 1
            continue
        model, other = result
        if model.killed:
            verdict = f"killed in {model.seconds:.0f} s"
        elif mutation.model_blind:
            verdict = f"survived, as expected: {mutation.model_blind}"
        else:
            verdict = f"**survived** ({model.seconds:.0f} s)"
            bad += 1
        others = f"{len(other.failed)} killed ({other.seconds:.0f} s)" if other.seconds else "not run"
        print(f"| {mutation.name} | {verdict} | {others} |")
    print(f"\n{bad} of {len(results)} mutations missed by the model test or no longer applying")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
