"""Tree previews collapse whitespace and cut at PREVIEW_CHARS; the fast path that only collapses
the head of long texts must give exactly what collapsing the whole text gives."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from compactd.session.views import _HEAD_CHARS, PREVIEW_CHARS, _one_line


def _reference(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= PREVIEW_CHARS else line[: PREVIEW_CHARS - 1] + "…"


_WORDS = st.lists(st.tuples(st.text(alphabet="ab€😀", min_size=0, max_size=30),
                            st.text(alphabet=" \n\t\r", min_size=0, max_size=400)), max_size=80)


@settings(max_examples=300, deadline=None)
@given(_WORDS)
def test_fast_preview_equals_collapsing_everything(parts: list[tuple[str, str]]) -> None:
    text = "".join(word + space for word, space in parts)
    assert _one_line(text) == _reference(text)


def test_long_texts_take_the_fast_path_and_keep_the_cut() -> None:
    text = "word " * 10_000
    assert len(text) > _HEAD_CHARS
    assert _one_line(text) == _reference(text) and _one_line(text).endswith("…")
    # mostly whitespace up front: the head collapses to little, the whole text decides
    sparse = " " * (_HEAD_CHARS + 10) + "tail"
    assert _one_line(sparse) == "tail"
