"""The house's layering: documents <- index <- search <- api, retrieve <- front ends (cli, tui, mcp), models beside
documents and under index; the library never imports a front end, and query time never loads the
conversion code, torch or transformers. Read from every module's imports, lazy ones included, and
from what a real `oboyu query` loads."""

from __future__ import annotations

import ast
import graphlib
import importlib
import json
import subprocess
import sys
from pathlib import Path

from conftest import EXAMPLE_NOTES

PACKAGE = Path(__file__).resolve().parent.parent / "oboyu"
FRONT_ENDS = {"cli", "tui", "mcp", "__main__"}
# what each part of the package may import from the others (besides the small top-level modules)
ALLOWED = {
    "documents": {"documents"},
    "models": {"models", "documents"},
    "index": {"index", "documents", "models"},
    "search": {"search", "index", "documents", "models"},
    "api": {"index", "documents", "models", "search"},
    "retrieve": {"index", "documents", "search"},  # indexed files' text for `get` and MCP `read`, beside api
}
TOP_LEVEL = {"errors", "paths", "pools", "progress", "config", "modes", "text", "__init__", "__version__"}


def _part(module: str) -> str:
    """`oboyu.index.store` -> `index`; `oboyu.errors` -> `errors`; `oboyu` -> `__init__`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(path: Path) -> set[str]:
    """Every oboyu module this file imports, at the top or inside functions."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "oboyu":
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.split(".")[0] == "oboyu")
    return found


def test_every_part_imports_only_what_lies_below_it() -> None:
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        part = path.relative_to(PACKAGE).parts[0].removesuffix(".py")
        if part in FRONT_ENDS or part in TOP_LEVEL:
            continue
        for module in _imports(path):
            target = _part(module)
            if target in TOP_LEVEL:
                continue
            if target not in ALLOWED[part]:
                wrong.append(f"{path.relative_to(PACKAGE)} imports {module}")
    assert not wrong, "\n".join(wrong)


def test_the_small_top_level_modules_import_no_part() -> None:
    for name in TOP_LEVEL - {"__init__", "__version__"}:
        assert {_part(m) for m in _imports(PACKAGE / f"{name}.py")} <= TOP_LEVEL, name


def test_only_conversion_and_its_command_import_the_conversion_code() -> None:
    users = {str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py")
             if any(m.startswith("oboyu.models.convert") for m in _imports(path))}
    assert {u for u in users if not u.startswith("models/convert/")} == {"cli/models.py"}


def test_subpackages_say_what_lives_there_and_export_their_names() -> None:
    for init in sorted(PACKAGE.glob("*/__init__.py")) + sorted(PACKAGE.glob("models/*/__init__.py")):
        tree = ast.parse(init.read_text(encoding="utf-8"))
        assert ast.get_docstring(tree), init
        stub = init.with_suffix(".pyi")
        if stub.exists():  # names loaded when first asked for: each is one the stub imports
            package = importlib.import_module(_module_name(init))
            names = [a.name for n in ast.parse(stub.read_text(encoding="utf-8")).body if isinstance(n, ast.ImportFrom)
                     for a in n.names]
            assert names and sorted(package.__all__) == sorted(names), init
            assert stub.read_bytes().isascii(), stub  # lazy_loader opens it in the locale's encoding
            assert all(getattr(package, name) is not None for name in names), init
        elif init.parent.name != "convert":  # the pipeline's steps are modules, run by convert()
            exported = next(n for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "__all__")
            assert ast.literal_eval(exported.value), init


def _module_name(path: Path) -> str:
    parts = ("oboyu", *path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported_modules(path: Path, modules: set[str]) -> set[str]:
    """The package's modules this file imports: `from oboyu.index import schema` imports the module
    `oboyu.index.schema`; `from oboyu.index.store import Store` imports `oboyu.index.store`."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "oboyu":
            for alias in node.names:
                found.add(f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in modules else node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in modules)
    return found


def test_no_import_cycle_inside_the_package() -> None:
    """No module imports, even lazily, one that imports it back (a circle hides which one builds on
    which); an import of a package's `__init__` counts as an import of that package."""
    modules = {_module_name(path): path for path in PACKAGE.rglob("*.py")}
    graph = {name: _imported_modules(path, set(modules)) - {name} for name, path in modules.items()}
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as exc:
        raise AssertionError("import cycle: " + " -> ".join(exc.args[1])) from None


def test_no_module_is_over_500_lines() -> None:
    long = {str(p.relative_to(PACKAGE)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 500}
    assert not long, long


def test_a_query_loads_neither_torch_nor_the_conversion_code_nor_the_indexer(oboyu_env: dict, tmp_path: Path) -> None:
    script = (
        "import json, sys, runpy\n"
        "sys.argv = ['oboyu'] + sys.argv[1:]\n"
        "try:\n    runpy.run_module('oboyu.cli', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "print(json.dumps(sorted(sys.modules)), file=sys.stderr)\n"
    )
    index = subprocess.run([sys.executable, "-m", "oboyu.cli", "index", str(EXAMPLE_NOTES / "work"), "-q"],
                           env=oboyu_env, capture_output=True, text=True, timeout=600)
    assert index.returncode == 0, index.stderr
    done = subprocess.run([sys.executable, "-c", script, "query", "議事録", "--json"], env=oboyu_env,
                          capture_output=True, text=True, timeout=300)
    assert json.loads(done.stdout), done.stderr
    loaded = set(json.loads(done.stderr.strip().splitlines()[-1]))
    assert "oboyu.search.query" in loaded  # the check sees what a query loads
    assert {"onnxruntime", "openvino"} & loaded
    assert not {m for m in loaded if m.split(".")[0] in ("torch", "transformers", "textual", "mcp")}
    assert not {m for m in loaded if m.startswith(("oboyu.models.convert", "oboyu.tui", "oboyu.mcp"))}
    # a one-shot query's start: none of the indexer, the walk, the readers or the hub's download
    unread = {"oboyu.index.indexer", "oboyu.documents.crawl", "oboyu.documents.extract", "oboyu.models.default.fetch",
              "pathspec", "lxml", "tokenizers", "multiprocessing"}
    assert not unread & loaded, unread & loaded
