"""What ``graphtransfer graphs info`` reports about a graph file: size, degrees, format, parse time."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from graphtransfer.graphs.formats import detect_format, read_graph


@dataclass(frozen=True)
class GraphSummary:
    """Facts about one graph file; ``detected`` is False when the format was named by the caller."""

    path: Path
    format: str
    detected: bool
    num_nodes: int
    num_edges: int
    min_degree: int
    mean_degree: float
    max_degree: int
    isolated: int
    parse_seconds: float
    ids: str = ""
    """how the file names its nodes, which solutions use: see :meth:`Graph.describe_ids`"""


def summarize_file(path: str | Path, format: str | None = None) -> GraphSummary:
    """Read ``path`` (in ``format``, or the detected one), timing the read, and describe the graph."""
    path = Path(path)
    chosen = format or detect_format(path)
    started = time.perf_counter()
    graph = read_graph(path, chosen)
    seconds = time.perf_counter() - started
    degrees = graph.degrees()
    return GraphSummary(
        path=path,
        format=chosen,
        detected=format is None,
        num_nodes=graph.num_nodes,
        num_edges=graph.num_edges,
        min_degree=int(degrees.min()),
        mean_degree=float(degrees.mean()),
        max_degree=int(degrees.max()),
        isolated=int((degrees == 0).sum()),
        parse_seconds=seconds,
        ids=graph.describe_ids(),
    )
