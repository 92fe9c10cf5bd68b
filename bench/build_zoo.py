"""Build a built-in model (``graphtransfer/zoo/<task>/``): train several seeds, keep the best on
held-out validation graphs.

A policy's quality on graphs unlike its training graphs moves with the training seed as much as
with anything else measured (bench/RESULTS.md, "Issue 30, eleventh session"): two seeds of the
same run gave 1.047 and 1.063x greedy on one dense graph. So the built-in model is chosen, not
trained once: each seed is trained exactly as ``graphtransfer train --task TASK --graphs small
--seed S --steps STEPS`` trains it (the CLI itself, in a subprocess), then every candidate runs
``predict``'s default decoding on the validation graphs (Erdős–Rényi, Barabási–Albert and random
geometric graphs of 10^3 and 10^4 nodes at average degree 4, 64 and 200, three sparse ones of 10^5
nodes and a Barabási–Albert graph of 3 x 10^5, drawn with ``VALIDATION_SEED``, a seed no
benchmark table reports), and the winner is the candidate with the fewest graphs below greedy,
then the highest mean ratio to greedy. Its folder is copied into the package with
``zoo.json``: the command, every candidate's ratios and the choice.

    .venv/bin/python -m bench.build_zoo --task mis --seeds 0,1,2,3,4,5,6 [--steps 60000] [--work runs/zoo] [--reuse] [--no-install]

``make zoo`` runs this. MIS at 60,000 steps: 95-150 s a seed on 2 cores, training and validation.

MIS then learns from a search (``--imitate``, :mod:`graphtransfer.training.imitation`): the
installed model is fine-tuned towards an iterated local search's sets on twelve dense
Erdős–Rényi and random geometric graphs of 10^3-2 x 10^3 nodes; a dense expert learns the same
from the same start on those and six denser Barabási–Albert and larger random geometric graphs, for
three times the steps (:data:`DENSE_EXPERT_GRAPHS`), and is saved beside the weights
(``expert-<sha>.safetensors``: the rollouts take turns between the two); scored on the validation
graphs, and installed in its place where it scores at least as well (``zoo.json`` records both
scores and the settings). About 6 minutes; ``--start FOLDER`` starts from the model as trained kept
elsewhere, where the installed one has learned already.

    .venv/bin/python -m bench.build_zoo --task mis --imitate [--start FOLDER]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch

from bench.imitation_variants import cached_set, extra_graphs
from bench.transfer_quality import DENSE_FAMILIES, DENSITY_BASELINE, checked, density_graphs
from graphtransfer.checkpoint import CONFIG, CONFIG_YAML, EXPERT_ROLE, Checkpoint, read_checkpoint, save_checkpoint
from graphtransfer.graphs import Graph
from graphtransfer.solve.loading import policy_for_graphs
from graphtransfer.solve.predict import predict_graph
from graphtransfer.training import imitation
from graphtransfer.zoo import PROVENANCE, ZOO

VALIDATION_SEED = 4
"""the seed of every validation graph: bench/ reports graphs of seeds 0-3, so the choice never sees them"""
VALIDATION = {"sizes": [1_000, 10_000], "degrees": [4.0, 64.0, 200.0], "families": ["er", "ba", "rgg"]}
VALIDATION_LARGE = [("er", 100_000, 4.0), ("ba", 100_000, 4.0), ("rgg", 100_000, 16.0), ("ba", 300_000, 6.0)]
"""sparse graphs of 10^5 nodes and more, where predict runs one patient rollout: (family, nodes, average degree). The
Barabási-Albert graph of 3 x 10^5 nodes (m = 3) is where greedy minimum degree is hardest to beat at scale: two of
seven 60,000-step candidates fell below it there (and on 10^6 nodes) while every graph of 10^5 nodes rated them
alike (bench/RESULTS.md, "Longer training for the built-in MIS model")"""
STEPS = 60_000
"""env steps a candidate trains for: twice ``train``'s default, because on the 24 sample graphs the policy's entropy is
still falling at 30,000 steps and the best of seven seeds at 60,000 was ahead on held-out graphs (bench/RESULTS.md,
"Longer training for the built-in MIS model")"""
SENSE = {"mis": 1.0, "mvc": -1.0}
"""a larger set is better for mis, a smaller cover for mvc"""


def train_command(task: str, seed: int, folder: Path, steps: int = STEPS) -> list[str]:
    command = ["graphtransfer", "train", "--task", task, "--graphs", "small", "--seed", str(seed), "--steps", str(steps)]
    return [*command, "--out", str(folder), "--force"]


def trained(task: str, seed: int, folder: Path, reuse: bool, steps: int = STEPS) -> None:
    """Train one candidate with the CLI into ``folder``, a folder of the builder's own (or keep the
    model already there with ``reuse``)."""
    if reuse and (folder / CONFIG).is_file():
        return
    shutil.rmtree(folder, ignore_errors=True)
    command = train_command(task, seed, folder, steps)
    executable = Path(sys.executable).with_name("graphtransfer")
    subprocess.run([str(executable), *command[1:], "--no-progress"], check=True, stdout=subprocess.DEVNULL)


def validated(task: str, folder: Path) -> dict[str, float]:
    """:func:`validation_ratio` on every validation graph, each kept as it comes beside the
    candidate (``<folder>.validation.json``, for the same weights), so that a build can be split,
    resumed, or given more validation graphs without measuring the others again."""
    checkpoint = read_checkpoint(folder)
    files = checkpoint.meta["files"]
    key = {"weights": files["weights"]["sha256"], "seed": VALIDATION_SEED}
    if checkpoint.experts:
        key["experts"] = [entry["sha256"] for role, entry in sorted(files.items()) if role.startswith(EXPERT_ROLE)]
    cache = folder.with_name(folder.name + ".validation.json")
    kept = json.loads(cache.read_text()) if cache.is_file() else {}
    known = kept.get("ratios", {}) if kept.get("key") == key else {}
    ratios = {}
    for family, graph in validation_graphs():
        name = f"{family}-{graph.num_nodes}-{2 * graph.num_edges / graph.num_nodes:.0f}"
        if name not in known:
            known[name] = validation_ratio(task, checkpoint, graph)
            cache.write_text(json.dumps({"key": key, "ratios": known}, indent=2) + "\n")
        ratios[name] = known[name]
    return ratios


def validation_graphs() -> list[tuple[str, Graph]]:
    """(family, graph): the density grid of :data:`VALIDATION`, then :data:`VALIDATION_LARGE`."""
    grid = density_graphs(VALIDATION["sizes"], VALIDATION["degrees"], VALIDATION["families"], [VALIDATION_SEED])
    graphs = [(family, graph) for family, _, graph in grid]
    return graphs + [(family, DENSE_FAMILIES[family](nodes, degree, VALIDATION_SEED)) for family, nodes, degree in VALIDATION_LARGE]


def validation_ratio(task: str, checkpoint: Checkpoint, graph: Graph) -> float:
    """The candidate's objective over greedy's on one graph, ``predict``'s default decoding, both
    solutions checked."""
    baseline = DENSITY_BASELINE[task](graph)
    checked(task, graph, baseline)
    solution, _ = predict_graph(checkpoint, graph)
    checked(task, graph, solution.solution)
    return round(solution.objective / float(baseline.sum()), 4)


def score(task: str, ratios: dict[str, float]) -> tuple[int, float]:
    """Higher is better: minus the graphs where the candidate is worse than greedy, then its mean
    ratio to greedy (for mvc, where smaller is better, its mean inverse ratio)."""
    sense = SENSE[task]
    below = sum(1 for value in ratios.values() if sense * math.log(value) < 0)
    return -below, sum(sense * math.log(value) for value in ratios.values()) / len(ratios)


def install(task: str, folder: Path, record: dict) -> Path:
    """Copy the chosen candidate's model files (config.json, config.yaml and the tensor files it
    names) into ``graphtransfer/zoo/<task>/`` with ``zoo.json``, replacing what was there."""
    target = ZOO / task
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    meta = json.loads((folder / CONFIG).read_text())
    names = [CONFIG, CONFIG_YAML, *(entry["name"] for entry in meta["files"].values())]
    for name in names:
        shutil.copy2(folder / name, target / name)
    (target / PROVENANCE).write_text(json.dumps(record, indent=2) + "\n")
    read_checkpoint(target)  # the installed copy loads
    return target


DENSE_EXPERT_GRAPHS = "ba:1000:64,ba:1000:200,ba:2000:64,ba:2000:200,rgg:5000:64,rgg:5000:200"
"""the graphs the dense expert learns from beside :func:`imitation.imitation_graphs` (``family:nodes:degree``, seeds 300
on: :func:`bench.imitation_variants.extra_graphs`)"""
DENSE_EXPERT_STEPS = 6_000
"""its gradient steps: three times the model's own. The thirty-first session's v4, which reached 1.05x greedy on all six
dense Erdős–Rényi cells of 10^4 nodes but put dense random geometric graphs below greedy on its own; as the model's
expert, taking turns in the rollouts, neither (bench/RESULTS.md, "A dense expert")"""


def imitate_installed(work: Path, install_it: bool = True, start: Path | None = None) -> None:
    """The MIS model as trained (the installed one, or ``start``: the same model kept elsewhere, e.g. ``git archive
    8d470a1 graphtransfer/zoo/mis``) fine-tuned towards a search's sets (:mod:`graphtransfer.training.imitation`), with
    a dense expert (:data:`DENSE_EXPERT_GRAPHS`, :data:`DENSE_EXPERT_STEPS`: the same from the same start, on more and
    denser graphs, for longer) that takes turns with it in the rollouts (:attr:`Checkpoint.experts`); scored on the
    validation graphs, and installed in its place (``zoo.json`` extended) where it scores at least as well as the model
    it came from. The searches' sets are kept in ``work/imitation-cache``."""
    trained = read_checkpoint(start or ZOO / "mis")
    record = json.loads((ZOO / "mis" / PROVENANCE).read_text())
    if start is None and "imitation" in record:  # a second pass would start from weights that already learned: not what zoo.json says
        built = record["imitation"]["built"]
        raise SystemExit(f"{ZOO / 'mis'} has learned from a search already ({built}); pass --start with the model as trained")
    before = record["candidates"][str(record["chosen_seed"])]
    started = time.perf_counter()
    graphs = imitation.imitation_graphs()
    expert_graphs = graphs + extra_graphs(DENSE_EXPERT_GRAPHS)
    found = [cached_set(graph, work / "imitation-cache") for graph in expert_graphs]
    tuned = imitation.imitate_search(trained, graphs, found[: len(graphs)])
    expert = imitation.imitate_search(trained, expert_graphs, found, steps=DENSE_EXPERT_STEPS)
    folder = work / "mis-imitated"
    shutil.rmtree(folder, ignore_errors=True)
    policy = policy_for_graphs(replace(trained, tensors=tuned.tensors), graphs[:1]).policy
    kept_meta = {key: trained.meta[key] for key in ("trained_on", "training") if key in trained.meta}
    save_checkpoint(folder, policy, trained.config, kept_meta, experts=[expert.tensors])
    ratios = validated("mis", folder)
    after = {"ratios": ratios, "score": score("mis", ratios)}
    print(
        f"learned from a search in {time.perf_counter() - started:.0f} s: loss {tuned.first_loss:.4f} -> {tuned.last_loss:.4f}; "
        f"validation {tuple(before['score'])} -> {after['score']}"
    )
    if tuple(after["score"]) < tuple(before["score"]):
        print("kept the installed model: the fine-tuned one scores lower")
        return
    if not install_it:
        print(f"would install {folder}")
        return
    record["imitation"] = {
        "command": "python -m bench.build_zoo --task mis --imitate",
        "graphs": [graph.name for graph in graphs],
        "search_iterations_per_node": imitation.SEARCH_ITERATIONS_PER_NODE,
        "search_sizes": [int(chosen.sum()) for chosen in found[: len(graphs)]],
        "steps": imitation.STEPS,
        "learning_rate": imitation.LEARNING_RATE,
        "loss": [round(tuned.first_loss, 4), round(tuned.last_loss, 4)],
        "dense_expert": {
            "graphs": [graph.name for graph in expert_graphs],
            "search_sizes": [int(chosen.sum()) for chosen in found],
            "steps": DENSE_EXPERT_STEPS,
            "loss": [round(expert.first_loss, 4), round(expert.last_loss, 4)],
        },
        "before": before,
        "after": after,
        "built": time.strftime("%Y-%m-%d"),
    }
    print(f"installed {install('mis', folder, record)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="mis", choices=sorted(SENSE))
    parser.add_argument("--seeds", default="0,1,2,3,4,5,6", help="training seeds to try, comma-separated")
    parser.add_argument("--steps", type=int, default=STEPS, help="env steps each candidate trains for")
    parser.add_argument("--work", type=Path, default=Path("runs/zoo"), help="where the candidates are trained")
    parser.add_argument("--reuse", action="store_true", help="keep candidates already trained (and validated) in --work")
    parser.add_argument("--no-install", action="store_true", help="report the choice without installing it (a build split in parts)")
    parser.add_argument("--imitate", action="store_true", help="mis: fine-tune the installed model towards a search's sets (no training)")
    parser.add_argument("--start", type=Path, help="with --imitate: the MIS model as trained, where the installed one has learned already")
    args = parser.parse_args()
    torch.set_num_threads(1)  # the same sets on any thread count; one thread is never slowed by other processes
    if args.imitate:
        if args.task != "mis":
            parser.error("--imitate fine-tunes the MIS model")
        imitate_installed(args.work, install_it=not args.no_install, start=args.start)
        return
    seeds = [int(seed) for seed in args.seeds.split(",")]
    candidates = {}
    for seed in seeds:
        folder = args.work / f"{args.task}-seed{seed}"
        started = time.perf_counter()
        trained(args.task, seed, folder, args.reuse, args.steps)
        ratios = validated(args.task, folder)
        candidates[seed] = {"ratios": ratios, "score": score(args.task, ratios)}
        print(f"seed {seed}: {candidates[seed]['score']} in {time.perf_counter() - started:.0f} s, load {os.getloadavg()[0]:.1f}: {ratios}")
    best = max(seeds, key=lambda seed: candidates[seed]["score"])
    record = {
        "command": " ".join(train_command(args.task, best, Path("FOLDER"), args.steps)),
        "chosen_seed": best,
        "chosen_by": "fewest validation graphs below greedy, then the highest mean log ratio to greedy",
        "validation": {**VALIDATION, "large": VALIDATION_LARGE, "seed": VALIDATION_SEED, "decoding": "predict's default"},
        "candidates": {str(seed): candidates[seed] for seed in seeds},
        "built": time.strftime("%Y-%m-%d"),
    }
    if args.no_install:
        print(f"would choose seed {best}")
    else:
        print(f"chose seed {best}; installed {install(args.task, args.work / f'{args.task}-seed{best}', record)}")


if __name__ == "__main__":
    main()
