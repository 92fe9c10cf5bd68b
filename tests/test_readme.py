"""The README's code that users copy must run."""

import re
from pathlib import Path

import numpy as np

README = Path(__file__).parents[1] / "README.md"


def test_seed_recipe_runs(tmp_path, monkeypatch):
    block = re.search(r"<!-- seed-recipe -->\n```python\n(.*?)```", README.read_text(), re.S)
    assert block, "the README lost its seed-recipe block"
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(block.group(1), "README seed recipe", "exec"), namespace)
    assert namespace["action"] in range(3)
    assert (tmp_path / "epidemic_policy.pt").is_file()
    small, large = namespace["small"].policy.state_dict(), namespace["large"].policy.state_dict()
    assert all(np.array_equal(small[k].numpy(), large[k].numpy()) for k in small)
