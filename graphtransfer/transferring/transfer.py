"""Moving a trained policy to other (larger) graphs: new model, same weights, a report."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

import torch
from stable_baselines3.common.base_class import BaseAlgorithm

from graphtransfer.checkpoint import LoadReport, is_model_folder, read_checkpoint, save_or_keep
from graphtransfer.config import Decoding, RunConfig, Runtime
from graphtransfer.config.schema import Device
from graphtransfer.envs.protocol import head_of
from graphtransfer.errors import CheckpointError, UsageError
from graphtransfer.graphs import Graph, load_graphs, resolve
from graphtransfer.io import check_output_folder
from graphtransfer.nn.devices import check_device
from graphtransfer.solve.evaluate import EvalRow, evaluate_policy
from graphtransfer.solve.loading import policy_for_graphs
from graphtransfer.training.callbacks import eval_score
from graphtransfer.training.logs import discard_earlier_outputs
from graphtransfer.training.loop import TrainResult, default_run_folder, finetune
from graphtransfer.training.model import load_model
from graphtransfer.transferring.adaptation import ADAPT_SUBGRAPH_NODES, AdaptResult, adapt, check_adapt_seconds
from graphtransfer.zoo import zoo_folder, zoo_names


@dataclass
class TransferResult:
    source: Path
    folder: Path
    config: RunConfig
    report: LoadReport
    rows: list[EvalRow]
    finetune: TrainResult | None = None
    finetuned_rows: list[EvalRow] | None = None
    graphs: list[Graph] = field(default_factory=list, repr=False)
    """the destination graphs"""
    env: str | None = None
    """the user env the model runs in, if not a built-in task"""
    adapted: AdaptResult | None = None
    adapted_rows: list[EvalRow] | None = None
    kept: str = "zero-shot"
    """which weights were saved after adaptation: ``adapted``, or ``zero-shot`` where adapting made them worse"""
    interrupted: bool = False
    """fine-tuning or adapting was stopped by Ctrl-C (or SIGTERM, SIGHUP): the model as it then was is saved, unevaluated
    (fine-tuned), or the zero-shot one (adapted weights are kept only once evaluated)"""
    experts: int = 0
    """how many experts the source has (:attr:`graphtransfer.checkpoint.Checkpoint.experts`): the saved model carries
    them unchanged, and every evaluation here takes turns with them as ``predict`` will; only the model's own
    weights are fine-tuned or adapted"""

    @cached_property
    def model(self) -> BaseAlgorithm:
        """The transferred model as the SB3 algorithm it was trained with (``PPO`` or ``MaskablePPO``,
        ``A2C``, DQN) on the destination graphs, built from the saved folder on first use (see
        :func:`~graphtransfer.training.model.load_model`)."""
        return load_model(self.folder, self.graphs, self.env)


def resolve_model(src: str | Path, task: str) -> Path:
    """A model folder, the name of the graph set a model of ``task`` was trained on (its run
    folder ``runs/TASK/SRC``), or a built-in model's name (:mod:`graphtransfer.zoo`), in that order."""
    path = Path(src)
    if path.exists() or path.suffix == ".zip":  # anything but a model folder: read_checkpoint explains what it is
        return path
    candidate = default_run_folder(RunConfig(task=task, graphs=str(src)))
    if candidate.is_dir():
        return candidate
    built_in = zoo_folder(src)
    if built_in is not None:
        return built_in
    raise CheckpointError(
        f"model {str(src)!r}: no such folder, no {candidate} and no built-in model of that name ({', '.join(zoo_names())}); "
        f"train first with 'graphtransfer train --task {task} --graphs {src}'"
    )


def transfer(
    src: str | Path,
    dst: str | Path,
    task: str | None = None,
    folder: str | Path | None = None,
    max_passes: int | None = None,
    finetune_steps: int = 0,
    log: Callable[[str], None] = print,
    max_nodes_per_batch: int | None = None,
    mixed_precision: bool = False,
    env: str | None = None,
    adapt_seconds: float | None = None,
    adapt_nodes: int = ADAPT_SUBGRAPH_NODES,
    seed: int | None = None,
    device: Device = "cpu",
    force: bool = False,
) -> TransferResult:
    """Load the model ``src`` into a model for the graphs ``dst``, evaluate zero-shot there
    against the baselines, optionally fine-tune there for ``finetune_steps`` env steps (and
    evaluate again), and save it (default ``runs/<task>/<dst name>``; a folder that holds a model
    already is replaced only with ``force``).

    ``task`` (default ``"mis"``) finds ``runs/<task>/<src>`` when ``src`` names a graph set; when
    given, the model must be one of that task. ``max_nodes_per_batch`` bounds the nodes of one
    pass, in the evaluations and the fine-tuning alike (see :func:`graphtransfer.training.loop.finetune`);
    ``mixed_precision`` runs message passing in bfloat16 on CUDA. ``env`` names the user env of a
    model trained on one. The result's ``model`` is the saved model as an SB3 algorithm.

    ``device`` (``cpu``, the default, ``cuda`` or ``auto``: cuda where torch sees a GPU) is where the zero-shot
    evaluation, the fine-tuning and the adaptation run; cuda without a GPU is refused before anything is read.

    ``seed`` seeds the evaluations' rollouts (default 0, as ``predict``) and the fine-tuning and
    the adaptation (default: the source model's ``ppo.seed``; a given seed is recorded in the saved config).
    ``max_passes`` and ``seed`` build the evaluations' :class:`graphtransfer.Decoding`, and
    ``max_nodes_per_batch``, ``mixed_precision`` and ``device`` one :class:`graphtransfer.Runtime`, checked
    before anything is read.

    ``adapt_seconds`` instead trains the policy for that many wall-clock seconds on subgraphs of
    ``adapt_nodes`` nodes sampled from ``dst`` (:func:`graphtransfer.transferring.adaptation.adapt`),
    evaluates it there again, and saves the adapted weights only if they score at least as well
    as the zero-shot ones (by :func:`graphtransfer.training.callbacks.eval_score`); ``kept`` says which.

    A save that fails (full disk, read-only) keeps the model in a temporary folder and raises
    :class:`graphtransfer.checkpoint.SaveFailed` naming it; the source and an existing ``folder`` stay as they were.
    """
    runtime = Runtime(max_nodes_per_batch=max_nodes_per_batch, mixed_precision=mixed_precision, device=device)
    check_device(runtime.device)
    decoding = Decoding(seed=0 if seed is None else seed, max_passes=max_passes)  # the evaluations'
    if adapt_seconds is not None:
        adapt_seconds = check_adapt_seconds(adapt_seconds)
        if finetune_steps:
            raise UsageError("adapting and fine-tuning both train on the destination; pick one (--adapt or --finetune-steps)")
    checkpoint = read_checkpoint(resolve_model(src, task or "mis"), env)
    config = checkpoint.config
    if task is not None and task != config.name:
        raise CheckpointError(
            f"{checkpoint.folder} holds a model of task {config.name} ({config.head} head), not of task {task}; "
            f"drop --task {task}, or pass a model trained with --task {task}"
        )
    graphs = load_graphs(dst)
    out = Path(folder or default_run_folder(RunConfig(task=config.task, env=config.env, graphs=str(dst))))
    check_output_folder(out, [checkpoint.folder, resolve(dst)], is_model_folder, "model", force=force)
    loaded = policy_for_graphs(checkpoint, graphs, runtime)
    policy, report = loaded.policy, loaded.report
    config = replace(config, head=head_of(loaded.env).value)  # folders from before heads were recorded have none
    if seed is not None:
        config = replace(config, ppo=replace(config.ppo, seed=seed))
        config.check("--seed")
    experts = checkpoint.experts
    rows = evaluate_policy(policy, config, graphs, decoding, experts=experts)
    info = {k: v for k, v in checkpoint.meta.items() if k in ("trained_on", "training")}
    info["transferred"] = {"from": str(checkpoint.folder), "to": str(dst), "zero_shot": [_row_summary(row) for row in rows]}
    result = TransferResult(checkpoint.folder, out, config, report, rows, graphs=graphs, env=env, experts=len(experts))
    if finetune_steps:
        result.finetune = finetune(policy, config, graphs, finetune_steps, log, runtime)
        result.interrupted = result.finetune.interrupted
        if not result.interrupted:
            result.finetuned_rows = evaluate_policy(policy, config, graphs, decoding, experts=experts)
        info["transferred"]["finetune"] = {
            "steps": result.finetune.steps,
            "seconds": round(result.finetune.seconds, 2),
            "after": [_row_summary(row) for row in result.finetuned_rows or []],
        } | ({"stopped": True} if result.interrupted else {})
    if adapt_seconds is not None:
        info["transferred"]["adapt"] = _adapt_and_keep(result, policy, adapt_seconds, adapt_nodes, decoding, runtime.device, log, experts)
    what = "adapted model" if result.kept == "adapted" else "fine-tuned model" if finetune_steps else "transferred model"
    save_or_keep(out, policy, config, info, what=what, experts=experts)
    discard_earlier_outputs(out)  # an earlier run's logs, best model and checkpoints are not this model's
    return result


def _adapt_and_keep(
    result: TransferResult,
    policy,
    seconds: float,
    nodes: int,
    decoding: Decoding,
    device: Device,
    log: Callable[[str], None],
    experts: list[dict[str, torch.Tensor]],
) -> dict:
    """Adapt ``policy`` in place, evaluate it on the destination graphs (taking turns with the
    model's ``experts``, which stay as they are), and put the zero-shot weights back if it scores
    worse there; the record for the model folder's config.json."""
    zero_shot = {name: tensor.detach().clone() for name, tensor in policy.state_dict().items()}
    seed = result.config.ppo.seed
    result.adapted = adapt(policy, result.config, result.graphs, seconds, seed=seed, log=log, size=nodes, device=device)
    if result.adapted.interrupted:  # stopped before its evaluation: the zero-shot weights are saved, as evaluated
        policy.load_state_dict(zero_shot)
        result.interrupted = True
        return {"seconds": round(result.adapted.seconds, 2), "budget": seconds, "steps": result.adapted.steps, "stopped": True}
    trained = result.adapted.steps > 0  # else the budget ended before the first update: the weights are the zero-shot ones
    result.adapted_rows = evaluate_policy(policy, result.config, result.graphs, decoding, experts=experts) if trained else result.rows
    before, by = eval_score(result.rows)
    after, _ = eval_score(result.adapted_rows)
    better_or_equal = after >= before if result.rows[0].sense == "max" else after <= before
    result.kept = "adapted" if trained and better_or_equal else "zero-shot"
    if not better_or_equal:
        policy.load_state_dict(zero_shot)
    return {
        "seconds": round(result.adapted.seconds, 2),
        "budget": seconds,
        "steps": result.adapted.steps,
        "subgraphs": [g.num_nodes for g in result.adapted.subgraphs],
        "by": by,
        "zero_shot_score": before,
        "adapted_score": after,
        "kept": result.kept,
        "after": [_row_summary(row) for row in result.adapted_rows],
    }


def _row_summary(row: EvalRow) -> dict:
    return {
        "graph": row.graph.name,
        "nodes": row.graph.num_nodes,
        "policy": row.policy.objective,
        **{b.name: b.objective for b in row.baselines},
    }
