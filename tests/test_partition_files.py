"""graphtransfer.graphs.partition_files and ``graphtransfer graphs partition``: a graph written as one
file per part reads back as the parts the split makes; bad uses, damaged files and a second writer
are one line and exit 2. The solve on such a folder is in tests/test_partitioned.py (Ray)."""

import json
import pickle
import subprocess
import sys

import numpy as np
import pytest
from typer.testing import CliRunner

from graphtransfer.cli import app
from graphtransfer.config import ModelConfig, RunConfig
from graphtransfer.envs.protocol import Head
from graphtransfer.errors import GraphFileError
from graphtransfer.graphs import erdos_renyi, write_graph
from graphtransfer.graphs.graph import with_ids
from graphtransfer.graphs.partition import assign_parts, split
from graphtransfer.graphs.partition_files import MAP_NAME, check_part_files, file_digest, read_part, read_partition_map
from graphtransfer.io import LOCK_NAME
from graphtransfer.nn import build_policy
from graphtransfer.solve.partitioned import node_model
from graphtransfer.solve.partitioned_mis import DecodingPartWorker
from graphtransfer.solve.predict import write_solution_parts
from graphtransfer.tasks import TASKS
from graphtransfer.tasks.factory import inference_env
from graphtransfer.tasks.mis.constants import IN_SET, OUT
from tests.test_outputs import assert_refused

runner = CliRunner()
GRAPH = with_ids(erdos_renyi(300, 6, seed=4), np.arange(300, dtype=np.int64) * 10 + 7)  # the graph's own ids: 7, 17, ...


@pytest.fixture
def graph_file(tmp_path):
    path = tmp_path / "er.npz"
    write_graph(GRAPH, path)
    return path


def partition(graph, out, *extra):
    return runner.invoke(app, ["graphs", "partition", str(graph), "--out", str(out), *extra])


def test_the_parts_read_back_are_the_split_of_the_graph_with_its_own_ids(graph_file, tmp_path):
    result = partition(graph_file, tmp_path / "parts", "--parts", "2")
    assert result.exit_code == 0, result.output
    assert "2 parts of 150-150 nodes" in result.stdout
    written = read_partition_map(tmp_path / "parts")
    assert (written.num_nodes, written.num_edges, len(written.parts)) == (300, GRAPH.num_edges, 2)
    check_part_files(written)
    for expected in split(GRAPH, assign_parts(GRAPH, 2)):
        part = read_part(written, expected.index)
        for name in ("nodes", "halo", "halo_owner", "halo_position", "boundary", "edge_index", "ids"):
            assert np.array_equal(getattr(part, name), getattr(expected, name)), name
        assert part.own_ids().tolist() == (part.nodes * 10 + 7).tolist()
        assert written.parts[expected.index].outline() == expected.outline()


def test_an_earlier_partition_is_kept_without_force_and_replaced_with_it(graph_file, tmp_path):
    out = tmp_path / "parts"
    assert partition(graph_file, out, "--parts", "3").exit_code == 0
    before = (out / MAP_NAME).read_text()
    assert "pass --force to replace it" in assert_refused(partition(graph_file, out, "--parts", "2"))
    assert (out / MAP_NAME).read_text() == before
    assert partition(graph_file, out, "--parts", "2", "--force").exit_code == 0
    assert sorted(path.name for path in out.iterdir()) == [LOCK_NAME, "part-00000.npz", "part-00001.npz", MAP_NAME]


@pytest.mark.parametrize(
    "parts, message",
    [
        ("0", "--parts 0: expected a whole number of parts from 1"),
        ("-2", "--parts -2: expected a whole number of parts from 1"),
        ("301", "--parts 301: expected a whole number of parts from 1 to the graph's 300 nodes"),
        ("1000000000000", "--parts 1000000000000: expected"),
    ],
)
def test_a_bad_part_count_is_refused_and_writes_nothing(graph_file, tmp_path, parts, message):
    assert message in assert_refused(partition(graph_file, tmp_path / "parts", "--parts", parts))
    assert not (tmp_path / "parts").exists()


@pytest.mark.parametrize("parts", ["nan", "2.5", "two"])
def test_a_part_count_that_is_not_a_number_is_refused_without_a_traceback(graph_file, tmp_path, parts):
    result = partition(graph_file, tmp_path / "parts", "--parts", parts)
    assert result.exit_code == 2 and "--parts" in result.stderr and "Traceback" not in result.output
    assert not (tmp_path / "parts").exists()


def test_a_foreign_folder_or_a_file_is_never_written_into(graph_file, tmp_path):
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine\n")
    assert "holds files that are not a graphtransfer partitioned graph (notes.txt)" in assert_refused(
        partition(graph_file, foreign, "--parts", "2", "--force")
    )
    assert [path.name for path in foreign.iterdir()] == ["notes.txt"]
    assert "is a file" in assert_refused(partition(graph_file, graph_file, "--parts", "2", "--force"))


def test_a_second_writer_of_one_folder_is_refused_while_the_first_writes(graph_file, tmp_path):
    """Another process holds the folder's write lock, as a partition that is writing does."""
    out = tmp_path / "parts"
    out.mkdir()
    holder = (
        "import sys, time; from filelock import FileLock; lock = FileLock(sys.argv[1], timeout=0); lock.acquire(); "
        "print('held', flush=True); time.sleep(60)"
    )
    process = subprocess.Popen([sys.executable, "-c", holder, str(out / LOCK_NAME)], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline() == "held\n"
        message = assert_refused(partition(graph_file, out, "--parts", "2"))
    finally:
        process.kill()
        process.wait()
    assert "another process is writing a partitioned graph into it" in message
    assert sorted(path.name for path in out.iterdir()) == [LOCK_NAME]


@pytest.fixture
def parts_folder(graph_file, tmp_path):
    out = tmp_path / "parts"
    assert partition(graph_file, out, "--parts", "2").exit_code == 0
    return out


def test_a_changed_part_file_is_refused_by_the_worker_that_reads_it(parts_folder):
    path = parts_folder / "part-00001.npz"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size: only the sha256 tells
    path.write_bytes(bytes(data))
    written = read_partition_map(parts_folder)
    check_part_files(written)  # the driver's look at the sizes passes
    with pytest.raises(GraphFileError, match="is not the file partition.json names .* write it again with graphtransfer graphs partition"):
        read_part(written, 1)
    read_part(written, 0)


def rewrite_part(folder, **changed) -> None:
    """Part 0 written again with ``changed`` arrays, and its map entry's size and sha256 made to
    match: a forgery only the checks of the contents can find."""
    part = read_part(read_partition_map(folder), 0)
    arrays = {name: getattr(part, name) for name in ("nodes", "halo", "halo_owner", "halo_position", "boundary", "edge_index", "ids")}
    path = folder / "part-00000.npz"
    with path.open("wb") as file:
        np.savez(file, **(arrays | changed))
    meta = json.loads((folder / MAP_NAME).read_text())
    meta["parts"][0]["size"], meta["parts"][0]["sha256"] = file_digest(path)
    (folder / MAP_NAME).write_text(json.dumps(meta))


def edge_out_of_range(folder) -> dict:
    part = read_part(read_partition_map(folder), 0)
    edges = part.edge_index.copy()
    edges[0, 0] = part.num_local  # one past the part's last local row
    return {"edge_index": edges}


def test_arrays_that_do_not_fit_are_refused_even_under_a_matching_sha256(parts_folder):
    """A part rewritten with an edge into a node it does not hold, and its map entry made to match:
    the worker refuses it before any index is used."""
    rewrite_part(parts_folder, **edge_out_of_range(parts_folder))
    check_part_files(read_partition_map(parts_folder))  # the headers fit: only the values tell
    with pytest.raises(GraphFileError, match="its edge sources lie outside 0"):
        read_part(read_partition_map(parts_folder), 0)


def test_the_error_a_worker_raises_crosses_processes_whole():
    """Ray and process pools carry an exception by pickling it; the worker's GraphFileError must come
    back as itself (one line, exit 2), not as a failure to rebuild it."""
    error = pickle.loads(pickle.dumps(GraphFileError("part-00000.npz", "is damaged", line=3)))
    assert isinstance(error, GraphFileError) and (error.path, error.cause, error.line) == ("part-00000.npz", "is damaged", 3)
    assert str(error) == "part-00000.npz, line 3: is damaged"


def predict_folder(tiny_model, folder, out, *extra):
    return runner.invoke(app, ["predict", "--model", str(tiny_model("mis")), "--graph", str(folder), "--out", str(out), *extra])


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda folder: (folder / "part-00001.npz").write_bytes((folder / "part-00001.npz").read_bytes()[:-10]), "part-00001.npz: holds"),
        (lambda folder: (folder / "part-00000.npz").unlink(), "part-00000.npz: is missing"),
        (lambda folder: (folder / MAP_NAME).write_text("{"), "partition.json: cannot be read as JSON"),
        (
            lambda folder: (folder / MAP_NAME).write_text((folder / MAP_NAME).read_text().replace('"nodes": 300', '"nodes": 301')),
            "own 300 nodes",
        ),
        (
            lambda folder: (folder / MAP_NAME).write_text((folder / MAP_NAME).read_text().replace("part-00001", "../x")),
            "must name the file",
        ),
        # rewritten parts whose size and sha256 the map was made to match: their headers tell
        (lambda folder: rewrite_part(folder, nodes=np.array([object()] * 150)), "'nodes.npy' holds Python objects"),
        (lambda folder: rewrite_part(folder, halo=read_part(read_partition_map(folder), 0).halo.astype(np.int32)), "dtype int32"),
        (lambda folder: rewrite_part(folder, boundary=np.zeros(0, dtype=np.int64)), "boundary has shape (0,)"),
    ],
)
def test_a_damaged_partitioned_graph_is_refused_before_ray_starts(tiny_model, parts_folder, tmp_path, damage, message):
    ray = pytest.importorskip("ray")
    damage(parts_folder)
    out = tmp_path / "set.csv"
    refused = assert_refused(predict_folder(tiny_model, parts_folder, out, "--ray-address", "local"))
    assert message in refused and "write it again with graphtransfer graphs partition" in refused
    assert not out.exists() and not ray.is_initialized()


@pytest.mark.slow
def test_a_part_only_its_worker_can_find_damaged_is_one_line_and_exit_2(tiny_model, parts_folder, tmp_path):
    """Values out of range under a matching size, sha256 and headers: the worker on the real Ray
    cluster refuses it, and its error reaches the user as the usual line, not Ray's traceback."""
    ray = pytest.importorskip("ray")
    rewrite_part(parts_folder, **edge_out_of_range(parts_folder))
    out = tmp_path / "set.csv"
    refused = assert_refused(predict_folder(tiny_model, parts_folder, out, "--ray-address", "local"))
    assert "part-00000.npz: its edge sources lie outside 0" in refused and "write it again with graphtransfer graphs partition" in refused
    assert not out.exists() and not ray.is_initialized()


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--ray-address", "local", "--partitions", "3"], "--partitions 3: "),
        ([], "--partitions solves one graph on a Ray cluster: give --ray-address too"),
        (["--ray-address", "local", "--rollouts", "4"], "drop --rollouts"),
    ],
)
def test_a_bad_use_of_a_partitioned_graph_is_refused_before_ray_starts(tiny_model, parts_folder, tmp_path, extra, message):
    out = tmp_path / "set.csv"
    assert message in assert_refused(predict_folder(tiny_model, parts_folder, out, *extra))
    assert not out.exists()


def test_the_workers_set_check_finds_two_adjacent_nodes_and_an_uncovered_one():
    """The check the workers run on their parts (the set is never checked in the driver): it can fail."""
    env = inference_env(RunConfig(task="mis"), GRAPH)
    policy = build_policy(Head.NODE_WISE, ModelConfig(width=8), env.observation_space, env.action_space)
    part = split(GRAPH, assign_parts(GRAPH, 2))[0]
    worker = DecodingPartWorker(part, node_model(policy), TASKS["mis"].partitioned_solve)
    worker.load()
    source, target = part.edge_index[:, 0]
    worker.status[:] = OUT
    worker.status[[source, target]] = IN_SET
    assert worker.check_set()[0] == "not independent"
    worker.status[:] = OUT
    assert worker.check_set() == ("not maximal", 0)


def test_the_solution_written_part_by_part_quotes_names_across_blocks(tmp_path, monkeypatch):
    from graphtransfer.solve import predict

    monkeypatch.setattr(predict, "ROWS_PER_WRITE", 2)
    out = tmp_path / "set.csv"
    parts = [(np.array(["a", 'b,"2"', "c"]), np.array([True, False, True])), (np.array(["d"]), np.array([False]))]
    write_solution_parts(out, "node,decision", iter(parts))
    assert out.read_text() == 'node,decision\na,1\n"b,""2""",0\nc,1\nd,0\n'
