"""graphtransfer.graphs.partition: parts, halos and boundaries, by hand on a path and by their
invariants on generated graphs."""

import numpy as np
import pytest

from graphtransfer.graphs import delaunay, erdos_renyi, random_geometric
from graphtransfer.graphs.partition import assign_parts, check_part_count, halo_share, split


def test_a_path_in_two_parts_has_the_halo_and_boundary_worked_out_by_hand(path5):
    first, second = split(path5, np.array([0, 0, 1, 1, 1]))  # 0 - 1 | 2 - 3 - 4
    assert first.nodes.tolist() == [0, 1] and first.halo.tolist() == [2]
    assert first.boundary.tolist() == [1]  # node 1 (local 1) is in part 1's halo
    assert first.halo_owner.tolist() == [1] and first.halo_position.tolist() == [0]  # node 2 is row 0 of part 1's boundary
    # edges into 0 and 1, local ids (0, 1 owned, 2 = node 2), by destination
    assert first.edge_index.T.tolist() == [[1, 0], [0, 1], [2, 1]]
    assert second.nodes.tolist() == [2, 3, 4] and second.halo.tolist() == [1] and second.boundary.tolist() == [0]
    assert sorted(map(tuple, second.edge_index.T.tolist())) == [(0, 1), (1, 0), (1, 2), (2, 1), (3, 0)]
    assert first.senders() == [1] and second.senders() == [0]


def global_edges(part):
    ids = np.concatenate([part.nodes, part.halo])
    return set(map(tuple, ids[part.edge_index].T.tolist()))


@pytest.mark.parametrize("parts", [1, 2, 3, 7])
def test_parts_own_every_node_once_and_hold_every_edge_once(parts):
    graph = erdos_renyi(300, 6, seed=1)
    split_parts = split(graph, assign_parts(graph, parts))
    owned = np.concatenate([part.nodes for part in split_parts])
    assert np.sort(owned).tolist() == list(range(graph.num_nodes))
    edges = [global_edges(part) for part in split_parts]
    assert sum(map(len, edges)) == graph.edge_index.shape[1]
    assert set().union(*edges) == set(map(tuple, graph.edge_index.T.tolist()))
    sizes = [part.num_owned for part in split_parts]
    assert max(sizes) - min(sizes) <= 1


def test_a_halo_row_is_found_at_its_position_in_its_owners_boundary():
    graph = delaunay(400, seed=2)
    split_parts = split(graph, assign_parts(graph, 4))
    for part in split_parts:
        for node, owner, position in zip(part.halo, part.halo_owner, part.halo_position, strict=True):
            owning = split_parts[owner]
            assert owning.nodes[owning.boundary[position]] == node


def test_ranges_of_the_locality_order_keep_geometric_halos_thin_where_random_graphs_have_no_thin_cut():
    geometric = random_geometric(2000, 8, seed=3)
    random = erdos_renyi(2000, 8, seed=3)
    assert halo_share(split(geometric, assign_parts(geometric, 4))) < 0.3  # 0.2: bands of a square, each read by two
    assert halo_share(split(random, assign_parts(random, 4))) > 1.5  # 2.3: each part reads over half the graph
    assert halo_share(split(random, assign_parts(random, 1))) == 0


@pytest.mark.parametrize("bad", [0, -1, 301, 2.0, float("nan"), True, "2", None])
def test_a_part_count_that_is_not_a_whole_number_within_the_graph_is_refused(bad):
    with pytest.raises(ValueError, match="expected a whole number of parts from 1 to the graph's 300 nodes"):
        check_part_count(bad, 300)


@pytest.mark.parametrize("assignment", [[0, 0, 2, 2, 2], [0, 0, 1, 1], [-1, 0, 0, 1, 1]])
def test_an_assignment_with_an_empty_part_or_of_the_wrong_length_is_refused(path5, assignment):
    with pytest.raises(ValueError, match="assignment"):
        split(path5, np.array(assignment))
