"""The ``graphtransfer`` command line. Nothing in the package imports it."""

from graphtransfer.cli.main import app, main

__all__ = ["app", "main"]
