"""mkdocs hooks: pages that are generated or included at build time, never copied by hand.

- ``<!-- cli-reference -->`` becomes every command's ``--help``, rendered from the Typer app.
- ``<!-- include FILE -->`` becomes the file (relative to the repository root), and
  ``<!-- include FILE: Heading -->`` the section under that heading, down to the next heading of
  the same or a higher level: the benchmark results and README sections stay in one place. A
  file whose folder is missing from this copy (bench/) becomes a one-line note; a missing file
  in a folder that exists fails the build.

Nothing here reaches the network.
"""

from __future__ import annotations

import re
from pathlib import Path

import typer
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parents[1]
INCLUDE = re.compile(r"<!-- include (?P<file>[^:>]+?)(?::\s*(?P<heading>[^>]+?))? -->")


def on_page_markdown(markdown: str, page, config, files) -> str:
    markdown = INCLUDE.sub(lambda match: include(match["file"], match["heading"]), markdown)
    if "<!-- cli-reference -->" in markdown:
        markdown = markdown.replace("<!-- cli-reference -->", cli_reference())
    return markdown


def include(file: str, heading: str | None) -> str:
    """The file, or its section under ``heading`` (the heading line's text, without the #s)."""
    path = ROOT / file
    if not path.parent.is_dir():  # a copy of the project without that folder (bench/): the site still builds
        return f"*`{file}` is not part of this copy of the project.*"
    text = path.read_text()
    if heading is None:
        return text
    lines = text.splitlines()
    for start, line in enumerate(lines):
        level = len(line) - len(line.lstrip("#"))
        if level and line[level:].strip() == heading.strip():
            end = next((i for i in range(start + 1, len(lines)) if _level(lines[i]) and _level(lines[i]) <= level), len(lines))
            return "\n".join(lines[start:end])
    raise ValueError(f"<!-- include {file}: {heading} -->: no such heading in {file}")


def _level(line: str) -> int:
    """The heading level of a markdown line (0: not a heading)."""
    hashes = len(line) - len(line.lstrip("#"))
    return hashes if hashes and line[hashes : hashes + 1] == " " else 0


def cli_reference() -> str:
    """Every command's ``--help``, as the terminal shows it, one section per command."""
    from graphtransfer.cli import app

    sections = []
    for path in _commands(typer.main.get_command(app), []):
        env = {"COLUMNS": "110", "NO_COLOR": "1", "TERM": "dumb"}
        result = CliRunner().invoke(app, [*path, "--help"], env=env, prog_name="graphtransfer")
        if result.exit_code != 0:
            raise RuntimeError(f"graphtransfer {' '.join(path)} --help failed: {result.output}")
        sections.append(f"## `graphtransfer {' '.join(path)}`\n\n```text\n{result.output.rstrip()}\n```\n")
    return "\n".join(sections)


def _commands(command, path: list[str]) -> list[list[str]]:
    """The paths of every leaf command under ``command`` (a Typer group or command, which are
    click's, vendored by newer Typer), in the order ``--help`` lists them; asked through the group's
    own ``list_commands``/``get_command``, as ``graphs`` makes its commands on first use."""
    if hasattr(command, "list_commands"):
        ctx = typer.Context(command)
        return [found for name in command.list_commands(ctx) for found in _commands(command.get_command(ctx, name), [*path, name])]
    return [path]
