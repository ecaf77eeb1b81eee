"""Deterministic generator of realistic Pi v3 session files (samples, tests, benchmarks)."""

from compactd.samples.generate import generate_session, sample_session_text, write_session

__all__ = ["generate_session", "sample_session_text", "write_session"]
