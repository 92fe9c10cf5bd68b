"""The documentation site builds with mkdocs --strict: a warning (a broken link, a missing include,
a docstring mkdocstrings cannot read, a command whose --help fails) fails the test."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("mkdocs")
pytest.importorskip("mkdocstrings")


def test_the_docs_build_without_warnings(tmp_path):
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert result.returncode == 0, result.stderr
    assert "WARNING" not in result.stderr, result.stderr
    cli = (tmp_path / "site" / "cli" / "index.html").read_text()
    for command in ("graphtransfer train", "graphtransfer tune", "graphtransfer graphs convert"):
        assert command in cli  # every command's --help, rendered from the Typer app
    assert "greedy-min-degree" in (tmp_path / "site" / "quality" / "index.html").read_text()  # rendered by bench/report.py


def load_hooks():
    import importlib.util

    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "hooks.py")
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    return hooks


def test_an_include_from_a_folder_this_copy_lacks_is_a_note_and_a_missing_file_fails():
    hooks = load_hooks()
    assert "not part of this copy" in hooks.include("no-such-folder/RESULTS.md", "Transfer quality")
    with pytest.raises(FileNotFoundError):
        hooks.include("bench/NO-SUCH-FILE.md", None)
    assert hooks.include("bench/RESULTS.md", "Transfer quality (issue 17: local-max decoding)").startswith("## Transfer quality")
