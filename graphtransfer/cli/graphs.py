"""``graphtransfer graphs``: inspect, convert and generate graph files.

Each command parses its options, calls one library function and prints; warnings from the
readers (dropped self-loops, repeated edges) are printed as ``warning:`` lines on stderr.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from graphtransfer.cli.common import friendly_errors
from graphtransfer.errors import UsageError
from graphtransfer.graphs import FORMATS, GENERATORS, convert_graph, generate, spec_for, summarize_file, write_graph
from graphtransfer.graphs.formats import writable
from graphtransfer.graphs.generators import generation_bytes
from graphtransfer.graphs.graph import MAX_NODES
from graphtransfer.io import check_output_file

app = typer.Typer(pretty_exceptions_enable=False)
"""the commands of ``graphtransfer graphs``, a group declared in :mod:`graphtransfer.cli.main` that loads them on first use"""

_READ_FORMATS = ", ".join(FORMATS)
_WRITE_FORMATS = ", ".join(writable())


@app.command()
@friendly_errors
def info(
    file: Annotated[Path, typer.Argument(help="Graph file to describe.", show_default=False)],
    input_format: Annotated[
        str | None, typer.Option("--format", help=f"Read as this format instead of detecting it: {_READ_FORMATS}.")
    ] = None,
) -> None:
    """Print a graph file's nodes, edges, degrees, isolated nodes, format and parse time.

    Example: graphtransfer graphs info web-Google.txt
    """
    summary = summarize_file(file, input_format)
    how = "detected" if summary.detected else "given"
    typer.echo(f"file      {summary.path}")
    typer.echo(f"format    {summary.format} ({how})")
    typer.echo(f"nodes     {summary.num_nodes:,}")
    typer.echo(f"edges     {summary.num_edges:,}")
    typer.echo(f"degree    min {summary.min_degree:,}, mean {summary.mean_degree:.2f}, max {summary.max_degree:,}")
    typer.echo(f"isolated  {summary.isolated:,} nodes")
    typer.echo(f"node ids  {summary.ids}")
    typer.echo(f"parsed in {summary.parse_seconds:.2f} s")


@app.command()
@friendly_errors
def convert(
    source: Annotated[Path, typer.Argument(help="Graph file to read.", show_default=False)],
    target: Annotated[
        Path, typer.Argument(help="Graph file to write; its extension picks the format unless --to is given.", show_default=False)
    ],
    input_format: Annotated[
        str | None, typer.Option("--format", help=f"Read SOURCE as this format instead of detecting it: {_READ_FORMATS}.")
    ] = None,
    to: Annotated[str | None, typer.Option(help=f"Write TARGET in this format: {_WRITE_FORMATS}.")] = None,
    force: Annotated[bool, typer.Option(help="Replace TARGET if it exists; never the graph read or a model's files.")] = False,
) -> None:
    """Read a graph file in one format and write it in another (atomically: a failed write leaves
    TARGET as it was).

    Example: graphtransfer graphs convert web-Google.txt web-Google.npz
    """
    graph, read_as, written_as = convert_graph(source, target, input_format, to, force)
    typer.echo(f"read {source} ({read_as}): {graph.num_nodes:,} nodes, {graph.num_edges:,} edges")
    typer.echo(f"wrote {target} ({written_as})")


@app.command()
@friendly_errors
def partition(
    graph: Annotated[str, typer.Argument(help="Graph file to split (any supported format), or a sample name.", show_default=False)],
    parts: Annotated[
        int, typer.Option(help="How many parts, 1 to the graph's node count: one per worker that will solve it.", show_default=False)
    ],
    out: Annotated[
        Path,
        typer.Option(
            help="Folder to write: partition.json (the map) and one part-NNNNN.npz per part. A new or empty folder, "
            "or an earlier partitioned graph with --force.",
            show_default=False,
        ),
    ],
    input_format: Annotated[
        str | None, typer.Option("--format", help=f"Read GRAPH as this format instead of detecting it: {_READ_FORMATS}.")
    ] = None,
    force: Annotated[bool, typer.Option(help="Replace the partitioned graph in --out; never a folder of anything else.")] = False,
) -> None:
    """Split a graph into parts, one file per part, for 'predict --partitions': each Ray worker then
    reads its own part, and the solving process reads only the map. This command reads the whole
    graph once (run it where it fits); the parts are ranges of its reverse Cuthill-McKee order.

    Example: graphtransfer graphs partition big.npz --parts 4 --out big-parts
    Example: graphtransfer predict --model runs/mis/small --graph big-parts --out set.csv --ray-address auto
    """
    from graphtransfer.graphs.partition import halo_share
    from graphtransfer.graphs.partition_files import partition_graph

    written = partition_graph(graph, parts, out, input_format, force)
    typer.echo(f"read {graph}: {written.num_nodes:,} nodes, {written.num_edges:,} edges")
    outlines = [entry.outline() for entry in written.parts]
    typer.echo(
        f"{len(outlines)} parts of {min(e.num_owned for e in outlines):,}-{max(e.num_owned for e in outlines):,} nodes, "
        f"their halos {halo_share(outlines):.2f} of the nodes"
    )
    typer.echo(f"wrote {out}")


@app.command(name="generate")
@friendly_errors
def generate_graph(
    out: Annotated[
        Path, typer.Argument(help="Graph file to write; its extension picks the format unless --to is given.", show_default=False)
    ],
    nodes: Annotated[
        int, typer.Option(help=f"Number of nodes, 1 to {MAX_NODES:,}, as many as the memory available holds.", show_default=False)
    ],
    generator: Annotated[str, typer.Option(help=f"One of {', '.join(GENERATORS)}.")] = "barabasi_albert",
    m: Annotated[int | None, typer.Option("--m", help="Edges each new node adds (barabasi_albert); others take average degree 2m.")] = None,
    avg_degree: Annotated[float | None, typer.Option(help="Average degree (barabasi_albert takes m = avg-degree / 2).")] = None,
    seed: Annotated[int, typer.Option(help="Random seed; the same seed gives the same graph.")] = 0,
    to: Annotated[str | None, typer.Option(help=f"Write OUT in this format: {_WRITE_FORMATS}.")] = None,
    force: Annotated[bool, typer.Option(help="Replace OUT if it exists; never a model's files.")] = False,
) -> None:
    """Generate a seeded random graph and write it (density by default: m = 4, or average degree 8).

    Example: graphtransfer graphs generate --generator barabasi_albert --nodes 250000 --m 4 --seed 7 ba.npz
    """
    if m is not None and avg_degree is not None:
        raise UsageError(f"--m {m} and --avg-degree {avg_degree} both set the density; give one of them")
    spec = spec_for(generator, nodes, seed, m=m, avg_degree=avg_degree)
    check_output_file(out, [], force, "OUT", example="graph.npz")  # before a large graph is generated, not after
    _check_memory_for(spec)
    graph = generate(spec)
    written_as = write_graph(graph, out, to)
    typer.echo(f"generated {graph.name}: {graph.num_nodes:,} nodes, {graph.num_edges:,} edges")
    typer.echo(f"wrote {out} ({written_as})")


def _check_memory_for(spec: dict) -> None:
    """Refuse, before anything is allocated, a graph whose generation would not fit in memory."""
    from graphtransfer.solve.memory import available_bytes  # here: the other graphs commands never need it

    needed, available = generation_bytes(spec), available_bytes()
    if available is not None and needed > available[0]:
        raise UsageError(
            f"generating {spec['num_nodes']:,} nodes with {spec['generator']} needs about {needed / 2**30:.1f} GiB, but "
            f"{available[0] / 2**30:.1f} GiB is available ({available[1]}); generate fewer nodes or a sparser graph"
        )
