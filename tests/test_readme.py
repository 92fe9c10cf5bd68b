"""The code that users copy from the README and the docs must run."""

import re
from pathlib import Path

import numpy as np
import pytest

README = Path(__file__).parents[1] / "README.md"
YOUR_ENV = Path(__file__).parents[1] / "docs" / "guide" / "your-env.md"  # the docs page that holds the seed recipe


def test_seed_recipe_runs(tmp_path, monkeypatch):
    block = re.search(r"<!-- seed-recipe -->\n```python\n(.*?)```", YOUR_ENV.read_text(), re.S)
    assert block, "docs/guide/your-env.md lost its seed-recipe block"
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(block.group(1), "README seed recipe", "exec"), namespace)
    assert namespace["action"] in range(3)
    assert (tmp_path / "epidemic_policy.pt").is_file()
    small, large = namespace["small"].policy.state_dict(), namespace["large"].policy.state_dict()
    assert all(np.array_equal(small[k].numpy(), large[k].numpy()) for k in small)


@pytest.mark.slow
def test_python_api_block_runs(tmp_path, monkeypatch):
    block = re.search(r"<!-- python-api -->\n```python\n(.*?)```", README.read_text(), re.S)
    assert block, "the README lost its python-api block"
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(block.group(1), "README Python API", "exec"), namespace)
    assert namespace["solution"].feasible and namespace["graph"].num_nodes == 3000
    assert namespace["result"].report.ok and (tmp_path / "solution.csv").is_file()
    assert [row.graph.name for row in namespace["rows"]] == sorted(p.name for p in (README.parent / "sample_graphs/small").iterdir())
    assert namespace["actions"].shape == (1, 3000)
