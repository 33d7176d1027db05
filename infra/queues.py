"""The three priority queues and the dead-letter queue."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from sundial.contract.vocabulary import Priority
from sundial.shared import constants as c


class JobQueues(Construct):
    """Named by CloudFormation after the stack, not after `shared.constants` (the local stack's names):
    two stages share an account, and SQS's 60 s wait before a deleted name is free again never stops
    a retry."""

    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        self.dead_letter = sqs.Queue(
            self,
            "Dead",
            retention_period=Duration.days(c.DEAD_LETTER_RETENTION_DAYS),
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
        )
        redrive = sqs.DeadLetterQueue(queue=self.dead_letter, max_receive_count=c.MAX_RECEIVE_COUNT)
        self.by_priority: dict[Priority, sqs.Queue] = {
            priority: sqs.Queue(
                self,
                priority.value.capitalize(),
                visibility_timeout=Duration.seconds(c.QUEUE_VISIBILITY_TIMEOUT_SECONDS),
                dead_letter_queue=redrive,
                encryption=sqs.QueueEncryption.SQS_MANAGED,
                enforce_ssl=True,
            )
            for priority in c.PRIORITIES
        }

    @property
    def all(self) -> list[sqs.Queue]:
        return [*self.by_priority.values(), self.dead_letter]

    def grant_send(self, grantee: iam.IGrantable, *, dead_letter: bool) -> None:
        """Every sender may send to the three queues; only those that can kill a job, to the DLQ.

        sqs:SendMessage alone (it also authorises SendMessageBatch): the senders know their queues'
        URLs, so the GetQueueUrl and GetQueueAttributes that `grant_send_messages` adds are unused.
        """
        queues = [*self.by_priority.values(), *([self.dead_letter] if dead_letter else [])]
        iam.Grant.add_to_principal(
            grantee=grantee, actions=["sqs:SendMessage"], resource_arns=[q.queue_arn for q in queues]
        )

    def grant_read_depths(self, grantee: iam.IGrantable) -> None:
        """sqs:GetQueueAttributes on the three priority queues: GET /stats shows their depths."""
        iam.Grant.add_to_principal(
            grantee=grantee,
            actions=["sqs:GetQueueAttributes"],
            resource_arns=[q.queue_arn for q in self.by_priority.values()],
        )
