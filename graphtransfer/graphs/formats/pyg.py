"""PyTorch files written by ``torch.save``: a dict of tensors with ``edge_index``, a bare ``(2, E)``
tensor, or a PyTorch Geometric ``Data`` object.

Loaded only with ``torch.load(weights_only=True)``, whose unpickler builds tensors and plain
containers and nothing else, so a crafted file cannot run code. A ``Data`` object additionally
needs PyG's four storage classes allowed, and nothing beyond them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import numpy as np

from graphtransfer.errors import GraphFileError
from graphtransfer.graphs.formats.common import check_is_file, warn_if_ids_lost, write_atomically
from graphtransfer.graphs.formats.npz import graph_from_arrays
from graphtransfer.graphs.graph import Graph

EXTENSIONS = (".pt", ".pth")
EXPECTED = "a torch.save file of {'edge_index': LongTensor (2, E), 'num_nodes': int}, a (2, E) tensor, or a PyG Data object"
_PYG_DATA_CLASSES = (
    "torch_geometric.data.data.Data",
    "torch_geometric.data.data.DataEdgeAttr",
    "torch_geometric.data.data.DataTensorAttr",
    "torch_geometric.data.storage.GlobalStorage",
)


def read_pyg(path: str | Path) -> Graph:
    """Read ``edge_index``, ``num_nodes`` (or the row count of ``x``) and, from a dict, optional
    integer ``node_ids`` from a PyTorch file."""
    path = Path(path)
    check_is_file(path)
    content = _load(path)
    edge_index, num_nodes = _unpack(path, content)
    node_ids = content.get("node_ids") if isinstance(content, dict) else None
    return graph_from_arrays(path, edge_index, num_nodes, None if node_ids is None else _numpy(path, "node_ids", node_ids))


def write_pyg(graph: Graph, path: str | Path) -> None:
    """``torch.save`` a dict ``{'edge_index': (2, 2|E|) int64 tensor, 'num_nodes': int}`` — both
    directions of every edge, as PyG expects of an undirected graph — and ``'node_ids'`` when the
    graph has integer ids of its own (tensors cannot hold names), atomically."""
    import torch  # a second or two to import; only PyTorch files need it

    warn_if_ids_lost(graph, Path(path), "a PyTorch file", "integers")
    content = {"edge_index": torch.from_numpy(graph.edge_index), "num_nodes": graph.num_nodes}
    if graph.node_ids is not None and graph.node_ids.dtype.kind in "iu":
        content["node_ids"] = torch.from_numpy(graph.node_ids)

    def write(tmp: Path) -> None:
        with tmp.open("wb") as file:  # a file object: torch.save would name the archive's folder after tmp
            torch.save(content, file)

    write_atomically(Path(path), write)


def _load(path: Path) -> object:
    import torch

    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # torch.load raises many kinds on damaged bytes; all mean "unreadable"
        first = err
    unsafe = _unsafe_globals(path)
    if unsafe and set(unsafe) <= set(_PYG_DATA_CLASSES):
        return _load_pyg_data(path)
    # The weights-only unpickler met a class it will not build. Its own message suggests trusting
    # the file, which we never do, so it is not passed on.
    if unsafe or "Unsupported global" in str(first):
        named = f" ({', '.join(sorted(unsafe)[:3])})" if unsafe else ""
        raise GraphFileError(
            path,
            f"holds Python objects{named} that only unpickling could load, which graphtransfer never does; "
            "save plain tensors instead: torch.save({'edge_index': data.edge_index, 'num_nodes': data.num_nodes}, path)",
        )
    raise GraphFileError(path, f"is not a readable torch.save file (truncated, damaged, or another kind of file); expected {EXPECTED}")


def _load_pyg_data(path: Path) -> object:
    """Load a PyG ``Data`` with exactly its storage classes allowed."""
    import torch

    try:
        from torch_geometric.data.data import Data, DataEdgeAttr, DataTensorAttr
        from torch_geometric.data.storage import GlobalStorage
    except ImportError:
        raise GraphFileError(path, "holds a PyG Data object, but torch_geometric is not installed; pip install torch-geometric") from None
    try:
        with torch.serialization.safe_globals([Data, DataEdgeAttr, DataTensorAttr, GlobalStorage]):
            return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # as above: any failure here is a damaged file
        raise GraphFileError(path, f"is not a readable PyG Data file ({type(err).__name__}); expected {EXPECTED}") from None


def _unsafe_globals(path: Path) -> list[str]:
    """The classes a file would need unpickled; empty for a file that is not a readable archive."""
    import torch

    try:
        return list(torch.serialization.get_unsafe_globals_in_checkpoint(path))
    except Exception:  # not a zip checkpoint at all: the caller reports the first error instead
        return []


def _unpack(path: Path, content: object) -> tuple[np.ndarray, np.ndarray | int | None]:
    """``(edge_index, num_nodes or None)`` as numpy, from whichever container the file held."""
    import torch

    if isinstance(content, torch.Tensor):
        return _numpy(path, "the tensor", content), None
    if isinstance(content, dict):
        if "edge_index" not in content:
            raise GraphFileError(path, f"the saved dict has no 'edge_index' (keys: {sorted(map(str, content))[:8]}); expected {EXPECTED}")
        edge_index, num_nodes, features = content["edge_index"], content.get("num_nodes"), content.get("x")
    elif type(content).__name__ == "Data" and hasattr(content, "edge_index"):
        data = cast(Any, content)  # a PyG Data, read as plain attributes (torch_geometric need not be installed)
        edge_index, num_nodes, features = data.edge_index, data.num_nodes, None
    else:
        raise GraphFileError(path, f"holds a {type(content).__name__}; expected {EXPECTED}")
    if num_nodes is None and isinstance(features, torch.Tensor) and features.dim() >= 1:
        num_nodes = features.shape[0]
    if isinstance(num_nodes, torch.Tensor):
        num_nodes = _numpy(path, "num_nodes", num_nodes)
    return _numpy(path, "edge_index", edge_index), num_nodes


def _numpy(path: Path, what: str, tensor: object) -> np.ndarray:
    import torch

    if not isinstance(tensor, torch.Tensor) or tensor.layout != torch.strided:
        raise GraphFileError(path, f"{what} is a {type(tensor).__name__}, not a dense tensor; expected {EXPECTED}")
    try:
        return tensor.detach().cpu().numpy()
    except (TypeError, RuntimeError):  # dtypes numpy lacks, such as bfloat16
        raise GraphFileError(path, f"{what} has dtype {tensor.dtype}; expected {EXPECTED}") from None
