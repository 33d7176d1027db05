"""What the smoke check talks to: a Sundial API over HTTP (SigV4-signed for API Gateway), its
dead-letter queue and, when it can reach them, its alarms."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import boto3

from sundial.client import RetryPolicy, SundialClient, Unauthorized, execute_api_region
from sundial.local_stack.environment import DEFAULT_REGION, DUMMY_CREDENTIALS
from sundial.shared import constants as c

__all__ = ["Api", "Deployment", "execute_api_region"]


class Api(SundialClient):
    """The client, with credentials from a boto3 session when one is given, and checked at once: a
    smoke check without them should stop before it creates anything."""

    def __init__(self, base_url: str, session: boto3.Session | None = None) -> None:
        credentials = session.get_credentials() if session is not None else None
        # A few more attempts than the default: a fresh deployment may throttle or cold-start.
        super().__init__(base_url, credentials=credentials, retries=RetryPolicy(attempts=6))
        if self.signer is not None:
            try:
                self.signer.credentials()
            except Unauthorized as exc:
                raise SystemExit(f"sundial smoke: {exc}") from None


# Long enough for a search through a queue of many dead jobs; a search that dies leaves the others
# hidden for this long at most.
SEARCH_VISIBILITY_SECONDS = 120


@dataclass
class DeadLetterSearch:
    job_id: str
    queue_url: str
    found: dict[str, Any] | None = None
    others_read: int = 0
    exhausted: bool = False

    def looked_for(self) -> str:
        """What the search looked for, and where it stopped."""
        ended = "the queue held no more" if self.exhausted else "it ran out of time"
        return (
            f"looked for the message whose job_id is {self.job_id} on {self.queue_url}: read "
            f"{self.others_read} others, then {ended}"
        )


def _about(message: dict[str, Any], job_id: str) -> dict[str, Any] | None:
    try:
        body = json.loads(message["Body"])
    except ValueError:
        return None
    return body if isinstance(body, dict) and body.get("job_id") == job_id else None


@dataclass(frozen=True)
class Deployment:
    """Where the dead-letter queue and the alarms are: a stack's outputs, or the emulator's names."""

    dead_letter_queue_url: str
    alarm_names: tuple[str, ...]
    sqs: Any
    cloudwatch: Any | None

    @classmethod
    def of_stack(cls, stack: str, region: str) -> Deployment:
        cloudformation = boto3.client("cloudformation", region_name=region)
        (described,) = cloudformation.describe_stacks(StackName=stack)["Stacks"]
        outputs = {o["OutputKey"]: o["OutputValue"] for o in described.get("Outputs", [])}
        alarms: list[str] = []
        paginator = cloudformation.get_paginator("list_stack_resources")
        for page in paginator.paginate(StackName=stack):
            alarms += [
                r["PhysicalResourceId"]
                for r in page["StackResourceSummaries"]
                if r["ResourceType"] == "AWS::CloudWatch::Alarm"
            ]
        return cls(
            outputs["DeadLetterQueueUrl"],
            tuple(sorted(alarms)),
            boto3.client("sqs", region_name=region),
            boto3.client("cloudwatch", region_name=region),
        )

    @classmethod
    def of_emulator(cls, endpoint_url: str) -> Deployment:
        # The emulator takes any credentials: the local stack's dummies, never the developer's own.
        sqs = boto3.client(
            "sqs",
            endpoint_url=endpoint_url,
            region_name=DEFAULT_REGION,
            aws_access_key_id=DUMMY_CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=DUMMY_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        )
        url = sqs.get_queue_url(QueueName=c.DEAD_LETTER_QUEUE_NAME)["QueueUrl"]
        # The local stack has no CloudWatch: there are no alarms to report.
        return cls(url, (), sqs, None)

    def take_dead_letter(self, job_id: str, deadline: float) -> DeadLetterSearch:
        """Reads the queue until the message about this job turns up (it is then deleted), the queue
        has no more, or `deadline` (time.monotonic()) passes. The others read on the way are hidden
        while the search lasts, so that each receive brings new ones, and made visible again after."""
        search = DeadLetterSearch(job_id, self.dead_letter_queue_url)
        others: list[str] = []
        try:
            while search.found is None and time.monotonic() < deadline:
                messages = self._receive()
                if not messages:
                    search.exhausted = True
                    break
                for message in messages:
                    letter = _about(message, job_id) if search.found is None else None
                    if letter is None:
                        others.append(message["ReceiptHandle"])
                        continue
                    search.found = letter
                    self.sqs.delete_message(
                        QueueUrl=self.dead_letter_queue_url, ReceiptHandle=message["ReceiptHandle"]
                    )
        finally:
            search.others_read = len(others)
            self._show_again(others)
        return search

    def _receive(self) -> list[dict[str, Any]]:
        # Long polling asks every SQS server, so an empty answer means an empty queue.
        answer = self.sqs.receive_message(
            QueueUrl=self.dead_letter_queue_url,
            MaxNumberOfMessages=10,
            VisibilityTimeout=SEARCH_VISIBILITY_SECONDS,
            WaitTimeSeconds=1,
        )
        messages: list[dict[str, Any]] = answer.get("Messages", [])
        return messages

    def _show_again(self, receipts: list[str]) -> None:
        for start in range(0, len(receipts), 10):
            entries = [
                {"Id": str(n), "ReceiptHandle": receipt, "VisibilityTimeout": 0}
                for n, receipt in enumerate(receipts[start : start + 10])
            ]
            self.sqs.change_message_visibility_batch(QueueUrl=self.dead_letter_queue_url, Entries=entries)

    def alarm_states(self) -> dict[str, str]:
        if self.cloudwatch is None or not self.alarm_names:
            return {}
        states: dict[str, str] = {}
        names = list(self.alarm_names)
        for start in range(0, len(names), 100):
            answer = self.cloudwatch.describe_alarms(AlarmNames=names[start : start + 100])
            states |= {a["AlarmName"]: a["StateValue"] for a in answer["MetricAlarms"]}
        return states
