"""Structure the review asked for: one workload definition, layers that import downward only,
published sources in docstrings, one name per combining rule, no unexplained private PyMC use."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "synthmi"


def _modules(sub: str = ""):
    return sorted((PACKAGE / sub).rglob("*.py"))


def _imports(path: Path) -> set[str]:
    """Absolute names of the synthmi modules ``path`` imports (relative imports resolved)."""
    tree = ast.parse(path.read_text())
    pkg = path.relative_to(ROOT).with_suffix("").parts[:-1]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = list(pkg[: len(pkg) - node.level + 1]) if node.level else []
            mod = ".".join(base + ([node.module] if node.module else []))
            out.add(mod)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
    return {m for m in out if m.startswith("synthmi")}


def test_report_and_lower_layers_never_import_commands():
    for sub in ("report", "evaluation", "models", "privacy", "data"):
        for path in _modules(sub):
            bad = {m for m in _imports(path) if m.startswith("synthmi.commands") or m == "synthmi.cli"}
            assert not bad, f"{path.relative_to(ROOT)} imports {bad} (upward, into the command line)"


def test_the_adult_workload_is_defined_once_and_used_everywhere():
    from synthmi.commands.synthesize import default_keep
    from synthmi.data.workloads import ADULT, ADULT_DEMO
    from synthmi.workflow.demo import demo_synthesizers

    assert default_keep("adult") == list(ADULT.keep) and default_keep("my.csv") is None
    assert demo_synthesizers(0)["dami"].masks == ADULT_DEMO.masks == ADULT.masks
    assert ADULT_DEMO.quasi_identifiers == ADULT.quasi_identifiers and ADULT_DEMO.formula == ADULT.formula
    # the figures and benchmarks read it too, never a copy of their own
    for script in ("exhibits.py", "adult_table.py", "coherence.py"):
        text = (ROOT / "benchmarks" / script).read_text()
        assert "synthmi.data.workloads import" in text, script
        assert '"age": {"K": 3, "sigma_e": 3.0}' not in text, script
    assert not (PACKAGE / "report" / "exhibits.py").exists()  # a figure script, now under benchmarks/


def test_docstrings_cite_sources_not_internal_files():
    pattern = re.compile(r"seeds/|\b\w+\.txt\b")
    for path in _modules():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node) or ""
                assert not pattern.search(doc), f"{path.relative_to(ROOT)}: {getattr(node, 'name', 'module')}"


def test_one_name_per_combining_rule_and_only_documented_citation_aliases():
    from synthmi.evaluation import combining

    assert set(combining.RULES.values()) == {"partial", "full", "rubin", "nested"}
    aliases = {k: v for k, v in combining.RULES.items() if k != v}
    assert aliases == {"reiter2003": "partial", "raghunathan2003": "full", "rubin1987": "rubin", "reiter2004": "nested"}
    for alias, rule in aliases.items():  # each documented in the module's one table, on its rule's row
        assert re.search(rf"``{rule}``\s+``{alias}``", combining.__doc__), alias


def test_no_private_pymc_attribute_and_no_unexplained_upper_pin():
    """The NUTS path uses PyMC's public step keywords only (``logp_dlogp_func``, ``potential``),
    so moving to a new PyMC major is a pin change; any upper bound left in pyproject.toml says why."""
    for path in _modules():
        text = path.read_text()
        assert "_logp_dlogp_func" not in text and ".integrator =" not in text, path.name
    deps = (ROOT / "pyproject.toml").read_text()
    deps = deps[deps.index("dependencies = ["):deps.index("[project.scripts]")]
    lines = deps.splitlines()
    for before, line in zip([""] + lines, lines):
        if re.search(r'^\s*"[A-Za-z0-9_.\[\]-]+[^"]*<', line):  # a reason on the line or just above
            assert "#" in line or before.strip().startswith("#"), f"upper pin without a reason: {line.strip()}"


def test_wasserstein_is_scipys():
    from synthmi.evaluation.coherence import wasserstein_1

    rng = np.random.default_rng(0)
    u, v = rng.normal(size=300), rng.exponential(size=200)
    assert wasserstein_1(u, v) == stats.wasserstein_distance(u, v)
    with pytest.raises(ValueError, match="finite"):
        wasserstein_1([0.0, np.inf], [1.0])


@pytest.mark.slow
def test_no_arviz_stamp_file_in_the_users_home(tmp_path):
    """ArviZ 0.23 writes ``~/.cache/arviz/daily_warning`` when first imported (PyMC imports it)
    unless arviz-base, arviz-stats and arviz-plots all import (its own check; synthmi depends on
    the three, no import hook). Under a fresh HOME, importing synthmi, PyMC and ArviZ and
    computing an R-hat leaves no ArviZ file."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("XDG_CACHE_HOME", "MPLCONFIGDIR")}
    env.update(HOME=str(tmp_path), PYTHONPATH=str(ROOT))
    code = ("import numpy as np, synthmi, pymc, arviz\n"
            "from synthmi.diagnostics import rhat\n"
            "print(float(arviz.rhat(np.random.default_rng(0).normal(size=(2, 50)))))\n")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    assert not [p for p in written if "arviz" in p.lower()], written
    # (matplotlib, which ArviZ imports, keeps its own font cache under ~/.cache/matplotlib)
    assert all(p.split(os.sep)[1:2] in ([], ["matplotlib"]) for p in written), written


def test_benchmark_subsamples_come_from_the_library():
    """``benchmarks/frontier.py`` subsampled with its own copy of ``Workload.load``'s code; both
    now call ``synthmi.data.workloads.sample_rows``: the same rows and levels for (rows, seed)."""
    import pandas as pd

    from synthmi.data import load_dataset
    from synthmi.data.workloads import ADULT, sample_rows

    text = (ROOT / "benchmarks" / "frontier.py").read_text()
    assert "sample_rows(" in text and ".sample(n=" not in text and "remove_unused_categories" not in text
    full = load_dataset("adult")[ADULT.columns]
    got = ADULT.load(rows=300, seed=5)
    pd.testing.assert_frame_equal(got, sample_rows(full, 300, 5))
    pd.testing.assert_frame_equal(got, full.sample(n=300, random_state=5).reset_index(drop=True)
                                  .apply(lambda s: s.cat.remove_unused_categories()
                                         if isinstance(s.dtype, pd.CategoricalDtype) else s))
    small = pd.DataFrame({"g": pd.Categorical(["a", "a", "b"], categories=["a", "b", "c"])})
    out = sample_rows(small)  # no subsample: all rows, the empty level dropped, input untouched
    assert list(out["g"].cat.categories) == ["a", "b"] and list(small["g"].cat.categories) == ["a", "b", "c"]


def test_tests_mirror_the_package_layout():
    """Issue 27: a subpackage's tests live in the folder of its name (tests/models/ for
    synthmi/models/, ...), the package-wide and top-level modules' tests in tests/; no other
    folder, and no test file name twice (pytest imports them by base name)."""
    package = ROOT / "synthmi"
    subpackages = {p.name for p in package.iterdir() if (p / "__init__.py").exists()}
    folders = {p.name for p in (ROOT / "tests").iterdir() if p.is_dir() and not p.name.startswith((".", "_"))}
    assert folders <= subpackages, f"test folders without a subpackage: {sorted(folders - subpackages)}"
    assert folders, "no test folders: the suite is flat again"
    names = [p.name for p in (ROOT / "tests").rglob("test_*.py")]
    assert len(names) == len(set(names)), sorted({n for n in names if names.count(n) > 1})
    # the folders a subpackage with tests must have (the ones that exist today): a move back fails
    assert {"models", "evaluation", "privacy", "report", "workflow", "commands", "data", "testing"} <= folders
