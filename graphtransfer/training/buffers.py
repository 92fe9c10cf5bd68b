"""Rollout buffers that store graph observations compactly and give PPO exactly what SB3's would.

SB3's ``DictRolloutBuffer`` keeps every key of every step in the key's dtype; for graph
observations most of that is the padded int64 ``edge_index``, which changes little (residual
graphs) or not at all between steps. Here each distinct edge set is stored once (with its
``edge_attr`` rows, when the observation has edge features), a step keeps a reference to one plus
a bit per edge, and every other key keeps a bit per element (zero or not)
and its nonzero values, column by column, in the narrowest dtype that holds them exactly. Samples
are rebuilt into the padded arrays SB3 would return, bit for bit, so training is unchanged.
"""

from __future__ import annotations

import hashlib
from collections.abc import Generator
from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces
from sb3_contrib.common.maskable.buffers import MaskableDictRolloutBuffer, MaskableDictRolloutBufferSamples
from stable_baselines3.common.buffers import DictRolloutBuffer
from stable_baselines3.common.preprocessing import get_obs_shape
from stable_baselines3.common.type_aliases import DictRolloutBufferSamples

from graphtransfer.envs.contract import EDGE_ATTR, check_contract
from graphtransfer.envs.protocol import features_of
from graphtransfer.training.device_rollout import DeviceEdges, DeviceValues

EDGE_KEY = "edge_index"
NODE_BITS = 31  # an edge (u, v) is the one int64 key u << 31 | v, ordered like (u, v)
# Dtypes a column of values may be kept in, narrowest first; one is used only when every value
# survives the round trip to it and back bit for bit.
NARROW_DTYPES = tuple(np.dtype(name) for name in ("uint8", "int8", "uint16", "int16", "float16", "uint32", "int32", "float32"))


def held_bytes(value: Any) -> int:
    """Bytes of every numpy array and tensor reachable from ``value`` through dicts, lists,
    tuples and graphtransfer's own objects: what a buffer really holds."""
    if isinstance(value, np.ndarray):
        return value.nbytes
    if isinstance(value, torch.Tensor):
        return value.element_size() * value.nelement()
    if isinstance(value, dict):
        return sum(held_bytes(item) for item in value.values())
    if isinstance(value, list | tuple):
        return sum(held_bytes(item) for item in value)
    if type(value).__module__.startswith("graphtransfer"):
        return sum(held_bytes(item) for item in vars(value).values())
    return 0


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()


def holds_exactly(values: np.ndarray, dtype: np.dtype) -> bool:
    """Whether ``values`` survive the cast to ``dtype`` and back unchanged, bit for bit (so -0.0
    and NaN payloads count, and 0.1 does not fit float16)."""
    with np.errstate(all="ignore"):
        return _same_bits(values.astype(dtype).astype(values.dtype), values)


def nonzero_bits(array: np.ndarray) -> np.ndarray:
    """Which elements of a contiguous ``array`` have any bit set (``-0.0`` does, ``0.0`` not)."""
    if array.dtype.itemsize in (1, 2, 4, 8):
        return array.view(f"u{array.dtype.itemsize}") != 0
    return np.asarray(array.view(np.uint8).reshape(*array.shape, array.dtype.itemsize).any(axis=-1))


def edge_keys(edges: np.ndarray) -> np.ndarray:
    """``(2, E)`` node ids → ``(E,)`` int64 keys ``u << 31 | v``, sorted as the pairs are."""
    if edges.size and (edges.min() < 0 or edges.max() >= 1 << NODE_BITS):
        raise ValueError(f"edge_index holds node ids outside [0, 2^{NODE_BITS}): {edges.min()} .. {edges.max()}; node ids index the nodes")
    return (edges[0] << NODE_BITS) | edges[1]


class EdgeSet(NamedTuple):
    """One distinct edge set, kept as sorted keys for membership tests, with its edge features.

    Shapes:
        keys: ``(E,)`` int64, sorted; order: ``(E,)`` int32, the position in the observation of
        each sorted key, or ``None`` when the observation listed its edges sorted; attr:
        ``(E, F_e)`` in listing order, or ``None`` for observations without ``edge_attr``.
    """

    keys: np.ndarray
    order: np.ndarray | None
    attr: np.ndarray | None = None

    @classmethod
    def of(cls, keys: np.ndarray, attr: np.ndarray | None = None) -> EdgeSet:
        attr = None if attr is None else attr.copy()
        if keys.size < 2 or bool((keys[1:] > keys[:-1]).all()):
            return cls(keys.copy(), None, attr)
        order = np.argsort(keys, kind="stable")
        return cls(keys[order], order.astype(np.int32), attr)

    @property
    def size(self) -> int:
        return self.keys.size

    def features(self) -> np.ndarray:
        """``attr``, of a set stored with edge features."""
        if self.attr is None:
            raise ValueError("this edge set was stored without edge features; the observation has edge_attr")
        return self.attr

    def listed_keys(self) -> np.ndarray:
        """``(E,)`` the keys in the order the observation listed the edges."""
        if self.order is None:
            return self.keys
        keys = np.empty_like(self.keys)
        keys[self.order] = self.keys
        return keys

    def edges(self) -> np.ndarray:
        """``(2, E)`` int64, in the order the observation listed them."""
        keys = self.listed_keys()
        return np.stack([keys >> NODE_BITS, keys & ((1 << NODE_BITS) - 1)])

    def positions(self, keys: np.ndarray, attr: np.ndarray | None = None) -> np.ndarray | None:
        """Where ``keys`` sit in this set's listing, or ``None`` unless they are a subset listed
        in the same order with the same features bit for bit (so ``edges()[:, positions]`` and
        ``attr[positions]`` rebuild them exactly)."""
        if keys.size > self.keys.size:
            return None
        if keys.size == 0:
            return np.zeros(0, dtype=np.int64)
        if keys.size == self.keys.size and np.array_equal(keys, self.listed_keys()):  # a static graph's step: no search
            return np.arange(keys.size) if attr is None or _same_bits(self.features(), attr) else None
        found = np.minimum(np.searchsorted(self.keys, keys), self.keys.size - 1)
        if not bool((self.keys[found] == keys).all()):
            return None
        positions = found if self.order is None else self.order[found].astype(np.int64)
        if not bool((positions[1:] > positions[:-1]).all()):
            return None
        if attr is not None and not _same_bits(self.features()[positions], attr):
            return None
        return positions


class EdgeStore:
    """The ``edge_index`` (and ``edge_attr``, given its ``(F_e, dtype)``) of every step: a table
    of distinct edge sets, deduplicated by content (features included), and per step the set's
    id and a bit per edge of the set.

    A step whose edges are an ordered subset of the set its env used last (a residual graph)
    refers to that set; otherwise to an identical set already in the table, or to a new one. The
    table outlives a rollout for the sets that rollout used, so a static graph is stored once.
    """

    def __init__(
        self,
        max_edges: int,
        buffer_size: int,
        n_envs: int,
        carried: EdgeStore | None = None,
        edge_attr: tuple[int, np.dtype] | None = None,
    ):
        self.max_edges = max_edges
        self.edge_attr = edge_attr  # (F_e, dtype) of the observation's edge features, or None
        self.set_ids = np.zeros((buffer_size, n_envs), dtype=np.int32)
        self.bits = np.zeros((buffer_size, n_envs, (max_edges + 7) // 8), dtype=np.uint8)
        self.sets: dict[int, EdgeSet] = {}
        self.by_digest: dict[bytes, int] = {}
        self.last_set: dict[int, int] = {}  # env → id of the set its last step referred to
        self.next_id = 0
        if carried is not None:
            self._carry(carried)

    def _carry(self, previous: EdgeStore) -> None:
        """Keep the sets the previous rollout referred to, and each env's last set."""
        used = set(np.unique(previous.set_ids).tolist()) | set(previous.last_set.values())
        self.sets = {i: s for i, s in previous.sets.items() if i in used}
        self.by_digest = {digest: i for digest, i in previous.by_digest.items() if i in used}
        self.last_set, self.next_id = dict(previous.last_set), previous.next_id

    def add(self, pos: int, env: int, edge_index: np.ndarray, edge_attr: np.ndarray | None = None) -> None:
        """Store one env's ``(2, max_edges)`` edge_index and ``(max_edges, F_e)`` edge_attr;
        trailing columns that are ``(0, 0)`` with all-zero features are padding."""
        real = edge_index.any(axis=0) if edge_attr is None else edge_index.any(axis=0) | nonzero_bits(edge_attr).any(axis=1)
        count = int(np.flatnonzero(real)[-1]) + 1 if real.any() else 0
        keys = edge_keys(edge_index[:, :count])
        attr = None if edge_attr is None else np.ascontiguousarray(edge_attr[:count])
        set_id = self.last_set.get(env)
        positions = None if set_id is None else self.sets[set_id].positions(keys, attr)
        if set_id is None or positions is None:
            set_id, positions = self._set_of(keys, attr), np.arange(keys.size)
            self.last_set[env] = set_id
        mask = np.zeros(self.max_edges, dtype=bool)
        mask[positions] = True
        self.set_ids[pos, env] = set_id
        self.bits[pos, env] = np.packbits(mask)

    def _set_of(self, keys: np.ndarray, attr: np.ndarray | None = None) -> int:
        """The id of the set listing exactly ``keys`` (with exactly ``attr``), added to the table when new."""
        content = keys.tobytes() + (b"" if attr is None else attr.tobytes())
        digest = hashlib.blake2b(content, digest_size=16).digest()
        known = self.by_digest.get(digest)
        if known is not None and np.array_equal(self.sets[known].listed_keys(), keys):
            if attr is None or _same_bits(self.sets[known].features(), attr):
                return known
        set_id, self.next_id = self.next_id, self.next_id + 1
        self.sets[set_id] = EdgeSet.of(keys, attr)
        self.by_digest[digest] = set_id
        return set_id

    def table_bytes(self) -> int:
        return held_bytes(self.sets)

    def rebuild(self, steps: np.ndarray, envs: np.ndarray) -> np.ndarray:
        """The padded ``(B, 2, max_edges)`` int64 edge_index of each (step, env)."""
        return self.rebuild_with_attr(steps, envs)[0]

    def rebuild_with_attr(self, steps: np.ndarray, envs: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """The padded edge_index ``(B, 2, max_edges)`` int64 and edge_attr ``(B, max_edges, F_e)``
        in its own dtype (``None`` without edge features) of each (step, env)."""
        out = np.zeros((steps.size, 2, self.max_edges), dtype=np.int64)
        attr = None if self.edge_attr is None else np.zeros((steps.size, self.max_edges, self.edge_attr[0]), dtype=self.edge_attr[1])
        ids = self.set_ids[steps, envs]
        for set_id in np.unique(ids):
            rows = np.flatnonzero(ids == set_id)
            edge_set = self.sets[int(set_id)]
            chosen = np.unpackbits(self.bits[steps[rows], envs[rows]], axis=1, count=edge_set.size).view(bool)  # (rows, E)
            edges = edge_set.edges()
            whole = chosen.all(axis=1)  # every edge of the set, as a static graph's steps: copied, not searched
            out[rows[whole], :, : edge_set.size] = edges
            if attr is not None:
                attr[rows[whole], : edge_set.size] = edge_set.attr
            rows, chosen = rows[~whole], chosen[~whole]
            row, edge = np.nonzero(chosen)  # row by row, edges in listing order
            counts = chosen.sum(axis=1)
            column = np.arange(row.size) - np.repeat(np.cumsum(counts) - counts, counts)  # rank within the row
            for end in (0, 1):
                out[:, end][rows[row], column] = edges[end, edge]
            if attr is not None:
                attr[rows[row], column] = edge_set.features()[edge]
        return out, attr


class ValueColumn:
    """The nonzero values of one column of one key over a rollout, in append order, in the
    narrowest dtype that has held every one of them exactly so far (``dtype`` ``None``: all
    were exactly one, and nothing needs storing)."""

    def __init__(self, original: np.dtype):
        self.original = original
        self.dtype: np.dtype | None = None
        self.chunks: list[np.ndarray] = []
        self.count = 0

    def append(self, values: np.ndarray) -> None:
        if self.dtype is None and bool((values == 1).all()):  # one has a single bit pattern in every dtype
            self.count += values.size
            return
        if self.dtype is None or (self.dtype != self.original and not holds_exactly(values, self.dtype)):
            self._widen(values)
        self.chunks.append(values.astype(self.dtype, copy=False))  # values is already a copy: a mask picked it
        self.count += values.size

    def _widen(self, values: np.ndarray) -> None:
        """Move to the narrowest dtype holding ``values`` and everything stored before."""
        stored = np.concatenate(self.chunks) if self.chunks else np.ones(self.count, dtype=self.original)
        stored = stored.astype(self.original)
        least = 0 if self.dtype is None else self.dtype.itemsize
        wider = [d for d in NARROW_DTYPES if least <= d.itemsize < self.original.itemsize]
        self.dtype = next((d for d in wider if holds_exactly(values, d) and holds_exactly(stored, d)), self.original)
        self.chunks = [stored.astype(self.dtype)] if stored.size else []

    def finish(self) -> None:
        """One array from the chunks, for sampling by index."""
        if len(self.chunks) > 1:
            self.chunks = [np.concatenate(self.chunks)]

    def take(self, index: np.ndarray) -> np.ndarray | int:
        return 1 if self.dtype is None else self.chunks[0][index]


class ValueStore:
    """One observation key over a rollout, column by column (the last axis): a bit per element
    (nonzero or not) and the nonzero values as a :class:`ValueColumn`. A column equal to the same
    env's previous step (a static feature, say) is stored once: the step keeps a reference to the
    step that holds it. Zero is all-zero bits, so ``-0.0`` is stored as a value and comes back as ``-0.0``."""

    def __init__(self, shape: tuple[int, ...], dtype: np.dtype, buffer_size: int, n_envs: int):
        self.shape, self.dtype = shape, np.dtype(dtype)
        self.num_columns = shape[-1] if len(shape) >= 2 else 1
        self.num_rows = int(np.prod(shape)) // self.num_columns
        self.bits = np.zeros((buffer_size, n_envs, self.num_columns, (self.num_rows + 7) // 8), dtype=np.uint8)
        self.counts = np.zeros((buffer_size, n_envs, self.num_columns), dtype=np.int32)
        # the step whose data each (step, env, column) uses: itself, or an earlier step it repeats
        self.source = np.zeros((buffer_size, n_envs, self.num_columns), dtype=np.int32)
        self.columns = [ValueColumn(self.dtype) for _ in range(self.num_columns)]
        self.last: dict[int, tuple[int, np.ndarray]] = {}  # env -> (step, its (rows, columns) table)
        self.starts: np.ndarray | None = None

    def add(self, pos: int, env: int, array: np.ndarray) -> None:
        table = np.ascontiguousarray(array).reshape(-1, self.num_columns)  # (rows, columns)
        previous_pos, previous = self.last.get(env, (-1, None))
        for column, values in enumerate(self.columns):
            if previous is not None and _same_bits(table[:, column], previous[:, column]):
                self.source[pos, env, column] = self.source[previous_pos, env, column]
                continue
            nonzero = nonzero_bits(np.ascontiguousarray(table[:, column]))
            self.source[pos, env, column] = pos
            self.bits[pos, env, column] = np.packbits(nonzero)
            self.counts[pos, env, column] = nonzero.sum()
            values.append(table[nonzero, column])
        self.last[env] = (pos, table.copy())

    def finish(self) -> None:
        """Index every column's values by (step, env): where each one's values start."""
        if self.starts is None:
            counts = self.counts.astype(np.int64)
            self.starts = np.cumsum(counts.reshape(-1, self.num_columns), axis=0).reshape(counts.shape) - counts
            for column in self.columns:
                column.finish()

    def rebuild(self, steps: np.ndarray, envs: np.ndarray) -> np.ndarray:
        """The ``(B, *shape)`` arrays of each (step, env), in the key's dtype."""
        if self.starts is None:
            raise RuntimeError("finish() indexes a store's values; rebuild reads them after it")
        batch, starts = steps.size, self.starts
        out = np.zeros((batch, self.num_rows, self.num_columns), dtype=self.dtype)
        for column, values in enumerate(self.columns):
            held = self.source[steps, envs, column]  # (B,): the step that stores this column
            nonzero = np.unpackbits(self.bits[held, envs, column], axis=1, count=self.num_rows).view(bool)
            counts = self.counts[held, envs, column].astype(np.int64)
            first = starts[held, envs, column] - (np.cumsum(counts) - counts)  # (B,): index of a sample's values minus its rank
            out[:, :, column][nonzero] = values.take(np.repeat(first, counts) + np.arange(counts.sum()))
        return out.reshape(batch, *self.shape)


def narrow_action_dtype(action_space: gym.Space) -> np.dtype:
    """The narrowest unsigned dtype for Discrete / MultiDiscrete actions; others keep theirs."""
    if isinstance(action_space, spaces.Discrete):
        largest = int(action_space.start + action_space.n - 1)
        smallest = int(action_space.start)
    elif isinstance(action_space, spaces.MultiDiscrete):
        largest, smallest = int((action_space.start + action_space.nvec - 1).max()), int(action_space.start.min())
    else:
        return np.dtype(action_space.dtype)
    return np.dtype(np.min_scalar_type(largest)) if smallest >= 0 else np.dtype(action_space.dtype)


class CompactStorage(DictRolloutBuffer):
    """What the compact buffers add to SB3's Dict rollout buffers; list it first among the bases.

    SB3's bookkeeping (rewards, values, advantages, the minibatch permutation) is left to SB3;
    observations go to an :class:`EdgeStore` and one :class:`ValueStore` per other key, actions
    (and action masks) to the narrowest dtype that holds them, and ``_get_samples`` rebuilds the
    tensors SB3's buffer would hand out.
    """

    edges: EdgeStore | None = None
    """the rollout's edge sets (made by ``reset``, which carries the sets the last rollout used)"""
    on_device: tuple[DeviceEdges, dict[str, DeviceValues]] | None = None
    """the rollout's stores on a GPU learner's device, from its first ``get`` until ``reset``"""
    observation_shapes: dict[str, tuple[int, ...]]

    def reset(self) -> None:
        self.obs_shape = {}  # SB3's reset then allocates no observation arrays: they live in the stores
        self.on_device = None
        super().reset()
        shapes = get_obs_shape(self.observation_space)
        if not isinstance(shapes, dict):
            raise TypeError(f"a compact buffer stores Dict observations; got {self.observation_space}")
        self.observation_shapes = shapes
        self.actions = self.actions.astype(narrow_action_dtype(self.action_space))
        if isinstance(self, MaskableDictRolloutBuffer):
            self.action_masks = self.action_masks.astype(bool)  # MaskablePPO's masks are 0/1
        edge_attr = (shapes[EDGE_ATTR][-1], self._dtype(EDGE_ATTR)) if EDGE_ATTR in shapes else None
        self.edges = EdgeStore(shapes[EDGE_KEY][1], self.buffer_size, self.n_envs, carried=self.edges, edge_attr=edge_attr)
        self.stores = {
            key: ValueStore(shape, self._dtype(key), self.buffer_size, self.n_envs)
            for key, shape in shapes.items()
            if key not in (EDGE_KEY, EDGE_ATTR)
        }

    def _dtype(self, key: str) -> np.dtype:
        dtype = self.observation_space[key].dtype
        if dtype is None:
            raise TypeError(f"observation key {key!r} is a {type(self.observation_space[key]).__name__}; a compact buffer stores arrays")
        return dtype

    @property
    def edge_store(self) -> EdgeStore:
        """:attr:`edges`, which ``reset`` (run when the buffer is made) fills."""
        if self.edges is None:
            raise RuntimeError("a compact buffer's reset makes its edge store")
        return self.edges

    def add(self, obs: dict[str, np.ndarray], *args: Any, **kwargs: Any) -> None:  # type: ignore[override]  # SB3 names each argument; this passes them on
        # SB3 casts into the space's dtype on storing; so do we, before compressing.
        arrays = {
            key: np.asarray(obs[key]).astype(space.dtype, copy=False).reshape(self.n_envs, *self.observation_shapes[key])
            for key, space in self.observation_space.spaces.items()
        }
        for env in range(self.n_envs):
            self.edge_store.add(self.pos, env, arrays[EDGE_KEY][env], arrays[EDGE_ATTR][env] if EDGE_ATTR in arrays else None)
            for key, store in self.stores.items():
                store.add(self.pos, env, arrays[key][env])
        super().add(obs, *args, **kwargs)

    def get(self, batch_size: int | None = None) -> Generator[Any, None, None]:
        for store in self.stores.values():
            store.finish()
        if self.device.type != "cpu" and self.on_device is None:  # once per rollout: every epoch's minibatches unpack there
            self.on_device = (
                DeviceEdges(self.edge_store, self.device),
                {key: DeviceValues(store, self.device) for key, store in self.stores.items()},
            )
        yield from super().get(batch_size)

    def _get_samples(self, batch_inds: np.ndarray, env=None):
        samples: DictRolloutBufferSamples | MaskableDictRolloutBufferSamples = super()._get_samples(batch_inds, env)
        envs, steps = np.divmod(batch_inds, self.buffer_size)  # SB3 flattens (step, env) env-major
        observations = self._observations(steps, envs)
        samples = samples._replace(observations=observations)
        if samples.actions.dtype != torch.float32:  # sb3-contrib returns actions as stored; SB3 stored the space's dtype
            samples = samples._replace(actions=self.to_torch(self.actions[batch_inds].astype(self.action_space.dtype)))
        if isinstance(samples, MaskableDictRolloutBufferSamples):
            samples = samples._replace(action_masks=samples.action_masks.float())
        return samples

    def _observations(self, steps: np.ndarray, envs: np.ndarray) -> dict[str, torch.Tensor]:
        """The padded observation tensors of each (step, env), rebuilt on the device where the
        rollout was copied there (:mod:`graphtransfer.training.device_rollout`), else on the host."""
        if self.on_device is not None:
            edges, values = self.on_device
            steps_t, envs_t = (torch.from_numpy(index).to(self.device) for index in (steps, envs))
            edge_index, edge_attr = edges.rebuild(steps_t, envs_t)
            structure = {EDGE_KEY: edge_index} | ({} if edge_attr is None else {EDGE_ATTR: edge_attr})
            return {
                key: structure[key] if key in structure else values[key].rebuild(steps_t, envs_t) for key in self.observation_space.spaces
            }
        edge_index_np, edge_attr_np = self.edge_store.rebuild_with_attr(steps, envs)
        on_host = {EDGE_KEY: edge_index_np} | ({} if edge_attr_np is None else {EDGE_ATTR: edge_attr_np})
        # each array is rebuilt fresh for this minibatch: the tensors may share its memory (a copy of a
        # minibatch's edges at 148,640 nodes took 70 ms, 1.1 s of an update)
        return {
            key: self.to_torch(on_host[key] if key in on_host else self.stores[key].rebuild(steps, envs), copy=False)
            for key in self.observation_space.spaces
        }


class CompactDictRolloutBuffer(CompactStorage, DictRolloutBuffer):
    """SB3's ``DictRolloutBuffer`` for graph observations, stored compactly (see the module)."""


class CompactMaskableDictRolloutBuffer(CompactStorage, MaskableDictRolloutBuffer):  # type: ignore[misc]  # sb3-contrib's add takes *args, SB3's names obs
    """sb3-contrib's ``MaskableDictRolloutBuffer`` for graph observations, stored compactly."""


class RolloutEstimate(NamedTuple):
    """A compact buffer's size: the edge-set table, kept once, plus a part per env step."""

    table_bytes: int
    step_bytes: float

    def total(self, n_steps: int, n_envs: int) -> int:
        return int(self.table_bytes + self.step_bytes * n_steps * n_envs)

    def steps_that_fit(self, budget: int, n_envs: int) -> int:
        return int((budget - self.table_bytes) // max(self.step_bytes * n_envs, 1))


def estimate_rollout_bytes(buffer_class: type[CompactStorage], env: gym.Env, probe_steps: int = 16) -> RolloutEstimate:
    """What ``buffer_class`` will hold, measured by filling one with ``probe_steps`` steps of
    ``env`` under random actions (masked where the env has ``action_masks``), as an untrained
    policy acts. Steps are averaged, since residual graphs shrink within an episode; the table is
    counted once per graph in ``env.graphs`` (one graph for envs without that list), at the size
    of the largest edge set the probe met. An edge set that a step within an episode adds to the
    table (edge features that follow the trajectory, as matching's gains do, or a view that moves,
    as path's ball does) is counted with that step, since every rollout step adds its own.
    ``env`` is reset and stepped.
    """
    buffer = buffer_class(probe_steps, check_contract(env.observation_space), env.action_space, device="cpu", n_envs=1)
    obs, _ = env.reset(seed=0)
    env.action_space.seed(0)
    features = features_of(env)
    masks = features.action_masks
    first, grown = True, 0  # whether obs starts an episode; table bytes that steps within episodes added
    for _ in range(probe_steps):
        mask = masks() if masks is not None else None
        action = env.action_space.sample(mask=mask.astype(np.int8)) if mask is not None and mask.any() else env.action_space.sample()
        extra: dict[str, Any] = {"action_masks": mask} if mask is not None and isinstance(buffer, MaskableDictRolloutBuffer) else {}
        batch = {key: np.asarray(value)[None] for key, value in obs.items()}
        before = buffer.edge_store.table_bytes()
        buffer.add(batch, np.asarray(action), np.zeros(1), np.zeros(1), torch.zeros(1), torch.zeros(1), **extra)
        grown += 0 if first else buffer.edge_store.table_bytes() - before
        obs, _, terminated, truncated, _ = env.step(action)
        first = terminated or truncated
        if first:
            obs, _ = env.reset()
    table = buffer.edge_store.table_bytes()
    largest_set = max(held_bytes(edge_set) for edge_set in buffer.edge_store.sets.values())
    return RolloutEstimate(largest_set * features.num_graphs, (held_bytes(buffer) - table + grown) / probe_steps)
