"""compactd: context compaction and branch summarization for coding-agent sessions."""

__version__ = "0.1.0"
