"""The package is layered by role: each layer imports only those below it, no module imports in a circle, and
the results, analysis and report layers never load torch."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "torchbenchmark"
# Each group's rank: a module may import one of a lower rank, or of its own group; never upwards or across.
GROUPS = {
    "cli": 6,
    "face": 5,
    "run": 4,
    "report": 3, "measure": 3,
    "suite": 2, "analyze": 2,
    "results": 1,
}  # fmt: skip
TORCH_FREE = ("results", "analyze", "report")


def module_names() -> dict[str, Path]:
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


MODULES = module_names()


def group(module: str) -> str:
    parts = module.split(".")
    if len(parts) > 1 and parts[1] == "__main__":
        return "cli"
    if len(parts) == 1 or parts[1] in ("api", "distributed"):
        return "face"
    if parts[1] in ("contract", "registry", "checks", "models"):
        return "suite"
    return parts[1]


def imports(module: str) -> set[str]:
    """Every module of the package that ``module`` imports, at the top or inside a function."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]
        else:
            continue
        found.update(name for name in names if name in MODULES and name != module)
    return found


GRAPH = {module: imports(module) for module in MODULES}


def test_the_layers_are_known_and_every_module_has_one() -> None:
    assert {group(module) for module in MODULES} <= set(GROUPS)
    assert len(MODULES) > 40


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_import_points_up_or_across_the_layers(module: str) -> None:
    mine = group(module)
    wrong = [target for target in GRAPH[module] if group(target) != mine and GROUPS[group(target)] >= GROUPS[mine]]
    assert wrong == [], f"{module} ({mine}) imports {wrong}"


def test_no_module_imports_itself_through_others() -> None:
    """Depth-first search over the import graph: any back edge is a circle."""
    state: dict[str, str] = {}
    path: list[str] = []
    circles = []

    def visit(module: str) -> None:
        state[module] = "open"
        path.append(module)
        for target in sorted(GRAPH[module]):
            if state.get(target) == "open":
                circles.append(path[path.index(target) :] + [target])
            elif target not in state:
                visit(target)
        path.pop()
        state[module] = "done"

    for module in sorted(GRAPH):
        if module not in state:
            visit(module)
    assert circles == []


def test_the_layer_test_sees_function_level_imports(tmp_path: Path) -> None:
    """The walk finds an import inside a function, the kind that hides a circle."""
    assert "torchbenchmark.measure.environment" in GRAPH["torchbenchmark.cli.models"]


@pytest.mark.slow
def test_results_analysis_and_report_do_not_load_torch() -> None:
    pure = [module for module in MODULES if group(module) in TORCH_FREE]
    script = (
        "import sys\n"
        + "".join(f"import {module}\n" for module in pure)
        + "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=PACKAGE.parent)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.slow
def test_importing_the_package_changes_nothing_in_the_process() -> None:
    script = (
        "import os, sys, matplotlib\n"
        "before = (dict(os.environ), matplotlib.rcParams._get_backend_or_none())\n"
        "import torchbenchmark, torchbenchmark.api, torchbenchmark.cli, torchbenchmark.report.page\n"
        "assert (dict(os.environ), matplotlib.rcParams._get_backend_or_none()) == before, 'importing changed the process'\n"
        "assert 'torch' not in sys.modules and 'matplotlib.pyplot' not in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=PACKAGE.parent)
    assert done.returncode == 0, done.stderr


# Size: a module a reader holds in mind, functions that fit a screen, and few enough parameters to name.
MOST_MODULE_LINES = 400
MOST_FUNCTION_LINES = 60
MOST_PARAMETERS = 7
# Signatures that mirror torch's own, parameter for parameter, so torch can call them.
MIRRORS_TORCH = {"_convolution_backward_flops"}


def functions() -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    found = []
    for module, path in MODULES.items():
        if group(module) == "suite" and ".models" in module:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.append((module, node))
    return found


def test_no_module_is_too_long() -> None:
    long = {
        module: n
        for module, path in MODULES.items()
        if ".models" not in module and (n := len(path.read_text(encoding="utf-8").splitlines())) > MOST_MODULE_LINES
    }
    assert long == {}


def test_no_function_is_too_long_or_takes_too_many_parameters() -> None:
    problems = []
    for module, node in functions():
        lines = (node.end_lineno or node.lineno) - node.lineno + 1
        args = node.args
        names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs) if a.arg not in ("self", "cls")]
        if lines > MOST_FUNCTION_LINES:
            problems.append(f"{module}.{node.name}: {lines} lines")
        if len(names) > MOST_PARAMETERS and node.name not in MIRRORS_TORCH:
            problems.append(f"{module}.{node.name}: {len(names)} parameters")
    assert problems == []


@pytest.mark.slow
def test_setup_py_is_a_shim_that_reads_the_version_from_pyproject() -> None:
    root = PACKAGE.parent
    version = re.search(r'^version = "([^"]+)"', (root / "pyproject.toml").read_text(), flags=re.M)
    done = subprocess.run([sys.executable, "setup.py", "--version"], capture_output=True, text=True, timeout=120, cwd=root)
    assert done.returncode == 0 and version is not None, done.stderr
    assert done.stdout.strip().splitlines()[-1] == version.group(1)
