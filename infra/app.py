"""Entry point: `python infra/app.py` synthesises into $CDK_OUTDIR (default cdk.out), no CLI needed."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

# As a script, Python puts infra/ itself first on sys.path, where infra/functions.py would shadow
# the functions package; the repository root belongs there instead.
_ROOT = str(Path(__file__).resolve().parent.parent)
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path[0] = _ROOT
elif _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from aws_cdk import App, Validations  # noqa: E402
from cdk_nag import AwsSolutionsChecks  # noqa: E402

from infra.settings import BASE_STACK_NAME, stack_name  # noqa: E402
from infra.stack import SundialStack  # noqa: E402

# The stack of the default stage; `-c sundial:stage=NAME` deploys `Sundial-NAME` beside it.
STACK_NAME = BASE_STACK_NAME
CDK_JSON = Path(_ROOT) / "cdk.json"


def build_app(outdir: str | None = None, context: dict[str, Any] | None = None) -> tuple[App, SundialStack]:
    """The app as the CLI builds it; `context` adds to cdk.json's (the CLI's `-c` wins over both)."""
    # The CLI hands cdk.json's context to the app, a plain `python infra/app.py` does not: read it
    # here so that both synthesise the same template.
    defaults = json.loads(CDK_JSON.read_text()).get("context", {})
    app = App(
        outdir=outdir or os.environ.get("CDK_OUTDIR", "cdk.out"), context={**defaults, **(context or {})}
    )
    stack = SundialStack(
        app,
        stack_name(app.node),
        description="Sundial: serverless job scheduler (every occurrence runs once)",
    )
    # Acknowledged findings are also written to each resource's Metadata: the audit trail travels with
    # the template.
    Validations.of(app).add_plugins(AwsSolutionsChecks(app, write_suppressions_to_cloud_formation=True))
    return app, stack


def main() -> None:
    app, _ = build_app()
    app.synth()


if __name__ == "__main__":
    main()
