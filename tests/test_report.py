"""One figure per fact: the tables of what to expect in README.md, docs/quality.md and
docs/performance.md are what bench/report.py renders from the committed bench/report.json, and
no page quotes a quality ratio, a time or a memory figure outside them."""

import json
import re
import shutil
from pathlib import Path

import pytest

from bench import report

ROOT = Path(__file__).resolve().parents[1]
RESULTS = json.loads((ROOT / "bench" / "report.json").read_text())
FIGURE = re.compile(r"\b\d[\d,]*(?:\.\d+)?(?:-\d[\d,]*(?:\.\d+)?)?\s?(?:s|ms|×|x|%|MiB|GiB|MB|GB|env steps/s)(?![\w/])|\b\d\.\d{3}\b")
"""a quality ratio (three decimals) or a measurement with its unit"""


def prose(text: str) -> str:
    """The page less its code blocks (transcripts, commands) and its generated tables."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    return re.sub(r"<!-- report:(\w+) -->.*?<!-- /report:\1 -->", "", text, flags=re.S)


@pytest.mark.parametrize("page", sorted(report.PAGES))
def test_the_tables_are_what_the_generator_renders_from_the_committed_results(page):
    text, rendered = report.rendered_pages(RESULTS)[page]
    assert text == rendered, f"{page}: its tables differ from bench/report.json; run .venv/bin/python -m bench.report"


@pytest.mark.parametrize("page", sorted(report.PAGES))
def test_no_page_quotes_a_figure_outside_the_generated_tables(page):
    figures = FIGURE.findall(prose((ROOT / page).read_text()))
    assert not figures, f"{page} quotes {figures} outside its generated tables; put them in bench/report.json's tables"


def test_a_figure_changed_by_hand_fails_the_check(tmp_path):
    for page in report.PAGES:
        (tmp_path / page).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / page, tmp_path / page)
    readme = tmp_path / "README.md"
    text = readme.read_text()
    row = next(line for line in text.splitlines() if line.startswith("| mis "))
    readme.write_text(text.replace(row, re.sub(r"\d\.\d{3}", "1.234", row, count=1)))
    changed, rendered = report.rendered_pages(RESULTS, tmp_path)["README.md"]
    assert changed != rendered and "1.234" not in rendered
    assert FIGURE.findall("the solve took 1.2 s at 631 MiB, 1.011 x greedy") == ["1.2 s", "631 MiB", "1.011 x"]


def test_every_task_row_holds_a_feasible_solution_and_its_load():
    for task, record in RESULTS["tasks"].items():
        assert record["rows"], task
        for row in record["rows"]:
            assert row["feasible"], (task, row["family"], row["nodes"])
            assert {"load_before", "load_after", "seconds", "baseline_objective"} <= set(row)
