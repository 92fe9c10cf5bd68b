"""Workers limited in memory: on a local Ray instance whose workers may use less memory than the
whole graph's solve needs and more than one part's, the single-process solve on a worker is
refused in one line by the memory guard and the partitioned solve on the same workers finds a
maximal independent set; a part that does not fit either is refused naming the part and the fix.
The limit is the memory guard's own ($GRAPHTRANSFER_MEMORY_LIMIT_MB), set in the workers alone."""

import pytest
import ray

from graphtransfer.checkpoint import read_checkpoint
from graphtransfer.config import Decoding
from graphtransfer.errors import UsageError
from graphtransfer.graphs import random_geometric
from graphtransfer.graphs.partition import assign_parts, split
from graphtransfer.solve.loading import load_policy
from graphtransfer.solve.memory import LIMIT_VARIABLE, MIB, estimate_peak_bytes
from graphtransfer.solve.partitioned_mis import partitioned_decoding
from graphtransfer.solve.predict import predict_graph
from graphtransfer.tasks import TASKS
from tests.test_partitioned import maximal_independent

GRAPH = random_geometric(20_000, 8.0, seed=3)
PARTS = 4


def largest_part(model, parts: int) -> int:
    """The guard's estimate for the largest of ``parts`` parts (own and halo rows; 1: the whole graph)."""
    config = read_checkpoint(model).config.model
    if parts == 1:
        return estimate_peak_bytes(GRAPH.num_nodes, GRAPH.edge_index.shape[1], config)
    return max(estimate_peak_bytes(part.num_local, part.edge_index.shape[1], config) for part in split(GRAPH, assign_parts(GRAPH, parts)))


@pytest.fixture(scope="module")
def limited_ray(tiny_model):
    """A local Ray instance whose workers see a memory limit halfway between the largest of 4 parts
    and the largest of 2 parts: the whole graph and halves do not fit, quarters do."""
    whole, half, quarter = (largest_part(tiny_model("mis"), parts) for parts in (1, 2, PARTS))
    assert quarter < half < whole
    limit_mb = (half + quarter) / 2 / MIB
    ray.init(
        address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": {LIMIT_VARIABLE: str(limit_mb)}}
    )
    yield limit_mb
    ray.shutdown()


def test_only_the_partitioned_solve_fits_workers_limited_in_memory(limited_ray, tiny_model):
    model = tiny_model("mis")
    whole = ray.remote(predict_graph).remote(model, GRAPH, Decoding(reductions=False))  # the whole graph: the kernel would shrink it
    with pytest.raises(ray.exceptions.RayTaskError) as refused:
        ray.get(whole)
    cause = refused.value.cause
    assert isinstance(cause, UsageError) and f"is available (${LIMIT_VARIABLE})" in str(cause)
    assert "use a smaller graph or a machine with more memory" in str(cause)

    policy, _ = load_policy(model, GRAPH)
    found = partitioned_decoding(policy, GRAPH, PARTS, TASKS["mis"].partitioned_solve, seed=0)
    assert maximal_independent(GRAPH, found.solution)


def test_a_part_that_does_not_fit_is_refused_naming_the_part_and_the_fix(limited_ray, tiny_model):
    policy, _ = load_policy(tiny_model("mis"), GRAPH)
    with pytest.raises(UsageError) as refused:
        partitioned_decoding(policy, GRAPH, 2, TASKS["mis"].partitioned_solve, seed=0)  # halves: each part above the limit
    message = str(refused.value)
    assert message.startswith("part ") and f"is available (${LIMIT_VARIABLE})" in message
    assert message.endswith("split the graph into more --partitions or give the workers more memory")
