"""One JSON object per line on stdout, for the service's logs."""

import logging
import sys
from datetime import UTC, datetime
from typing import Any

import orjson

LOGGER_NAME = "extender"
FIELDS_ATTRIBUTE = "fields"
"""``logger.info(msg, extra={"fields": {...}})`` adds these keys to the line."""


class JsonLineFormatter(logging.Formatter):
    """Formats a record as ``{"ts", "level", "msg", ...fields}`` on one line."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "msg": record.getMessage(),
        }
        extra = getattr(record, FIELDS_ATTRIBUTE, None)
        if isinstance(extra, dict):
            line.update(extra)
        if record.exc_info:
            line["error"] = self.formatException(record.exc_info).replace("\n", " | ")
        return orjson.dumps(line, default=str).decode()


def configure_logging(level: int = logging.INFO) -> logging.Logger:
    """The service logger, writing JSON lines to stdout (idempotent)."""
    logger = logging.getLogger(LOGGER_NAME)
    if not any(getattr(handler, "_json_lines", False) for handler in logger.handlers):
        handler = logging.StreamHandler(sys.stdout)
        handler.setFormatter(JsonLineFormatter())
        handler._json_lines = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
    return logger
