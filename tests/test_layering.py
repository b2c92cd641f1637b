"""The house rules of the code tree (docs/architecture.md, "Dependency rules"), checked on every run.

- everything imports through the one root, `mcp_farm`, never a bare `schema` or `workers`;
- dependencies point one way: schema ← scenarios ← workers, schema ← scheduler, and the
  scheduler never imports the workers, the fixture servers, the MCP SDK or llama.cpp;
- no import circle anywhere;
- no folder of first-party code holds more than twelve modules;
- no module passes 500 lines unless its docstring says why it stays one file ("Why one file:");
- SQL lives only in query, store and migration modules;
- the contracts load pydantic, not Celery or SQLAlchemy.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("schema", "scenarios", "scheduler", "workers")
ROOT_NAME = "mcp_farm"

FORBIDDEN = {
    "schema": {"mcp_farm.scenarios", "mcp_farm.scheduler", "mcp_farm.workers"},
    "scenarios": {"mcp_farm.scheduler", "mcp_farm.workers"},
    "scheduler": {"mcp_farm.workers", "mcp_farm.scenarios.servers", "mcp", "llama_cpp"},
    "workers": {"mcp_farm.scheduler"},
}

MAX_MODULES = 12
MAX_LINES = 500
LONG_REASON = "Why one file:"
"""What a module past MAX_LINES must say in its docstring, followed by its reason."""
SQL_HOMES = {"queries", "store", "db"}
"""Folders (or, for `queries`, a module name) where SQL may be written and run."""
SQL_PACKAGES = ("sqlalchemy", "sqlmodel")
SQL_ALLOWED_ANYWHERE = ("sqlalchemy.exc",)
"""Error classes: any module may catch a database error it expects."""
SQL_TEXT = re.compile(
    r"^\s*(select\s.+\sfrom\s|insert\s+into\s|update\s+\w+\s+set\s|delete\s+from\s|"
    r"create\s+(table|index)\s|alter\s+table\s|with\s+\w+\s+as\s*\()",
    re.IGNORECASE | re.DOTALL,
)
DB_ACCESS = {"session_scope", "dialect_insert", "upsert"}
"""With every table row class (`…Row`): what a module may not import from `mcp_farm.schema.db`
outside the SQL homes. The engine helpers (`make_engine`, `init_db`) are fine: handing a
connection pool on is not SQL."""
HEAVY = ("celery", "kombu", "sqlalchemy", "sqlmodel", "redis", "psycopg", "mcp", "llama_cpp")


def source_files(package: str) -> Iterator[Path]:
    for path in sorted((ROOT / package).rglob("*.py")):
        if "fixtures" not in path.relative_to(ROOT).parts:
            yield path


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([ROOT_NAME, *parts])


def type_checking_nodes(tree: ast.AST) -> set[int]:
    """Ids of every node inside an `if TYPE_CHECKING:` block: those imports never run."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for stmt in node.body:
                inside.update(id(n) for n in ast.walk(stmt))
    return inside


def imports(path: Path, *, at_runtime: bool = False) -> set[str]:
    """Absolute module names a file imports, with `from a import b` also giving `a.b`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = type_checking_nodes(tree) if at_runtime else set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def under(name: str, prefixes: set[str] | tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def module_graph() -> dict[str, set[str]]:
    """First-party module → the first-party modules it imports when it runs."""
    files = {module_name(p): p for package in PACKAGES for p in source_files(package)}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        edges = set()
        for imported in imports(path, at_runtime=True):
            parts = imported.split(".")
            while parts and ".".join(parts) not in files:
                parts.pop()
            target = ".".join(parts)
            if target and target != name:
                edges.add(target)
        graph[name] = edges
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(graph.get(step, ())))))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def sql_home(path: Path) -> bool:
    parts = path.relative_to(ROOT).parts
    return bool(SQL_HOMES & set(parts[:-1])) or path.stem == "queries"


def _db_access(name: str) -> bool:
    return name in DB_ACCESS or (name.endswith("Row") and name[:1].isupper())


def sql_problems(path: Path) -> list[str]:
    """What a module outside the SQL homes does with SQL: runtime imports, statement text."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    problems = [
        f"imports {name}"
        for name in sorted(imports(path, at_runtime=True))
        if under(name, SQL_PACKAGES) and not under(name, SQL_ALLOWED_ANYWHERE)
    ]
    problems += [
        f"imports {name} (rows and sessions belong to query and store modules)"
        for name in sorted(imports(path, at_runtime=True))
        if under(name, ("mcp_farm.schema.db",)) and _db_access(name.rsplit(".", 1)[-1])
    ]
    for node in ast.walk(tree):
        is_text = isinstance(node, ast.Constant) and isinstance(node.value, str)
        if is_text and SQL_TEXT.match(node.value):
            problems.append(f"SQL text on line {node.lineno}")
    return problems


def test_everything_imports_through_the_one_root() -> None:
    bare = []
    for folder in (*PACKAGES, "tests", "bench"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "fixtures" in path.relative_to(ROOT).parts:
                continue
            for name in imports(path):
                if under(name, PACKAGES):
                    bare.append(f"{path.relative_to(ROOT)} imports {name}")
    assert bare == []


def test_packages_import_only_downstream() -> None:
    violations = []
    for package, banned in FORBIDDEN.items():
        for path in source_files(package):
            for name in imports(path, at_runtime=True):
                if under(name, banned):
                    violations.append(f"{path.relative_to(ROOT)} imports {name}")
    assert violations == []


def test_no_import_circle() -> None:
    assert circles(module_graph()) == []


def test_no_folder_holds_more_than_twelve_modules() -> None:
    crowded = {}
    for package in PACKAGES:
        for folder in [ROOT / package, *(p.parent for p in source_files(package))]:
            modules = [p for p in folder.glob("*.py") if p.name != "__init__.py"]
            if len(modules) > MAX_MODULES:
                crowded[str(folder.relative_to(ROOT))] = len(modules)
    assert crowded == {}


def test_no_module_passes_500_lines_without_its_reason_at_the_top() -> None:
    unexplained = {}
    for package in PACKAGES:
        for path in source_files(package):
            source = path.read_text(encoding="utf-8")
            lines = source.count("\n")
            if lines > MAX_LINES and LONG_REASON not in (
                ast.get_docstring(ast.parse(source)) or ""
            ):
                unexplained[str(path.relative_to(ROOT))] = lines
    assert unexplained == {}, f"split these, or say {LONG_REASON!r} in their docstrings"


def test_sql_only_in_query_store_and_migration_modules() -> None:
    found = {}
    for package in PACKAGES:
        for path in source_files(package):
            if not sql_home(path) and (problems := sql_problems(path)):
                found[str(path.relative_to(ROOT))] = problems
    assert found == {}


def test_contracts_load_neither_celery_nor_sqlalchemy() -> None:
    contracts = [
        module_name(p) for p in source_files("schema") if "db" not in p.relative_to(ROOT).parts
    ]
    probe = (
        "import importlib, sys\n"
        f"for name in {contracts!r}: importlib.import_module(name)\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert loaded.strip() == "[]"


def test_the_checks_would_catch_a_violation(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from typing import TYPE_CHECKING\n"
        "from sqlalchemy import text\n"
        "import workers.trial\n"
        "if TYPE_CHECKING:\n"
        "    from sqlalchemy.engine import Engine\n"
        "Q = 'select trial_id from trial where sweep_id = :s'\n"
    )
    assert "workers.trial" in imports(bad)
    assert "sqlalchemy.engine" in imports(bad)
    assert "sqlalchemy.engine" not in imports(bad, at_runtime=True)
    assert sql_problems(bad) == [
        "imports sqlalchemy",
        "imports sqlalchemy.text",
        "SQL text on line 6",
    ]
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_nothing_cites_a_design_document_outside_the_repository() -> None:
    outside = "DESIGN" + ".md"  # spelled in two parts, so this file does not cite it either
    folders = (*PACKAGES, "tests", "bench", "docs", "scripts", "deploy")
    files = [ROOT / "README.md", *(p for f in folders for p in sorted((ROOT / f).rglob("*")))]
    cited = [
        str(p.relative_to(ROOT))
        for p in files
        if p.is_file()
        and p.suffix in {".py", ".md", ".yaml", ".sh", ".toml"}
        and "fixtures" not in p.relative_to(ROOT).parts
        and outside in p.read_text(encoding="utf-8", errors="replace")
    ]
    assert cited == []
