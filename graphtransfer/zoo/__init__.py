"""Pretrained models shipped in the package: ``--model mis`` instead of a folder of one's own.

Each built-in model is an ordinary model folder (``config.json`` and safetensors, read like any
other, nothing unpickled) under ``graphtransfer/zoo/<name>/``, with ``zoo.json`` beside its config:
how it was chosen (the training command and seeds tried, the validation graphs and every
candidate's scores) so that ``make zoo`` can rebuild it. A path that exists always wins over a
built-in name, so a user's own folder called ``mis`` is never shadowed.
"""

from __future__ import annotations

from pathlib import Path

ZOO = Path(__file__).resolve().parent
PROVENANCE = "zoo.json"
"""how a built-in model was trained and chosen, beside its config.json"""


def zoo_names() -> list[str]:
    """The built-in model names: the folders here that hold a model."""
    return sorted(path.parent.name for path in ZOO.glob(f"*/{PROVENANCE}"))


def zoo_folder(name: str | Path) -> Path | None:
    """The packaged folder of the built-in model ``name``, or None when ``name`` is no built-in
    name or a path that exists (a user's own folder wins)."""
    text = str(name)
    if Path(text).exists() or text not in zoo_names():
        return None
    return ZOO / text
