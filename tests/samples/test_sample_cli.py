"""`compactd sample OUT ...` through the real CLI entry point (in-process and as a subprocess)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from compactd.cli import main
from compactd.samples import generate_session, sample_session_text


def _without_header_cwd(text: str) -> tuple[str, list[str]]:
    lines = text.splitlines()
    return json.loads(lines[0])["cwd"], [json.dumps({**json.loads(lines[0]), "cwd": None})] + lines[1:]


def test_default_writes_the_bundled_sample_and_prints_the_path(tmp_path: Path, capsys,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "deep" / "sample.jsonl"
    monkeypatch.chdir(tmp_path)
    assert main(["sample", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    cwd, rest = _without_header_cwd(out.read_text(encoding="utf-8"))
    assert cwd == str(tmp_path)  # an existing directory (the current one), so Pi can resume it
    assert rest == _without_header_cwd(sample_session_text())[1]


def test_cwd_option_must_be_an_existing_directory(tmp_path: Path, capsys) -> None:
    out = tmp_path / "s.jsonl"
    assert main(["sample", str(out), "--cwd", str(tmp_path)]) == 0
    assert json.loads(out.read_text().splitlines()[0])["cwd"] == str(tmp_path)
    with pytest.raises(SystemExit) as exc:
        main(["sample", str(tmp_path / "t.jsonl"), "--cwd", str(tmp_path / "missing")])
    assert exc.value.code == 2 and "not an existing directory" in capsys.readouterr().err
    assert not (tmp_path / "t.jsonl").exists()


def test_seed_and_size_generate_a_new_session(tmp_path: Path, capsys) -> None:
    out = tmp_path / "big.jsonl"
    assert main(["sample", str(out), "--seed", "4", "--size", "200K"]) == 0
    data = out.read_bytes()
    assert 200 * 1024 <= len(data) <= 200 * 1024 * 1.2 + 8000
    expected = "".join(line + "\n" for line in generate_session(seed=4, target_bytes=200 * 1024))
    assert _without_header_cwd(data.decode("utf-8"))[1] == _without_header_cwd(expected)[1]


def test_switches_are_passed_through(tmp_path: Path) -> None:
    out = tmp_path / "plain.jsonl"
    assert main(["sample", str(out), "--seed", "3", "--turns", "6", "--no-branches", "--no-compactions"]) == 0
    entries = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()[1:]]
    types = {e["type"] for e in entries}
    assert "branch_summary" not in types and "compaction" not in types
    assert sum(1 for e in entries if e["type"] == "message" and e["message"]["role"] == "user") == 6


def test_bad_size_is_a_usage_error(tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["sample", str(tmp_path / "x.jsonl"), "--size", "lots"])
    assert exc.value.code == 2
    assert "not a size" in capsys.readouterr().err
    assert not (tmp_path / "x.jsonl").exists()


def test_subprocess_cli_writes_file(tmp_path: Path) -> None:
    out = tmp_path / "s.jsonl"
    proc = subprocess.run([sys.executable, "-m", "compactd", "sample", str(out), "--turns", "2", "--seed", "8"],
                          capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == str(out)
    first = json.loads(out.read_text(encoding="utf-8").splitlines()[0])
    assert first["type"] == "session" and first["version"] == 3
