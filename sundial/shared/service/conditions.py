"""Client-side conditions (docs/api.md, "ETag and If-Match"): a job's entity tag, and the If-Match
precondition a change is applied under.

The tag is the job's `revision`, which every change a call makes to the job advances and nothing
else does. Not its `version`: that advances on every write, the heartbeat of a running attempt
included, so a tag made of it would go stale every half minute while an attempt runs, and a client
could never act on a running job under a condition. The scheduler's and the worker's progress
(claim, start, settle) leaves the tag as it is: each call decides from the job as it then is, and a
condition guards against another caller's change, not against the job running.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sundial.shared.errors import InvalidInput, SundialError
from sundial.shared.models import Job

IF_MATCH = "If-Match"
# RFC 9110, section 8.8.3: an entity tag is an opaque quoted string, optionally marked weak by `W/`.
_ENTITY_TAG = r'(?:W/)?"[\x21\x23-\x7e\x80-\xff]*"'
_LIST = re.compile(rf"\s*(?:{_ENTITY_TAG})?\s*(?:,\s*(?:{_ENTITY_TAG})?\s*)*")
_TAG = re.compile(_ENTITY_TAG)


class PreconditionFailed(SundialError):
    """The job changed since the client read the entity tag it sent in If-Match (HTTP 412)."""


def etag(job: Job) -> str:
    """The job's strong entity tag, quoted as the ETag header carries it: `"7"`."""
    return f'"{job.revision}"'


@dataclass(frozen=True)
class IfMatch:
    """An If-Match header: `*` (`tags` None), or the entity tags of which one must be the job's."""

    tags: frozenset[str] | None

    def check(self, job: Job) -> None:
        """Raises PreconditionFailed unless the job's tag is one of these. The comparison is strong
        (RFC 9110, section 13.1.1): a weak tag never matches."""
        if self.tags is None or etag(job) in self.tags:
            return
        sent = ", ".join(sorted(self.tags)) or "a weak tag, which never matches"
        raise PreconditionFailed(
            f"job '{job.id}' has changed: it is now {etag(job)}, not {sent}; read it again and decide again",
            field=IF_MATCH,
        )


def if_match(header: str | None) -> IfMatch | None:
    """The precondition an If-Match header sets, or None without one. Raises InvalidInput naming
    If-Match when the header is neither `*` nor a list of quoted entity tags."""
    if header is None:
        return None
    if header.strip() == "*":
        return IfMatch(None)
    tags = _TAG.findall(header)
    if not tags or not _LIST.fullmatch(header):
        raise InvalidInput(
            f"{IF_MATCH}: {header[:40]!r} is not an entity tag: send the ETag as answered, quotes "
            'included (such as "7"), or *',
            field=IF_MATCH,
        )
    return IfMatch(frozenset(tag for tag in tags if not tag.startswith("W/")))
