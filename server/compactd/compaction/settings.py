"""The compaction settings the pure algorithms need (spec §16.1, G-1). The engine reads the
settings files and hands one of these down."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_RESERVE_TOKENS = 16384
DEFAULT_KEEP_RECENT_TOKENS = 20000
DEFAULT_CONTEXT_WINDOW = 128000  # B-9: used when a model does not say


@dataclass(frozen=True)
class CompactionSettings:
    enabled: bool = True
    reserve_tokens: int = DEFAULT_RESERVE_TOKENS
    keep_recent_tokens: int = DEFAULT_KEEP_RECENT_TOKENS


DEFAULT_COMPACTION_SETTINGS = CompactionSettings()


# D-29: whose semantics the shared behaviours follow. "auto" decides per file: oh-my-pi's for a
# file that starts with its title slot line (QO-1), Pi's for every other.
COMPAT_CHOICES = ("auto", "pi", "omp")


def applied_compat(choice: str, omp_file: bool) -> str:
    """"pi" or "omp" for a `compat` setting and whether the file is oh-my-pi's."""
    if choice in ("pi", "omp"):
        return choice
    return "omp" if omp_file else "pi"
