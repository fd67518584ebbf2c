"""CPU seconds per iteration of the risk-dami copula sampler, before vs after the kernel work (issue 28, h28cpu).

Per file of ``benchmarks/copula_files.py`` (``FILES``: nhanes, agency, fair, adult
by default) and per version of the code (``before``: a checkout of the original
code given by ``--before PATH``; ``after``: this working tree), a fresh process
fits ``RiskTargetedSynthesizer(n_iter=N, chains=1, accept_diagnostics=True,
max_seconds=None, random_state=28)`` once for 20 iterations (warm-up: imports and
numba compilation) and then three times for ``N`` iterations (burn-in half), timing
each fit's CPU seconds (``time.process_time``; one chain in this process, so the
figure does not depend on the machine's load); the median over the three divided by
N is the CPU seconds per iteration (end-of-fit diagnostics included). Peak memory is
the process's maximum resident set size. The trajectory check
(``benchmarks/copula_trajectory.py``: same seed, same draws up to round-off against
the reference recorded from the original code) is run on the ``after`` code.

Writes ``results/copula_cpu.json`` (entries merged per file and version, so the two
versions can be run at different times) and prints a table. Run it with
``nice -n 10``, one file at a time (the machine is shared)::

    python benchmarks/copula_cpu.py --before /tmp/orig --versions before after --files nhanes agency fair adult

Results (``results/copula_cpu.json``; 150 iterations, burn-in 75, 1 chain, median of 3 fits after a
warm-up; before = main at 1540012, after = branch h28cpu at e9a6d6a (the kernels as committed);
each file's two versions run back to back at load 6-8 on the shared 2 cores; the child reports the
synthmi it imported):

=======  =============  =======  ============  ===========  =======  ============
file     rows x cols    latents  before ms/it  after ms/it  speedup  peak RSS MB
=======  =============  =======  ============  ===========  =======  ============
nhanes   5,265 x 10     17       88.6          77.7         1.14     361 / 377
agency   1,000 x 10     25       72.0          63.8         1.13     351 / 354
fair     3,000 x 8      12       27.4          24.3         1.13     385 / 386
adult    2,000 x 7      12       71.0          63.0         1.13     349 / 352
=======  =============  =======  ============  ===========  =======  ============

Trajectory: identical draws (largest relative difference 0.0 in the three configurations). The
target of 1.5x is not reached: what remains is the multinomial-probit quadrature
(``_mnp_kernel``, 55-70 % of an iteration on nhanes, agency and adult), bound by its ~14 ``erfc``
(14 ns each) and ~16 ``exp`` per record and competitor, and the inverse-CDF truncated draws
(``ndtri``); both could only go faster by computing other numbers (fewer nodes, another
truncated-normal algorithm), which would change the draws.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "results" / "copula_cpu.json"
SEED = 28


def child(name: str, n_iter: int, repeats: int) -> dict:
    """In a fresh process: warm-up fit, then ``repeats`` timed fits of ``n_iter`` iterations."""
    # synthmi first, from the path given: copula_files puts this repository's root first on sys.path
    import synthmi
    from synthmi.models.risk_targeted import RiskTargetedSynthesizer

    sys.path.insert(0, str(HERE))
    from copula_files import FILES

    df, qi, fit_kw = FILES[name]()
    keep = [c for c in df.columns if c not in qi]

    def fit(n):
        s = RiskTargetedSynthesizer(n_iter=n, chains=1, accept_diagnostics=True, max_seconds=None, random_state=SEED)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            c0 = time.process_time()
            s.fit(df, quasi_identifiers=qi, keep=keep, **fit_kw)
            return time.process_time() - c0, s

    c0 = time.process_time()
    warm, s = fit(20)
    times = [fit(n_iter)[0] for _ in range(repeats)]
    return {"rows": len(df), "columns": df.shape[1], "copula_columns": s.copula_.q_,
            "synthmi": str(Path(synthmi.__file__).parent),
            "warmup_cpu_seconds": round(warm, 2), "cpu_seconds": [round(t, 3) for t in times],
            "cpu_per_iteration": statistics.median(times) / n_iter,
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "n_iter": n_iter, "process_cpu_seconds": round(time.process_time() - c0, 1)}


def run(path: Path, name: str, n_iter: int, repeats: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(path), OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    code = (f"import sys, json; sys.path.insert(0, {str(HERE)!r}); import copula_cpu; "
            f"print(json.dumps(copula_cpu.child({name!r}, {n_iter}, {repeats})))")
    # run from the code's directory: ``python -c`` puts the working directory first on sys.path, so
    # from anywhere else a synthmi/ there would be imported instead of the one asked for
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                         cwd=str(path))
    return json.loads(out.stdout.strip().splitlines()[-1])


def trajectory_check(path: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(path))
    out = subprocess.run([sys.executable, str(HERE / "copula_trajectory.py"), "--check",
                          str(ROOT / "tests" / "models" / "data" / "copula_trajectory.json")],
                         env=env, capture_output=True, text=True)
    diff = json.loads(out.stdout.strip().splitlines()[-1])
    return {"max_relative_difference": diff, "same_draws": out.returncode == 0}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, help="a checkout of the original code (the directory holding synthmi/)")
    ap.add_argument("--after", type=Path, default=ROOT, help="the changed code (default: this working tree)")
    ap.add_argument("--versions", nargs="+", default=["before", "after"], choices=["before", "after"])
    ap.add_argument("--files", nargs="+", default=["nhanes", "agency", "fair", "adult"])
    ap.add_argument("--n-iter", type=int, default=150)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args(argv)
    res = json.loads(OUT.read_text()) if OUT.exists() else {"files": {}}
    for v, pth in (("before", a.before), ("after", a.after)):
        if v in a.versions and pth is not None:
            # a snapshot (git archive) holds its commit in REV; a checkout answers git
            rev_file = Path(pth) / "REV"
            rev = rev_file.read_text().strip() if rev_file.exists() else subprocess.run(
                ["git", "-C", str(pth), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
            res.setdefault("code", {})[v] = rev or str(pth)
    paths = {"before": a.before, "after": a.after}
    for name in a.files:
        for v in a.versions:
            if paths[v] is None:
                ap.error("--before PATH is needed for the 'before' version")
            r = run(paths[v], name, a.n_iter, a.repeats)
            row = res["files"].setdefault(name, {})
            row.update(rows=r.pop("rows"), columns=r.pop("columns"), copula_columns=r.pop("copula_columns"))
            row[v] = r
            if "before" in row and "after" in row:
                row["speedup"] = round(row["before"]["cpu_per_iteration"] / row["after"]["cpu_per_iteration"], 2)
            print(f"{name:8s} {v:6s} {r['cpu_per_iteration'] * 1000:8.1f} ms/it  peak {r['peak_rss_mb']:.0f} MB  "
                  f"runs {r['cpu_seconds']}", flush=True)
            OUT.parent.mkdir(exist_ok=True)
            OUT.write_text(json.dumps(res, indent=1))
    if "after" in a.versions:
        res["trajectory"] = trajectory_check(a.after)
        print("trajectory:", res["trajectory"])
    res["loadavg"] = os.getloadavg()[0]
    OUT.write_text(json.dumps(res, indent=1))
    for name, row in res["files"].items():
        b, f = row.get("before", {}), row.get("after", {})
        print(f"{name:8s} {row['rows']:6d} x {row['columns']:2d}  before {b.get('cpu_per_iteration', float('nan')) * 1000:7.1f}"
              f"  after {f.get('cpu_per_iteration', float('nan')) * 1000:7.1f} ms/it  x{row.get('speedup', float('nan'))}")


if __name__ == "__main__":
    main()
