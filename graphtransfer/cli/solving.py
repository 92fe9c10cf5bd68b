"""``graphtransfer predict`` and ``graphtransfer eval``: parse, call the library, print."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from graphtransfer.cli.common import (
    RAY_HELP,
    SOLVE_RUNTIME,
    WORKERS_HELP,
    ConvOption,
    EnvOption,
    SourceOption,
    TargetOption,
    check_positive,
    friendly_errors,
    name_conv,
    seconds_option,
    start_work,
    stop_exit_code,
    stopped_by,
)
from graphtransfer.cli.common import fail as _fail
from graphtransfer.cli.options import takes_params, typed_fields
from graphtransfer.config import AUTO_ROLLOUTS, MAX_DRAW_NODES, SEED_LIMIT, Decoding, Runtime
from graphtransfer.errors import ClusterLost, GraphTransferError, UsageError
from graphtransfer.process import prefer_small_pages

PREDICT_DECODING = (
    "decoding",
    "commit_fraction",
    "deterministic",
    "seed",
    "rollouts",
    "max_passes",
    "node_order",
    "reductions",
    "kernel_every",
)
"""predict's decoding options, made from :class:`graphtransfer.config.Decoding`"""


@friendly_errors
@takes_params(Decoding, "decoder", *PREDICT_DECODING)
@takes_params(Runtime, "runtime", *SOLVE_RUNTIME)
def predict(
    model: Annotated[Path, typer.Option(help="Model folder written by train or transfer, or a built-in model's name (mis, mvc).")],
    graph: Annotated[
        str,
        typer.Option(
            "--graphs",
            "--graph",
            help="Graph file in any supported format (see 'graphtransfer graphs info'), a folder of them, or a sample name.",
        ),
    ],
    out: Annotated[Path, typer.Option(help="CSV to write: one 'node,decision' row per node, or one row per step for graph-level tasks.")],
    decoder: Decoding,
    runtime: Runtime,
    env: EnvOption = None,
    force: Annotated[bool, typer.Option(help="Replace --out (or the CSVs in it) if it exists; never a graph or a model file.")] = False,
    draw: Annotated[
        Path | None, typer.Option(help=f"Draw the graph coloured by the decisions to this PNG (up to {MAX_DRAW_NODES:,} nodes).")
    ] = None,
    workers: Annotated[int | None, typer.Option(help=WORKERS_HELP)] = None,
    ray_address: Annotated[str | None, typer.Option(help=RAY_HELP)] = None,
    partitions: Annotated[
        int | None,
        typer.Option(
            help="mis, one graph: split it into this many parts, each solved on a worker of the Ray cluster of --ray-address, "
            "the parts exchanging only their boundaries (default: the part count of a --graphs folder that 'graphtransfer "
            "graphs partition' wrote). See docs/guide/scale.md",
        ),
    ] = None,
    source: SourceOption = None,
    target: TargetOption = None,
    polish: Annotated[
        str | None,
        typer.Option(
            metavar="SECONDS",
            help="a task that declares a search (built-in: mis, mvc, mvc-weighted, maxcut, matching), one graph: after the "
            "policy, improve its solution with the task's local search for all of these seconds and write that; the policy's "
            "own objective is printed beside it.",
        ),
    ] = None,
    conv: ConvOption = None,
) -> None:
    """Run a saved policy on a graph and write its solution; on a folder of graphs, one CSV per graph into --out.

    Example: graphtransfer predict --model runs/mis/large --graphs large --out solution.csv [--max-nodes-per-batch 50000]
    Example: graphtransfer predict --model runs/mis/small --graphs graphs/ --out solutions/ --workers 2
    Example: graphtransfer predict --model runs/path/small --graphs roads.txt --out route.csv --source 17 --target 4032
    Example: graphtransfer predict --model runs/mis/small --graphs er.txt --out solution.csv --polish 10
    Example: graphtransfer predict --model runs/mis/small --graphs big.txt --out solution.csv --ray-address auto --partitions 4
    Example: graphtransfer predict --model runs/mis/small --graphs big-parts/ --out solution.csv --ray-address auto
    Example: graphtransfer predict --model runs/mis/small --graphs large --out solution.csv --device cuda --mixed-precision
    """
    prefer_small_pages()  # before torch loads
    from graphtransfer.checkpoint import read_checkpoint
    from graphtransfer.graphs import load_graph, resolve
    from graphtransfer.io import FIGURE_SUFFIXES, check_output_file
    from graphtransfer.nn.devices import resolve_device
    from graphtransfer.reporting.draw import check_drawable, draw_solution
    from graphtransfer.solve.applicable import check_decoding_applies, check_runtime_applies
    from graphtransfer.solve.inference import objective_text
    from graphtransfer.solve.loading import keep_freed_memory_where_room
    from graphtransfer.solve.predict import predict_with

    name_conv(conv, model, env)
    check_positive(workers=1 if workers is None else workers)
    typed, on = runtime.device, resolve_device(runtime.device)
    runtime = replace(runtime, ray_address=ray_address, device=on)
    check_runtime_applies(runtime, on)
    given = typed_fields(Decoding)
    seconds = None if polish is None else seconds_option("--polish", polish, 10)
    if partitions is not None or _names_partitioned_graph(graph):
        if on != "cpu":
            raise UsageError(f"--partitions solves on the Ray workers' CPUs; drop --device {typed}")
        single_process_options = {
            "--workers": workers is not None,
            "--polish": seconds is not None,
            "--draw": draw is not None,
            "--decoding": decoder.method not in (None, "local-max"),
            "--commit-fraction": decoder.commit_fraction is not None,
            "--max-passes": decoder.max_passes is not None,
            "--rollouts": decoder.rollouts not in (AUTO_ROLLOUTS, 1),
            "--max-nodes-per-batch": runtime.max_nodes_per_batch is not None,
            "--node-order": decoder.node_order != "auto",
            "--deterministic/--no-deterministic": decoder.deterministic is not None,
            "--source/--target": source is not None or target is not None,
        }
        address = _check_partitioned(graph, ray_address, single_process_options)
        return _predict_partitioned(model, graph, out, partitions, address, decoder, env, force)
    if resolve(graph).is_dir():
        if source is not None or target is not None:
            raise UsageError("--source and --target name nodes of one graph; --graphs names a folder")
        if seconds is not None:
            raise UsageError("--polish searches one graph's solution; name a single graph file with --graphs, not a folder")
        check_decoding_applies(read_checkpoint(model, env).config, decoder, given)
        start_work(runtime.threads)
        return _predict_folder(model, graph, out, draw, workers, env, force, decoder, runtime)
    if workers is not None or ray_address is not None:
        raise UsageError("--workers and --ray-address spread a folder of graphs over workers; --graphs names a single graph")
    if seconds is not None:
        if draw is not None:
            raise UsageError("--draw draws the policy's own solution; drop --polish or --draw")
        if source is not None or target is not None:
            raise UsageError("--polish searches a solution of the whole graph; --source and --target route the path task")
        return _predict_polished(model, graph, out, seconds, env, force, decoder, runtime)
    config = read_checkpoint(model, env).config  # a bad model folder is reported before the graph is read, as the library does
    check_decoding_applies(config, decoder, given)
    loaded = load_graph(graph)
    if draw is not None:
        check_drawable(loaded)  # before the policy runs, not after
        check_output_file(draw, [resolve(graph)], force, "--draw", FIGURE_SUFFIXES)
    check_output_file(out, [resolve(graph)], force)  # predict gets the graph already read, so the input file is guarded here
    start_work(runtime.threads, loaded.num_nodes)
    keep_freed_memory_where_room(config, loaded)
    loaded, solution = predict_with(model, loaded, out, decoder, runtime, env, force, source, target)
    typer.echo(f"graph {loaded.name}: {loaded.num_nodes} nodes, {loaded.num_edges} edges; node ids {loaded.describe_ids()}")
    _report_weights(config, loaded)
    if solution.reduced:
        typer.echo(
            f"exact reductions decided {solution.reduced:,} of {loaded.num_nodes:,} nodes in {solution.reduced_seconds:.2f} s "
            "before the policy ran (--no-reductions: off)"
        )
    if solution.kernels:
        typer.echo(
            f"the undecided graph was shrunk to its kernel again {solution.kernels} times, every {decoder.kernel_every} passes or sooner "
            "(--kernel-every 0: off)"
        )
    if solution.renumbered:
        typer.echo("solved with the nodes renumbered for locality (--node-order auto); the CSV is in the graph's own order")
    _report_rival(solution)
    typer.echo(
        f"objective {objective_text(solution.objective)} in {solution.passes} passes, {_rollouts_run(solution, decoder.seed)}, "
        f"{solution.seconds:.2f} s, peak memory {solution.peak_rss_mib:.0f} MiB (process RSS)"
    )
    _report_finished(solution)
    if solution.advice:
        typer.echo(f"{solution.decoding} decoding; {solution.advice}")
    if not solution.feasible:
        _fail(
            f"the solution is not feasible after {solution.passes} passes: an unfinished route (path) stopped at the pass limit, "
            "raise --max-passes; otherwise a constraint is violated, a bug, please report it",
            1,
        )
    typer.echo(f"valid solution: yes; wrote {out}")
    if draw is not None:
        draw_solution(loaded, solution, read_checkpoint(model, env).config, draw)
        typer.echo(f"wrote {draw}")


def _names_partitioned_graph(graph: str) -> bool:
    """Whether ``--graphs`` names a partitioned graph's folder (``graphtransfer graphs partition``)."""
    from graphtransfer.graphs import resolve
    from graphtransfer.graphs.partition_files import is_partition_folder

    return is_partition_folder(resolve(graph))


def _check_partitioned(graph: str, ray_address: str | None, single_process_options: dict[str, bool]) -> str:
    """``--partitions``: one graph (a graph file or a partitioned graph's folder), a Ray cluster,
    and none of the options (named, each ``True`` where given) that only a single-process solve
    has; the cluster's address."""
    from graphtransfer.graphs import resolve
    from graphtransfer.graphs.partition_files import is_partition_folder

    if ray_address is None:
        raise UsageError("--partitions solves one graph on a Ray cluster: give --ray-address too (local starts one in this process)")
    if resolve(graph).is_dir() and not is_partition_folder(resolve(graph)):
        raise UsageError(
            "--partitions splits one graph; --graphs names a folder that is not a partitioned graph (graphtransfer graphs partition "
            "writes one; --ray-address alone spreads a folder's graphs)"
        )
    clashing = [name for name, given in single_process_options.items() if given]
    if clashing:
        raise UsageError(f"--partitions runs the local-max decoding alone, until every node is decided; drop {clashing[0]}")
    return ray_address


def _predict_partitioned(
    model: Path, graph: str, out: Path, parts: int | None, ray_address: str, decoder: Decoding, env, force: bool
) -> None:
    from graphtransfer.checkpoint import read_checkpoint
    from graphtransfer.graphs import resolve
    from graphtransfer.graphs.partition import halo_share
    from graphtransfer.io import check_output_file
    from graphtransfer.solve.partitioned_mis import predict_partitioned

    read_checkpoint(model, env)  # a bad model folder is reported before the graph is read
    check_output_file(out, [resolve(graph)], force)
    found = predict_partitioned(model, graph, out, parts, ray_address, decoder.seed, env, decoder.reductions, decoder.kernel_every)
    typer.echo(f"graph {found.graph}: {found.num_nodes} nodes, {found.num_edges} edges; node ids {found.ids}")
    if found.reduced:
        typer.echo(
            f"exact reductions decided {found.reduced:,} of {found.num_nodes:,} nodes before the graph was split (--no-reductions: off)"
        )
    if found.kernels:
        typer.echo(f"the undecided graph was shrunk to its kernel and split again {found.kernels} times (--kernel-every 0: off)")
    typer.echo(f"{len(found.parts)} parts on Ray, their halos {halo_share(found.parts):.2f} of the nodes")
    typer.echo(f"objective {found.size} in {found.passes} passes; valid solution: yes; wrote {out}")


def _report_weights(config, graph, prefix: str = "") -> None:
    """Say which weights a task that declares it reads weights used: the file's own or hashed ones."""
    from graphtransfer.graphs import weights_source
    from graphtransfer.tasks.factory import task_of

    for kind in task_of(config).reads_weights:
        typer.echo(prefix + weights_source(graph, kind))


def _predict_polished(
    model: Path, graph: str, out: Path, seconds: float, env: str | None, force: bool, decoding: Decoding, runtime: Runtime
) -> None:
    from graphtransfer.checkpoint import read_checkpoint
    from graphtransfer.graphs import load_graph, resolve
    from graphtransfer.io import check_output_file
    from graphtransfer.solve.inference import objective_text
    from graphtransfer.solve.polishing import check_polish_task, predict_polished

    check_polish_task(read_checkpoint(model, env).config)  # before the graph is read
    loaded = load_graph(graph)
    check_output_file(out, [resolve(graph)], force)  # the graph goes down already read: guard its file here
    start_work(runtime.threads, loaded.num_nodes)
    loaded, solution, polished = predict_polished(model, loaded, out, seconds, decoding, runtime, env, force)
    typer.echo(f"graph {loaded.name}: {loaded.num_nodes} nodes, {loaded.num_edges} edges; node ids {loaded.describe_ids()}")
    rollouts = _rollouts_run(solution, decoding.seed)
    _report_rival(solution)
    label = "before search" if solution.rival is not None and solution.rival.taken else "policy"
    typer.echo(f"{label}: objective {objective_text(solution.objective)} in {solution.passes} passes, {rollouts}, {solution.seconds:.2f} s")
    searched = f"after {polished.seconds:.1f} s of local search ({polished.iterations:,} search steps)"
    typer.echo(f"{searched}: objective {objective_text(polished.objective)}")
    typer.echo(f"valid solution: yes; wrote {out}")


def _rollouts_run(solution, seed: int) -> str:
    """How many rollouts the solution is the best of, and the one that gave it (to repeat it alone)."""
    if solution.rollouts == 1:
        return "1 rollout"
    last = (seed + (solution.rollouts - 1) // solution.weight_sets) % SEED_LIMIT
    if solution.weight_sets == 1:
        return f"best of {solution.rollouts} rollouts (seeds {seed}-{last}; best: seed {solution.seed}, {solution.decoding})"
    experts = solution.weight_sets - 1
    turns = f"the model's weights and {experts} expert{'s' if experts > 1 else ''} taking turns"
    gave = "the model's weights" if solution.expert == 0 else f"expert {solution.expert}"
    return f"best of {solution.rollouts} rollouts (seeds {seed}-{last}, {turns}; best: seed {solution.seed}, {solution.decoding}, {gave})"


def _report_rival(solution) -> None:
    """The contest on a nearly bipartite graph between the policy's solution and the graph less a
    cover of its odd edges solved as bipartite (:func:`graphtransfer.solve.predict.against_near_bipartite`)."""
    from graphtransfer.solve.inference import objective_text

    rival = solution.rival
    if rival is None:
        return
    odd = f"{rival.odd_edges:,} of the {rival.edges:,} edges solved inside a side ({rival.odd_edges / rival.edges:.2%})"
    better = "better" if rival.margin >= 0 else "worse"
    answer = "its solution is the answer" if rival.taken else "the policy's is the answer"
    typer.echo(
        f"nearly bipartite, {odd}: the graph less a cover of those, solved as bipartite, gave a solution {better} than the "
        f"policy's by {objective_text(abs(rival.margin))} in {rival.seconds:.2f} s; {answer} (--no-reductions: off)"
    )


def _report_finished(solution) -> None:
    """What the finishing rule added, apart from the policy's own decisions, and a warning when
    decoding stopped at its pass limit."""
    finished = solution.finished
    if finished is None:
        return
    typer.echo(
        f"policy decided {finished.by_policy:,} in the set; the finishing rule added {finished.by_rule:,} of "
        f"{finished.undecided:,} undecided nodes and {finished.for_maximality:,} for maximality"
    )
    warning = finished.pass_limit_warning(solution.passes)
    if warning:
        typer.echo(f"warning: {warning}", err=True)


def _predict_folder(
    model: Path,
    graphs: str,
    out: Path,
    draw: Path | None,
    workers: int | None,
    env: str | None,
    force: bool,
    decoding: Decoding,
    runtime: Runtime,
) -> None:
    from graphtransfer.solve.inference import objective_text
    from graphtransfer.solve.parallel import predict_many_with

    if draw is not None:
        raise UsageError("--draw draws one graph; name a single graph file with --graphs, not a folder")
    results = predict_many_with(model, graphs, out, decoding, runtime, workers, env, force)
    for graph, solution, path in results:
        valid = "yes" if solution.feasible else "NO"
        typer.echo(
            f"{graph.name}: {graph.num_nodes} nodes, objective {objective_text(solution.objective)} in {solution.passes} passes, "
            f"{_rollouts_run(solution, decoding.seed)}, {solution.seconds:.2f} s, valid {valid}; wrote {path}"
        )
        _report_finished(solution)
    if not all(solution.feasible for _, solution, _ in results):
        _fail("a solution is not feasible (constraint violated); this is a bug, please report it", 1)


EVAL_DECODING = ("decoding", "commit_fraction", "seed", "rollouts", "max_passes", "node_order", "reductions", "kernel_every")
"""eval's decoding options, made from :class:`graphtransfer.config.Decoding` (its --deterministic is its own)"""


@friendly_errors
@takes_params(Decoding, "decoder", *EVAL_DECODING)
@takes_params(Runtime, "runtime", *SOLVE_RUNTIME)
def evaluate(
    model: Annotated[Path, typer.Option(help="Model folder written by train or transfer, or a built-in model's name (mis, mvc).")],
    graphs: Annotated[str, typer.Option(help="Sample set name, graph file or folder of graphs to evaluate on.")],
    decoder: Decoding,
    runtime: Runtime,
    deterministic: Annotated[
        bool,
        typer.Option(
            help="Where actions are drawn (--decoding drawn), report both ways: the task's default first (path: the most "
            "likely moves; others: sampled), then the other; --no-deterministic: the default alone."
        ),
    ] = True,
    polish: Annotated[bool, typer.Option(help="Also report the best decoding and every baseline after the same local search.")] = False,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the results as JSON to this file.")] = None,
    plot: Annotated[Path | None, typer.Option(help="Draw policy/baseline against graph size to this PNG.")] = None,
    env: EnvOption = None,
    workers: Annotated[int | None, typer.Option(help=WORKERS_HELP)] = None,
    ray_address: Annotated[str | None, typer.Option(help=RAY_HELP)] = None,
    force: Annotated[bool, typer.Option(help="Replace --json and --plot if they exist; never a graph or a model file.")] = False,
    chils: Annotated[
        bool,
        typer.Option(
            help="mis: also report CHILS, a state-of-the-art MIS heuristic, searching for as many seconds as the local search "
            "(pip install 'graphtransfer\\[chils]')."
        ),
    ] = False,
    source: SourceOption = None,
    target: TargetOption = None,
    conv: ConvOption = None,
) -> None:
    """Evaluate a saved policy against the task's baselines on a set of graphs.

    Example: graphtransfer eval --model runs/mis/small --graphs large --rollouts 4 --json eval.json --plot eval.png
    Example: graphtransfer eval --model runs/mis/small --graphs evalset/ --workers 2 --max-nodes-per-batch 50000
    Example: graphtransfer eval --model runs/path/small --graphs roads.txt --source 17 --target 4032
    """
    prefer_small_pages()  # before torch loads
    from graphtransfer.nn.devices import resolve_device
    from graphtransfer.reporting.report import format_rows, plot_ratios, write_json
    from graphtransfer.solve.evaluate import EvalExtras, EvaluationStopped
    from graphtransfer.solve.parallel import evaluate_with

    name_conv(conv, model, env)
    check_positive(workers=1 if workers is None else workers)
    runtime = replace(runtime, ray_address=ray_address, device=resolve_device(runtime.device))
    extras = EvalExtras(deterministic, polish, chils, source, target)
    _check_eval_applies(model, env, decoder, runtime, polish)
    _check_eval_outputs(graphs, json_out, plot, force)
    start_work(runtime.threads)  # after the options are checked: bad input changes nothing in the process
    try:
        config, rows = evaluate_with(model, graphs, decoder, runtime, workers, env, extras)
    except ClusterLost as lost:
        _keep_finished_rows(lost, json_out)
    except EvaluationStopped as stopped:
        _keep_rows_when_stopped(stopped, json_out)
    for line in format_rows(rows):
        typer.echo(line)
    for row in rows:
        _report_weights(config, row.graph, f"{row.graph.name}: ")
    for row in rows:
        for label, solution in row.decodings.items():
            warning = solution.finished.pass_limit_warning(solution.passes) if solution.finished else None
            if warning:
                typer.echo(f"warning: {row.graph.name}, {label}: {warning}", err=True)
    typer.echo(f"peak memory {max(r.peak_rss_mib for r in rows):.0f} MiB (process RSS)")
    if json_out:
        write_json(rows, json_out)
        typer.echo(f"wrote {json_out}")
    if plot:
        plot_ratios(rows, plot, f"{config.name}: model {model}")
        typer.echo(f"wrote {plot}")


def _keep_finished_rows(lost: ClusterLost, json_out: Path | None) -> None:
    """A cluster that died mid-evaluation: show the rows it finished, write them to ``json_out``,
    and fail with one line that says what is kept."""
    from graphtransfer.reporting.report import format_rows, write_json
    from graphtransfer.solve.evaluate import EvalRow

    rows = [row for _, row in sorted(lost.finished.items()) if isinstance(row, EvalRow)]
    if not rows:
        raise GraphTransferError(f"{lost}; no graph was finished, run the evaluation again") from None
    for line in format_rows(rows):
        typer.echo(line)
    names = ", ".join(row.graph.name for row in rows[:3]) + (", ..." if len(rows) > 3 else "")
    kept = f"wrote their rows to {json_out}" if json_out else "their rows are above (pass --json FILE to keep them)"
    if json_out:
        write_json(rows, json_out)
    raise GraphTransferError(f"{lost}; the graphs finished before ({names}): {kept}; run the evaluation again for the rest") from None


def _keep_rows_when_stopped(stopped, json_out: Path | None) -> None:
    """An evaluation stopped by Ctrl-C or a signal: show the rows it finished, write them to ``json_out``,
    and end with one line saying so, the signal's exit code."""
    from graphtransfer.reporting.report import format_rows, write_json

    for line in format_rows(stopped.rows):
        typer.echo(line)
    kept = ""
    if json_out and stopped.rows:
        write_json(stopped.rows, json_out)
        kept = f"; wrote their rows to {json_out}"
    _fail(f"{stopped_by()} after {len(stopped.rows)} of {stopped.total} graphs{kept}", stop_exit_code())


def _check_eval_applies(model: Path, env: str | None, decoder: Decoding, runtime: Runtime, polish: bool) -> None:
    """eval's options that the model would ignore, refused before anything runs."""
    from graphtransfer.checkpoint import read_checkpoint
    from graphtransfer.solve.applicable import check_decoding_applies, check_runtime_applies
    from graphtransfer.tasks.factory import task_of

    check_runtime_applies(runtime, runtime.device)
    config = read_checkpoint(model, env).config
    check_decoding_applies(config, decoder, typed_fields(Decoding))
    if polish and task_of(config).improve is None:
        raise task_of(config).refuse("--polish", "improve")


def _check_eval_outputs(graphs: str, json_out: Path | None, plot: Path | None, force: bool) -> None:
    """eval's outputs, checked before the evaluation runs (:func:`graphtransfer.io.check_output_file`)."""
    from graphtransfer.graphs import resolve
    from graphtransfer.io import FIGURE_SUFFIXES, check_output_file

    if json_out is not None:
        check_output_file(json_out, [resolve(graphs)], force, "--json", example="eval.json")
    if plot is not None:
        check_output_file(plot, [resolve(graphs)], force, "--plot", FIGURE_SUFFIXES)
