"""The memory guard: refuse a graph whose inference would not fit, before allocating anything.

Running the policy on the CPU on a graph of N nodes and E directed edges holds a few int64 copies
of the edges at once (the env's edges in destination order, its residual graph, the padded
observation, the renumbered active subgraph of a later pass) and the cached
:class:`~graphtransfer.nn.message_passing.GraphStructure` of the pass (another copy, and a
float32 value per edge); per node, about one float32 ``(N, width)`` activation and the head's
hidden layer ``(N, head_width)`` (layers write their output in row blocks and free their input),
and the env's per-node arrays (features, degrees, draws: :data:`_ENV_BYTES_PER_NODE`). The layers
aggregate over the structure, so no ``(E, width)`` message tensor is ever built. Measured peaks above the process's resident size
before predicting (``predict_graph``, 6 passes, the built-in MIS policy: sage, width 32, head width 64;
Erdős–Rényi graphs; the solve copies no edges into an observation and sorts no residual graph), against :func:`estimate_peak_bytes`:

    nodes       directed edges  measured MiB  estimate MiB
    1,000,000      8,000,000        1002          1092
    2,000,000     16,000,000        1921          2153
      500,000      8,000,000         936           906
      200,000      1,600,000         249           244
    1,000,000      2,000,000         473           578   (average degree 2, the kernel off: with it on, the kernel
                                                          decides nearly the whole graph and the passes take 23 MiB)

and the width-64 policy of ``tests/test_memory.py`` at 200,000 nodes: 195-257 MiB in an untuned process (glibc's
allocation thresholds move with each free), 166 or 193 MiB in one tuned as predict tunes it
(:func:`graphtransfer.process.tune_process`), estimate 269; 125-196 MiB with a kernel's edges
by destination (no sorted copy beside them). On dense graphs with triangles the peak
above the graph (2.2 GiB on a random geometric graph of 10^5 nodes and average degree 200) includes the kernel and
its renumbered copy, counted by the first check (below). The peak
now follows the edges more than the nodes (the kernel's and the residual graph's copies of them):
halving the nodes at 8M edges took 66 MiB off, doubling the policy's width added none.

Edge heads (edge-wise, edge choice) add about three ``(E, head_width)`` float32 tensors per pass
(the gathered endpoint projections, their sum, the hidden layer): the edge-wise matching policy
(sage, width 64) on the 250k sample graph (1,999,644 directed edges) peaked at about 2,040 MiB
above its start.

MIS and MVC solves first build the graph's kernel and, at 50,000 nodes or more, a copy renumbered
in locality order: both stay resident through the passes. :func:`check_memory` runs once before
they are made (``prepared``: two more int64 copies of the edges, :data:`_PREPARED_BYTES_PER_EDGE`)
and again before the policy is loaded, on the graph it will solve. A random geometric graph of
10^5 nodes and average degree 200 (19,580,092 directed edges) peaked 2,273 MiB above its start,
1,560 MiB above the second check (estimates 2,278 and 1,630 MiB).

A node budget (``--max-nodes-per-batch``) saves no host memory here: with no message tensor to
split, its chunks peaked higher than the whole layers (1,776 against 1,614 MiB RSS at 10^6 nodes,
the same set), so the estimate ignores it and the fix a refusal names is a smaller graph or a
larger machine.
"""

from __future__ import annotations

import os
import resource
from pathlib import Path

from graphtransfer.config import ModelConfig
from graphtransfer.errors import UsageError

LIMIT_VARIABLE = "GRAPHTRANSFER_MEMORY_LIMIT_MB"
"""environment variable: MiB to treat as available instead of what the system reports"""
MIB = 1 << 20
ROOM_TO_KEEP = 1.5
"""how many times the estimate the memory available must be for a solve to keep its freed memory
(:func:`graphtransfer.process.keep_freed_memory`): kept, the peak rose by 28-31% of the estimate
(10^6 and 10^7 nodes)"""
_FIXED = 32 * MIB  # allocator slack and the model's own buffers, fitted with the table above
_BYTES_PER_EDGE = 90  # fitted (table above): the int64 copies of the edges a pass or a kernel holds at once, the structure's included
_PREPARED_BYTES_PER_EDGE = 32  # the kernel's copy of the edges and its renumbered copy, both int64 pairs
_ENV_BYTES_PER_NODE = 8  # fitted with the table above and a width-64 policy (tests/test_memory.py): at the peak the env's per-node arrays
# are mostly freed or not yet made
# (limit, usage) files of cgroup v2 and v1: inside a container /proc/meminfo describes the host
_CGROUP_FILES = (
    ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
    ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"),
)


def estimate_peak_bytes(num_nodes: int, num_edges: int, model: ModelConfig, edge_head: bool = False, prepared: bool = False) -> int:
    """Peak memory, in bytes, of a solve's policy passes over a whole graph, beyond what is
    resident before (the graph itself, read).

    Args:
        num_nodes: N, the graph's nodes.
        num_edges: E, directed edges (both directions of each undirected edge).
        model: the policy's architecture; ``width`` and ``head_width`` matter.
        edge_head: the policy scores edges (edge-wise or edge choice), every edge at once.
        prepared: the solve also makes the graph's kernel and a renumbered copy first, which stay
            resident (MIS and MVC; counted whether or not the rules decide anything).
    """
    per_node = 4 * (model.width + model.head_width) + _ENV_BYTES_PER_NODE
    head_bytes = num_edges * 3 * 4 * model.head_width if edge_head else 0
    per_edge = _BYTES_PER_EDGE + (_PREPARED_BYTES_PER_EDGE if prepared else 0)
    return _FIXED + num_edges * per_edge + num_nodes * per_node + head_bytes


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


def room_to_keep_freed_memory(num_nodes: int, num_edges: int, model: ModelConfig, edge_head: bool = False) -> bool:
    """Whether the memory available is at least :data:`ROOM_TO_KEEP` times the estimate of a solve
    on this graph (:func:`estimate_peak_bytes`); ``False`` where it is unknown."""
    available = available_bytes()
    return available is not None and estimate_peak_bytes(num_nodes, num_edges, model, edge_head) * ROOM_TO_KEEP <= available[0]


def check_memory(
    num_nodes: int,
    num_edges: int,
    model: ModelConfig,
    what: str,
    edge_head: bool = False,
    fix: str = "use a smaller graph or a machine with more memory",
    prepared: bool = False,
) -> None:
    """Refuse, with the estimate, the memory available and ``fix``, a graph whose inference would
    not fit in memory. ``num_edges``: directed edges; ``edge_head``: the policy scores every edge;
    ``prepared``: its kernel and renumbered copy are still to be made (see :func:`estimate_peak_bytes`)."""
    available = available_bytes()
    needed = estimate_peak_bytes(num_nodes, num_edges, model, edge_head, prepared)
    if available is None or needed <= available[0]:
        return
    raise UsageError(
        f"{what}: running the policy needs about {needed / MIB:.0f} MiB ({num_nodes} nodes, {num_edges} directed edges, "
        f"width {model.width}), but {available[0] / MIB:.0f} MiB is available ({available[1]}); {fix}"
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
