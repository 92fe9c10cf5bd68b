"""How a graphtransfer command tunes the process it runs in: torch's huge pages, glibc's
allocation thresholds, how idle OpenMP threads wait, how many threads to use and what the garbage
collector visits. Importing the
package changes none of it; the command line calls :func:`tune_process` before torch loads, and
a Python user may call the same functions. A user's own environment variables always win.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import importlib
import importlib.machinery
import os
import sys
import threading
import time
import types

MALLOC_MMAP_THRESHOLD = 64 * 2**20  # bytes: smaller blocks come from the heap and are reused
MALLOC_TRIM_THRESHOLD = 256 * 2**20  # bytes of free heap top kept for the next allocations
KEPT_HEAP_TOP = 2**31 - 1  # bytes of free heap top a solve with room keeps: mallopt's largest value
LOAD_SAMPLES = 3  # readings of the run queue that choose_threads takes, LOAD_SAMPLE_GAP seconds apart
LOAD_SAMPLE_GAP = 0.01
_PAGES_SET_BY_USER = "THP_MEM_ALLOC_ENABLE" in os.environ  # read, never changed, on import


def tune_process(solving: bool = False) -> None:
    """Tune this process for a graphtransfer command; call it before torch is imported (later
    calls change only what torch has not read yet).

    - idle OpenMP threads sleep instead of spinning (:func:`wait_passively`), so a busy
      neighbour process costs a multi-threaded solve no more than it costs one thread;
    - torch's large CPU tensors on huge pages for training, ordinary ones for a solve
      (:func:`prefer_small_pages`);
    - glibc's allocation thresholds fixed (:func:`reuse_freed_memory`);
    - torch's compiler loaded only when something uses it (:func:`defer_compiler_import`).
    """
    wait_passively()
    if not _PAGES_SET_BY_USER:
        os.environ["THP_MEM_ALLOC_ENABLE"] = "0" if solving else "1"
    reuse_freed_memory()
    defer_compiler_import()


COMPILER = "torch._dynamo"
"""torch's compiler front end: torch itself imports it only when used, but PyG imports it with its own modules (for one
``isinstance`` check against compiled modules), 1.3-1.5 s of every command's start-up on this project's machines"""
_loading_compiler = threading.RLock()  # re-entrant: a read of the stand-in while the real module loads must not wait on itself


class _DeferredModule(types.ModuleType):
    """Stands in ``sys.modules`` for a module until an attribute of it is read: then imports the
    module itself (once, under a lock) and reads the attribute there. The import system's own
    check of a module found in ``sys.modules`` reads only ``__spec__``, which this holds; importing
    a submodule or ``from ... import`` reads ``__path__``, which loads the module first. Other
    special names are missing (no load): ``inspect.getmodule`` asks every module in
    ``sys.modules`` for its ``__file__``, and torch does so while it imports itself, when its
    compiler cannot load yet."""

    def __getattr__(self, name: str):
        if name.startswith("__") and name.endswith("__") and name != "__path__":
            raise AttributeError(name)
        if name in _OUTSIDE_COMPILATION and sys.modules.get(self.__name__) is self:
            return _OUTSIDE_COMPILATION[name]
        with _loading_compiler:
            if sys.modules.get(self.__name__) is self:
                del sys.modules[self.__name__]
            module = importlib.import_module(self.__name__)
        return getattr(module, name)


def _loaded_compiler() -> types.ModuleType | None:
    """torch's compiler where it has been imported, else ``None`` (the stand-in, or nothing, in ``sys.modules``)."""
    module = sys.modules.get(COMPILER)
    return None if module is None or isinstance(module, _DeferredModule) else module


def _graph_break(*args, **kwargs) -> None:
    """``torch._dynamo.graph_break`` before the compiler is loaded: nothing is being compiled, so there
    is no graph to break, as the real one does outside a compilation; the real one once it is loaded."""
    compiler = _loaded_compiler()
    if compiler is not None:
        compiler.graph_break(*args, **kwargs)


def _disable(fn=None, *args, **kwargs):
    """``torch._dynamo.disable`` before the compiler is loaded. For a function: a function like it
    (``functools.wraps``, so a method binds as before) that calls ``fn`` itself while the compiler
    is not loaded (nothing can be compiling, and torch's wrapper only stops a compilation from
    tracing ``fn``), and from the first call after it loaded goes through torch's own
    ``disable(fn, ...)``. The decorator form ``disable(recursive=False)``: torch's own, loading it."""
    if fn is None or _loaded_compiler() is not None:
        return importlib.import_module(COMPILER).disable(fn, *args, **kwargs)
    disabled = None

    @functools.wraps(fn)
    def call(*call_args, **call_kwargs):
        nonlocal disabled
        if disabled is None:
            compiler = _loaded_compiler()
            if compiler is None:
                return fn(*call_args, **call_kwargs)
            disabled = compiler.disable(fn, *args, **kwargs)
        return disabled(*call_args, **call_kwargs)

    return call


_OUTSIDE_COMPILATION = {"disable": _disable, "graph_break": _graph_break}
"""the two names of torch's compiler that its optimizers read at construction and at every step, answered by the
stand-in without loading the compiler, as they behave outside any compilation: ``train`` loaded it (1.3-1.5 s) for
them alone"""


def defer_compiler_import() -> None:
    """Keep torch's compiler (:data:`COMPILER`) out of this process until something uses it: a
    stand-in module (:class:`_DeferredModule`) answers the ``import`` of it in PyG's
    ``torch_geometric.isinstance``, and the compiler loads the first time anything reads an
    attribute of it (``torch.compile``, an optimizer's first step, PyG's check on a model). A
    solve never does: predict, eval and transfer without fine-tuning skip the import (whole
    ``predict``).
    Nothing changes where it is already imported or this was called before. A name read through
    the stand-in (``import torch._dynamo as dynamo`` binds it) comes from the real module; a name
    set on it stays on the stand-in, so set torch's compiler settings on ``torch._dynamo.config``.
    Training does not load it either: the two names torch's optimizers read, ``disable`` and
    ``graph_break``, are answered as they behave outside a compilation (:data:`_OUTSIDE_COMPILATION`),
    and behave as torch's own once anything has loaded the compiler."""
    if COMPILER not in sys.modules:
        stand_in = sys.modules[COMPILER] = _DeferredModule(COMPILER)
        stand_in.__spec__ = importlib.machinery.ModuleSpec(COMPILER, None)


def wait_passively() -> None:
    """``OMP_WAIT_POLICY=PASSIVE`` unless the user set it (or GNU OpenMP's ``GOMP_SPINCOUNT``):
    an OpenMP thread that reaches a barrier first sleeps until the others arrive instead of
    spinning on its core. When another process
    holds a core, a spinning thread takes time from the very thread it waits for; a solve on two
    threads beside one busy process then took 3-6x as long as on one thread. Read by the OpenMP
    runtime when torch loads."""
    if "GOMP_SPINCOUNT" not in os.environ:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def prefer_small_pages() -> None:
    """Ordinary pages for torch's tensors in a process that solves rather than trains (predict,
    eval, transfer without fine-tuning), unless the user set ``THP_MEM_ALLOC_ENABLE``. A solve
    touches most of its memory once, in its first full-graph pass, and where the kernel has no
    free huge page at hand each huge-page fault waits for it to compact memory; training, which
    reuses its memory for thousands of steps, gains from huge pages. Read when torch loads."""
    if not _PAGES_SET_BY_USER and "torch" not in sys.modules:
        os.environ["THP_MEM_ALLOC_ENABLE"] = "0"


def reuse_freed_memory() -> None:
    """Fix glibc's allocation thresholds: torch's CPU tensors below 64 MiB then reuse freed heap
    memory instead of fresh pages from the kernel, and at most 256 MiB of free heap top is kept.
    By default glibc moves both thresholds with each free, so whether a training step
    page-faults on its activations depends on the order of its frees. 64 MiB holds a ``(N, 64)``
    float32 activation up to N = 262,144; larger blocks stay mapped and unmapped as before.
    Linux with glibc only; a user's own ``GLIBC_TUNABLES`` or ``MALLOC_*`` settings win."""
    mallopt = _mallopt()
    if mallopt is not None:
        mallopt(-3, MALLOC_MMAP_THRESHOLD)  # M_MMAP_THRESHOLD
        mallopt(-1, MALLOC_TRIM_THRESHOLD)  # M_TRIM_THRESHOLD


def keep_freed_memory() -> bool:
    """For a solve with memory to spare (the command line decides: ``predict`` where the memory
    available is at least :data:`graphtransfer.solve.memory.ROOM_TO_KEEP` times the guard's
    estimate): every block from the heap, none mapped on its own, and up to 2 GiB of free heap top
    kept. A solve's passes free and allocate arrays the size of the graph each pass; mapped
    blocks come back as fresh pages the kernel faults in and zeroes every time. Keeping them makes
    large solves faster for a somewhat higher peak RSS.
    Whether it was set: not where :func:`reuse_freed_memory` does nothing (a user's own
    ``MALLOC_*`` or ``GLIBC_TUNABLES``, no glibc)."""
    mallopt = _mallopt()
    if mallopt is None:
        return False
    mallopt(-4, 0)  # M_MMAP_MAX: no block mapped on its own
    mallopt(-1, KEPT_HEAP_TOP)  # M_TRIM_THRESHOLD
    return True


def _mallopt():
    """glibc's ``mallopt`` where this process may tune it: Linux with glibc, and no ``GLIBC_TUNABLES``
    or ``MALLOC_*`` setting of the user's; else ``None``."""
    if not sys.platform.startswith("linux") or "GLIBC_TUNABLES" in os.environ or any(name.startswith("MALLOC_") for name in os.environ):
        return None
    try:
        return ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return None


def freeze_loaded_objects() -> None:
    """Leave every object this process holds now out of the garbage collector's later passes
    (:func:`gc.freeze`): the modules, functions and classes of the imports, the model, the graph.
    A full pass of the collector visits every object it tracks, and after predict's imports there
    are some 360,000 of them: 0.17 s a pass on this project's 2-core machine, and the passes come
    however little the work itself leaves to collect. Objects frozen are never freed, so
    the commands call this once their long-lived objects are loaded, just before the work; and
    the command line calls it again as it exits, where Python's own last collection would visit
    every object still tracked (0.7 s of a 5-s predict on a 1,000-node graph) while nothing a
    command leaves needs it: the commands close their files, logs and envs themselves."""
    gc.freeze()


def allowed_cores() -> int:
    """The cores this process may run on: its CPU affinity where the system has one."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def busy_elsewhere() -> int:
    """How many other tasks are running right now: the kernel's count of runnable tasks
    (``/proc/loadavg``) less this process's own, the least of a few readings so that a task
    that only flickers past is not counted. 0 where the count cannot be read."""
    readings = []
    for sample in range(LOAD_SAMPLES):
        if sample:
            time.sleep(LOAD_SAMPLE_GAP)
        try:
            with open("/proc/loadavg") as loadavg:
                running = int(loadavg.read().split()[3].split("/")[0])
        except (OSError, ValueError, IndexError):
            return 0
        readings.append(running - 1)  # this process, which is running while it reads
    return max(0, min(readings))


def free_cores() -> int:
    """The cores this process may use that no other running task holds now, at least one."""
    return max(1, allowed_cores() - busy_elsewhere())
