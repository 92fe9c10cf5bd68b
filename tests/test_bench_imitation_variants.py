"""bench/imitation_variants.py: the extra graphs it learns from and the searches it keeps."""

import numpy as np

from bench.imitation_variants import EXTRA_FIRST_SEED, cached_set, extra_graphs
from graphtransfer.tasks import is_independent_set


def test_extra_graphs_follow_the_spec_in_order_with_their_own_seeds():
    made = extra_graphs("er:120:8,ba:100:4,rgg:150:10,")
    assert [graph.num_nodes for graph in made] == [120, 100, 150]
    assert [graph.name for graph in made] == [
        f"er-n120-d8.0-s{EXTRA_FIRST_SEED}",
        f"ba-n100-m2-s{EXTRA_FIRST_SEED + 1}",
        f"rgg-n150-d10.0-s{EXTRA_FIRST_SEED + 2}",
    ]
    assert extra_graphs("") == []


def test_a_search_is_kept_and_read_back_not_run_again(tmp_path):
    graph = extra_graphs("er:120:8")[0]
    found = cached_set(graph, tmp_path / "cache")
    assert is_independent_set(graph, found)
    (kept,) = (tmp_path / "cache").iterdir()
    np.save(kept, np.zeros(graph.num_nodes, dtype=bool))  # a stand-in on disk: read back, not searched again
    assert not cached_set(graph, tmp_path / "cache").any()
