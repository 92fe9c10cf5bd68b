"""A graph split into parts on disk, one file per part, so that each worker of a cluster reads its
own part and no process of a solve reads the whole graph.

A partitioned graph is a folder: ``partition.json``, the map (the graph's name and size, how its
nodes are named, and for every part its file, its counts, the parts it reads from and the
sha256 of its file), and one ``part-NNNNN.npz`` per part holding the arrays of a
:class:`~graphtransfer.graphs.partition.Part` (an uncompressed numpy archive, read member by
member with its headers checked: nothing is unpickled). :func:`partition_graph` writes one
(``graphtransfer graphs partition``): it reads the whole graph once, splits it as
:func:`~graphtransfer.graphs.partition.assign_parts` does, and keeps one part in memory beside
the graph while it writes it. :func:`read_part` reads one part back and refuses a file that is
not the one the map names (its size and sha256) or whose arrays do not fit together.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from graphtransfer.errors import GraphFileError, GraphInputError, UsageError
from graphtransfer.graphs.catalog import load_graph, resolve
from graphtransfer.graphs.formats.npz import read_member, read_member_header
from graphtransfer.graphs.graph import Graph
from graphtransfer.graphs.partition import Part, PartMap, assign_parts, check_part_count, iter_parts
from graphtransfer.io import LOCK_NAME, atomic_write, check_output_folder, folder_lock, sync_folder, write_atomically

MAP_NAME = "partition.json"
FORMAT = "graphtransfer-partitioned-graph"
VERSION = 1
ARRAYS = ("nodes", "halo", "halo_owner", "halo_position", "boundary", "edge_index")
"""the arrays of a part file, as :class:`Part` names them; ``ids`` besides where the graph names its nodes"""
_PART_FILE = re.compile(r"part-\d{5,}\.npz")
_REWRITE = "the folder was changed or damaged since graphs partition wrote it; write it again with graphtransfer graphs partition"


def part_file_name(index: int) -> str:
    return f"part-{index:05d}.npz"


@dataclass(frozen=True)
class PartEntry:
    """One part's line in the map: what a driver needs of it, and what its file must be."""

    index: int
    num_owned: int
    num_halo: int
    num_boundary: int
    num_edges: int
    """the directed edges into its nodes (both directions of every edge are stored)"""
    senders: list[int]
    size: int
    """its file's size in bytes"""
    sha256: str

    def outline(self) -> PartMap:
        return PartMap(self.index, self.num_owned, self.num_halo, self.senders)


@dataclass(frozen=True)
class PartitionedGraph:
    """A partitioned graph's map, as :func:`read_partition_map` reads it (no part file is read)."""

    folder: Path
    name: str
    num_nodes: int
    num_edges: int
    ids: str
    """how the nodes are named (:meth:`Graph.describe_ids`)"""
    parts: list[PartEntry]

    def path(self, index: int) -> Path:
        return self.folder / part_file_name(index)


@dataclass(frozen=True)
class PartFile:
    """Part ``index`` of a partitioned graph, as a worker is told to read it (:meth:`read`)."""

    graph: PartitionedGraph
    index: int

    def read(self) -> Part:
        return read_part(self.graph, self.index)

    def outline(self) -> PartMap:
        return self.graph.parts[self.index].outline()


def is_partition_folder(folder: Path) -> bool:
    """Whether ``folder`` is (or was meant to be) a partitioned graph: it holds a map or a part
    file, damaged or not (:func:`read_partition_map` says what is wrong), not a folder of graphs."""
    folder = Path(folder)
    return folder.is_dir() and any(entry.name == MAP_NAME or _PART_FILE.fullmatch(entry.name) for entry in folder.iterdir())


def _holds_only_ours(folder: Path) -> bool:
    """Whether every file in ``folder`` is a partitioned graph's (its map, part files, lock, or a
    write's temporary files): what :func:`partition_graph` may replace with ``force``."""
    names = [entry.name for entry in folder.iterdir()]
    return all(
        name in (MAP_NAME, LOCK_NAME) or _PART_FILE.fullmatch(name) or (name.startswith(".") and name.endswith(".tmp")) for name in names
    )


def partition_graph(
    source: str | Path, parts: object, folder: str | Path, input_format: str | None = None, force: bool = False
) -> PartitionedGraph:
    """Read the graph ``source`` names, split it into ``parts`` parts and write them to ``folder``
    (see the module): a new or empty folder, or (with ``force``) an earlier partitioned graph,
    never anything else; one writer at a time. Everything is written into a staging folder
    first and then moved into place (:func:`_write_parts`), so a write that fails leaves an earlier
    partitioned graph as it was, and an interrupted move leaves no map that names a part it did not finish."""
    folder, path = Path(folder), resolve(source)
    if isinstance(parts, bool) or not isinstance(parts, int) or parts < 1:
        raise UsageError(f"--parts {parts!r}: expected a whole number of parts from 1 to the graph's node count")
    check_output_folder(folder, [path], _holds_only_ours, "partitioned graph")
    _check_replaceable(folder, force)
    graph = load_graph(path, input_format)
    try:
        check_part_count(parts, graph.num_nodes, "--parts")
    except ValueError as err:
        raise UsageError(str(err)) from None
    busy = f"--out {folder}: another process is writing a partitioned graph into it; wait for it to finish, or choose another folder"
    with folder_lock(folder, timeout=0, busy=busy):
        _check_replaceable(folder, force)  # again: another writer may have finished since the first look
        return _write_parts(graph, parts, folder)


def _check_replaceable(folder: Path, force: bool) -> None:
    """Refuse, without ``force``, a folder that already holds a partitioned graph (or part of one)."""
    if folder.is_dir() and not force and any(entry.name != LOCK_NAME for entry in folder.iterdir()):
        raise UsageError(f"--out {folder}: holds a partitioned graph already; pass --force to replace it, or choose another folder")


def _write_parts(graph: Graph, parts: int, folder: Path) -> PartitionedGraph:
    """Write every part file and the map into a staging folder inside ``folder`` first, then move
    them into place: a write that fails (a full disk) leaves an earlier partitioned graph in
    ``folder`` as it was, since the moves need no space."""
    staging = Path(tempfile.mkdtemp(dir=folder, prefix=".partition-", suffix=".tmp"))
    try:
        partitioned = _write_staged(graph, parts, staging, folder)
        _move_into_place(staging, partitioned)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return partitioned


def _write_staged(graph: Graph, parts: int, staging: Path, folder: Path) -> PartitionedGraph:
    entries = []
    for part in iter_parts(graph, assign_parts(graph, parts)):
        arrays = {name: getattr(part, name) for name in ARRAYS} | ({} if part.ids is None else {"ids": part.ids})

        def write(tmp: Path, arrays: dict = arrays) -> None:
            with tmp.open("wb") as file:  # a file object: np.savez would add ".npz" to a bare name
                np.savez(file, **arrays)

        target = staging / part_file_name(part.index)
        write_atomically(target, write)
        size, digest = file_digest(target)
        entries.append(
            PartEntry(
                part.index, part.num_owned, part.num_halo, part.boundary.size, int(part.edge_index.shape[1]), part.senders(), size, digest
            )
        )
    partitioned = PartitionedGraph(folder, graph.name, graph.num_nodes, graph.num_edges, graph.describe_ids(), entries)
    meta = {"format": FORMAT, "version": VERSION, "graph": graph.name, "nodes": graph.num_nodes, "edges": graph.num_edges}
    meta |= {"ids": partitioned.ids, "partitioner": "ranges of the reverse Cuthill-McKee order"}
    meta["parts"] = [{"file": part_file_name(e.index), **{key: getattr(e, key) for key in _ENTRY_KEYS}} for e in entries]
    atomic_write(staging / MAP_NAME, (json.dumps(meta, indent=1) + "\n").encode())
    return partitioned


def _move_into_place(staging: Path, partitioned: PartitionedGraph) -> None:
    """Renames only: the old map goes first and the new one comes last, so that a process killed
    in between leaves no map naming a part file that is not its own."""
    folder, names = partitioned.folder, {part_file_name(e.index) for e in partitioned.parts}
    (folder / MAP_NAME).unlink(missing_ok=True)
    for name in sorted(names):
        os.replace(staging / name, folder / name)
    os.replace(staging / MAP_NAME, folder / MAP_NAME)
    for stale in folder.iterdir():  # an earlier partition into more parts
        if _PART_FILE.fullmatch(stale.name) and stale.name not in names:
            stale.unlink()
    sync_folder(folder)


_ENTRY_KEYS = ("num_owned", "num_halo", "num_boundary", "num_edges", "senders", "size", "sha256")


def file_digest(path: Path) -> tuple[int, str]:
    """The size and sha256 (hex) of the file at ``path``, read a block at a time."""
    digest, size = hashlib.sha256(), 0
    with path.open("rb") as file:
        while block := file.read(1 << 20):
            digest.update(block)
            size += len(block)
    return size, digest.hexdigest()


def read_partition_map(folder: str | Path) -> PartitionedGraph:
    """The map of the partitioned graph in ``folder``, every field checked; a
    :class:`GraphInputError` naming the map and the fix where it is missing or damaged."""
    folder = Path(folder)
    path = folder / MAP_NAME
    try:
        meta = json.loads(path.read_text())
    except FileNotFoundError:
        raise GraphInputError(
            f"{folder}: holds no {MAP_NAME}, so it is not a partitioned graph (or its writing was interrupted); "
            "write one with graphtransfer graphs partition GRAPH --parts K --out FOLDER"
        ) from None
    except (OSError, ValueError, RecursionError) as err:
        raise GraphFileError(path, f"cannot be read as JSON ({str(err).splitlines()[0][:80]}); {_REWRITE}") from None
    try:
        return _partitioned_graph(folder, meta)
    except (KeyError, TypeError, ValueError) as err:
        raise GraphFileError(path, f"is not a partitioned graph's map ({str(err)[:120]}); {_REWRITE}") from None


def _partitioned_graph(folder: Path, meta: object) -> PartitionedGraph:
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("version") != VERSION:
        raise ValueError(f"expected format {FORMAT!r} version {VERSION}")
    nodes, edges = _count(meta["nodes"], "nodes"), _count(meta["edges"], "edges")
    listed = meta["parts"]
    if not isinstance(listed, list) or not 1 <= len(listed) <= max(nodes, 1):
        raise ValueError(f"parts must list 1 to {max(nodes, 1)} parts")
    entries = [_entry(index, line, len(listed)) for index, line in enumerate(listed)]
    if sum(entry.num_owned for entry in entries) != nodes:
        raise ValueError(f"the parts own {sum(entry.num_owned for entry in entries)} nodes, the graph has {nodes}")
    if not isinstance(meta["graph"], str) or not isinstance(meta["ids"], str):
        raise ValueError("graph and ids must be text")
    return PartitionedGraph(folder, meta["graph"], nodes, edges, meta["ids"], entries)


def _entry(index: int, line: object, count: int) -> PartEntry:
    if not isinstance(line, dict) or line.get("file") != part_file_name(index):
        raise ValueError(f"part {index} must name the file {part_file_name(index)}")
    numbers = {key: _count(line[key], key) for key in ("num_owned", "num_halo", "num_boundary", "num_edges", "size")}
    senders = line["senders"]
    if not isinstance(senders, list) or senders != sorted(set(senders)) or not all(_is_part(q, count) and q != index for q in senders):
        raise ValueError(f"part {index}'s senders must be other parts' numbers, ascending")
    if not isinstance(line["sha256"], str) or not re.fullmatch(r"[0-9a-f]{64}", line["sha256"]):
        raise ValueError(f"part {index}'s sha256 must be 64 hex digits")
    return PartEntry(index, senders=senders, sha256=line["sha256"], **numbers)


def _count(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a whole number, 0 or more; found {value!r}")
    return value


def _is_part(value: object, count: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < count


def check_part_files(graph: PartitionedGraph) -> None:
    """Every part file the map names is there with the size it names and holds the arrays the map
    names, each of its dtype and shape (the archive's directory and each array's header: no data
    is read, nothing unpickled): a missing, truncated or rewritten part is refused before any
    worker starts. Each worker checks its own file's sha256 and contents (:func:`read_part`), in parallel."""
    for entry in graph.parts:
        path = graph.path(entry.index)
        if not path.is_file():
            raise GraphFileError(path, f"is missing; {_REWRITE}")
        if path.stat().st_size != entry.size:
            raise GraphFileError(path, f"holds {path.stat().st_size} bytes, the map says {entry.size}; {_REWRITE}")
        try:
            with zipfile.ZipFile(path) as archive:
                names = _member_names(path, archive)
                shapes = _shapes(entry, "ids" in names)
                for name, member in names.items():
                    shape, dtype = read_member_header(path, archive, member, _REWRITE)
                    if shape != shapes[name] or not _fits_dtype(name, dtype):
                        raise GraphFileError(path, f"{name} has shape {shape} and dtype {dtype}; expected {shapes[name]} int64; {_REWRITE}")
        except _UNREADABLE as err:
            raise GraphFileError(path, f"is not a readable part file ({str(err).splitlines()[0][:80]}); {_REWRITE}") from None


_UNREADABLE = (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError, OSError, ValueError, TypeError, NotImplementedError)
"""what reading a damaged part's archive raises"""


def _member_names(path: Path, archive: zipfile.ZipFile) -> dict[str, str]:
    """A part archive's arrays by name, with their member names; other members are refused."""
    names = {name.removesuffix(".npy"): name for name in archive.namelist()}
    if not set(ARRAYS) <= set(names) <= {*ARRAYS, "ids"}:
        raise GraphFileError(path, f"holds the arrays {sorted(names)}; expected {', '.join(ARRAYS)} (and ids); {_REWRITE}")
    return names


def _shapes(entry: PartEntry, ids: bool) -> dict[str, tuple[int, ...]]:
    """The shape of each array of the part ``entry`` describes."""
    n, h = entry.num_owned, entry.num_halo
    shapes: dict[str, tuple[int, ...]] = {"nodes": (n,), "halo": (h,), "halo_owner": (h,), "halo_position": (h,)}
    return shapes | {"boundary": (entry.num_boundary,), "edge_index": (2, entry.num_edges)} | ({"ids": (n,)} if ids else {})


def _fits_dtype(name: str, dtype: np.dtype) -> bool:
    return dtype == np.int64 or (name == "ids" and dtype.kind == "U")


def read_part(graph: PartitionedGraph, index: int) -> Part:
    """Part ``index`` of ``graph`` from its file, which must be the one the map names (size and
    sha256), with arrays that fit the map and each other; a :class:`GraphFileError` that says
    which and how to fix it otherwise."""
    entry, path = graph.parts[index], graph.path(index)
    size, digest = file_digest(path)
    if (size, digest) != (entry.size, entry.sha256):
        raise GraphFileError(path, f"is not the file {MAP_NAME} names (its size or sha256 differ); {_REWRITE}")
    try:
        with zipfile.ZipFile(path) as archive:
            arrays = {name: read_member(path, archive, member, _REWRITE) for name, member in _member_names(path, archive).items()}
    except _UNREADABLE as err:
        raise GraphFileError(path, f"is not a readable part file ({str(err).splitlines()[0][:80]}); {_REWRITE}") from None
    part = Part(index, **arrays)
    problem = _misfit(part, entry, graph)
    if problem:
        raise GraphFileError(path, f"{problem}; {_REWRITE}")
    return part


def _misfit(part: Part, entry: PartEntry, graph: PartitionedGraph) -> str | None:
    """What in ``part``'s arrays does not fit its map entry or each other (every index the
    solve reads must lie in range), or ``None``."""
    n, h = entry.num_owned, entry.num_halo
    for name, shape in _shapes(entry, part.ids is not None).items():
        array = getattr(part, name)
        if array.shape != shape or not _fits_dtype(name, array.dtype):
            return f"{name} has shape {array.shape} and dtype {array.dtype}; expected {shape} int64"
    ranges = [
        ("nodes", part.nodes, graph.num_nodes),
        ("halo", part.halo, graph.num_nodes),
        ("boundary", part.boundary, n),
        ("edge sources", part.edge_index[0], n + h),
        ("edge targets", part.edge_index[1], n),
    ]
    for name, values, bound in ranges:
        if values.size and (values.min() < 0 or values.max() >= bound):
            return f"its {name} lie outside 0..{bound - 1}"
    if not set(np.unique(part.halo_owner).tolist()) <= set(entry.senders):
        return "its halo is owned by parts its map entry does not name"
    limits = np.array([p.num_boundary for p in graph.parts])[part.halo_owner] if h else np.zeros(0, dtype=np.int64)
    if h and (part.halo_position.min() < 0 or (part.halo_position >= limits).any()):
        return "its halo positions lie outside their owners' boundaries"
    return None
