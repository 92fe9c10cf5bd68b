"""The memory guard: the estimate against measured peaks, where available memory comes from, the refusal."""

import numpy as np
import pytest

from graphtransfer.config import ModelConfig
from graphtransfer.errors import UsageError
from graphtransfer.solve import memory
from graphtransfer.solve.memory import MIB, available_bytes, check_memory, estimate_peak_bytes, most_edges_into_a_chunk

# (nodes, directed edges, conv, width, measured MiB): the table in graphtransfer/memory.py's docstring
MEASURED = [
    (50_000, 399_716, "sage", 64, 242),
    (200_000, 1_599_652, "sage", 16, 336),
    (200_000, 1_599_652, "sage", 64, 702),
    (200_000, 1_599_652, "sage", 128, 1191),
    (100_000, 1_997_896, "sage", 64, 803),
    (200_000, 1_599_652, "gcn", 64, 1313),
]


@pytest.mark.parametrize(("nodes", "edges", "conv", "width", "measured"), MEASURED)
def test_estimate_is_close_to_the_measured_peak(nodes, edges, conv, width, measured):
    estimate = estimate_peak_bytes(nodes, edges, ModelConfig(conv=conv, width=width, head_width=width)) / MIB
    assert 0.95 * measured <= estimate <= 1.3 * measured


def test_each_edge_costs_at_least_one_message_of_width_floats_and_depth_costs_nothing():
    model = ModelConfig(width=64)
    per_edge = (estimate_peak_bytes(1000, 2_000_000, model) - estimate_peak_bytes(1000, 1_000_000, model)) / 1_000_000
    assert per_edge >= 4 * 64
    assert estimate_peak_bytes(1000, 10_000, ModelConfig(num_layers=2)) == estimate_peak_bytes(1000, 10_000, ModelConfig(num_layers=8))
    # GCN: a second message tensor, over the self-loops too
    extra = estimate_peak_bytes(1000, 10_000, ModelConfig(conv="gcn")) - estimate_peak_bytes(1000, 10_000, ModelConfig(conv="sage"))
    assert extra >= (10_000 + 1000) * 4 * 64


def test_the_variable_overrides_what_the_system_reports(monkeypatch):
    monkeypatch.setenv("GRAPHTRANSFER_MEMORY_LIMIT_MB", "1.5")
    assert available_bytes() == (int(1.5 * MIB), "$GRAPHTRANSFER_MEMORY_LIMIT_MB")
    for value in ("lots", "-1", "0", "inf", "nan"):  # -1 was read as -1 MiB, inf overflowed
        monkeypatch.setenv("GRAPHTRANSFER_MEMORY_LIMIT_MB", value)
        with pytest.raises(UsageError) as refused:
            available_bytes()
        assert str(refused.value) == (
            f"$GRAPHTRANSFER_MEMORY_LIMIT_MB={value!r} is not a positive number of MiB; set it to e.g. 4096, or unset it"
        )


def test_the_smaller_of_meminfo_and_the_cgroup_room_wins(tmp_path, monkeypatch):
    monkeypatch.delenv("GRAPHTRANSFER_MEMORY_LIMIT_MB", raising=False)
    limit, usage = tmp_path / "memory.max", tmp_path / "memory.current"
    limit.write_text(f"{3 * 1024 * MIB}\n")
    usage.write_text(f"{1024 * MIB}\n")
    monkeypatch.setattr(memory, "_CGROUP_FILES", ((str(limit), str(usage)),))
    monkeypatch.setattr(memory, "_mem_available", lambda: (8 * 1024 * MIB, "MemAvailable in /proc/meminfo"))
    assert available_bytes() == (2 * 1024 * MIB, f"the limit in {limit}")
    limit.write_text("max\n")  # no limit set
    assert available_bytes() == (8 * 1024 * MIB, "MemAvailable in /proc/meminfo")


def test_check_memory_refuses_with_the_estimate_and_the_fix(monkeypatch):
    monkeypatch.setattr(memory, "available_bytes", lambda: (500 * MIB, "MemAvailable in /proc/meminfo"))
    check_memory(10_000, np.arange(80_000) % 10_000, ModelConfig(), "graph small.txt")  # fits: no error
    eight_each = np.arange(2_000_000) % 250_000  # every node has 8 incoming edges
    with pytest.raises(UsageError) as refused:
        check_memory(250_000, eight_each, ModelConfig(), "graph large.json")
    assert str(refused.value) == (
        "graph large.json: running the policy needs about 949 MiB (250000 nodes, 2000000 directed edges, width 64), "
        "but 500 MiB is available (MemAvailable in /proc/meminfo); pass --max-nodes-per-batch 15000"
    )
    check_memory(250_000, eight_each, ModelConfig(), "graph large.json", max_nodes_per_batch=15_000)  # the suggestion fits
    with pytest.raises(UsageError, match=r"needs about 582 MiB under --max-nodes-per-batch 62000 .*; pass --max-nodes-per-batch 15000$"):
        check_memory(250_000, eight_each, ModelConfig(), "graph large.json", max_nodes_per_batch=62_000)


def test_without_room_for_any_budget_the_fix_is_more_memory(monkeypatch):
    monkeypatch.setattr(memory, "available_bytes", lambda: (100 * MIB, "$GRAPHTRANSFER_MEMORY_LIMIT_MB"))
    with pytest.raises(UsageError, match="; use a smaller graph or a machine with more memory$"):
        check_memory(250_000, np.arange(2_000_000) % 250_000, ModelConfig(), "graph large.json")


def test_a_chunk_counts_the_edges_into_its_nodes_so_hubs_weigh_in():
    destination = np.array([0, 0, 0, 0, 1, 2, 3, 4, 5, 5])  # node 0 is a hub
    assert most_edges_into_a_chunk(destination, 6, 2) == 5  # nodes 0-1
    assert most_edges_into_a_chunk(destination, 6, 6) == 10
    model = ModelConfig()
    whole = estimate_peak_bytes(6, 10, model)
    assert estimate_peak_bytes(6, 10, model, 2, 5) == whole - 5 * 4 * model.width
