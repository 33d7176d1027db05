"""The checks AWS engineers run: cdk-nag AwsSolutions (a validation plugin) and cfn-lint."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.infra.conftest import Synthesised

pytestmark = pytest.mark.infra

# Every acknowledged AwsSolutions rule: a new one must be added here, deliberately, with its reason.
ACKNOWLEDGED = {
    "AwsSolutions-COG4",
    "AwsSolutions-APIG3",
    "AwsSolutions-IAM4",
    "AwsSolutions-IAM5",
    "AwsSolutions-L1",
    # The signing secret is rotated by its operator, with its receivers (docs/operations.md).
    "AwsSolutions-SMG4",
}


def _acknowledgements(synthesised: Synthesised) -> list[dict[str, Any]]:
    return [
        rule
        for resource in synthesised.resources.values()
        for rule in resource.get("Metadata", {}).get("cdk_nag", {}).get("rules_to_suppress", [])
    ]


def test_synthesis_passed_aws_solutions_checks_without_unacknowledged_findings(
    synthesised: Synthesised, configured: Synthesised
) -> None:
    # The configured stack holds what the defaults leave out (a provisioned table, its scaling).
    for stack in (synthesised, configured):
        report = stack.outdir / "validation-report.json"
        if report.exists():
            for plugin in json.loads(report.read_text())["pluginReports"]:
                assert plugin["conclusion"] == "success", plugin["violations"]


def test_each_acknowledgement_is_one_known_rule_with_a_reason(synthesised: Synthesised) -> None:
    rules = _acknowledgements(synthesised)
    assert rules, "cdk-nag wrote no acknowledgements: is AwsSolutionsChecks still enabled?"
    assert {rule["id"].split("[")[0] for rule in rules} == ACKNOWLEDGED
    for rule in rules:
        assert len(rule["reason"]) >= 80, rule


def test_wildcard_acknowledgements_name_the_exact_finding(synthesised: Synthesised) -> None:
    # A bare IAM5 would hide every future wildcard; each one acknowledged must be spelled out. The
    # indexes are named one by one, so X-Ray's '*' is the only wildcard left.
    iam5 = {
        rule["id"] for rule in _acknowledgements(synthesised) if rule["id"].startswith("AwsSolutions-IAM5")
    }
    assert iam5 == {"AwsSolutions-IAM5[Resource::*]"}


def test_a_finding_that_is_not_acknowledged_fails_synthesis(tmp_path: Path) -> None:
    from aws_cdk import App, Stack, Validations
    from aws_cdk import aws_sqs as sqs
    from cdk_nag import AwsSolutionsChecks

    app = App(outdir=str(tmp_path))
    sqs.Queue(Stack(app, "Bare"), "PlainQueue", enforce_ssl=False)
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    with pytest.raises(RuntimeError, match="AwsSolutions-SQS4"):
        app.synth()


@pytest.mark.parametrize("which", ["synthesised", "configured", "http_api"])
def test_cfn_lint_finds_no_errors(which: str, request: pytest.FixtureRequest) -> None:
    stack: Synthesised = request.getfixturevalue(which)
    cfn_lint = Path(sys.executable).parent / "cfn-lint"
    template = stack.outdir / f"{stack.stack_name}.template.json"
    result = subprocess.run(
        [str(cfn_lint), "--non-zero-exit-code", "error", str(template)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
