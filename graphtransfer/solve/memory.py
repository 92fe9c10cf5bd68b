"""The memory guard: refuse a graph whose inference would not fit, before allocating anything.

Running the policy on a graph of N nodes and E directed edges is dominated by message passing:
each layer gathers one ``(E, width)`` float32 message per edge (GCN two: the edge weight times the
message, over E + N edges with self-loops) and keeps a few ``(N, width)`` activations. Layers run
one after another and free their messages, so the depth does not add up. Measured peaks above the
process's resident size before predicting (``predict --max-passes 3``, untrained MIS policies with
``head_width == width``, Barabasi-Albert graphs), against :func:`estimate_peak_bytes`:

    nodes    directed edges  conv  width  measured MiB  estimate MiB
    50,000      399,716      sage   64         242          241
    200,000   1,599,652      sage   16         336          406
    200,000   1,599,652      sage   32         458          528
    200,000   1,599,652      sage   64         702          772
    200,000   1,599,652      sage  128        1191         1260
    100,000   1,997,896      sage   64         803          875
    200,000   1,599,652      gcn    64        1313         1288

Edge heads (edge-wise, edge choice) add about three ``(E, head_width)`` float32 tensors per pass
(the gathered endpoint projections, their sum, the hidden layer), whatever the node budget: the
edge-wise matching policy (sage, width 64) on the 250k sample graph (1,999,644 directed edges)
peaked at about 2,040 MiB above its start (2,440 MiB RSS), estimate 2,413 MiB.

Under a node budget (``--max-nodes-per-batch``) layers run for chunks of target nodes, so the
messages span only the edges into one chunk; the guard counts those exactly from the graph's
in-degrees (hubs make some chunks heavier than the average), and when a graph does not fit
whole, it suggests the largest power-of-two fraction of the graph as a budget that does.
"""

from __future__ import annotations

import os
import resource
from pathlib import Path

import numpy as np

from graphtransfer.config import ModelConfig
from graphtransfer.errors import UsageError

LIMIT_VARIABLE = "GRAPHTRANSFER_MEMORY_LIMIT_MB"
"""environment variable: MiB to treat as available instead of what the system reports"""
MIB = 1 << 20
_FIXED = 64 * MIB  # allocator slack and the model's own buffers, measured on small graphs
_BYTES_PER_EDGE = 144  # fitted; mostly int64 edge_index copies: the graph, the env's padded observation, the renumbered active subgraph
_MESSAGES = {"sage": 1, "gin": 1, "gcn": 2}
# (limit, usage) files of cgroup v2 and v1: inside a container /proc/meminfo describes the host
_CGROUP_FILES = (
    ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
    ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"),
)


def estimate_peak_bytes(
    num_nodes: int,
    num_edges: int,
    model: ModelConfig,
    chunk_nodes: int | None = None,
    chunk_edges: int | None = None,
    edge_head: bool = False,
) -> int:
    """Peak memory, in bytes, of one policy pass over a whole graph, beyond what is resident before.

    Args:
        num_nodes: N, the graph's nodes.
        num_edges: E, directed edges (both directions of each undirected edge).
        model: the policy's architecture; ``width``, ``head_width`` and ``conv`` matter.
        chunk_nodes, chunk_edges: under a node budget, the chunk's nodes and the most edges into
            one chunk (:func:`most_edges_into_a_chunk`); the messages span only those.
        edge_head: the policy scores edges (edge-wise or edge choice), every edge at once.
    """
    gcn = model.conv == "gcn"  # GCN adds a self-loop per node
    edges = num_edges + (num_nodes if gcn else 0)
    message_edges = edges if chunk_edges is None else chunk_edges + (min(chunk_nodes or num_nodes, num_nodes) if gcn else 0)
    message_bytes = _MESSAGES.get(model.conv, 2) * 4 * model.width
    per_node = 4 * (model.width + model.head_width)  # fitted: about one (N, width) tensor and the head's hidden layer
    head_bytes = num_edges * 3 * 4 * model.head_width if edge_head else 0
    return _FIXED + edges * _BYTES_PER_EDGE + message_edges * message_bytes + num_nodes * per_node + head_bytes


def most_edges_into_a_chunk(destination: np.ndarray, num_nodes: int, chunk_nodes: int) -> int:
    """The most edges into any chunk of ``chunk_nodes`` consecutive node ids, as the layers
    chunk them. ``destination``: ``(E,)``, the target of each directed edge."""
    in_degree = np.bincount(destination, minlength=num_nodes)
    return int(np.add.reduceat(in_degree, np.arange(0, num_nodes, chunk_nodes)).max()) if num_nodes else 0


def available_bytes() -> tuple[int, str] | None:
    """Memory this process may still use, and where that figure came from; ``None`` if unknown.

    ``$GRAPHTRANSFER_MEMORY_LIMIT_MB`` wins; otherwise the smallest of ``MemAvailable`` in
    ``/proc/meminfo``, the room left under the cgroup's limit and the room left under the
    address-space limit (``ulimit -v``, RLIMIT_AS). This is the one reader of available memory.
    """
    override = os.environ.get(LIMIT_VARIABLE)
    if override is not None:
        try:
            limit = float(override)
        except ValueError:
            limit = float("nan")
        if not 0 < limit < float("inf"):
            raise UsageError(f"${LIMIT_VARIABLE}={override!r} is not a positive number of MiB; set it to e.g. 4096, or unset it")
        return int(limit * MIB), f"${LIMIT_VARIABLE}"
    found = [figure for figure in (_mem_available(), _cgroup_room(), _address_space_room()) if figure is not None]
    return min(found, key=lambda figure: figure[0]) if found else None


def check_memory(
    num_nodes: int,
    destination: np.ndarray,
    model: ModelConfig,
    what: str,
    max_nodes_per_batch: int | None = None,
    edge_head: bool = False,
) -> None:
    """Refuse, with the estimate and the fix, a graph whose inference would not fit in memory.

    ``destination``: ``(E,)``, the target node of each directed edge; ``edge_head``: the
    policy scores every edge (see :func:`estimate_peak_bytes`).
    """
    available = available_bytes()
    needed = _estimate(num_nodes, destination, model, max_nodes_per_batch, edge_head)
    if available is None or needed <= available[0]:
        return
    budget = f" under --max-nodes-per-batch {max_nodes_per_batch}" if max_nodes_per_batch and max_nodes_per_batch < num_nodes else ""
    fits = _budget_that_fits(num_nodes, destination, model, available[0], edge_head)
    fix = f"pass --max-nodes-per-batch {fits}" if fits else "use a smaller graph or a machine with more memory"
    raise UsageError(
        f"{what}: running the policy needs about {needed / MIB:.0f} MiB{budget} ({num_nodes} nodes, {destination.size} directed edges, "
        f"width {model.width}), but {available[0] / MIB:.0f} MiB is available ({available[1]}); {fix}"
    )


def _estimate(num_nodes: int, destination: np.ndarray, model: ModelConfig, budget: int | None, edge_head: bool = False) -> int:
    if budget is None or budget >= num_nodes:
        return estimate_peak_bytes(num_nodes, destination.size, model, edge_head=edge_head)
    chunk_edges = most_edges_into_a_chunk(destination, num_nodes, budget)
    return estimate_peak_bytes(num_nodes, destination.size, model, budget, chunk_edges, edge_head)


def _budget_that_fits(num_nodes: int, destination: np.ndarray, model: ModelConfig, available: int, edge_head: bool = False) -> int | None:
    """The largest of N/2, N/4, ... (down to 1,000 nodes) whose estimate fits, rounded down to a thousand."""
    budget = num_nodes // 2
    while budget >= 1000:
        rounded = budget // 1000 * 1000
        if _estimate(num_nodes, destination, model, rounded, edge_head) <= available:
            return rounded
        budget //= 2
    return None


def _mem_available() -> tuple[int, str] | None:
    try:
        lines = Path("/proc/meminfo").read_text().splitlines()
    except OSError:  # not Linux: no guard rather than a guess
        return None
    for line in lines:
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024, "MemAvailable in /proc/meminfo"
    return None


def _cgroup_room() -> tuple[int, str] | None:
    for limit_file, usage_file in _CGROUP_FILES:
        try:
            limit, usage = Path(limit_file).read_text().strip(), Path(usage_file).read_text().strip()
        except OSError:
            continue
        if limit.isdigit() and int(limit) < 1 << 60:  # "max" or a huge number: no limit
            return max(int(limit) - int(usage), 0), f"the limit in {limit_file}"
    return None


def _address_space_room() -> tuple[int, str] | None:
    """Room under RLIMIT_AS (``ulimit -v``): the limit less this process's virtual size."""
    limit, _ = resource.getrlimit(resource.RLIMIT_AS)
    if limit == resource.RLIM_INFINITY:
        return None
    try:
        status = Path("/proc/self/status").read_text().splitlines()
    except OSError:
        return None
    size = next((int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:")), None)
    return None if size is None else (max(limit - size, 0), "the address-space limit (ulimit -v)")
