"""Benchmarks of graphtransfer against the plain SB3 + PyG recipe; not part of the test run."""
