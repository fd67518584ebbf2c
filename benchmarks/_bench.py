"""Shared timing / memory / provenance helpers for the benchmark scripts.

Every benchmark prints its figures and writes JSON under ``benchmarks/results/``
with wall seconds (median of repeats, and all repeats), peak memory, the
machine's load average at the start (the machines are noisy), versions and seeds.
"""
from __future__ import annotations

import json
import os
import platform
import resource
import statistics
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any, Callable

RESULTS = Path(__file__).resolve().parent / "results"


def measure(fn: Callable[[], Any], repeats: int = 3, trace_memory: bool = True) -> dict[str, Any]:
    """Run ``fn`` ``repeats`` times; median wall seconds and peak traced memory.

    Peak memory is tracemalloc's peak of the first run (NumPy reports its
    buffers to tracemalloc), in MiB; the process's max RSS is reported too.
    """
    walls: list[float] = []
    cpus: list[float] = []
    peak_mib = None
    result = None
    for i in range(repeats):
        if trace_memory and i == 0:
            tracemalloc.start()
        t0, c0 = time.perf_counter(), time.process_time()
        result = fn()
        walls.append(time.perf_counter() - t0)
        # process CPU seconds: close to the unloaded wall time of single-threaded work on a shared machine
        cpus.append(time.process_time() - c0)
        if trace_memory and i == 0:
            peak_mib = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
    return {
        "wall_seconds_median": statistics.median(walls),
        "wall_seconds_all": walls,
        "cpu_seconds_median": statistics.median(cpus),
        "peak_traced_mib": peak_mib,
        "max_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "result": result,
    }


def environment() -> dict[str, Any]:
    from synthmi.synthetic import package_versions

    return {
        "versions": package_versions(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "loadavg_at_start": os.getloadavg(),
        "argv": sys.argv,
        "threads": {k: os.environ.get(k) for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")},
    }


def write_json(name: str, payload: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    payload = {"benchmark": name, "environment": environment(), **payload}
    path.write_text(json.dumps(payload, indent=2, sort_keys=True, default=_default))
    print(f"wrote {path}")
    return path


def _default(obj: Any) -> Any:
    try:
        import numpy as np

        if isinstance(obj, np.generic):
            return obj.item()
        if isinstance(obj, np.ndarray):
            return obj.tolist()
    except ImportError:  # pragma: no cover
        pass
    return repr(obj)
