"""``import graphtransfer`` changes nothing in the process; the command line's process tuning
(``graphtransfer.process.tune_process``) fixes glibc's allocation thresholds and torch's pages."""

import ctypes
import os
import subprocess
import sys

import pytest

TUNE = "from graphtransfer.process import prefer_small_pages, tune_process; tune_process()"
PROBE = """
import ctypes, sys
{imports}
class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]
libc = ctypes.CDLL(None)
libc.mallinfo2.restype, libc.malloc.restype = MallInfo2, ctypes.c_void_p
def mapped(size):
    before = libc.mallinfo2().hblks
    block = libc.malloc(size)
    after = libc.mallinfo2().hblks
    libc.free(ctypes.c_void_p(block))
    return after > before
print(mapped(40 * 2**20), mapped(80 * 2**20))
"""


def allocation_probe(imports: str, **env: str) -> str:
    """Whether a fresh process maps a 40 MiB and an 80 MiB block of its own (rather than taking them from the heap)."""
    environment = {name: value for name, value in os.environ.items() if name != "GLIBC_TUNABLES" and not name.startswith("MALLOC_")}
    command = [sys.executable, "-c", PROBE.format(imports=imports)]
    return subprocess.run(command, capture_output=True, text=True, env={**environment, **env}, check=True).stdout.strip()


def has_mallinfo2() -> bool:
    return sys.platform.startswith("linux") and hasattr(ctypes.CDLL(None), "mallinfo2")


@pytest.mark.skipif(not has_mallinfo2(), reason="glibc 2.33 or later only")
def test_blocks_below_64_mib_come_from_the_heap_after_tuning_and_larger_ones_stay_mapped():
    assert allocation_probe("") == "True True"  # glibc's default: both mapped
    assert allocation_probe("import graphtransfer") == "True True"  # the import changes nothing
    assert allocation_probe(TUNE) == "False True"


@pytest.mark.skipif(not has_mallinfo2(), reason="glibc 2.33 or later only")
def test_a_users_own_malloc_settings_win():
    assert allocation_probe(TUNE, MALLOC_ARENA_MAX="2") == "True True"


ALIGNMENT_PROBE = """
import os, sys
{before}
import torch
blocks = [torch.empty(2**22) for _ in range(4)]  # 16 MiB each, above torch's 2 MiB huge-page threshold
print(os.environ.get("THP_MEM_ALLOC_ENABLE", "unset"), all(block.data_ptr() % 4096 == 0 for block in blocks))
"""


def alignment_probe(before: str, **env: str) -> str:
    """The huge-page setting a fresh process ends with, and whether torch placed four large
    blocks on page boundaries, as it does (and then advises huge pages) only with the setting
    on; otherwise on 64-byte ones, all four on pages by chance once in 2**24."""
    environment = {name: value for name, value in os.environ.items() if name != "THP_MEM_ALLOC_ENABLE"}
    command = [sys.executable, "-c", ALIGNMENT_PROBE.format(before=before)]
    return subprocess.run(command, capture_output=True, text=True, env={**environment, **env}, check=True).stdout.strip()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="torch's huge pages are a Linux setting")
def test_huge_pages_for_training_and_small_pages_for_a_solve_unless_the_user_chose():
    assert alignment_probe("import graphtransfer") == "unset False"  # the import changes nothing
    assert alignment_probe(TUNE) == "1 True"
    assert alignment_probe(TUNE + "; prefer_small_pages()") == "0 False"
    assert alignment_probe("import torch; " + TUNE + "; prefer_small_pages()") == "1 True"  # too late: torch loaded
    assert alignment_probe(TUNE + "; prefer_small_pages()", THP_MEM_ALLOC_ENABLE="1") == "1 True"


KEEP = (
    TUNE + "; from graphtransfer.config import RunConfig; from graphtransfer.graphs import erdos_renyi;"
    " from graphtransfer.solve.loading import keep_freed_memory_where_room;"
    " print(keep_freed_memory_where_room(RunConfig(), erdos_renyi(100_000, 8.0, 0)))"
)


@pytest.mark.skipif(not has_mallinfo2(), reason="glibc 2.33 or later only")
def test_a_solve_with_room_keeps_its_freed_memory_and_one_without_does_not():
    # the guard's estimate for 10^5 nodes of degree 8 and the default model: about 150 MiB
    assert allocation_probe(KEEP, GRAPHTRANSFER_MEMORY_LIMIT_MB="100000") == "True\nFalse False"  # every block from the heap
    assert allocation_probe(KEEP, GRAPHTRANSFER_MEMORY_LIMIT_MB="150") == "False\nFalse True"  # not 1.5x the estimate: as tuned
