"""The shortest route for the path task: Dijkstra from the query's source. Solutions are
``(steps + 1, 2)`` int64 ``step, node`` rows, as :class:`~graphtransfer.tasks.path.env.PathEnv` writes them."""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_array
from scipy.sparse.csgraph import dijkstra

from graphtransfer.errors import UsageError
from graphtransfer.graphs import Graph, edge_weights
from graphtransfer.tasks.path.query import route_query


def dijkstra_route(graph: Graph, query: tuple[int, int] | None = None) -> np.ndarray:
    """The shortest route for ``query`` (positions ``(source, target)``; default the graph's
    own, :func:`~graphtransfer.tasks.path.env.route_query`) by scipy's Dijkstra, lengths from
    :func:`~graphtransfer.graphs.edge_weights`."""
    source, target = route_query(graph) if query is None else query
    matrix = csr_array((edge_weights(graph), (graph.edge_index[0], graph.edge_index[1])), shape=(graph.num_nodes,) * 2)
    _, predecessors = dijkstra(matrix, indices=source, return_predecessors=True)
    route = [target]
    while route[-1] != source:
        if predecessors[route[-1]] < 0:
            raise UsageError(f"graph {graph.name or '(unnamed)'}: node {target} cannot be reached from node {source}")
        route.append(int(predecessors[route[-1]]))
    nodes = np.array(route[::-1], dtype=np.int64)
    return np.column_stack([np.arange(nodes.size), nodes])
