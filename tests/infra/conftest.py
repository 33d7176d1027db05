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
CONFIGURED_CONTEXT = {
    "sundial:maxConcurrencyHigh": "100",
    "sundial:maxConcurrencyMedium": 30,
    "sundial:maxConcurrencyLow": 2,
    "sundial:targetArns": [
        "arn:aws:lambda:us-east-1:123456789012:function:report",
        "arn:aws:lambda:us-east-1:123456789012:function:jobs-*",
        "arn:aws:sqs:us-east-1:123456789012:orders",
        "arn:aws:sns:us-east-1:123456789012:alerts",
        "arn:aws:events:us-east-1:123456789012:event-bus/default",
    ],
    "sundial:alarmEmail": "ops@example.com",
    "sundial:schedulerReservedConcurrency": "3",
    "sundial:startLatenessP99ThresholdMs": 2500,
}


@dataclass(frozen=True)
class Synthesised:
    template: Any  # aws_cdk.assertions.Template
    resources: dict[str, dict[str, Any]]
    outdir: Path

    def of_type(self, resource_type: str) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.resources.items() if v["Type"] == resource_type}

    @property
    def asset_dir(self) -> Path:
        manifest = json.loads((self.outdir / "Sundial.assets.json").read_text())
        (code,) = (f for f in manifest["files"].values() if f["source"].get("packaging") == "zip")
        return self.outdir / code["source"]["path"]


def _synthesise(outdir: Path, context: dict[str, Any] | None = None) -> Synthesised:
    from aws_cdk.assertions import Template

    from infra.app import STACK_NAME, build_app

    app, _ = build_app(str(outdir), context)
    assembly = app.synth()
    template = assembly.get_stack_by_name(STACK_NAME).template
    return Synthesised(Template.from_json(template), template["Resources"], outdir)


@pytest.fixture(scope="session")
def synthesised(tmp_path_factory: pytest.TempPathFactory) -> Synthesised:
    """The stack as `make synth` builds it, with the default context."""
    return _synthesise(tmp_path_factory.mktemp("cdk.out"))


@pytest.fixture(scope="session")
def configured(tmp_path_factory: pytest.TempPathFactory) -> Synthesised:
    """The stack with every context key set (the code asset is bundled once per process)."""
    return _synthesise(tmp_path_factory.mktemp("cdk.out.configured"), CONFIGURED_CONTEXT)
