"""The job store: the only module that reads or writes DynamoDB."""

from shared.store.items import DueShards
from shared.store.jobs import IdempotencyRecord, JobStore, new_token
from shared.store.listing import Listed, ListFilter
from shared.store.reads import DueRow, SentMark, SentMarks

__all__ = [
    "DueRow",
    "DueShards",
    "IdempotencyRecord",
    "JobStore",
    "ListFilter",
    "Listed",
    "SentMark",
    "SentMarks",
    "new_token",
]
