"""Sundial's own queues as an `sqs` target may not name them (docs/api.md, Targets).

A queue URL's host says only where the request is sent: AWS's regional, legacy and emulator hosts all
reach the same queue, which SQS finds by the account id and the name in the path. So two URLs name
the same queue when those two agree, whatever the host.
"""

from __future__ import annotations

from urllib.parse import unquote, urlsplit

QUEUE_URL_FIELD = "target.queue_url"


def queue_identity(url: str) -> tuple[str, str]:
    """(account id, queue name) from a queue URL; the account is "" when the path has only a name.

    The name is case-folded: refusing a near-homonym of an own queue costs nothing, while an SQS
    front end that folded case would otherwise let the real one through.
    """
    try:
        path = urlsplit(url.strip()).path
    except ValueError:
        path = url
    segments = [segment for segment in unquote(path).split("/") if segment]
    if not segments:
        return "", ""
    account = segments[-2] if len(segments) >= 2 else ""
    return account, segments[-1].casefold()


def names_own_queue(url: str, own_queue_urls: frozenset[str]) -> bool:
    """True when `url` names one of `own_queue_urls`, however its host is written."""
    account, name = queue_identity(url)
    if not name:
        return False
    for own in own_queue_urls:
        own_account, own_name = queue_identity(own)
        if name == own_name and (account == own_account or not account or not own_account):
            return True
    return False


def own_queue_refusal(url: str) -> str:
    """The reason given, at create and at delivery, for a target that names an own queue."""
    return f"target queue {url} is one of Sundial's own queues; name a queue of your own"
