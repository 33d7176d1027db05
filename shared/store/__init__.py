"""The job store: the only module that reads or writes DynamoDB."""

from shared.store.items import DueShards
from shared.store.jobs import IdempotencyRecord, JobStore, new_token
from shared.store.reads import DueRow, Page, SentMarks

__all__ = ["DueRow", "DueShards", "IdempotencyRecord", "JobStore", "Page", "SentMarks", "new_token"]
