"""Exporting a model folder: as a Stable-Baselines3 zip, for users who want ``PPO.load`` (or the
``load`` of the run's algorithm), or as an ONNX file that runs the policy without Python.

Trusted-only: an SB3 zip holds pickles (its ``data`` entry is read with ``cloudpickle.loads``), so
loading one can run code. We write them for people who load their own files; graphtransfer never
loads one (:mod:`graphtransfer.checkpoint` refuses them). An ONNX file holds no code: a graph of
operators and the weights.
"""

from __future__ import annotations

import contextlib
import io
import logging
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from sb3_contrib import MaskablePPO
from stable_baselines3 import A2C, PPO
from stable_baselines3.common.base_class import BaseAlgorithm

from graphtransfer.checkpoint import read_checkpoint
from graphtransfer.envs.contract import EDGE_ATTR, check_contract
from graphtransfer.envs.protocol import Head
from graphtransfer.errors import UsageError
from graphtransfer.graphs import Graph, barabasi_albert, random_geometric, resolve
from graphtransfer.io import atomic_write, check_output_file, write_atomically
from graphtransfer.nn.extractor import mean_incoming
from graphtransfer.nn.policy import EdgeHeads, NodeHeads, edge_mlp
from graphtransfer.solve.loading import policy_for_graphs
from graphtransfer.training.a2c import MaskableA2C
from graphtransfer.training.dqn import GraphDQN
from graphtransfer.training.model import load_model


def export_sb3(model: str | Path, out: str | Path, graphs: str | Path | None = None, env: str | None = None, force: bool = False) -> str:
    """Write the model in folder ``model`` as an SB3 zip that ``PPO.load`` (``MaskablePPO.load`` for a
    node- or edge-choice head) accepts with the run's env on ``graphs``.

    SB3 checks that the env's spaces equal the saved ones, and they are padded to the largest graph,
    so the zip is sized for ``graphs`` (default: the graphs the model was trained or transferred
    on). ``env`` names the user env of a model trained on one. ``out`` never replaces a graph or a
    model's files, and an existing file only with ``force``. Returns the name of the class that
    loads it (:func:`loader_name`).
    """
    out = Path(out)
    check_output_file(out, [resolve(graphs)] if graphs else [], force, "--sb3", example="policy.zip")
    if out.suffix != ".zip":
        raise UsageError(f"--sb3 {out}: name the file *.zip, as SB3 writes and reads them")
    algorithm = load_model(model, graphs or read_checkpoint(model, env).config.graphs, env)
    data = io.BytesIO()
    algorithm.save(data)
    atomic_write(out, data.getvalue())
    return loader_name(algorithm)


def loader_name(algorithm: BaseAlgorithm) -> str:
    """The class whose ``load`` reads the algorithm's zip back: SB3's own for PPO, MaskablePPO and
    A2C (our subclasses add only runtime settings), ours for MaskableA2C, whose update SB3 lacks,
    and for DQN, whose Q-network and target network differ from SB3's ``DQNPolicy``."""
    if isinstance(algorithm, MaskableA2C | GraphDQN):
        return f"{type(algorithm).__module__}.{type(algorithm).__name__}"
    for sb3_class in (MaskablePPO, A2C, PPO):
        if isinstance(algorithm, sb3_class):
            return sb3_class.__name__
    raise ValueError(f"no SB3 loader known for {type(algorithm).__name__}")


NODE_HEADS = (Head.NODE_WISE, Head.NODE_CHOICE)
EDGE_HEADS = (Head.EDGE_WISE, Head.EDGE_CHOICE)
ONNX_HEADS = NODE_HEADS + EDGE_HEADS
ONNX_OPSET = 18
ONNX_TOLERANCE = 1e-4
"""largest difference allowed between the ONNX file's outputs and the policy's on the check graphs"""
ONNX_EXTRA = "pip install 'graphtransfer[onnx]' (onnx, onnxscript and onnxruntime)"


@dataclass(frozen=True)
class OnnxExport:
    """What :func:`export_onnx` wrote: the file's inputs and outputs and how well it was checked."""

    path: Path
    head: str
    num_node_features: int
    outputs_per_node: int
    """outputs per node (node heads) or per edge (edge heads)"""
    checked_nodes: tuple[int, ...]
    """the sizes of the graphs the file was run on against the policy"""
    max_difference: float
    num_edge_features: int = 0
    """the width of the ``edge_attr`` input; 0: the file has none"""

    @property
    def per(self) -> str:
        """``node`` or ``edge``: what each output row belongs to."""
        return "edge" if Head(self.head) in EDGE_HEADS else "node"


class NodeScorer(torch.nn.Module):
    """One pass of a node-head policy as a function of one graph: node features ``x`` ``(N, F)``
    and edges ``edge_index`` ``(2, E)`` (both directions, int64) to per-node outputs ``(N, K)``: the
    logits of the ``K`` actions of every node (node-wise heads), or one score per node (node-choice).
    """

    def __init__(self, policy):
        super().__init__()
        self.extractor, self.head = policy.features_extractor, policy.node_head

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        return self.head(self.extractor.embed_gathered(x, edge_index))


class EdgeScorer(torch.nn.Module):
    """One pass of an edge-head policy (matching) as a function of one graph: node features
    ``x`` ``(N, F)``, edges ``edge_index`` ``(2, E)`` (both directions, int64) and their features
    ``edge_attr`` ``(E, F_e)`` to per-edge outputs ``(E, K)``: the logits of the ``K`` actions of
    every edge (edge-wise heads), or one score per edge (edge-choice), in ``edge_index``'s order.
    """

    def __init__(self, policy):
        super().__init__()
        self.extractor, self.head = policy.features_extractor, policy.edge_head

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor, edge_attr: torch.Tensor) -> torch.Tensor:
        uses_edges = self.extractor.edge_encoders is not None
        context = mean_incoming(edge_attr, edge_index[1], x.shape[0]) if uses_edges else None
        h = self.extractor.embed_gathered(x, edge_index, context, edge_attr if self.extractor.reads_edges else None)
        return edge_mlp(self.head, h, edge_index, edge_attr)


def export_onnx(model: str | Path, out: str | Path, env: str | None = None, force: bool = False) -> OnnxExport:
    """Write the policy in folder ``model`` as an ONNX file: one pass of the network (features and
    edges in, per-node or per-edge outputs out) for graphs of any size; the env's features and the
    decoding stay the caller's (docs: "Deployment without Python"). Node heads without edge
    features (:class:`NodeScorer`) and edge heads (:class:`EdgeScorer`, edge features as an
    input). The file is run with ONNX Runtime on two graphs of other sizes than the one it was
    traced on and must equal the policy there (within :data:`ONNX_TOLERANCE`) before it replaces
    ``out``; ``out`` never replaces a graph or a model's files, an existing file only with ``force``.
    """
    out = Path(out)
    check_output_file(out, [], force, "--onnx", example="policy.onnx")
    if out.suffix != ".onnx":
        raise UsageError(f"--onnx {out}: name the file *.onnx")
    checkpoint = read_checkpoint(model, env)
    head = Head(checkpoint.config.head)
    if head not in ONNX_HEADS:
        raise UsageError(
            f"--onnx: {model} has the {head.value} head; ONNX export covers node and edge heads "
            "(mis, mvc, mvc-weighted, maxcut, matching), export it with --sb3 instead"
        )
    onnx, onnxruntime = _onnx_modules()
    loaded = policy_for_graphs(checkpoint, [random_geometric(64, 6.0, seed=0)], env=env)
    edges = head in EDGE_HEADS
    if not edges and loaded.policy.features_extractor.num_edge_features:
        raise UsageError(f"--onnx: {model} reads edge features; ONNX export covers node heads without them, export it with --sb3 instead")
    if edges and EDGE_ATTR not in check_contract(loaded.env.observation_space).spaces:
        raise UsageError(
            f"--onnx: {model} has an edge head without edge features; ONNX export covers those with them, export it with --sb3 instead"
        )
    checks = [_observed(checkpoint, graph, env, edges) for graph in (random_geometric(300, 6.0, seed=1), barabasi_albert(2_000, 3, seed=2))]
    scorer = (EdgeScorer if edges else NodeScorer)(loaded.policy).eval()
    example = _inputs(loaded.env.reset(seed=0)[0], edges)
    outputs, edge_features = int(scorer.head[-1].out_features), example[2].shape[1] if edges else 0
    found: list[float] = []

    def write(tmp: Path) -> None:
        _trace(scorer, example, tmp)
        document = onnx.load(str(tmp))
        per = "edge" if edges else "node"
        metadata = {"task": checkpoint.config.name, "head": head.value, "num_node_features": example[0].shape[1]}
        metadata |= {f"outputs_per_{per}": outputs, "num_edge_features": edge_features, "format": 1}
        onnx.helper.set_model_props(document, {f"graphtransfer.{key}": str(value) for key, value in metadata.items()})
        onnx.save(document, str(tmp))
        found.append(_largest_difference(onnxruntime, tmp, checks))

    write_atomically(out, write)
    return OnnxExport(out, head.value, example[0].shape[1], outputs, tuple(len(c[0][0]) for c in checks), found[0], edge_features)


def _onnx_modules():
    """onnx and onnxruntime, or a :class:`UsageError` saying how to install them (onnxscript too:
    torch's exporter needs it)."""
    try:
        import onnx
        import onnxruntime
        import onnxscript  # noqa: F401  (torch.onnx.export's translator)
    except ImportError as err:
        raise UsageError(f"--onnx needs the {err.name} package: {ONNX_EXTRA}") from None
    return onnx, onnxruntime


INPUT_NAMES = ("x", "edge_index", "edge_attr")


def _inputs(obs: dict, edges: bool = False) -> tuple[torch.Tensor, ...]:
    """One observation of the contract as the exported function's inputs, padding cut off:
    ``x`` and ``edge_index``, and ``edge_attr`` for an edge head."""
    nodes, count = int(np.asarray(obs["num_nodes"]).reshape(-1)[0]), int(np.asarray(obs["num_edges"]).reshape(-1)[0])
    x = torch.as_tensor(np.asarray(obs["x"]).reshape(-1, obs["x"].shape[-1])[:nodes], dtype=torch.float32)
    edge_index = torch.as_tensor(np.asarray(obs["edge_index"]).reshape(2, -1)[:, :count], dtype=torch.int64)
    if not edges:
        return x, edge_index
    attr = np.asarray(obs[EDGE_ATTR])
    return x, edge_index, torch.as_tensor(attr.reshape(-1, attr.shape[-1])[:count], dtype=torch.float32)


def _observed(checkpoint, graph: Graph, env: str | None, edges: bool = False) -> tuple[tuple[np.ndarray, ...], np.ndarray]:
    """Inputs on ``graph`` and the policy's own per-node (per-edge) outputs there (its usual path)."""
    loaded = policy_for_graphs(checkpoint, [graph], env=env)
    obs, _ = loaded.env.reset(seed=0)
    inputs = _inputs(obs, edges)
    batch = {key: torch.as_tensor(np.asarray(value))[None] for key, value in obs.items()}
    policy = loaded.policy
    if not isinstance(policy, EdgeHeads if edges else NodeHeads):
        raise UsageError(f"--onnx exports the node and edge heads of PPO and A2C; this model's policy is a {type(policy).__name__}")
    with torch.no_grad():
        if isinstance(policy, EdgeHeads):
            outputs, _, _ = policy.edge_outputs(batch, False)
        else:
            outputs, _, _ = policy.node_outputs(batch, False)
    rows = inputs[1].shape[1] if edges else inputs[0].shape[0]
    return tuple(tensor.numpy() for tensor in inputs), outputs[0, :rows].numpy()


def _trace(scorer: torch.nn.Module, example: tuple[torch.Tensor, ...], path: Path) -> None:
    """torch's exporter with dynamic node and edge counts, its progress lines and warnings silenced."""
    nodes, edges = torch.export.Dim("nodes", min=2), torch.export.Dim("edges", min=1)
    names = INPUT_NAMES[: len(example)]
    shapes = {"x": {0: nodes}, "edge_index": {1: edges}, "edge_attr": {0: edges}}
    quiet = [logging.getLogger(name) for name in ("torch.onnx", "torch.export", "onnxscript")]
    levels = [logger.level for logger in quiet]
    try:
        for logger in quiet:
            logger.setLevel(logging.ERROR)
        with (
            torch.no_grad(),
            warnings.catch_warnings(),
            contextlib.redirect_stdout(io.StringIO()),
            contextlib.redirect_stderr(io.StringIO()),
        ):
            warnings.simplefilter("ignore")
            torch.onnx.export(
                scorer,
                example,
                str(path),
                input_names=list(names),
                output_names=["edge_outputs" if isinstance(scorer, EdgeScorer) else "node_outputs"],
                dynamic_shapes={name: shapes[name] for name in names},
                opset_version=ONNX_OPSET,
                dynamo=True,
                external_data=False,  # the weights inside the one file: a .data file beside the temporary one would be left behind
                verbose=False,
            )
    finally:
        for logger, level in zip(quiet, levels, strict=True):
            logger.setLevel(level)


def _largest_difference(onnxruntime, path: Path, checks: list[tuple[tuple[np.ndarray, ...], np.ndarray]]) -> float:
    """Run the file on every check graph; the largest difference from the policy, or a
    ``RuntimeError`` above :data:`ONNX_TOLERANCE` (the file is then not kept)."""
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    largest = 0.0
    for inputs, expected in checks:
        (got,) = session.run(None, dict(zip(INPUT_NAMES, inputs, strict=False)))
        largest = max(largest, float(np.abs(got - expected).max()))
    if not largest <= ONNX_TOLERANCE:
        raise RuntimeError(f"the ONNX file differs from the policy by {largest:.2e} (more than {ONNX_TOLERANCE}); nothing was written")
    return largest
