"""Graphs: the graph type, file formats, seeded generators, sample sets."""

from graphtransfer.graphs.catalog import load_graph, load_graphs, resolve
from graphtransfer.graphs.formats import FORMATS, GraphFormat, convert_graph, detect_format, read_graph, write_graph
from graphtransfer.graphs.formats.edgelist import read_edge_list, write_edge_list
from graphtransfer.graphs.formats.npz import read_npz, write_npz
from graphtransfer.graphs.generators import GENERATORS, barabasi_albert, delaunay, erdos_renyi, generate, random_geometric, spec_for
from graphtransfer.graphs.graph import Graph, from_edges
from graphtransfer.graphs.sampling import sample_subgraphs
from graphtransfer.graphs.summary import GraphSummary, summarize_file
from graphtransfer.graphs.weights import edge_weights, pair_weights, weights_source

__all__ = [
    "FORMATS",
    "GENERATORS",
    "Graph",
    "GraphFormat",
    "GraphSummary",
    "barabasi_albert",
    "convert_graph",
    "delaunay",
    "edge_weights",
    "detect_format",
    "erdos_renyi",
    "from_edges",
    "generate",
    "load_graph",
    "load_graphs",
    "pair_weights",
    "weights_source",
    "random_geometric",
    "read_edge_list",
    "read_graph",
    "read_npz",
    "resolve",
    "sample_subgraphs",
    "spec_for",
    "summarize_file",
    "write_edge_list",
    "write_graph",
    "write_npz",
]
