"""The job store: the only module that reads or writes DynamoDB."""

from shared.store.jobs import IdempotencyRecord, JobStore, new_token
from shared.store.listing import Listed, ListFilter
from shared.store.reads import DueRow

__all__ = ["DueRow", "IdempotencyRecord", "JobStore", "ListFilter", "Listed", "new_token"]
