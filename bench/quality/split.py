"""The development / held-out split of the quality regions (`split.json`, frozen on the date it names).

Every region must be listed on exactly one side (generated stories by the pattern `story seed *`):
a region nobody classified is an error, not silently development.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from .regions import Region

SPLIT_FILE = Path(__file__).with_name("split.json")
DEV, HELDOUT = "dev", "heldout"
SplitName = Literal["dev", "heldout"]


class SplitFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    frozen: str
    rule: str
    heldout: dict[str, str]  # region name (or fnmatch pattern) -> where it comes from, why it is here
    development: dict[str, str]


def load_split(file: Path = SPLIT_FILE) -> SplitFile:
    return SplitFile.model_validate_json(file.read_text(encoding="utf-8"))


def _side(name: str, split: SplitFile) -> str:
    held = any(fnmatchcase(name, p) for p in split.heldout)
    dev = any(fnmatchcase(name, p) for p in split.development)
    if held == dev:
        where = "both sides" if held else "neither side"
        raise ValueError(f"region {name!r} is on {where} of the split ({SPLIT_FILE.name})")
    return HELDOUT if held else DEV


def assign(regions: list[Region], split: SplitFile | None = None) -> list[Region]:
    """Set each region's `split` (and `tuned`, which is development) from the split file."""
    split = split or load_split()
    for r in regions:
        r.split = _side(r.name, split)
        r.tuned = r.split == DEV
    return regions


def only(regions: list[Region], side: SplitName | None) -> list[Region]:
    return regions if side is None else [r for r in regions if r.split == side]
