"""The one loader: "a saved policy for these graphs".

Every command that runs a saved policy (predict, eval, transfer, the workers, the Python API)
goes through :func:`policy_for_graphs`: read the folder (JSON and safetensors, nothing imported
that the user did not name), refuse graphs that would not fit in memory, build the env, load the
weights strictly, and apply the runtime settings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeAlias

import gymnasium as gym
from torch_geometric.data import Batch, Data

from graphtransfer.checkpoint import Checkpoint, LoadReport, load_policy_into_env, read_checkpoint
from graphtransfer.config import RunConfig, Runtime
from graphtransfer.envs.protocol import Head
from graphtransfer.errors import UsageError
from graphtransfer.graphs import Graph, load_graph, load_graphs
from graphtransfer.nn import configure_runtime
from graphtransfer.nn.devices import resolve_device
from graphtransfer.nn.qnetwork import AnyPolicy
from graphtransfer.process import keep_freed_memory
from graphtransfer.solve.memory import check_memory, room_to_keep_freed_memory
from graphtransfer.tasks.factory import inference_env, run_env

DEFAULT_RUNTIME = Runtime()
"""every runtime setting at its default"""

GraphInput: TypeAlias = "str | Path | Graph | Data | Sequence[Graph | Data]"
"""what names graphs to solve: a file, folder or sample name, a :class:`Graph`, a PyG ``Data`` or
``Batch``, or a list of graphs and ``Data``"""


def graphs_of(graphs: GraphInput) -> list[Graph]:
    """The graphs ``graphs`` names (:data:`GraphInput`): read from files, or made from PyG data by
    :meth:`Graph.from_pyg` (a ``Batch`` graph by graph; the task builds its own node features)."""
    if isinstance(graphs, str | Path):
        return load_graphs(graphs)
    if isinstance(graphs, Graph):
        return [graphs]
    if isinstance(graphs, Batch):
        return [Graph.from_pyg(data, f"batch[{i}]") for i, data in enumerate(graphs.to_data_list())]
    if isinstance(graphs, Data):
        return [Graph.from_pyg(graphs, "data")]
    if isinstance(graphs, Sequence) and graphs and all(isinstance(graph, Graph | Data) for graph in graphs):
        return [graph if isinstance(graph, Graph) else Graph.from_pyg(graph, f"data[{i}]") for i, graph in enumerate(graphs)]
    raise UsageError(f"graphs: got {type(graphs).__name__}; expected a graph file or folder, a Graph, a PyG Data or Batch, or a list")


@dataclass
class LoadedPolicy:
    checkpoint: Checkpoint
    policy: AnyPolicy
    env: gym.Env
    """the run's env over the graphs (for one graph and ``max_passes``, built for inference)"""
    report: LoadReport


def policy_for_graphs(
    model: str | Path | Checkpoint,
    graphs: list[Graph],
    runtime: Runtime = DEFAULT_RUNTIME,
    env: str | None = None,
    max_passes: int | None = None,
    query: tuple[int, int] | None = None,
) -> LoadedPolicy:
    """The policy of the model folder ``model`` (or of a checkpoint already read), for ``graphs``.

    Args:
        runtime: the node budget and mixed precision the policy runs with.
        env: the user env the model was trained on, when it was (see :func:`read_checkpoint`).
        max_passes: with one graph, the env is built for inference with this horizon
            (``None``: the task's inference horizon).
        query: with one graph, the path task's source and target (positions).
    """
    checkpoint = model if isinstance(model, Checkpoint) else read_checkpoint(model, env)
    config = checkpoint.config
    for graph in graphs:
        check_memory(graph.num_nodes, graph.edge_index.shape[1], config.model, f"graph {graph.name}", scores_edges(config))
    built = inference_env(config, graphs[0], max_passes, query) if len(graphs) == 1 else run_env(config, graphs)
    policy, report = load_policy_into_env(checkpoint, built)
    policy.to(resolve_device(runtime.device))
    # a solve's observations hold the undecided nodes only: nothing isolated to merge, and the check costs a pass over the edges
    configure_runtime(policy, runtime.max_nodes_per_batch, runtime.mixed_precision, compact_isolated=False)
    return LoadedPolicy(checkpoint, policy, built, report)


def scores_edges(config: RunConfig) -> bool:
    """Whether the policy of ``config`` scores every edge (edge-wise or edge choice): the memory guard counts its head."""
    return config.head in (Head.EDGE_WISE, Head.EDGE_CHOICE)


def keep_freed_memory_where_room(config: RunConfig, graph: Graph) -> bool:
    """:func:`graphtransfer.process.keep_freed_memory` for a solve of ``config``'s policy on ``graph``
    where the memory available is :data:`~graphtransfer.solve.memory.ROOM_TO_KEEP` times the guard's
    estimate; whether it was set. A process setting: the command line calls it, the library never."""
    room = room_to_keep_freed_memory(graph.num_nodes, graph.edge_index.shape[1], config.model, scores_edges(config))
    return room and keep_freed_memory()


def load_policy(model: str | Path, graph: str | Path | Graph, env: str | None = None) -> tuple[AnyPolicy, gym.Env]:
    """The policy in the model folder ``model``, built for ``graph`` (a :class:`Graph`, a graph
    file or a sample name), and the run's env on that graph, whose observations
    ``obs_to_tensors`` turns into what :func:`graphtransfer.act` takes. ``env`` names the user env
    of a model trained on one.

    The weights do not depend on the graph; the graph only sizes the env's spaces. The policy is
    for acting: it has no optimizer (:class:`~graphtransfer.nn.policy.NoOptimizer`); to train
    further, fine-tune with ``transfer`` (``finetune_steps`` or ``adapt_seconds``).
    """
    loaded = policy_for_graphs(model, [graph if isinstance(graph, Graph) else load_graph(graph)], env=env)
    return loaded.policy, loaded.env
