"""The PyG features extractor: node embeddings for node heads, a pooled graph embedding for SB3.

It plugs into plain Stable-Baselines3 as ``features_extractor_class`` of ``MultiInputPolicy``;
no weight depends on the number of nodes, so one set of weights runs on any graph size.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from contextlib import nullcontext

import gymnasium as gym
import torch
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from stable_baselines3.common.type_aliases import PyTorchObs
from torch import nn
from torch_geometric.data import Data
from torch_geometric.nn import (
    GATv2Conv,
    GCNConv,
    GINConv,
    GINEConv,
    SAGEConv,
    TransformerConv,
    global_add_pool,
    global_max_pool,
    global_mean_pool,
)
from torch_geometric.nn.conv.gcn_conv import gcn_norm

from graphtransfer.config import CONVS
from graphtransfer.envs.contract import EDGE_ATTR, box_shape, check_contract, check_edge_attr_values, edge_feature_count
from graphtransfer.errors import UsageError
from graphtransfer.nn.batching import DisjointGraph, IncomingEdges, as_padded, incoming_edges, shared_edges, to_disjoint
from graphtransfer.nn.compaction import Compaction, compact_isolated
from graphtransfer.nn.message_passing import GraphStructure, layer_function, relu, residual_relu
from graphtransfer.nn.pooling import mean_max_pool
from graphtransfer.nn.user_conv import named_conv

CSR_MIN_EDGES = 0  # structure path from 0 edges: it beat gathered edges from 200 nodes up (GCN 5x at 10k); bench and tests raise it
STRUCTURES_KEPT = 4  # graphs whose structure an extractor keeps: one per static graph in training, a few to spare
STRUCTURES_KEPT_AT_INFERENCE = 1
"""structures kept under ``torch.inference_mode`` (a solve's passes): a static graph's next pass finds its own; a
shrinking residual graph (MIS) never repeats, and each one kept held another copy of the graph's edges (10^6 nodes:
230 MB each)"""


STRUCTURED = ("sage", "gcn", "gin")
"""the layers with a structure-based form (:mod:`graphtransfer.nn.message_passing`); the others run as PyG's classes"""
READS_EDGES = ("gatv2", "gine", "transformer")
"""the layers that read each edge's features in its message (``edge_attr``, where the env has it) rather than
through the extractor's mean edge term"""


def make_conv(kind: str, channels_in: int, width: int, aggr: str, edge_dim: int = 0) -> nn.Module:
    """One message-passing layer of ``channels_in`` channels in and ``width`` out, PyG's own class
    (a user's ``package.module:Class`` once named, :mod:`graphtransfer.nn.user_conv`); ``edge_dim``,
    the width of the edge features that GATv2, GINE and Transformer layers read (0: none). Every
    weight's shape depends on these widths only."""
    if kind == "sage":
        return SAGEConv(channels_in, width, aggr=aggr)
    if kind == "gcn":
        return GCNConv(channels_in, width)
    if kind == "gin":
        return GINConv(nn.Sequential(nn.Linear(channels_in, width), nn.ReLU(), nn.Linear(width, width)), train_eps=True)
    if kind == "gatv2":
        return GATv2Conv(channels_in, width, edge_dim=edge_dim or None)
    if kind == "gine":
        if not edge_dim:
            raise UsageError("conv gine reads each edge's features (edge_attr) in its messages; this env's observations have none: use gin")
        return GINEConv(nn.Sequential(nn.Linear(channels_in, width), nn.ReLU(), nn.Linear(width, width)), train_eps=True, edge_dim=edge_dim)
    if kind == "transformer":
        return TransformerConv(channels_in, width, edge_dim=edge_dim or None)
    if ":" in kind:
        return named_conv(kind)(channels_in, width)
    raise ValueError(f"conv={kind!r} is not known; choose one of {CONVS}, or a layer of yours as package.module:Class")


def check_node_budget(value: int | None) -> int | None:
    """``None`` (no budget) or a positive number of nodes; anything else is a ``ValueError``."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"max_nodes_per_batch={value!r} must be a whole number of nodes, at least 1, or None for no budget")
    return value


def mean_incoming(edge_attr: torch.Tensor, destination: torch.Tensor, num_nodes: int) -> torch.Tensor:
    """Each node's mean incoming edge features (0 for a node without incoming edges), in operators
    an exported policy (ONNX) holds too: sums by ``index_add``, no data-dependent branch.

    Shapes:
        edge_attr: ``(E, ..., F_e)``; destination: ``(E,)``; returns ``(num_nodes, ..., F_e)``.
    """
    total = edge_attr.new_zeros((num_nodes, *edge_attr.shape[1:])).index_add_(0, destination, edge_attr)
    ones = edge_attr.new_ones(destination.shape[0])
    count = edge_attr.new_zeros(num_nodes).index_add_(0, destination, ones).clamp_(min=1)
    return total / count.view(-1, *([1] * (total.dim() - 1)))


class GNNExtractor(BaseFeaturesExtractor):
    """Input projection, ``num_layers`` residual message-passing layers, mean+max pooling.

    .. math:: h^{(0)} = W_0 x, \\qquad h^{(l+1)} = h^{(l)} + \\mathrm{ReLU}(\\mathrm{conv}_l(h^{(l)}, A) + U_l \\bar e)

    where :math:`\\bar e_i`, the mean feature of the edges into node ``i``, is there only when
    the observation has ``edge_attr`` and the layers do not read it themselves (:math:`U_l` is
    then one ``Linear(F_e, width)`` per layer; without it the module holds exactly the parameters
    and numbers it always did). Why this form for sage, gcn and gin rather than per-edge messages
    (``conv="gine"``, or ``"gatv2"`` and ``"transformer"``, which read each edge's features in its
    message, PyG's ``edge_dim``): the mean is one scatter per forward, linear in the features, so
    every layer keeps the cached sparse structure path, and a per-edge decision reads its own
    edge's features in the edge heads anyway. ``bench/edge_features.py`` measures ``GINEConv``
    against it: several times as long per forward, the gap growing with the graph.

    Without ``project_input`` the first layer reads the raw features instead,
    :math:`h^{(1)} = \\mathrm{ReLU}(\\mathrm{conv}_0(x, A))` (the plain recipe's GCN starts so),
    and its aggregation runs over the ``F`` input channels rather than ``width``.

    Two runtime settings, attributes rather than constructor arguments because they change how
    the numbers are computed, not what they are, and are never saved with the weights (set them
    with :func:`configure_runtime`):

    - ``max_nodes_per_batch``: above this many nodes in a batch, each layer runs for that many
      target nodes at a time (layer-wise, from the previous layer's full ``(N, width)`` matrix),
      so the ``(E, width)`` messages of a layer are never built for more than the budget's edges.
    - ``mixed_precision``: on CUDA, message passing runs under bfloat16 autocast; embeddings come
      back as float32. Ignored on the CPU.
    - ``compact_isolated``: the heads and :meth:`forward` embed each sample's isolated nodes of
      equal features once (:mod:`graphtransfer.nn.compaction`), on the CPU; on by default, off in
      a solve, whose observations hold undecided nodes only.

    Args:
        observation_space: a ``Dict`` space following the observation contract.
        conv: ``"sage"`` (GraphSAGE), ``"gcn"``, ``"gin"`` (these three with a structure-based
            form on the CPU), ``"gatv2"``, ``"gine"``, ``"transformer"`` or a user's
            ``"package.module:Class"`` named before (:mod:`graphtransfer.nn.user_conv`), each PyG's class.
        num_layers: message-passing layers.
        width: hidden channels.
        aggr: neighbourhood aggregation for GraphSAGE (``"max"``, ``"mean"``, ``"sum"``, ...).
        project_input: the input projection first (every layer residual), or the first layer
            on the raw node features (no residual around it).

    Shapes:
        node embeddings ``(total_nodes, width)``; forward output ``(B, 2 * width)``.
    """

    max_nodes_per_batch: int | None = None
    mixed_precision: bool = False
    compact_isolated: bool = True

    def __init__(
        self,
        observation_space: gym.spaces.Dict,
        conv: str = "sage",
        num_layers: int = 3,
        width: int = 64,
        aggr: str = "max",
        project_input: bool = True,
    ):
        check_contract(observation_space)  # as policy_for does: a missing key is one line here, not a KeyError later
        super().__init__(observation_space, features_dim=2 * width)
        num_features = box_shape(observation_space, "x")[-1]
        self.width, self.project_input = width, project_input
        self.encode = nn.Sequential(nn.Linear(num_features, width), nn.ReLU()) if project_input else None
        first_in = width if project_input else num_features
        self.num_edge_features = edge_feature_count(observation_space)
        self.reads_edges = conv in READS_EDGES and self.num_edge_features > 0
        """whether the layers read ``edge_attr`` themselves (GATv2, GINE, Transformer), the mean edge term then unused"""
        self.structured = conv in STRUCTURED
        """whether the layers have a structure-based form: else PyG's class runs on gathered edges everywhere"""
        edge_dim = self.num_edge_features if self.reads_edges else 0
        self.convs = nn.ModuleList(make_conv(conv, first_in if i == 0 else width, width, aggr, edge_dim) for i in range(num_layers))
        mean_term = self.num_edge_features and not self.reads_edges
        self.edge_encoders = nn.ModuleList(nn.Linear(self.num_edge_features, width) for _ in range(num_layers)) if mean_term else None
        self._structures: dict[tuple, GraphStructure] = {}  # see structure_for; never saved with the weights

    def node_embeddings(self, obs: PyTorchObs) -> tuple[torch.Tensor, DisjointGraph]:
        """Embeddings of every real node of the batch, and the disjoint graph they belong to.

        On the CPU and from :data:`CSR_MIN_EDGES` edges up, with or without gradients, messages
        pass over a :class:`GraphStructure` built once for all layers (:meth:`message_passing`)
        instead of gathered edge tensors: the same numbers (tested to 1e-5) in far less time and
        memory (forward + backward of 32 samples of a 10,000-node graph: 4 s instead of 12 s).
        When every sample holds the same graph (a static-graph env's steps), the samples run as
        one product over ``(N, B * width)`` on a structure cached across calls
        (:meth:`structure_for`); otherwise over their disjoint union. Above
        ``max_nodes_per_batch`` nodes, layers run in chunks of target nodes
        (:meth:`_layers_in_chunks`): the same numbers (tested to 1e-6).
        """
        obs = as_padded(obs)
        if not isinstance(obs, dict):
            raise TypeError(
                "GNNExtractor reads the contract's Dict observations (see graphtransfer.envs.contract) or a PyG Data or Batch; "
                f"got {type(obs).__name__}"
            )
        graph = to_disjoint(obs)
        if self.reads_edges and graph.edge_attr is not None and not bool(torch.isfinite(graph.edge_attr).all()):
            check_edge_attr_values(graph.edge_attr.detach().float().cpu().numpy())  # (the mean edge term checks its own)
        num_nodes, edges = graph.x.shape[0], graph.edge_index
        sparse = self.structured and graph.x.device.type == "cpu" and edges.shape[1] >= CSR_MIN_EDGES
        budget = self.max_nodes_per_batch
        with self._autocast(graph.x.device):
            if budget is not None and num_nodes > budget:
                context = self._edge_context(graph.edge_attr, edges[1], num_nodes)
                with warnings.catch_warnings():
                    if sparse:  # PyG's GCN path re-wraps the CSR tensor and torch warns that it is beta
                        warnings.simplefilter("ignore", UserWarning)
                    fast = sparse and not torch.is_grad_enabled()
                    h = self._layers_in_chunks(self._encode(graph.x), edges, budget, fast, context, graph.edge_attr)
            elif sparse:
                h = self._structure_embeddings(obs, graph)
            else:
                h = self.embed_gathered(graph.x, edges, self._edge_context(graph.edge_attr, edges[1], num_nodes), graph.edge_attr)
        return h.float(), graph

    def compacted_embeddings(self, obs: PyTorchObs) -> tuple[torch.Tensor, DisjointGraph, Compaction | None]:
        """:meth:`node_embeddings` of the batch with equal isolated nodes merged where that pays
        (:func:`~graphtransfer.nn.compaction.compact_isolated`, with ``compact_isolated`` on),
        and the :class:`~graphtransfer.nn.compaction.Compaction` that reads them back (``None``
        where nothing was merged: the embeddings and graph are then :meth:`node_embeddings`'s)."""
        obs = as_padded(obs)
        compaction = self._compaction(obs)
        h, graph = self.node_embeddings(obs if compaction is None else compaction.obs)
        return h, graph, compaction

    def _compaction(self, obs: PyTorchObs) -> Compaction | None:
        """The batch with equal isolated nodes merged, with ``compact_isolated`` on and where it
        pays; on the CPU only for now: its half-dozen reads of counts would each make the host
        wait for a GPU, and it has not been measured on one."""
        if not (self.compact_isolated and isinstance(obs, dict)) or obs["x"].device.type != "cpu":
            return None
        return compact_isolated(obs)

    def embed_gathered(
        self, x: torch.Tensor, edge_index: torch.Tensor, context: torch.Tensor | None = None, edge_attr: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Node embeddings over gathered edge tensors, PyG's layers as they are: the path on a GPU,
        for layers without a structure form (GATv2, GINE, Transformer, a user's) everywhere, and
        the one an exported policy (ONNX) holds, where a cached sparse structure cannot go.
        The same numbers as the structure path (tested to 1e-5).

        Shapes:
            x: ``(N, F)``; edge_index: ``(2, E)``; context: ``(N, F_e)`` from :meth:`_edge_context`
            or ``None``; edge_attr: ``(E, F_e)``, read by the layers that read edges; returns ``(N, width)``.
        """
        h = self._encode(x)
        for index in range(len(self.convs)):
            out = torch.relu(self._with_edges(self._conv(index, h, edge_index, edge_attr), index, context))
            h = h + out if self._residual(index) else out
        return h

    def _conv(self, index: int, h: torch.Tensor, edge_index: torch.Tensor, edge_attr: torch.Tensor | None) -> torch.Tensor:
        """Layer ``index``'s PyG call, with the edges' features where it reads them (:data:`READS_EDGES`).

        Shapes:
            h: ``(N, F)``; edge_index: ``(2, E)``; edge_attr: ``(E, F_e)`` or ``None``; returns ``(N, width)``.
        """
        if not self.reads_edges:
            return self.convs[index](h, edge_index)
        if edge_attr is None:
            raise ValueError("this model was built for observations with edge_attr; the batch has none")
        return self.convs[index](h, edge_index, edge_attr.to(h.dtype))

    def _edge_context(self, edge_attr: torch.Tensor | None, destination: torch.Tensor, num_nodes: int) -> torch.Tensor | None:
        """Each node's mean incoming edge features, what the layers' edge term reads; ``None``
        for a model without edge features.

        Shapes:
            edge_attr: ``(E, ..., F_e)``; destination: ``(E,)``; returns ``(num_nodes, ..., F_e)``.
        """
        if self.edge_encoders is None:
            return None
        if edge_attr is None:
            raise ValueError("this model was built for observations with edge_attr; the batch has none")
        if not bool(torch.isfinite(edge_attr).all()):
            check_edge_attr_values(edge_attr.detach().float().cpu().numpy())
        return mean_incoming(edge_attr, destination, num_nodes)

    def _with_edges(self, out: torch.Tensor, index: int, context: torch.Tensor | None) -> torch.Tensor:
        """``out + U_index ē``, layer ``index``'s edge term; ``out`` itself without edge features.

        Shapes:
            out: ``(N, ..., width)``; context: ``(N, ..., F_e)`` from :meth:`_edge_context`.
        """
        return out if context is None else out + self._edge_encoder(index)(context)

    def _structure_embeddings(self, obs: dict[str, torch.Tensor], graph: DisjointGraph) -> torch.Tensor:
        """The structure path for a batch: one cached graph of ``B``-times wider features when
        every sample holds the same edges, the disjoint union otherwise.

        Shapes:
            returns ``(total_nodes, width)``, sample by sample as ``graph.x``.
        """
        shared = shared_edges(obs)
        if shared is None:  # a fresh union per call: residual graphs rarely repeat
            context = self._edge_context(graph.edge_attr, graph.edge_index[1], graph.x.shape[0])
            context = None if context is None else context[:, None]  # (N, 1, F_e)
            return self.embed_samples(graph.x[None], GraphStructure(graph.edge_index, graph.x.shape[0]), context).squeeze(1)
        h = self._shared_embeddings(obs, shared)  # (N, B, width); no name keeps a layer's input
        return h.squeeze(1) if h.shape[1] == 1 else h.transpose(0, 1).reshape(-1, h.shape[2])

    def _shared_embeddings(self, obs: dict[str, torch.Tensor], shared: torch.Tensor) -> torch.Tensor:
        """Node-major embeddings of ``B`` samples that all hold the graph ``shared``, over its cached structure.

        Shapes:
            shared: ``(2, E)`` from :func:`shared_edges`; returns ``(N, B, width)``.
        """
        num_nodes = int(obs["num_nodes"].reshape(-1)[0])
        x = obs["x"][:, :num_nodes].float()  # (B, N, F)
        attr = obs.get(EDGE_ATTR)
        attr = None if attr is None else attr[:, : shared.shape[1]].float().transpose(0, 1)  # (E, B, F_e)
        context = self._edge_context(attr, shared[1], num_nodes)
        return self.embed_samples(x, self.structure_for(shared, num_nodes), context)

    def structure_for(self, edge_index: torch.Tensor, num_nodes: int) -> GraphStructure:
        """The :class:`GraphStructure` of this graph, built once and kept for the next calls:
        a static-graph env shows the same edges in every rollout step and every minibatch.
        Found by content (one comparison over ``E`` edges, far below one layer's cost); the
        :data:`STRUCTURES_KEPT` most recently built are kept (under ``torch.inference_mode``,
        :data:`STRUCTURES_KEPT_AT_INFERENCE`), the oldest dropped before a new one is built.

        Shapes:
            edge_index: ``(2, E)`` integer; num_nodes: ``N``.
        """
        key = (num_nodes, edge_index.shape[1], edge_index.device)
        cached = self._structures.get(key)
        if cached is not None and torch.equal(cached.edge_index, edge_index.long()):
            return cached
        kept = STRUCTURES_KEPT_AT_INFERENCE if torch.is_inference_mode_enabled() else STRUCTURES_KEPT
        self._structures.pop(key, None)
        while self._structures and len(self._structures) >= kept:  # freed before the new one is built
            self._structures.pop(next(iter(self._structures)))
        structure = GraphStructure(edge_index.long().clone(), num_nodes)  # a copy: the caller's buffer is rewritten next step
        self._structures[key] = structure
        return structure

    def embed_samples(self, x: torch.Tensor, structure: GraphStructure, context: torch.Tensor | None = None) -> torch.Tensor:
        """Node embeddings of ``B`` samples of one graph, as one graph with ``B``-times wider
        features: each layer is one sparse product over ``(N, B * width)``, not ``B`` copies of
        the graph. ``structure`` is built once per graph and reused across steps and updates;
        gradients flow (for max aggregation, to one of tied maxima, where PyG splits them).

        Shapes:
            x: ``(B, N, F)`` node features; context: ``(N, B, F_e)`` mean incoming edge features
            (models with edge features only); returns ``(N, B, width)``, node-major.
        """
        if x.shape[1] != structure.num_nodes:
            raise ValueError(f"x has {x.shape[1]} nodes per sample, the structure {structure.num_nodes}; one GraphStructure per graph")
        return self.message_passing(self._encode(x.transpose(0, 1).contiguous()), structure, context)

    def message_passing(self, h: torch.Tensor, structure: GraphStructure, context: torch.Tensor | None = None) -> torch.Tensor:
        """Every layer, ``h + ReLU(conv(h))``, over the cached structure (:meth:`layer`).

        Shapes:
            h: ``(N, B, width)`` contiguous; context: ``(N, B, F_e)`` or ``None``; returns ``h``'s shape.
        """
        for index in range(len(self.convs)):
            h = self.layer(index, h, structure, context)
        return h

    def layer(self, index: int, h: torch.Tensor, structure: GraphStructure, context: torch.Tensor | None = None) -> torch.Tensor:
        """Layer ``index`` as the forward runs it: on the CPU without gradients in row blocks
        (:meth:`_layer_in_row_blocks`), with gradients whole; off the CPU (torch's sparse
        reductions have CPU kernels only), and for aggregations without a sparse form, PyG's own
        layer on the structure's edges, all ``B`` samples in one call. ``h`` is left as it is.

        Shapes:
            h: ``(N, B, F)`` contiguous; context: ``(N, B, F_e)`` or ``None``; returns ``(N, B, width)``.
        """
        conv = self.convs[index]
        function = layer_function(conv) if h.device.type == "cpu" else None
        if function is None:
            out = self._with_edges(conv(h.transpose(0, 1), structure.edge_index).transpose(0, 1), index, context)
            out = torch.relu(out).contiguous()
            return h + out if self._residual(index) else out
        if not torch.is_grad_enabled():
            blocks = structure.row_blocks(h.shape[1] * self.width * h.element_size())
            if len(blocks) > 1:
                return self._layer_in_row_blocks(function, index, h, structure, context, blocks)
        out = self._with_edges(function(conv, h, structure), index, context)  # with gradients, or one block: the whole layer
        return residual_relu(h, out) if self._residual(index) else relu(out)

    def _layer_in_row_blocks(
        self,
        layer: Callable[..., torch.Tensor],
        index: int,
        h: torch.Tensor,
        structure: GraphStructure,
        context: torch.Tensor | None,
        blocks: list[slice],
    ) -> torch.Tensor:
        """Layer ``index`` without gradients, one of ``blocks`` of output rows at a time
        (:meth:`GraphStructure.row_blocks`, about
        :data:`~graphtransfer.nn.message_passing.BLOCK_BYTES` of output each): each block's
        aggregation, products, edge term and activation run while it is in cache, written into
        the layer's output, so no whole-graph temporary is made or read again. The same values
        as the whole layer at once, and faster where the graph is in locality order
        (``bench/forward.py``).

        Shapes:
            h: ``(N, B, F)`` contiguous; context: ``(N, B, F_e)`` or ``None``; returns ``(N, B, width)``.
        """
        conv, out = self.convs[index], h.new_empty((*h.shape[:2], self.width))
        for rows in blocks:
            block = layer(conv, h, structure, rows, out[rows])
            if context is not None:
                block.add_(self._edge_encoder(index)(context[rows]))
            if self._residual(index):
                residual_relu(h[rows], block)
            else:
                relu(block)
        return out

    def _edge_encoder(self, index: int) -> nn.Module:
        """``U_index``, layer ``index``'s projection of the edge context (models built with edge features)."""
        if self.edge_encoders is None:
            raise ValueError("this model was built for observations without edge_attr; the batch has it")
        return self.edge_encoders[index]

    def _residual(self, index: int) -> bool:
        """Whether layer ``index`` adds its input back: all do, except a first layer that reads
        the raw features (its input has ``F`` channels, not ``width``)."""
        return self.project_input or index > 0

    def _encode(self, x: torch.Tensor) -> torch.Tensor:
        """The input projection; without gradients its ReLU runs in place. Without
        ``project_input``, ``x`` itself as float32.

        Shapes:
            x: ``(..., F)``; returns ``(..., width)``, or ``(..., F)`` without ``project_input``.
        """
        if self.encode is None:
            return x.float()
        if torch.is_grad_enabled():
            return self.encode(x)
        projection = self.encode[0]
        if not isinstance(projection, nn.Linear):
            raise TypeError(f"the input projection starts with a Linear layer; this one is {self.encode}")
        return torch.nn.functional.linear(x, projection.weight, projection.bias).relu_()

    def _layers_in_chunks(
        self,
        h: torch.Tensor,
        edge_index: torch.Tensor,
        budget: int,
        sparse: bool,
        context: torch.Tensor | None = None,
        edge_attr: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Every layer for ``budget`` target nodes at a time, reading the previous layer's whole
        node matrix: exact (each node aggregates the same edges), and a layer's per-edge work
        never spans more than the edges into ``budget`` nodes. GCN's normalisation (self-loops,
        degrees) is computed once for the whole graph, as the unchunked layer computes it."""
        if not self.structured:
            return self._subgraphs_in_chunks(h, edge_index, budget, context, edge_attr)
        num_nodes = h.shape[0]
        weight = None
        if isinstance(self.convs[0], GCNConv):
            conv = self.convs[0]
            edge_index, weight = gcn_norm(edge_index, None, num_nodes, conv.improved, conv.add_self_loops, conv.flow, h.dtype)
        incoming = incoming_edges(edge_index, num_nodes, weight)
        for index, conv in enumerate(self.convs):
            source = conv.lin(h) if isinstance(conv, GCNConv) else h  # GCN transforms before it aggregates
            out = h.new_empty((num_nodes, self.width))
            for start in range(0, num_nodes, budget):
                stop = min(start + budget, num_nodes)
                rows = _conv_rows(conv, h, source, incoming, start, stop, sparse)
                rows = torch.relu(self._with_edges(rows, index, None if context is None else context[start:stop]))
                out[start:stop] = h[start:stop] + rows if self._residual(index) else rows
            h = out
        return h

    def _subgraphs_in_chunks(
        self, h: torch.Tensor, edge_index: torch.Tensor, budget: int, context: torch.Tensor | None, edge_attr: torch.Tensor | None
    ) -> torch.Tensor:
        """:meth:`_layers_in_chunks` for layers run as PyG's classes: each chunk's targets, with
        the edges into them and those edges' sources, as one subgraph for the layer. Exact for a
        layer whose output at a node reads only that node, the edges into it and their sources
        (GATv2's self-loops and attention, GINE, Transformer); a user's layer that reads more
        (a source's degree, as GCN's normalisation does) differs under a node budget."""
        num_nodes = h.shape[0]
        order = torch.argsort(edge_index[1], stable=True)
        sorted_edges = edge_index[:, order]
        sorted_attr = None if edge_attr is None else edge_attr[order]
        row_starts = torch.searchsorted(sorted_edges[1], torch.arange(0, num_nodes + budget, budget, device=h.device).clamp_(max=num_nodes))
        for index in range(len(self.convs)):
            out = h.new_empty((num_nodes, self.width))
            for chunk, start in enumerate(range(0, num_nodes, budget)):
                stop = min(start + budget, num_nodes)
                first, last = int(row_starts[chunk]), int(row_starts[chunk + 1])
                edges = sorted_edges[:, first:last].contiguous()
                nodes = torch.unique(torch.cat([torch.arange(start, stop, device=h.device), edges[0]]))  # sorted
                targets = torch.searchsorted(nodes, torch.arange(start, stop, device=h.device))
                attr = None if sorted_attr is None else sorted_attr[first:last]
                rows = self._conv(index, h[nodes], torch.searchsorted(nodes, edges), attr)[targets]
                rows = torch.relu(self._with_edges(rows, index, None if context is None else context[start:stop]))
                out[start:stop] = h[start:stop] + rows if self._residual(index) else rows
            h = out
        return h

    def _autocast(self, device: torch.device):
        """bfloat16 autocast on CUDA when ``mixed_precision`` is set; nothing otherwise."""
        if self.mixed_precision and device.type == "cuda":
            return torch.autocast(device_type="cuda", dtype=torch.bfloat16)
        return nullcontext()

    def pool(self, h: torch.Tensor, graph: DisjointGraph, compaction: Compaction | None = None) -> torch.Tensor:
        """Mean and max over each sample's real nodes, ``(B, 2 * width)``; over the nodes a
        ``compaction``'s rows stand for when ``h`` embeds its batch (the mean weighted by them).

        When no sample is padded (every sample fills ``max_nodes``, as a static graph's steps
        do) the samples are equal blocks of rows and both poolings are dense reductions over
        a ``(B, N, width)`` view: the same values as PyG's scatter pooling and the same
        gradients, ties split evenly, except in a channel that is 0 at every node of a sample,
        where PyG's backward counts its zero initial value as one more tie (1/(n+1) per node
        there, 1/n here). Forward and backward of 32 samples of a 10,000-node graph: 0.29 s
        instead of 0.44 s (process time, ``tests/test_nn.py`` checks the values)."""
        size = graph.num_graphs
        if graph.unpadded:
            blocks = h.view(size, -1, h.shape[-1])
            weights = None if compaction is None else compaction.real_counts().view(blocks.shape[:2])
            return mean_max_pool(blocks, dim=1, weights=weights)
        if compaction is None:
            mean = global_mean_pool(h, graph.batch, size)
        else:
            mean = global_add_pool(h * compaction.real_counts()[:, None], graph.batch, size) / compaction.counts.sum(1, keepdim=True)
        return torch.cat([mean, global_max_pool(h, graph.batch, size)], dim=1)

    def forward(self, obs: dict[str, torch.Tensor] | Data) -> torch.Tensor:
        obs = as_padded(obs)
        compaction = self._compaction(obs)
        compacted = obs if compaction is None else compaction.obs
        shared = shared_edges(compacted) if self._on_structure_path(compacted) else None
        if shared is not None:  # pooled node-major: the (N, B, width) embeddings are never transposed
            h = self._shared_embeddings(compacted, shared)
            weights = None if compaction is None else compaction.real_counts().view(h.shape[1], h.shape[0]).t()
            return mean_max_pool(h, dim=0, weights=weights)
        h, graph = self.node_embeddings(compacted)
        return self.pool(h, graph, compaction)

    def _on_structure_path(self, obs: dict[str, torch.Tensor]) -> bool:
        """Whether :meth:`node_embeddings` would run this batch over a :class:`GraphStructure`
        whole (on the CPU, within the node budget). At 148,640 nodes and 8 samples, pooling
        the graph-level forward node-major saves a 304 MB transposed copy and its gradient."""
        if obs["x"].device.type != "cpu" or not self.structured:
            return False  # before reading any count: each read would make the host wait for the device
        budget = self.max_nodes_per_batch
        return int(obs["num_edges"].sum()) >= CSR_MIN_EDGES and (budget is None or int(obs["num_nodes"].sum()) <= budget)


def _conv_rows(
    conv: nn.Module, h: torch.Tensor, source: torch.Tensor, incoming: IncomingEdges, start: int, stop: int, sparse: bool
) -> torch.Tensor:
    """One layer's output for target nodes ``start..stop``, ``(stop - start, width)``.

    GraphSAGE and GIN take the bipartite pair (all nodes as sources, the chunk as targets);
    GCN, which has no bipartite form, aggregates its pre-transformed ``source`` with the
    precomputed normalised weights and adds its bias, as its own forward does.
    """
    size: tuple[int, int] | None = (incoming.num_nodes, stop - start)
    if sparse:
        adjacency, weight, size = incoming.csr_into(start, stop), None, None  # the weights are the CSR values
    else:
        adjacency, weight = incoming.edges_into(start, stop)
    if isinstance(conv, GCNConv):
        out = conv.propagate(adjacency, x=source, edge_weight=weight, size=size)
        return out if conv.bias is None else out + conv.bias
    return conv((h, h[start:stop]), adjacency, size=size)


def configure_runtime(
    module: nn.Module, max_nodes_per_batch: int | None = None, mixed_precision: bool = False, compact_isolated: bool = True
) -> None:
    """Set the runtime settings of every :class:`GNNExtractor` in ``module`` (a policy, say).

    They are plain attributes, not parameters or buffers: a model folder never stores them, and
    the same weights run with or without them.
    """
    check_node_budget(max_nodes_per_batch)
    for extractor in module.modules():
        if isinstance(extractor, GNNExtractor):
            extractor.max_nodes_per_batch, extractor.mixed_precision = max_nodes_per_batch, mixed_precision
            extractor.compact_isolated = compact_isolated
