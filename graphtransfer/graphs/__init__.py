"""Graphs: the graph type, file readers and writers, seeded generators, sample sets."""

from graphtransfer.graphs.catalog import load_graph, load_graphs, resolve
from graphtransfer.graphs.generators import barabasi_albert, erdos_renyi, generate, random_geometric
from graphtransfer.graphs.graph import Graph, from_edges
from graphtransfer.graphs.io import read_edge_list, read_graph, read_npz, write_edge_list, write_npz

__all__ = [
    "Graph",
    "barabasi_albert",
    "erdos_renyi",
    "from_edges",
    "generate",
    "load_graph",
    "load_graphs",
    "random_geometric",
    "read_edge_list",
    "read_graph",
    "read_npz",
    "resolve",
    "write_edge_list",
    "write_npz",
]
