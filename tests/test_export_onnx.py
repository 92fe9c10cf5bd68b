"""`graphtransfer export --onnx`: the file runs the policy's pass in ONNX Runtime on graphs of any
size, equal to the policy's own outputs, and every bad request is one line that writes nothing."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest
import torch
from typer.testing import CliRunner

from graphtransfer.cli import app
from graphtransfer.graphs import erdos_renyi
from graphtransfer.solve.loading import policy_for_graphs

runner = CliRunner()


def export(model, out, *extra):
    return runner.invoke(app, ["export", "--model", str(model), "--onnx", str(out), *extra])


def policy_and_file_outputs(model, path, graph):
    """The policy's per-node outputs on ``graph`` through graphtransfer's own path, and the ONNX file's."""
    loaded = policy_for_graphs(model, [graph])
    obs, _ = loaded.env.reset(seed=3)
    nodes, edges = int(obs["num_nodes"][0]), int(obs["num_edges"][0])
    with torch.no_grad():
        expected, _, _ = loaded.policy.node_outputs({k: torch.as_tensor(v)[None] for k, v in obs.items()}, with_values=False)
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    inputs = {"x": obs["x"][:nodes].astype(np.float32), "edge_index": obs["edge_index"][:, :edges].astype(np.int64)}
    (got,) = session.run(None, inputs)
    return expected[0, :nodes].numpy(), got


@pytest.mark.parametrize(("task", "outputs"), [("mis", 3), ("mvc", 1)])
def test_the_file_gives_the_policys_outputs_on_a_graph_it_never_saw(tiny_model, tmp_path, task, outputs):
    model, out = tiny_model(task), tmp_path / f"{task}.onnx"
    result = export(model, out)
    assert result.exit_code == 0, result.output
    assert f"output node_outputs (nodes, {outputs})" in result.stdout and "largest difference from the policy" in result.stdout
    expected, got = policy_and_file_outputs(model, out, erdos_renyi(1_500, 12.0, seed=5))
    assert got.shape == expected.shape == (1_500, outputs)
    assert np.abs(got - expected).max() < 1e-4
    assert np.argmax(got, axis=-1).tolist() == np.argmax(expected, axis=-1).tolist() or outputs == 1
    props = {p.key: p.value for p in onnx.load(str(out)).metadata_props}
    assert props["graphtransfer.task"] == task and props["graphtransfer.outputs_per_node"] == str(outputs)
    assert sorted(p.name for p in tmp_path.iterdir()) == [out.name]  # one file: no weights beside it, no temporary left


def test_sb3_and_onnx_in_one_command(tiny_model, tmp_path):
    result = runner.invoke(
        app, ["export", "--model", str(tiny_model("mis")), "--sb3", str(tmp_path / "m.zip"), "--onnx", str(tmp_path / "m.onnx")]
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "m.zip").stat().st_size > 0 and (tmp_path / "m.onnx").stat().st_size > 0


def refused(result) -> str:
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in result.output
    return lines[0]


def test_nothing_named_to_write(tiny_model):
    assert refused(runner.invoke(app, ["export", "--model", str(tiny_model("mis"))])) == (
        "error: export: name what to write: --sb3 FILE.zip, --onnx FILE.onnx, or both"
    )


def test_one_file_named_twice(tiny_model, tmp_path):
    same = str(tmp_path / "m.onnx")
    assert "give each its own file" in refused(
        runner.invoke(app, ["export", "--model", str(tiny_model("mis")), "--sb3", same, "--onnx", same])
    )
    assert not (tmp_path / "m.onnx").exists()


def test_a_name_that_is_not_onnx(tiny_model, tmp_path):
    assert "name the file *.onnx" in refused(export(tiny_model("mis"), tmp_path / "m.pt"))
    assert not (tmp_path / "m.pt").exists()


def test_an_existing_file_is_kept_without_force_and_replaced_with_it(tiny_model, tmp_path):
    out = tmp_path / "m.onnx"
    out.write_bytes(b"keep me")
    assert "--force" in refused(export(tiny_model("mis"), out))
    assert out.read_bytes() == b"keep me"
    assert export(tiny_model("mis"), out, "--force").exit_code == 0
    assert onnx.load(str(out)).graph.input[0].name == "x"


def test_a_model_folders_own_file_is_never_replaced(tiny_model, tmp_path):
    model = tiny_model("mis")
    config = (model / "config.json").read_bytes()
    message = refused(export(model, model / "config.json", "--force"))
    assert "config.json" in message and (model / "config.json").read_bytes() == config


def test_an_edge_head_file_scores_every_edge_as_the_policy_on_a_graph_it_never_saw(tiny_model, tmp_path):
    """matching: node features, edges and the edges' features in, three logits per edge out."""
    model, out = tiny_model("matching"), tmp_path / "matching.onnx"
    result = export(model, out)
    assert result.exit_code == 0, result.output
    assert "edge_attr (edges, 6) float32, output edge_outputs (edges, 3) (edge-wise head)" in result.stdout
    loaded = policy_for_graphs(model, [erdos_renyi(1_200, 8.0, seed=6)])
    obs, _ = loaded.env.reset(seed=3)
    nodes, edges = int(obs["num_nodes"][0]), int(obs["num_edges"][0])
    with torch.no_grad():
        expected, _, _ = loaded.policy.edge_outputs({k: torch.as_tensor(v)[None] for k, v in obs.items()}, with_values=False)
    inputs = {"x": obs["x"][:nodes], "edge_index": obs["edge_index"][:, :edges], "edge_attr": obs["edge_attr"][:edges]}
    (got,) = onnxruntime.InferenceSession(str(out), providers=["CPUExecutionProvider"]).run(None, inputs)
    assert got.shape == (edges, 3) and edges > 8_000
    assert np.abs(got - expected[0, :edges].numpy()).max() < 1e-4
    props = {p.key: p.value for p in onnx.load(str(out)).metadata_props}
    assert props["graphtransfer.outputs_per_edge"] == "3" and props["graphtransfer.num_edge_features"] == "6"


def test_a_node_head_that_reads_edge_features_is_refused_with_what_to_do(tiny_model, tmp_path):
    message = refused(export(tiny_model("path"), tmp_path / "p.onnx"))
    assert "reads edge features" in message and "--sb3" in message
    assert not (tmp_path / "p.onnx").exists()


def test_a_read_only_place_is_refused_before_the_export(tiny_model):
    if sys.platform != "linux":
        pytest.skip("/proc/sys is Linux's")
    assert "/proc/sys" in refused(export(tiny_model("mis"), "/proc/sys/m.onnx"))


def test_without_the_onnx_packages_it_says_what_to_install(tiny_model, tmp_path):
    """A real process in which onnxscript cannot be imported, as on an install without the extra."""
    code = (
        "import sys; sys.modules['onnxscript'] = None\n"
        "from graphtransfer.cli import main; sys.argv = ['graphtransfer', 'export', '--model', sys.argv[1], '--onnx', sys.argv[2]]; main()"
    )
    out = tmp_path / "m.onnx"
    result = subprocess.run([sys.executable, "-c", code, str(tiny_model("mis")), str(out)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 2, result.stderr
    expected = "error: --onnx needs the onnxscript package: pip install 'graphtransfer[onnx]' (onnx, onnxscript and onnxruntime)"
    assert result.stderr.strip() == expected
    assert not out.exists()


def test_the_example_solves_mis_with_onnx_runtime_and_numpy_alone(tiny_model, tmp_path):
    """examples/onnx_mis.py in a process where torch and graphtransfer cannot be imported: an
    independent, maximal set, within a few nodes of predict's with the same policy and no reductions (their random
    features differ: the env's generator against the example's)."""
    from pathlib import Path

    from graphtransfer import predict
    from graphtransfer.graphs import barabasi_albert, write_graph

    model, out = tiny_model("mis"), tmp_path / "mis.onnx"
    assert export(model, out).exit_code == 0
    graph = barabasi_albert(2_000, 3, seed=4)  # no isolated node, which an edge list cannot hold
    edges_file = tmp_path / "g.txt"
    write_graph(graph, edges_file)
    example = Path(__file__).resolve().parents[1] / "examples" / "onnx_mis.py"
    code = (
        "import sys, runpy; sys.modules['torch'] = None; sys.modules['graphtransfer'] = None\n"
        f"sys.argv = ['onnx_mis.py', {str(out)!r}, {str(edges_file)!r}]\n"
        f"namespace = runpy.run_path({str(example)!r})\n"
        "session = namespace['onnxruntime'].InferenceSession(sys.argv[1])\n"
        "ids, edges = namespace['read_edge_list'](sys.argv[2])\n"
        "chosen = namespace['solve'](session, ids.size, edges)\n"
        "src, dst = edges\n"
        "assert not (chosen[src] & chosen[dst]).any(), 'not independent'\n"
        "covered = chosen.copy(); covered[dst[chosen[src]]] = True\n"
        "assert covered.all(), 'not maximal'\n"
        "print(int(chosen.sum()))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    found = int(result.stdout.strip())
    _, ours = predict(model, graph, rollouts=1, reductions=False)  # the example decodes with the policy alone
    assert abs(found - ours.objective) <= 0.03 * ours.objective, (found, ours.objective)


def test_the_example_names_the_files_own_ids_on_a_graph_whose_ids_are_not_rows(tiny_model, tmp_path):
    """An edge list whose ids have gaps (7, 10, 25, ... as SNAP's do): the example's nodes are the
    ids in the file, none invented for the gaps, and its CSV names them; the set is independent."""
    from graphtransfer.graphs import barabasi_albert

    model, out = tiny_model("mis"), tmp_path / "mis.onnx"
    assert export(model, out).exit_code == 0
    graph = barabasi_albert(300, 3, seed=6)
    ids = 7 + 5 * np.arange(graph.num_nodes) + np.arange(graph.num_nodes) ** 2  # gaps that grow: max id ~ 91,000
    src, dst = graph.edge_index[:, graph.edge_index[0] < graph.edge_index[1]]
    edges_file, csv = tmp_path / "gaps.txt", tmp_path / "set.csv"
    edges_file.write_text("".join(f"{ids[u]} {ids[v]}\n" for u, v in zip(src, dst, strict=True)))
    example = Path(__file__).resolve().parents[1] / "examples" / "onnx_mis.py"
    result = subprocess.run(
        [sys.executable, str(example), str(out), str(edges_file), str(csv)], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith(f"out of {graph.num_nodes}")
    rows = np.loadtxt(csv, delimiter=",", skiprows=1, dtype=np.int64)
    assert rows[:, 0].tolist() == sorted(ids.tolist())
    chosen = dict(zip(rows[:, 0].tolist(), rows[:, 1].astype(bool).tolist(), strict=True))
    assert not any(chosen[ids[u]] and chosen[ids[v]] for u, v in zip(src, dst, strict=True))
    assert f"independent set of {sum(chosen.values())} nodes" in result.stdout
