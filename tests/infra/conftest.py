"""One synthesised stack for every infra test: synthesis (and bundling) is the slow part."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

# jsii starts its node process on the first aws_cdk import: silence the end-of-life banner first.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

# The context a deployer might pass; the configured stack checks that each key takes effect.
CONFIGURED_CONTEXT: dict[str, Any] = {
    # A second stage beside the default one, in the same account.
    "sundial:stage": "staging",
    "sundial:maxConcurrencyHigh": "100",
    "sundial:maxConcurrencyMedium": 30,
    "sundial:maxConcurrencyLow": 2,
    "sundial:deadOccurrencesInARow": "5",
    "sundial:limitWaitAlarmSeconds": "600",
    "sundial:targetArns": [
        "arn:aws:lambda:us-east-1:123456789012:function:report",
        "arn:aws:lambda:us-east-1:123456789012:function:jobs-*",
        "arn:aws:sqs:us-east-1:123456789012:orders",
        "arn:aws:sns:us-east-1:123456789012:alerts",
        "arn:aws:events:us-east-1:123456789012:event-bus/default",
    ],
    "sundial:secretArns": [
        "arn:aws:secretsmanager:us-east-1:123456789012:secret:billing/token-AbCdEf",
        "arn:aws:ssm:us-east-1:123456789012:parameter/billing/api-key",
    ],
    "sundial:targetKmsKeyArns": "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab",
    "sundial:alarmEmail": "ops@example.com",
    "sundial:schedulerReservedConcurrency": "3",
    "sundial:startLatenessP99ThresholdMs": 2500,
    "sundial:tableDeletionProtection": "true",
    "sundial:provisionedPollersHigh": "5,50",
    "sundial:provisionedPollersLow": "2,4",
    "sundial:precision": "sqs",
    "sundial:history": "failures",
    "sundial:billingMode": "provisioned",
    "sundial:provisionedCapacity": '{"writeMin": 10, "writeMax": 1500, "targetUtilization": 60}',
    "sundial:warmThroughput": "20000,24000",
}


# `sundial:api=http` on its own, and on the configured stage with its own throttling.
HTTP_CONTEXT: dict[str, Any] = {"sundial:api": "http"}
HTTP_CONFIGURED_CONTEXT: dict[str, Any] = {
    **CONFIGURED_CONTEXT,
    **HTTP_CONTEXT,
    "sundial:apiRateLimit": "40",
    "sundial:apiBurstLimit": 60,
}


# The IAM contract's table of calls and hops (test_iam_contract.py), printed after the run.
CONTRACT_TABLE: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    # In a run that also holds tests/functions and tests/adapter (`make test`), their AWS calls are
    # recorded as they happen, and the IAM contract needs no run of its own.
    from tests.infra.aws_calls import install

    install()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if CONTRACT_TABLE:
        terminalreporter.section("IAM contract: every recorded call and hop, and what allows it")
        for line in CONTRACT_TABLE:
            terminalreporter.write_line(line)


@dataclass(frozen=True)
class Synthesised:
    template: Any  # aws_cdk.assertions.Template
    resources: dict[str, dict[str, Any]]
    outdir: Path
    stack_name: str

    def of_type(self, resource_type: str) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.resources.items() if v["Type"] == resource_type}

    def own_ids(self) -> dict[str, str]:
        """The local stack's name (shared.constants) -> the logical id of the deployed table or queue,
        which CloudFormation names after the stack instead."""
        from tests.infra.contract import own_resources

        return {name: logical_id for logical_id, name in own_resources(self.resources).items()}

    @property
    def asset_dir(self) -> Path:
        manifest = json.loads((self.outdir / f"{self.stack_name}.assets.json").read_text())
        (code,) = (f for f in manifest["files"].values() if f["source"].get("packaging") == "zip")
        return self.outdir / str(code["source"]["path"])


def _synthesise(outdir: Path, context: dict[str, Any] | None = None) -> Synthesised:
    from aws_cdk.assertions import Template

    from infra.app import build_app

    app, stack = build_app(str(outdir), context)
    assembly = app.synth()
    template = assembly.get_stack_by_name(stack.stack_name).template
    return Synthesised(Template.from_json(template), template["Resources"], outdir, stack.stack_name)


@pytest.fixture(scope="session")
def synthesised(tmp_path_factory: pytest.TempPathFactory) -> Synthesised:
    """The stack as `make synth` builds it, with the default context."""
    return _synthesise(tmp_path_factory.mktemp("cdk.out"))


@pytest.fixture(scope="session")
def configured(tmp_path_factory: pytest.TempPathFactory) -> Synthesised:
    """The stack with every context key set (the code asset is bundled once per process)."""
    return _synthesise(tmp_path_factory.mktemp("cdk.out.configured"), CONFIGURED_CONTEXT)


@pytest.fixture(scope="session")
def http_api(tmp_path_factory: pytest.TempPathFactory) -> Synthesised:
    """The default stage with `sundial:api=http`."""
    return _synthesise(tmp_path_factory.mktemp("cdk.out.http"), HTTP_CONTEXT)


@pytest.fixture(scope="session")
def http_configured(tmp_path_factory: pytest.TempPathFactory) -> Synthesised:
    """The configured stage (`staging`) with `sundial:api=http`."""
    return _synthesise(tmp_path_factory.mktemp("cdk.out.http.configured"), HTTP_CONFIGURED_CONTEXT)
