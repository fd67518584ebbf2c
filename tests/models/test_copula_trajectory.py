"""The copula sampler's kernels made faster without changing what is sampled (issue 28, h28cpu).

The reference (``tests/models/data/copula_trajectory.json``) was recorded by
``benchmarks/copula_trajectory.py --write`` from the code before the CPU work
(commit stored in the file): short chains on a small mixed frame (continuous,
ordinal, binary and two nominal columns, each with gaps), with Hamiltonian moves of
the nominal blocks, with Newton-proposal moves, and with Newton moves past burn-in
(frozen curvatures). The same seed must give the same trajectory up to round-off.

Tolerance 1e-8 relative (absolute below 1): the rewritten kernels sum the same terms
in another order or through BLAS instead of loops, which changes results by a few ulps
(~1e-16 relative); over 30-50 Gibbs iterations such differences propagate through
Cholesky factors and inverse CDFs with condition numbers far below 1e6, so stay many
orders of magnitude under 1e-8. Any change of what is drawn (another uniform consumed,
a different accept decision or algorithm) moves the chain by O(1) at the first
affected draw, and the accept counts and move kinds are compared exactly.
"""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _script():
    spec = importlib.util.spec_from_file_location("copula_trajectory", ROOT / "benchmarks" / "copula_trajectory.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("config", ["hmc", "newton", "frozen"])
def test_same_seed_same_trajectory_as_the_original_kernels(config):
    mod = _script()
    ref = {r["name"]: r for r in json.loads((Path(__file__).parent / "data" / "copula_trajectory.json").read_text())["records"]}
    name, n_iter, burn = next(c for c in mod.CONFIGS if c[0] == config)
    new = mod.trajectory(name, n_iter, burn)
    r = ref[config]
    assert new["moves"] == r["moves"]
    assert new["accepted"] == r["accepted"]
    diff = mod.compare([r], [new])[config]
    assert diff <= 1e-8, diff
