"""DA-MI fit + sample (M copies) + identity risk at 1M / 3M / 10M generated rows: pandas vs Dask.

Data: ``synthmi.data.make_population(n, random_state=0)`` (Adult-like records drawn
from a model fitted to Adult), written once as Parquet (500,000 rows per file).

* in memory: ``pd.read_parquet`` -> ``DAMISynthesizer.fit`` -> ``sample(M)`` ->
  ``reidentification_risk``, in a fresh process; peak memory = that process's max RSS;
* Dask: a ``LocalCluster`` of ``--workers`` worker processes (1 thread each) with
  ``--memory-limit`` per worker; ``dd.read_parquet`` -> ``fit`` (reductions) ->
  ``sample(M).to_parquet`` (copies written partition by partition) ->
  ``synthmi.scale.risk.reidentification_risk`` on the copies read back; peak
  memory = max RSS of each worker process and of the client process.

Model: quasi-identifiers age, sex, race, education; kept columns income,
hours_per_week; age masked (K = 3, sigma_e = 5); identity risk on the four
quasi-identifiers with age tolerance 2. Every job runs once (the 10M runs take
minutes; the machine is shared, so load averages are recorded per job).
Writes ``benchmarks/results/scale.json``: wall seconds per phase, peak memory,
fitted exponent b of wall = a n^b, and per-row costs.

    python benchmarks/scale.py                          # 1M, 3M, 10M (in memory at 1M and 3M)
    python benchmarks/scale.py --sizes 200000 --inmem-sizes 200000   # quick check
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _bench  # noqa: E402

QI = ["age", "sex", "race", "education"]
KEEP = ["income", "hours_per_week"]
MASKS = {"age": {"K": 3, "sigma_e": 5.0}}
TOL = {"age": 2}
SEED = 1
DRAWS = 250  # independence-MH kept draws per chain (both engines); the default 1000 quadruples the fixed MH cost


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def generate(n: int, path: Path) -> None:
    import dask

    from synthmi.data import make_population

    if path.exists():
        return
    with dask.config.set(scheduler="threads", num_workers=2):
        make_population(n, random_state=0, chunksize=500_000).to_parquet(str(path), write_index=True)


def job_inmem(path: str, m: int) -> dict:
    import pandas as pd

    from synthmi.evaluation import reidentification_risk
    from synthmi.models.dami import DAMISynthesizer

    out = {"loadavg_start": os.getloadavg()}
    t = time.perf_counter()
    df = pd.read_parquet(path)
    out["read_s"] = time.perf_counter() - t
    t = time.perf_counter()
    syn = DAMISynthesizer(masks=MASKS, random_state=SEED, draws=DRAWS, progressbar=False).fit(df, QI, KEEP)
    out["fit_s"] = time.perf_counter() - t
    t = time.perf_counter()
    copies = syn.sample(m, random_state=SEED)
    out["sample_s"] = time.perf_counter() - t
    t = time.perf_counter()
    r = reidentification_risk(df, copies, QI, tolerance=TOL)
    out["risk_s"] = time.perf_counter() - t
    out["expected_matches"] = r.summary["expected_matches"]
    out["true_match_rate"] = r.summary["true_match_rate"]
    out["n"] = len(df)
    out["peak_rss_mib"] = _rss_mib()
    out["loadavg_end"] = os.getloadavg()
    return out


def job_dask(path: str, m: int, workers: int, memory_limit: str, outdir: str) -> dict:
    import shutil

    import dask.dataframe as dd
    import pandas as pd
    from distributed import Client, LocalCluster

    from synthmi.models.dami import DAMISynthesizer
    from synthmi.scale import risk as srisk

    out = {"loadavg_start": os.getloadavg(), "workers": workers, "memory_limit_per_worker": memory_limit}
    with LocalCluster(n_workers=workers, threads_per_worker=1, memory_limit=memory_limit, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        ddf = dd.read_parquet(path)
        # public levels (the generator's dtypes) make the categories known without a pass over the data
        import synthmi.scale.population as pop

        meta = pop._generator_model().data_.dtypes
        ddf = ddf.astype({c: meta[c] for c in ddf.columns if isinstance(meta[c], pd.CategoricalDtype)})
        out["n_partitions"] = ddf.npartitions
        t = time.perf_counter()
        syn = DAMISynthesizer(masks=MASKS, random_state=SEED, draws=DRAWS, progressbar=False).fit(ddf, QI, KEEP)
        out["fit_s"] = time.perf_counter() - t
        t = time.perf_counter()
        copies_dir = os.path.join(outdir, "copies")
        shutil.rmtree(copies_dir, ignore_errors=True)
        syn.sample(m, random_state=SEED).to_parquet(copies_dir)
        out["sample_write_s"] = time.perf_counter() - t
        t = time.perf_counter()
        copies = [dd.read_parquet(os.path.join(copies_dir, f"copy_{i:02d}")).astype(
            {c: meta[c] for c in ddf.columns if isinstance(meta[c], pd.CategoricalDtype)}) for i in range(1, m + 1)]
        copies = [c.reset_index(drop=True) if c.index.name is not None else c for c in copies]
        r = srisk.reidentification_risk(ddf, copies, QI, tolerance=TOL)
        out["risk_s"] = time.perf_counter() - t
        out["expected_matches"] = r.summary["expected_matches"]
        out["true_match_rate"] = r.summary["true_match_rate"]
        out["n"] = r.summary["n_records"]
        out["worker_peak_rss_mib"] = sorted(
            v / 1024 for v in client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss).values())
        out["n_workers_at_end"] = len(client.scheduler_info()["workers"])
        shutil.rmtree(copies_dir, ignore_errors=True)
    out["client_peak_rss_mib"] = _rss_mib()
    out["loadavg_end"] = os.getloadavg()
    return out


def _run(args: list[str], timeout: float | None = None) -> dict:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    import signal

    # own process group, so that a timeout also ends the job's Dask worker processes
    p = subprocess.Popen([sys.executable, __file__, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=env, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return {"error": f"not finished within {timeout:.0f} s (time budget of the session)"}
    if p.returncode != 0:
        return {"error": err[-3000:]}
    return json.loads(out.strip().splitlines()[-1])


def _left(deadline: float | None) -> float | None:
    return None if deadline is None else max(1.0, deadline - time.time())


def _exponent(ns, ts) -> float | None:
    ok = [(n, t) for n, t in zip(ns, ts) if t]
    if len(ok) < 2:
        return None
    x, y = np.log([a for a, _ in ok]), np.log([b for _, b in ok])
    return float(np.polyfit(x, y, 1)[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000000,3000000,10000000")
    ap.add_argument("--inmem-sizes", default="1000000,3000000")
    ap.add_argument("--m", type=int, default=5)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--memory-limit", default="2GiB")
    ap.add_argument("--workdir", default="/tmp/synthmi_scale")
    ap.add_argument("--job", choices=["inmem", "dask"])
    ap.add_argument("--path")
    ap.add_argument("--name", default="scale")
    ap.add_argument("--deadline", type=float, default=None, help="stop starting/killing jobs at this UNIX time")
    a = ap.parse_args()
    if a.job == "inmem":
        print(json.dumps(job_inmem(a.path, a.m)))
        return
    if a.job == "dask":
        print(json.dumps(job_dask(a.path, a.m, a.workers, a.memory_limit, a.workdir)))
        return
    sizes = [int(float(s)) for s in a.sizes.split(",")]
    inmem = {int(float(s)) for s in a.inmem_sizes.split(",") if s}
    Path(a.workdir).mkdir(parents=True, exist_ok=True)
    runs = []
    for n in sizes:
        path = Path(a.workdir) / f"population_{n}.parquet"
        t = time.perf_counter()
        generate(n, path)
        gen_s = time.perf_counter() - t
        row = {"n": n, "generate_s": gen_s}
        if n in inmem:
            row["pandas"] = _run(["--job", "inmem", "--path", str(path), "--m", str(a.m)], _left(a.deadline))
            print(n, "pandas", row["pandas"], flush=True)
        row["dask"] = _run(["--job", "dask", "--path", str(path), "--m", str(a.m), "--workers", str(a.workers),
                            "--memory-limit", a.memory_limit, "--workdir", a.workdir], _left(a.deadline))
        print(n, "dask", row["dask"], flush=True)
        runs.append(row)

    def total(r, keys):
        return sum(r[k] for k in keys) if r and "error" not in r else None

    runs_ok = [r for r in runs if "error" not in r["dask"]]

    pk = ("fit_s", "sample_s", "risk_s")
    dk = ("fit_s", "sample_write_s", "risk_s")
    ns = [r["n"] for r in runs_ok]
    summary = {
        "pandas_total_s": {r["n"]: total(r.get("pandas"), pk) for r in runs if "pandas" in r},
        "dask_total_s": {r["n"]: total(r["dask"], dk) for r in runs},
        "exponent_dask_total": _exponent(ns, [total(r["dask"], dk) for r in runs_ok]),
        "exponent_dask_by_phase": {k: _exponent(ns, [r["dask"].get(k) for r in runs_ok]) for k in dk},
        "exponent_pandas_total": _exponent([r["n"] for r in runs if "pandas" in r],
                                           [total(r["pandas"], pk) for r in runs if "pandas" in r]),
        "pandas_peak_rss_mib": {r["n"]: r["pandas"].get("peak_rss_mib") for r in runs if "pandas" in r},
        "dask_worker_peak_rss_mib": {r["n"]: r["dask"].get("worker_peak_rss_mib") for r in runs},
    }
    big = runs_ok[-1] if runs_ok else None
    if big is not None:
        summary["dask_seconds_per_million_rows_at_largest_n"] = {k: big["dask"][k] / big["n"] * 1e6 for k in dk}
    pm = [(r["n"], r["pandas"]["peak_rss_mib"]) for r in runs if "pandas" in r and "error" not in r["pandas"]]
    if len(pm) >= 2:
        slope, icpt = np.polyfit([p[0] for p in pm], [p[1] for p in pm], 1)
        summary["pandas_peak_rss_linear_fit"] = {"mib_per_million_rows": slope * 1e6, "intercept_mib": icpt,
                                                 "extrapolated_mib": {n: icpt + slope * n for n in ns}}
    _bench.write_json(a.name, {
        "settings": {"qi": QI, "keep": KEEP, "masks": MASKS, "tolerance": TOL, "m": a.m, "seed": SEED,
                     "draws": DRAWS, "workers": a.workers, "threads_per_worker": 1, "memory_limit_per_worker": a.memory_limit,
                     "data": "synthmi.data.make_population(n, random_state=0), Parquet, 500,000 rows per file",
                     "note": "single run per job on a shared 2-core machine (~8 agents); see loadavg per job"},
        "runs": runs, "summary": summary,
    })
    print(json.dumps(summary, indent=2, default=str))


if __name__ == "__main__":
    main()
