"""compactd: context compaction and branch summarization for coding-agent sessions."""

from ._native import install_guard

install_guard()  # before any module that may run compiled (compactd/_native.py)

__version__ = "0.1.0"
