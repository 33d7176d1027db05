"""The job store: the only module that reads or writes DynamoDB."""

from sundial.shared.store.items import DueShards
from sundial.shared.store.jobs import IdempotencyRecord, JobStore, new_token
from sundial.shared.store.listing import Listed, ListFilter
from sundial.shared.store.reads import DueRow, SentMark, SentMarks

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
