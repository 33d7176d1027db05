"""What the smoke check talks to: a Sundial API over HTTP (SigV4-signed for API Gateway), its
dead-letter queue and, when it can reach them, its alarms."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import boto3
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest

from local_stack.environment import DEFAULT_REGION, DUMMY_CREDENTIALS
from shared import constants as c

# https://<api id>.execute-api.<region>.amazonaws.com/<stage>/
_EXECUTE_API = re.compile(r"^[a-z0-9]+\.execute-api\.([a-z0-9-]+)\.amazonaws\.com(\.cn)?$")
TIMEOUT_SECONDS = 30


def execute_api_region(url: str) -> str | None:
    """The region of an API Gateway URL, or None for any other (the local stack's) URL."""
    match = _EXECUTE_API.match(urlsplit(url).hostname or "")
    return match.group(1) if match else None


class Api:
    """JSON over HTTP; requests to API Gateway are signed with the caller's AWS credentials."""

    def __init__(self, base_url: str, session: boto3.Session | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.region = execute_api_region(base_url)
        self._credentials = None
        if self.region is not None:
            self._credentials = (session or boto3.Session()).get_credentials()
            if self._credentials is None:
                raise SystemExit("sundial smoke: no AWS credentials to sign requests to API Gateway")

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        headers = self.headers(method, self.base_url + path, data)
        request = urllib.request.Request(self.base_url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            text = error.read()
            try:
                return error.code, json.loads(text or b"null")
            except ValueError:
                return error.code, text.decode(errors="replace")

    def headers(self, method: str, url: str, data: bytes | None) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self._credentials is None or self.region is None:
            return headers
        request = AWSRequest(method=method, url=url, data=data, headers=headers)
        SigV4Auth(self._credentials.get_frozen_credentials(), "execute-api", self.region).add_auth(request)
        return dict(request.headers.items())


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

    def take_dead_letter(self, job_id: str) -> dict[str, Any] | None:
        """The dead-letter message about this job, deleted once read; None while there is none.
        Messages about other jobs are left as they were (visible again at once)."""
        answer = self.sqs.receive_message(
            QueueUrl=self.dead_letter_queue_url, MaxNumberOfMessages=10, VisibilityTimeout=0
        )
        for message in answer.get("Messages", []):
            try:
                body = json.loads(message["Body"])
            except ValueError:
                continue
            if isinstance(body, dict) and body.get("job_id") == job_id:
                self.sqs.delete_message(
                    QueueUrl=self.dead_letter_queue_url, ReceiptHandle=message["ReceiptHandle"]
                )
                return body
        return None

    def alarm_states(self) -> dict[str, str]:
        if self.cloudwatch is None or not self.alarm_names:
            return {}
        states: dict[str, str] = {}
        names = list(self.alarm_names)
        for start in range(0, len(names), 100):
            answer = self.cloudwatch.describe_alarms(AlarmNames=names[start : start + 100])
            states |= {a["AlarmName"]: a["StateValue"] for a in answer["MetricAlarms"]}
        return states
