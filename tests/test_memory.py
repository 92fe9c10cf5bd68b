"""The memory guard: the estimate against measured peaks, where available memory comes from, the refusal."""

import pytest

from graphtransfer import memory
from graphtransfer.config import ModelConfig
from graphtransfer.errors import UsageError
from graphtransfer.memory import MIB, available_bytes, check_memory, estimate_peak_bytes

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
    monkeypatch.setenv("GRAPHTRANSFER_MEMORY_LIMIT_MB", "lots")
    with pytest.raises(
        UsageError, match=r"^\$GRAPHTRANSFER_MEMORY_LIMIT_MB='lots' is not a number; set it to MiB, e\.g\. 4096, or unset it$"
    ):
        available_bytes()


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
    check_memory(10_000, 80_000, ModelConfig(), "graph small.txt")  # fits: no error
    with pytest.raises(UsageError) as refused:
        check_memory(250_000, 2_000_000, ModelConfig(), "graph large.json")
    assert str(refused.value) == (
        "graph large.json: running the policy needs about 949 MiB (250000 nodes, 2000000 directed edges, width 64), "
        "but 500 MiB is available (MemAvailable in /proc/meminfo); use a smaller graph or a machine with more memory"
    )
