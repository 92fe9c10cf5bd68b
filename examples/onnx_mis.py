"""A maximum independent set from an exported MIS policy with ONNX Runtime and numpy only: no
torch, no graphtransfer. What a deployment outside Python reimplements: the six node features of
the MIS env and the local-max decoding, with the policy alone deciding (as ``predict
--no-reductions``: predict's exact reductions are not reimplemented here; docs: "Deployment
without Python").

    graphtransfer export --model runs/mis/small --onnx mis.onnx
    python examples/onnx_mis.py mis.onnx graph.txt [set.csv]   # an edge list: one "u v" pair per line

Node ids are the file's own, in any numbering (1-based, gaps, SNAP's): row ``i`` of the arrays is
the ``i``-th smallest id. Prints the set's size; with ``set.csv``, writes ``node,in_set`` per id.
"""

from __future__ import annotations

import math
import sys

import numpy as np
import onnxruntime

UNDECIDED, IN_SET, OUT = 0, 1, 2  # a node's status, the one-hot of features 0-2
INCLUDE = 1  # the action whose probability ranks the nodes
PATIENCE = 0.15  # candidates per pass: this share of the graph's Caro-Wei bound


def read_edge_list(path: str) -> tuple[np.ndarray, np.ndarray]:
    """The node ids ``(N,)`` of a whitespace edge list of integer ids (sorted; row ``i`` is node
    ``ids[i]``), and its edges ``(2, 2E)`` between rows, both directions. Ids are never rows: an id
    absent from the file is no node (reading the largest id + 1 as the node count put every gap in
    the set)."""
    pairs = np.loadtxt(path, dtype=np.int64, ndmin=2)[:, :2]
    ids, rows = np.unique(pairs, return_inverse=True)
    rows = rows.reshape(pairs.shape)
    rows = rows[rows[:, 0] != rows[:, 1]]
    edges = np.unique(np.sort(rows, axis=1), axis=0)
    return ids, np.concatenate([edges.T, edges.T[::-1]], axis=1)


def features(num_nodes: int, edges: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The MIS env's features of the undecided nodes of the residual graph ``edges``: status
    one-hot (all undecided), log(1 + degree) + 0.3 u, u ~ U[0, 1), and the log Caro-Wei cost
    ``1/(d(v)+1) + sum over neighbours u of 1/(d(u)+1)``."""
    degree = np.bincount(edges[0], minlength=num_nodes)
    draw = rng.random(num_nodes)
    inverse = 1.0 / (degree + 1.0)
    cost = inverse + np.bincount(edges[0], weights=inverse[edges[1]], minlength=num_nodes)
    x = np.zeros((num_nodes, 6), dtype=np.float32)
    x[:, UNDECIDED] = 1.0
    x[:, 3] = np.log1p(degree) + 0.3 * draw
    x[:, 4] = draw
    x[:, 5] = np.log(cost)
    return x


def include_probability(session: onnxruntime.InferenceSession, x: np.ndarray, edges: np.ndarray) -> np.ndarray:
    (logits,) = session.run(None, {"x": x, "edge_index": edges})
    logits = logits - logits.max(axis=1, keepdims=True)
    return np.exp(logits[:, INCLUDE]) / np.exp(logits).sum(axis=1)


def local_max(confidence: np.ndarray, edges: np.ndarray, candidates: int) -> np.ndarray:
    """Of the ``candidates`` surest nodes, those surer than every neighbour (ties: the lower id)."""
    threshold = np.sort(confidence)[-min(candidates, confidence.size)]
    chosen = confidence >= threshold
    src, dst = edges
    beaten = (confidence[dst] > confidence[src]) | ((confidence[dst] == confidence[src]) & (dst < src))
    lost = np.zeros_like(chosen)
    lost[src[beaten & chosen[src]]] = True
    return chosen & ~lost


def solve(session: onnxruntime.InferenceSession, num_nodes: int, edges: np.ndarray, seed: int = 0) -> np.ndarray:
    """The set, as a bool ``(num_nodes,)``: every pass runs the policy on the undecided nodes
    (renumbered 0..k-1) and commits its local maxima."""
    rng = np.random.default_rng(seed)
    degree = np.bincount(edges[0], minlength=num_nodes)
    candidates = max(1, math.ceil(PATIENCE * float(np.sum(1.0 / (degree + 1.0)))))
    status = np.full(num_nodes, UNDECIDED, dtype=np.int8)
    while (status == UNDECIDED).any():
        active = np.flatnonzero(status == UNDECIDED)
        position = np.full(num_nodes, -1)
        position[active] = np.arange(active.size)
        kept = (status[edges[0]] == UNDECIDED) & (status[edges[1]] == UNDECIDED)
        local = position[edges[:, kept]]
        confidence = include_probability(session, features(active.size, local, rng), local)
        joins = active[local_max(confidence, local, candidates)]
        status[joins] = IN_SET
        neighbours = edges[1][np.isin(edges[0], joins)]
        status[neighbours[status[neighbours] == UNDECIDED]] = OUT
    return status == IN_SET


def main() -> None:
    model, graph = sys.argv[1], sys.argv[2]
    session = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"])
    ids, edges = read_edge_list(graph)
    chosen = solve(session, ids.size, edges)
    print(f"independent set of {int(chosen.sum())} nodes out of {ids.size}")
    if len(sys.argv) > 3:
        np.savetxt(sys.argv[3], np.column_stack([ids, chosen]), fmt="%d", delimiter=",", header="node,in_set", comments="")


if __name__ == "__main__":
    main()
