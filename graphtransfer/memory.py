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
"""

from __future__ import annotations

import os
from pathlib import Path

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


def estimate_peak_bytes(num_nodes: int, num_edges: int, model: ModelConfig) -> int:
    """Peak memory, in bytes, of one policy pass over a whole graph, beyond what is resident before.

    Args:
        num_nodes: N, the graph's nodes.
        num_edges: E, directed edges (both directions of each undirected edge).
        model: the policy's architecture; ``width``, ``head_width`` and ``conv`` matter.
    """
    messages = _MESSAGES.get(model.conv, 2)
    edges = num_edges + (num_nodes if model.conv == "gcn" else 0)  # GCN adds a self-loop per node
    per_edge = _BYTES_PER_EDGE + messages * 4 * model.width
    per_node = 4 * (model.width + model.head_width)  # fitted: about one (N, width) tensor and the head's hidden layer
    return _FIXED + edges * per_edge + num_nodes * per_node


def available_bytes() -> tuple[int, str] | None:
    """Memory this process may still use, and where that figure came from; ``None`` if unknown.

    ``$GRAPHTRANSFER_MEMORY_LIMIT_MB`` wins; otherwise the smaller of ``MemAvailable`` in
    ``/proc/meminfo`` and the room left under the cgroup's limit.
    """
    override = os.environ.get(LIMIT_VARIABLE)
    if override is not None:
        try:
            return int(float(override) * MIB), f"${LIMIT_VARIABLE}"
        except ValueError:
            raise UsageError(f"${LIMIT_VARIABLE}={override!r} is not a number; set it to MiB, e.g. 4096, or unset it") from None
    found = [figure for figure in (_mem_available(), _cgroup_room()) if figure is not None]
    return min(found, key=lambda figure: figure[0]) if found else None


def check_memory(num_nodes: int, num_edges: int, model: ModelConfig, what: str) -> None:
    """Refuse, with the estimate and the fix, a graph whose inference would not fit in memory."""
    available = available_bytes()
    needed = estimate_peak_bytes(num_nodes, num_edges, model)
    if available is None or needed <= available[0]:
        return
    raise UsageError(
        f"{what}: running the policy needs about {needed / MIB:.0f} MiB ({num_nodes} nodes, {num_edges} directed edges, "
        f"width {model.width}), but {available[0] / MIB:.0f} MiB is available ({available[1]}); "
        "use a smaller graph or a machine with more memory"
    )


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
