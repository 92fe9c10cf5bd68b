"""Model folders: safetensors tensors plus a JSON config, loaded without pickle, replaced atomically.

A folder holds ``config.json`` (the :class:`RunConfig`, provenance, library versions, and the name
and sha256 of every tensor file) and the tensor files it names: ``model-<sha>.safetensors`` (the
policy), for a training run stopped before its budget ``optimizer-<sha>.safetensors`` (Adam's
moments, for ``train --resume``), and for a model with experts ``expert-<sha>.safetensors``, one per
further weight set of the same network (roles ``expert-1``, ``expert-2``, ...: see
:attr:`Checkpoint.experts`). Loading reads JSON and safetensors only; nothing is unpickled.
``config.yaml`` repeats the config for people and ``train --config``; it is written just before
the commit, and config.json stays the record that loading reads.

Why tensor files carry their hash in their name: a save must never leave a folder that no longer
loads. Two files cannot be replaced together atomically. Replacing ``model.safetensors`` and then
``config.json`` in place leaves, if the process dies between the two renames, new weights beside a
config naming the old sha256, and the previous model is lost. Here each tensor file is written to a
temporary file, flushed to disk and renamed to a name derived from its content, which no current
file uses (or an identical one does); ``config.json`` is replaced last the same way, and that one
rename is the commit. Before it the folder holds the old model (plus files nothing names), after it
the new one. Files that ``config.json`` no longer names are deleted after the commit, and each save
also removes those a killed save left behind. We did not build a new folder and swap it in: a swap
is two renames with a moment where no folder exists at all, and it would throw away files users
keep beside their model (a solution CSV, say).
"""

from __future__ import annotations

import hashlib
import json
import re
import tempfile
import time
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, NamedTuple

import gymnasium as gym
import torch
from safetensors import SafetensorError
from safetensors.torch import load, save

from graphtransfer.config import RunConfig
from graphtransfer.envs.contract import check_contract
from graphtransfer.envs.protocol import head_of
from graphtransfer.errors import CheckpointError, GraphTransferError
from graphtransfer.io import atomic_write, folder_lock, not_a_regular_file, sync_folder
from graphtransfer.nn import Q_POLICIES, build_policy, build_q_policy
from graphtransfer.nn.qnetwork import AnyPolicy
from graphtransfer.nn.user_conv import check_conv_named
from graphtransfer.zoo import zoo_folder, zoo_names

CONFIG = "config.json"
CONFIG_YAML = "config.yaml"
"""the same RunConfig for people and for ``train --config``; written just before config.json commits"""
FORMAT, FORMAT_VERSION = "graphtransfer-model", 2
READABLE_VERSIONS = (1, 2)
"""version 1 kept the weights in a fixed ``model.safetensors``, replaced in place"""
INPUT_WEIGHTS = (
    "features_extractor.encode.0.weight",
    "features_extractor.convs.0.lin_l.weight",
    "features_extractor.convs.0.lin.weight",
    "features_extractor.convs.0.nn.0.weight",
)
"""the first weight that reads the node features, ``(width, node features)``: the input projection,
or the first layer's of a model without one (``model.project_input: false``); its second size is
the node feature count an env must provide"""
# what a save owns and may delete once config.json no longer names it: tensor files (version 1's
# fixed name included) and the temporary files of saves that were killed
_TENSOR_FILE = r"(?:model|optimizer|expert)-[0-9a-f]{16}\.safetensors"
_MANAGED = re.compile(rf"^(?:model\.safetensors|{_TENSOR_FILE}|\.(?:config\.json|config\.yaml|{_TENSOR_FILE})\..+\.tmp)$")
_ZIP_MAGIC, _PICKLE_PROTOCOLS = b"PK\x03\x04", range(2, 6)


@dataclass
class Checkpoint:
    config: RunConfig
    tensors: dict[str, torch.Tensor]
    meta: dict[str, Any]
    folder: Path
    optimizer: dict[str, torch.Tensor] | None = None
    """the optimizer's state tensors, only in checkpoints of interrupted training runs"""
    experts: list[dict[str, torch.Tensor]] = field(default_factory=list)
    """further weight sets of the same network (the names and shapes of ``tensors``): a model with
    experts decodes its rollouts taking turns with them (:func:`graphtransfer.solve.rollouts.best_of_rollouts`).
    Only ``tensors`` are trained, fine-tuned, adapted or exported (``transfer`` carries the experts
    unchanged); the built-in MIS model has one expert
    (:mod:`graphtransfer.zoo`)."""

    def interrupted_at(self) -> tuple[int, int] | None:
        """``(steps, budget)`` when the folder holds a training run stopped before its budget
        (what ``train --resume`` continues); None for a finished run or a folder no training wrote."""
        training = self.meta.get("training")
        if not isinstance(training, dict) or training.get("complete", True):
            return None
        return int(training.get("steps", 0)), int(training.get("budget", self.config.ppo.total_timesteps))


@dataclass
class LoadReport:
    """How the tensors of a checkpoint matched a freshly built model."""

    loaded: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    resized: list[tuple[str, tuple, tuple]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.missing or self.unexpected or self.resized)

    def summary(self) -> str:
        counts = (len(self.loaded), len(self.missing), len(self.unexpected), len(self.resized))
        return "tensors loaded {}, missing {}, unexpected {}, resized {}".format(*counts)


def state_tensors(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The module's state with each shared tensor once, under its first name.

    SB3 registers one features extractor as ``features_extractor``, ``pi_features_extractor``
    and ``vf_features_extractor``; safetensors refuses such aliases, so they are dropped here.
    """
    seen: set[tuple[int, tuple]] = set()
    tensors = {}
    for name, tensor in module.state_dict().items():
        key = (tensor.data_ptr(), tuple(tensor.shape))
        if key not in seen:
            seen.add(key)
            tensors[name] = tensor
    return tensors


def save_checkpoint(
    folder: str | Path,
    module: torch.nn.Module,
    config: RunConfig,
    info: dict[str, Any] | None = None,
    optimizer: torch.optim.Optimizer | None = None,
    experts: list[dict[str, torch.Tensor]] | None = None,
) -> Path:
    """Write the module's weights (and the optimizer's state, and ``experts``: weight sets of the
    same network, see :attr:`Checkpoint.experts`), then commit them with one rename of
    ``config.json``; see the module docstring for why a killed save cannot break the folder.
    Saves into one folder take its lock (:func:`graphtransfer.io.folder_lock`) one at a time, so
    one never deletes the files another has just committed."""
    folder = Path(folder)
    for number, tensors in enumerate(experts or [], 1):
        check_expert(tensors, state_tensors(module), f"{folder}: expert {number}")
    with folder_lock(folder):
        return _save_locked(folder, module, config, info, optimizer, experts or [])


class SaveFailed(GraphTransferError):
    """A model could not be written to its folder (full disk, read-only); it was kept elsewhere if possible."""


UNSAVED_PREFIX = "graphtransfer-unsaved-"
"""the temporary folder (in the system's temporary directory) that keeps a model whose save failed"""


def save_or_keep(
    folder: str | Path,
    module: torch.nn.Module,
    config: RunConfig,
    info: dict[str, Any] | None = None,
    optimizer: torch.optim.Optimizer | None = None,
    what: str = "trained model",
    then: Callable[[Path], str] = lambda kept: "",
    experts: list[dict[str, torch.Tensor]] | None = None,
) -> Path:
    """:func:`save_checkpoint`, or, where the folder cannot take it (full disk, read-only), the same
    model saved into a new temporary folder and :class:`SaveFailed` saying where (``then(kept)``: what
    else the caller has to say, e.g. its logs' place), so that hours of training are never lost at their last step."""
    try:
        return save_checkpoint(folder, module, config, info, optimizer=optimizer, experts=experts)
    except OSError as err:
        try:
            kept = save_checkpoint(tempfile.mkdtemp(prefix=UNSAVED_PREFIX), module, config, info, optimizer=optimizer, experts=experts)
        except OSError as second:
            raise SaveFailed(
                f"{folder}: the {what} could not be saved ({err.strerror or err}), nor kept in a temporary folder "
                f"({second.strerror or second}); free some space and run it again"
            ) from None
        raise SaveFailed(
            f"{folder}: the {what} could not be saved ({err.strerror or err}); it is kept in {kept}, a complete model "
            f"folder: move it where you want it{then(kept)}"
        ) from None


def _save_locked(
    folder: Path,
    module: torch.nn.Module,
    config: RunConfig,
    info: dict[str, Any] | None,
    optimizer: torch.optim.Optimizer | None,
    experts: list[dict[str, torch.Tensor]],
) -> Path:
    files = {"weights": _write_tensors(folder, "model", state_tensors(module))}
    for number, expert in enumerate(experts, 1):
        files[f"{EXPERT_ROLE}{number}"] = _write_tensors(folder, "expert", expert)
    meta: dict[str, Any] = {"format": FORMAT, "format_version": FORMAT_VERSION, "config": config.to_dict()}
    if optimizer is not None:
        tensors, groups = optimizer_state(optimizer, module)
        files["optimizer"] = _write_tensors(folder, "optimizer", tensors)
        meta["optimizer_groups"] = groups
    meta.update(
        files=files,
        created=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        versions={pkg: _version(pkg) for pkg in ("graphtransfer", "torch", "stable-baselines3", "torch-geometric")},
        **(info or {}),
    )
    atomic_write(folder / CONFIG_YAML, config.to_yaml().encode())
    atomic_write(folder / CONFIG, (json.dumps(meta, indent=2) + "\n").encode())
    sync_folder(folder)
    _remove_unnamed(folder, {entry["name"] for entry in files.values()})
    return folder


def is_model_folder(folder: Path) -> bool:
    """Whether ``folder`` holds a graphtransfer model (its ``config.json`` says so), which a save may
    replace; a folder of anything else is never written into (:func:`graphtransfer.io.check_output_folder`)."""
    try:
        meta = json.loads((Path(folder) / CONFIG).read_text())
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(meta, dict) and meta.get("format") == FORMAT


def read_checkpoint(folder: str | Path, env: str | None = None) -> Checkpoint:
    """Read and verify a model folder. Nothing here unpickles or imports: JSON and safetensors only.

    A model of a user env loads only when the caller names that env (``env``, what the user typed
    as ``--env``): a folder never decides what code runs. A save that commits while this reads
    is waited out: when a file ``config.json`` named has gone, ``config.json`` is read again.
    A built-in model's name (``mis``: :mod:`graphtransfer.zoo`) reads the packaged folder, unless
    a path of that name exists.
    """
    folder = zoo_folder(folder) or Path(folder)
    _refuse_non_folder(folder)
    for attempt in range(_READ_ATTEMPTS):
        meta = _read_meta(folder)
        config = RunConfig.from_dict(meta["config"], str(folder / CONFIG))
        _check_algo_head(config, folder)
        check_env_named(config, env, folder)
        check_conv_named(config.model.conv, folder)
        try:
            tensors = {role: _read_tensors(folder, entry) for role, entry in _named_files(folder, meta).items()}
        except _Replaced:
            if attempt == _READ_ATTEMPTS - 1:
                raise CheckpointError(f"{folder}: is being rewritten by another process over and over; try again once it is done") from None
            continue
        return Checkpoint(config, tensors["weights"], meta, folder, tensors.get("optimizer"), _experts(folder, tensors))
    raise AssertionError("unreachable")


_READ_ATTEMPTS = 20
EXPERT_ROLE = "expert-"
"""the roles of a model's experts among config.json's files: ``expert-1``, ``expert-2``, ..."""


def _experts(folder: Path, tensors: dict[str, dict[str, torch.Tensor]]) -> list[dict[str, torch.Tensor]]:
    """The expert weight sets among the files read (roles ``expert-1``, ``expert-2``, ... in that
    order, none missing), each checked to fit the weights."""
    count = sum(1 for role in tensors if role.startswith(EXPERT_ROLE))
    experts = []
    for number in range(1, count + 1):
        role = f"{EXPERT_ROLE}{number}"
        if role not in tensors:
            raise CheckpointError(f"{folder / CONFIG}: names {count} experts but no {role!r}; the folder is damaged, restore it")
        experts.append(check_expert(tensors[role], tensors["weights"], f"{folder}: {role}"))
    return experts


_SAME_NETWORK = "an expert is another weight set of the model's network (the same tensor names and shapes); restore the folder or drop it"


def check_expert(expert: dict[str, torch.Tensor], weights: dict[str, torch.Tensor], where: str) -> dict[str, torch.Tensor]:
    """``expert``, where it holds the very tensor names and shapes of ``weights`` (an expert is another
    weight set of the same network); else :class:`CheckpointError` naming the first difference."""
    names = sorted(set(expert) ^ set(weights))
    if names:
        which = "lacks" if names[0] in weights else "has an extra tensor"
        raise CheckpointError(f"{where}: {which} {names[0]}; {_SAME_NETWORK}")
    for name, tensor in weights.items():
        if expert[name].shape != tensor.shape:
            raise CheckpointError(f"{where}: {name} is {tuple(expert[name].shape)}, the weights' {tuple(tensor.shape)}; {_SAME_NETWORK}")
    return expert


class _Replaced(Exception):
    """A tensor file named by the config.json just read is gone: a newer save committed meanwhile."""


def _check_algo_head(config: RunConfig, folder: Path) -> None:
    """A DQN model is a Q-network, which exists for the heads of :data:`Q_POLICIES` only."""
    if config.algo == "dqn" and config.head and config.head not in Q_POLICIES:
        heads = " or ".join(map(str, Q_POLICIES))
        raise CheckpointError(
            f"{folder / CONFIG}: algo 'dqn' with a {config.head} head; DQN models have a {heads} head, "
            "the model folder is damaged or was edited, retrain or restore it"
        )


def check_env_named(config: RunConfig, env: str | None, folder: Path) -> None:
    """A model trained on a user env loads only with that env named by the caller; a built-in
    task's model needs none (an ``env`` given for it is refused, since it would be ignored)."""
    if config.env is None and env is not None:
        raise CheckpointError(f"{folder}: holds a model of the built-in task {config.task}; drop --env {env}")
    if config.env is not None and env != config.env:
        found = "none was given" if env is None else f"--env {env} was given"
        raise CheckpointError(
            f"{folder}: was trained on the user env {config.env!r}, and {found}; loading a model folder never imports code it names, "
            f"so pass --env {config.env} (in Python: env={config.env!r}) if you trust that env"
        )


def load_strict(module: torch.nn.Module, tensors: dict[str, torch.Tensor]) -> LoadReport:
    """Copy ``tensors`` into ``module``; every tensor must match by name and shape.

    Raises:
        CheckpointError: naming each missing, unexpected or differently shaped tensor.
    """
    target = state_tensors(module)
    report = LoadReport(
        missing=sorted(set(target) - set(tensors)),
        unexpected=sorted(set(tensors) - set(target)),
        resized=[(n, tuple(tensors[n].shape), tuple(t.shape)) for n, t in target.items() if n in tensors and tensors[n].shape != t.shape],
    )
    if not report.ok:
        details = [f"missing {n}" for n in report.missing] + [f"unexpected {n}" for n in report.unexpected]
        details += [f"{n}: checkpoint {a} vs model {b}" for n, a, b in report.resized]
        raise CheckpointError(
            "checkpoint does not fit this model (" + "; ".join(details[:6]) + (" ..." if len(details) > 6 else "") + "); "
            "the node-feature width, the task and the architecture must match the training run"
        )
    with torch.no_grad():
        for name, tensor in target.items():
            tensor.copy_(tensors[name])
            report.loaded.append(name)
    return report


def check_fits(checkpoint: Checkpoint, env: gym.Env) -> None:
    """Refuse, before any model is built, a checkpoint whose head or node features ``env`` lacks."""
    config, where = checkpoint.config, checkpoint.folder
    head = head_of(env)
    if config.head and head != config.head:  # folders written before heads were recorded have none
        raise CheckpointError(
            f"{where}: the model has a {config.head} head, but {config.name}'s env now needs a {head} head "
            f"(its action space is {env.action_space}); the env's actions differ from training: "
            "restore the env the model was trained with, or retrain"
        )
    name = next((name for name in INPUT_WEIGHTS if name in checkpoint.tensors), None)
    x = typing.cast(gym.spaces.Box, check_contract(env.observation_space)["x"])  # the contract's x: a Box (max_nodes, F)
    width = x.shape[-1]
    encoder = None if name is None else checkpoint.tensors[name]
    if encoder is not None and encoder.shape[1] != width:
        raise CheckpointError(
            f"{where}: {name} is {tuple(encoder.shape)} in the checkpoint but this env needs {(encoder.shape[0], width)}: "
            f"the env's node features differ from training ({encoder.shape[1]} then, {width} now); "
            "use the env and env settings the model was trained with, or retrain"
        )


def load_policy_into_env(checkpoint: Checkpoint, env: gym.Env) -> tuple[AnyPolicy, LoadReport]:
    """Build a policy for ``env``'s spaces from the checkpoint's config and load it strictly: the
    actor-critic of PPO and A2C, or DQN's Q-network."""
    check_fits(checkpoint, env)
    config = checkpoint.config
    build = build_q_policy if config.algo == "dqn" else build_policy
    policy = build(config.head or head_of(env), config.model, check_contract(env.observation_space), env.action_space)
    return policy, load_strict(policy, checkpoint.tensors)


def optimizer_state(optimizer: torch.optim.Optimizer, module: torch.nn.Module) -> tuple[dict[str, torch.Tensor], list[dict]]:
    """The optimizer's state as named tensors (``<parameter name>.<state key>``) and its parameter
    groups as JSON, so it can be stored in safetensors. The optimizer must hold the module's
    parameters in ``named_parameters`` order, as SB3's policies build it."""
    state = optimizer.state_dict()
    names = _parameter_names(optimizer, module)
    tensors = {
        f"{names[index]}.{key}": torch.as_tensor(value).detach().cpu().contiguous()
        for index, per_parameter in state["state"].items()
        for key, value in per_parameter.items()
    }
    groups = [{key: value for key, value in group.items() if key != "params"} for group in state["param_groups"]]
    return tensors, groups


def load_optimizer_state(optimizer: torch.optim.Optimizer, module: torch.nn.Module, checkpoint: Checkpoint) -> None:
    """Restore what :func:`optimizer_state` stored into ``optimizer`` (built for ``module``)."""
    if checkpoint.optimizer is None:
        raise CheckpointError(f"{checkpoint.folder}: holds no optimizer state; only an interrupted training run can be resumed")
    names = _parameter_names(optimizer, module)
    index_of = {name: index for index, name in enumerate(names)}
    state: dict[int, dict[str, torch.Tensor]] = {}
    for key, tensor in checkpoint.optimizer.items():
        name, _, state_key = key.rpartition(".")
        if name not in index_of:
            raise CheckpointError(f"{checkpoint.folder}: optimizer state for {name!r}, which this model does not have; retrain")
        state.setdefault(index_of[name], {})[state_key] = tensor
    saved_groups = checkpoint.meta.get("optimizer_groups", [])
    current = optimizer.state_dict()["param_groups"]
    if len(saved_groups) != len(current):
        raise CheckpointError(f"{checkpoint.folder}: {len(saved_groups)} optimizer parameter groups saved, the model has {len(current)}")
    groups = [{**saved, "params": group["params"]} for saved, group in zip(saved_groups, current, strict=True)]
    optimizer.load_state_dict({"state": state, "param_groups": groups})


def _parameter_names(optimizer: torch.optim.Optimizer, module: torch.nn.Module) -> list[str]:
    """The names of the optimizer's parameters, in its order; state_dict indexes them so."""
    named = list(module.named_parameters())
    held = [parameter for group in optimizer.param_groups for parameter in group["params"]]
    if len(held) != len(named) or any(a is not b for a, (_, b) in zip(held, named, strict=False)):
        raise ValueError("the optimizer must hold the module's parameters in named_parameters() order, as SB3's policies build it")
    return [name for name, _ in named]


def _write_tensors(folder: Path, kind: str, tensors: dict[str, torch.Tensor]) -> dict[str, str]:
    """Save ``tensors`` as ``<kind>-<sha256 prefix>.safetensors``; returns its name and sha256."""
    # serialised in memory rather than with save_file, which keeps temporary files of its own that a
    # killed save would leave behind under names this module does not own
    data = save({name: t.detach().cpu().contiguous() for name, t in tensors.items()})
    digest = hashlib.sha256(data).hexdigest()
    name = f"{kind}-{digest[:16]}.safetensors"
    atomic_write(folder / name, data)
    return {"name": name, "sha256": digest}


def _remove_unnamed(folder: Path, named: set[str]) -> None:
    """Delete tensor files and temporary files of earlier saves that ``config.json`` no longer names."""
    for path in folder.iterdir():
        if _MANAGED.match(path.name) and path.name not in named:
            path.unlink(missing_ok=True)


def _refuse_non_folder(path: Path) -> None:
    """Explain what a path that is not a model folder is, without ever unpickling it."""
    if path.is_dir():
        return
    special = not_a_regular_file(path)
    if special:
        raise CheckpointError(f"{path}: {special}")
    kind = _magic(path) if path.is_file() else ""
    if path.suffix == ".zip" or kind == "zip":
        raise CheckpointError(
            f"{path}: SB3 zip files are not loaded (their loader unpickles and can run code); pass a graphtransfer model folder"
        )
    if kind == "pickle":
        raise CheckpointError(
            f"{path}: is a Python pickle (torch.save output?); pickles can run code and are never loaded; pass a model folder"
        )
    if kind == "safetensors":
        raise CheckpointError(f"{path}: is a lone safetensors file; pass the model folder that holds it and its {CONFIG}")
    what = "is a file" if path.exists() else "does not exist"
    raise CheckpointError(
        f"{path}: {what}; expected a model folder written by 'graphtransfer train' or 'graphtransfer transfer', "
        f"or a built-in model ({', '.join(zoo_names())})"
    )


def _read_meta(folder: Path) -> dict[str, Any]:
    path = folder / CONFIG
    special = not_a_regular_file(path)
    if special:
        raise CheckpointError(f"{path}: {special}")
    if not path.is_file():
        raise CheckpointError(f"{folder}: not a model folder (no {CONFIG}); train one with 'graphtransfer train'")
    try:
        meta = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise CheckpointError(f"{path}: not valid JSON ({err})") from None
    except RecursionError:
        raise CheckpointError(f"{path}: nests its values too deeply to read; the folder is damaged, retrain or restore it") from None
    version = meta.get("format_version") if isinstance(meta, dict) else None
    if isinstance(meta, dict) and meta.get("format") == FORMAT and type(version) is not int:  # bool is an int subclass: true == 1
        raise CheckpointError(
            f"{path}: format_version is {json.dumps(version)}; expected an integer ({' or '.join(map(str, READABLE_VERSIONS))}), "
            "the folder is damaged or was edited, retrain or restore it"
        )
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or version not in READABLE_VERSIONS:
        found = (meta.get("format"), meta.get("format_version")) if isinstance(meta, dict) else (None, None)
        raise CheckpointError(
            f"{path}: format {found[0]!r} v{found[1]}; this graphtransfer reads {FORMAT!r} "
            f"v{' and v'.join(map(str, READABLE_VERSIONS))}: retrain, or use the graphtransfer version that wrote it"
        )
    if not isinstance(meta.get("config"), dict):
        raise CheckpointError(f"{path}: has no 'config' object; the folder is damaged, retrain or restore it")
    return meta


class _TensorFile(NamedTuple):
    name: str
    """a plain ``.safetensors`` file name inside the model folder"""
    sha256: object
    """the digest ``config.json`` records (as read: a file whose digest differs, or has none, is refused)"""


def _named_files(folder: Path, meta: dict[str, Any]) -> dict[str, _TensorFile]:
    """The tensor files ``config.json`` names, each checked to be a plain file name in ``folder``."""
    files: object
    if meta["format_version"] == 1:
        files = {"weights": {"name": "model.safetensors", "sha256": meta.get("weights_sha256")}}
    else:
        files = meta.get("files")
    if not isinstance(files, dict) or "weights" not in files:
        raise CheckpointError(f"{folder / CONFIG}: names no weights file; the folder is damaged, retrain or restore it")
    for entry in files.values():
        name = entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(name, str) or Path(name).name != name or not name.endswith(".safetensors"):
            raise CheckpointError(f"{folder / CONFIG}: names {name!r}; expected a .safetensors file name inside the model folder")
    return {role: _TensorFile(entry["name"], entry.get("sha256")) for role, entry in files.items()}


def _read_tensors(folder: Path, entry: _TensorFile) -> dict[str, torch.Tensor]:
    """The tensors of one named file, parsed from the very bytes whose sha256 was checked."""
    path = folder / entry.name
    special = not_a_regular_file(path)
    if special:
        raise CheckpointError(f"{path}: {special}")
    try:
        data = path.read_bytes() if path.is_file() else None
    except FileNotFoundError:  # deleted between the two calls
        data = None
    if data is None:
        if _committed_since(folder, entry.name):
            raise _Replaced
        raise CheckpointError(f"{path}: missing, though {CONFIG} names it; the folder is incomplete, restore it or retrain")
    if hashlib.sha256(data).hexdigest() != entry.sha256:
        raise CheckpointError(f"{path}: sha256 differs from {CONFIG}; the file is damaged or was replaced, retrain or restore it")
    try:
        tensors = load(data)
    except SafetensorError as err:
        kind = _magic(data)  # to explain the failure; parsing it as safetensors cannot run code
        if kind in ("zip", "pickle"):
            raise CheckpointError(
                f"{path}: is a {kind} file, not safetensors; such files can run code and are never loaded; retrain"
            ) from None
        raise CheckpointError(f"{path}: unreadable safetensors file ({err}); the file is damaged, retrain or restore it") from None
    _refuse_other_dtypes_and_non_finite(path, tensors)
    return tensors


SAVED_DTYPE = torch.float32
"""the dtype of every tensor a model folder holds (weights, experts, optimizer state): the networks'
own, as :func:`save_checkpoint` writes them; a file holding another is refused, never cast (an
integer copy truncates every weight, a half-precision one rounds them)"""


def _refuse_other_dtypes_and_non_finite(path: Path, tensors: dict[str, torch.Tensor]) -> None:
    """Tensors of another dtype than :data:`SAVED_DTYPE`, and weights holding NaN or infinity (a policy
    whose every action is garbage), are refused; the first in name order is named (safetensors' own order varies)."""
    for name, tensor in sorted(tensors.items()):
        if tensor.dtype != SAVED_DTYPE:
            found, expected = (str(dtype).removeprefix("torch.") for dtype in (tensor.dtype, SAVED_DTYPE))
            raise CheckpointError(
                f"{path}: tensor {name} is stored as {found}, but models are saved as {expected} and nothing is cast on loading; "
                "the file was converted or edited: restore it from the model as saved, or retrain"
            )
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            raise CheckpointError(
                f"{path}: tensor {name} holds NaN or infinite values; the training diverged or the file was edited, retrain"
            )


def _committed_since(folder: Path, name: str) -> bool:
    """Whether config.json no longer names ``name``: a save committed after it was read."""
    try:
        files = json.loads((folder / CONFIG).read_text()).get("files", {})
    except (OSError, ValueError, AttributeError):
        return False
    return isinstance(files, dict) and name not in {entry.get("name") for entry in files.values() if isinstance(entry, dict)}


def _magic(source: Path | bytes) -> str:
    """``"safetensors"``, ``"zip"``, ``"pickle"`` or ``""``, from the first bytes only (of a file or of its content)."""
    if isinstance(source, bytes):
        head = source[:9]
    else:
        with open(source, "rb") as handle:
            head = handle.read(9)
    if head[8:9] == b"{":  # an 8-byte header length, then the JSON header
        return "safetensors"
    if head[:4] == _ZIP_MAGIC:
        return "zip"
    if len(head) >= 2 and head[0] == 0x80 and head[1] in _PICKLE_PROTOCOLS:  # PROTO opcode, protocol 2-5
        return "pickle"
    return ""


def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "unknown"
