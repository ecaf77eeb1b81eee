"""How one session line is written (E-1): the format version and the JSON encoding.

Kept apart from the pydantic models in `model.py` so that reading and writing a session file
(the CLI's one-shot commands, the daemon's store) never imports pydantic.
"""

from __future__ import annotations

import json
from typing import Any

CURRENT_SESSION_VERSION = 3


def encode_line(obj: dict[str, Any]) -> str:
    """One compact JSON line, non-ASCII kept literal (E-1). No trailing newline.

    Integral floats keep Python's rendering (`1.0`); values we create are ints where Pi writes ints.
    """
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def drop_none(obj: dict[str, Any]) -> dict[str, Any]:
    """Top-level keys whose value is None are omitted, as Pi omits `undefined` fields (E-1)."""
    return {k: v for k, v in obj.items() if v is not None}
