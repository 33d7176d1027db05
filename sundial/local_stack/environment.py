"""The environment the Lambda handlers read their settings from, pointed at the emulator."""

from __future__ import annotations

import os
from collections.abc import MutableMapping

from sundial.contract.vocabulary import Priority
from sundial.local_stack.resources import Resources
from sundial.shared import constants as c

DEFAULT_REGION = "us-east-1"
# The emulator accepts any credentials; fixed dummies keep a developer's real ones out of its logs.
DUMMY_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local"}
# Variables that would make botocore look past the dummies (a missing profile even fails every call).
CREDENTIAL_SOURCES = ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN")
# The stack the local stack's metrics name, as a deployed stage's name theirs: a name no deployed
# stack has (theirs start with "Sundial").
LOCAL_STACK_NAME = "local"
# Defaults a developer may override: no X-Ray daemon here, and metric blobs would drown the logs
# (each attempt's lateness is in its "attempt finished" log line).
TELEMETRY_DEFAULTS = {
    "POWERTOOLS_SERVICE_NAME": c.METRICS_SERVICE,
    "POWERTOOLS_METRICS_NAMESPACE": c.METRICS_NAMESPACE,
    c.ENV_STACK_NAME: LOCAL_STACK_NAME,
    "POWERTOOLS_TRACE_DISABLED": "true",
    "POWERTOOLS_METRICS_DISABLED": "true",
}


def use_emulator(environ: MutableMapping[str, str] = os.environ) -> str:
    """Points every boto3 client of this process at the emulator's credentials; returns the region."""
    for name in CREDENTIAL_SOURCES:
        environ.pop(name, None)
    environ.update(DUMMY_CREDENTIALS)
    region = environ.get("AWS_DEFAULT_REGION") or DEFAULT_REGION
    environ["AWS_DEFAULT_REGION"] = region
    for name, value in TELEMETRY_DEFAULTS.items():
        environ.setdefault(name, value)
    return region


def handler_settings(
    resources: Resources, endpoint_url: str, *, allow_private: bool, handlers: tuple[str, ...] = ()
) -> dict[str, str]:
    """What sundial/functions/settings.py reads, once per process, at the handlers' first call."""
    return {
        c.ENV_HANDLERS: ",".join(handlers),
        c.ENV_TABLE_NAME: resources.table_name,
        c.ENV_QUEUE_URL_HIGH: resources.queue_urls[Priority.HIGH],
        c.ENV_QUEUE_URL_MEDIUM: resources.queue_urls[Priority.MEDIUM],
        c.ENV_QUEUE_URL_LOW: resources.queue_urls[Priority.LOW],
        c.ENV_DEAD_LETTER_QUEUE_URL: resources.dead_letter_queue_url,
        c.ENV_ENDPOINT_URL: endpoint_url,
        c.ENV_ALLOW_PRIVATE_TARGETS: "true" if allow_private else "false",
        c.ENV_EXTRA_LEAD_SECONDS: str(c.EMULATOR_EXTRA_LEAD_SECONDS),
        **({c.ENV_SIGNING_SECRET_ARN: resources.signing_secret_arn} if resources.signing_secret_arn else {}),
        **({c.ENV_HEADER_KEY_ARN: resources.header_key_arn} if resources.header_key_arn else {}),
    }
