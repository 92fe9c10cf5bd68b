"""Resolving what a user names as graphs: a sample set name, a graph file, or a folder of them."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

from graphtransfer.errors import GraphInputError, GraphInputWarning
from graphtransfer.graphs.formats import GRAPH_SUFFIXES, read_graph
from graphtransfer.graphs.graph import Graph


def sample_dirs() -> list[Path]:
    """Where sample set names are looked up: ``$GRAPHTRANSFER_SAMPLES``, ``./sample_graphs``,
    then the ``sample_graphs/`` folder of the source checkout."""
    dirs = [Path("sample_graphs"), Path(__file__).resolve().parents[2] / "sample_graphs"]
    if "GRAPHTRANSFER_SAMPLES" in os.environ:
        dirs.insert(0, Path(os.environ["GRAPHTRANSFER_SAMPLES"]))
    return dirs


def resolve(spec: str | Path) -> Path:
    """Turn a sample set name such as ``small`` into ``sample_graphs/small``; anything written as
    a path (``./small``, ``data/g.txt``, a ``Path``) is taken as that path.

    A bare name that is both a sample set and a file or folder in the working folder means the
    sample set, with a warning that says so and how to name the other (``./small``).
    """
    path = Path(spec)
    sample = _sample(str(spec)) if isinstance(spec, str) and path.name == spec else None
    if sample is not None:
        if path.exists() and path.resolve() != sample.resolve():
            warnings.warn(
                f"'{spec}' is a sample set and also a path here; using the sample set {sample} (write ./{spec} for the path)",
                GraphInputWarning,
                stacklevel=2,
            )
        return sample
    if path.exists():
        return path
    names = sorted({p.stem for d in sample_dirs() if d.is_dir() for p in d.iterdir() if p.is_dir() or p.suffix in GRAPH_SUFFIXES})
    raise GraphInputError(f"graphs {str(spec)!r}: no such file, folder or sample set; sample sets are {names}")


def _sample(name: str) -> Path | None:
    """The sample set or sample graph file called ``name``, if there is one."""
    for folder in sample_dirs():
        for candidate in (folder / name, *(folder / f"{name}{suffix}" for suffix in GRAPH_SUFFIXES)):
            if candidate.exists():
                return candidate
    return None


def load_graphs(spec: str | Path, format: str | None = None) -> list[Graph]:
    """All graphs that ``spec`` names, sorted by file name, each read in ``format`` or the
    format detected for it."""
    path = resolve(spec)
    if not path.is_dir():  # a file, or what the reader refuses in one line (a FIFO, a device)
        return [read_graph(path, format)]
    files = sorted(p for p in path.iterdir() if p.suffix in GRAPH_SUFFIXES)
    if not files:
        raise GraphInputError(f"{path}: folder holds no graph files; expected files ending in {', '.join(GRAPH_SUFFIXES)}")
    return [read_graph(p, format) for p in files]


def load_graph(spec: str | Path, format: str | None = None) -> Graph:
    """Exactly one graph; a set of several is an error that says so."""
    graphs = load_graphs(spec, format)
    if len(graphs) != 1:
        raise GraphInputError(f"graphs {str(spec)!r}: holds {len(graphs)} graphs, expected one; name a single file")
    return graphs[0]
