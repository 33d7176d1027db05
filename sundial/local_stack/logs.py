"""Logging for the `sundial` command: plain lines on stderr for the local stack's own loggers.

The handlers' Powertools loggers print JSON lines to stdout themselves, as in Lambda; their records
still propagate to the root logger, where they would be printed a second time.
"""

from __future__ import annotations

import logging

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# Chatty at INFO and never useful here ("Found credentials in environment variables").
QUIET = ("botocore", "boto3", "urllib3")


class PrintedElsewhere(logging.Filter):
    """Rejects a record that a handler of its own logger (or of an ancestor below root) printed."""

    def filter(self, record: logging.LogRecord) -> bool:
        logger: logging.Logger | None = logging.getLogger(record.name)
        while logger is not None and logger is not logging.root:
            if logger.handlers:
                return False
            if not logger.propagate:
                break
            logger = logger.parent
        return True


def configure_logging(level: int = logging.INFO) -> None:
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    handler.addFilter(PrintedElsewhere())
    logging.root.addHandler(handler)
    logging.root.setLevel(level)
    for name in QUIET:
        logging.getLogger(name).setLevel(logging.WARNING)
