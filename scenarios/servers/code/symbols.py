"""Symbol-aware navigation of a Python repository: definitions, references, outlines.

One of two competing code servers (the other, `code_search`, greps plain text): this one
parses every `.py` file with `ast` when it starts and answers from that index. Symbols are
named as a reader would name them: `Connection`, `Connection.send`, `_body_framing`, or with
their module (`_connection.Connection.send`). References are found by name, not by type: a
method's references are all `.name` uses, whatever object they are called on. Every tool
only reads, so the farm never needs to reset its folder.

    python -m mcp_farm.scenarios.servers.code.symbols [--repo PATH] [--transport http --port 8765]
"""

from __future__ import annotations

import argparse
import ast
import difflib
from dataclasses import dataclass
from pathlib import Path

from mcp.types import ToolAnnotations

from mcp_farm.scenarios.servers._sdk import (
    FIXTURES,
    MCPServer,
    ToolError,
    serve,
)

READ_ONLY = ToolAnnotations(read_only_hint=True)
MAX_REFERENCES = 100
MAX_SOURCE_LINES = 150
Scope = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


@dataclass(frozen=True)
class Definition:
    qualname: str
    """`Class.method`, `function` or `CONSTANT`."""
    module: str
    """Dotted module path (`h11._connection`)."""
    kind: str
    path: str
    line: int
    end: int
    signature: str
    doc: str = ""

    @property
    def span(self) -> str:
        return str(self.line) if self.end == self.line else f"{self.line}-{self.end}"

    @property
    def full(self) -> str:
        return f"{self.module}.{self.qualname}"

    def show(self) -> str:
        doc = f"\n    {self.doc}" if self.doc else ""
        return f"{self.kind} {self.qualname}  {self.path}:{self.span}\n    {self.signature}{doc}"


@dataclass(frozen=True)
class Use:
    path: str
    line: int
    scope: str
    """The innermost function or class around the use (`<module>` at the top level)."""
    call: bool


def _signature(node: Scope | ast.stmt, source: list[str]) -> str:
    if isinstance(node, ast.ClassDef):
        bases = ", ".join(ast.unparse(b) for b in node.bases)
        return f"class {node.name}({bases})" if bases else f"class {node.name}"
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
        prefix = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
        return f"{prefix} {node.name}({ast.unparse(node.args)}){returns}"
    return source[node.lineno - 1].strip()[:160]


def _used_name(node: ast.AST) -> str | None:
    """The name a node uses: `x`, the `attr` of `obj.attr`, or an imported name."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.alias):
        return (node.asname or node.name).rsplit(".", 1)[-1]
    return None


class Index:
    """Every definition and every name use of the repository's Python files."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.defs: list[Definition] = []
        self.uses: dict[str, list[Use]] = {}
        self.sources: dict[str, list[str]] = {}
        for file in sorted(self.root.rglob("*.py")):
            rel = file.relative_to(self.root)
            if {".git", "__pycache__"} & set(rel.parts):
                continue
            text = file.read_text(encoding="utf-8", errors="replace")
            self.sources[rel.as_posix()] = text.splitlines()
            self._add(rel.as_posix(), ast.parse(text, filename=str(rel)))

    def _add(self, path: str, tree: ast.Module) -> None:
        module = path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        source = self.sources[path]
        for node in tree.body:  # module constants: simple names assigned at the top level
            targets = node.targets if isinstance(node, ast.Assign) else []
            if isinstance(node, ast.AnnAssign):
                targets = [node.target]
            for name in (t.id for t in targets if isinstance(t, ast.Name)):
                if not name.startswith("__"):
                    sig = _signature(node, source)
                    end = node.end_lineno or node.lineno
                    self.defs.append(
                        Definition(name, module, "constant", path, node.lineno, end, sig)
                    )
        self._walk(tree, path, module, [], in_class=False)

    def _define(self, node: Scope, path: str, module: str, scope: list[str], kind: str) -> None:
        # Typing overloads are stubs: indexing them would make `Connection.send` ambiguous.
        if any(ast.unparse(d).endswith("overload") for d in node.decorator_list):
            return
        doc = (ast.get_docstring(node) or "").strip().split("\n")[0]
        sig = _signature(node, self.sources[path])
        end = node.end_lineno or node.lineno
        qualname = ".".join([*scope, node.name])
        self.defs.append(Definition(qualname, module, kind, path, node.lineno, end, sig, doc))

    def _walk(
        self, node: ast.AST, path: str, module: str, scope: list[str], in_class: bool
    ) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, Scope):
                is_class = isinstance(child, ast.ClassDef)
                kind = "class" if is_class else "method" if in_class else "function"
                self._define(child, path, module, scope, kind)
                self._walk(child, path, module, [*scope, child.name], in_class=is_class)
                continue
            name = _used_name(child)
            if name is not None and isinstance(child, ast.expr | ast.alias):
                call = isinstance(node, ast.Call) and node.func is child
                where = ".".join(scope) or "<module>"
                self.uses.setdefault(name, []).append(Use(path, child.lineno, where, call))
            self._walk(child, path, module, scope, in_class=False)

    def find(self, symbol: str) -> list[Definition]:
        """Definitions named `symbol`, matched on the qualified name's trailing parts."""
        wanted = symbol.strip().removesuffix("()")
        if not wanted:
            raise ToolError("name a symbol, e.g. Connection.send")
        found = [d for d in self.defs if d.full == wanted or d.full.endswith("." + wanted)]
        if not found:
            names = sorted({d.qualname for d in self.defs})
            close = difflib.get_close_matches(wanted, names, n=5, cutoff=0.6)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise ToolError(f"no definition of {symbol!r}{hint}")
        return found


def build(root: Path) -> MCPServer:
    index = Index(root)
    server = MCPServer("code-symbols", instructions="Symbol navigation of a Python repository.")

    @server.tool(annotations=READ_ONLY)
    def find_definition(symbol: str) -> str:
        """Where a function, class, method (`Class.method`) or module constant is defined:
        its kind, `path:start-end` lines, signature and the first line of its docstring."""
        return "\n".join(d.show() for d in index.find(symbol))

    @server.tool(annotations=READ_ONLY)
    def find_references(symbol: str) -> str:
        """Every place a name is used: calls, reads, writes and imports, as "path:line [in scope]
        (call): text", the definitions themselves left out. Matching is by the last part of
        the name, so `Connection.send` finds every `.send` use."""
        name = symbol.strip().removesuffix("()").rsplit(".", 1)[-1]
        defined = {(d.path, d.line) for d in index.defs if d.qualname.rsplit(".", 1)[-1] == name}
        uses = [u for u in index.uses.get(name, []) if (u.path, u.line) not in defined]
        if not uses and not defined:
            raise ToolError(f"{symbol!r} is neither defined nor used in this repository")
        seen: set[tuple[str, int]] = set()
        lines = []
        for use in uses:
            if (use.path, use.line) not in seen:
                seen.add((use.path, use.line))
                text = index.sources[use.path][use.line - 1].strip()
                call = " (call)" if use.call else ""
                lines.append(f"{use.path}:{use.line} [in {use.scope}]{call}: {text}")
        if not lines:
            return f"{symbol!r} is defined but never used"
        more = len(lines) - MAX_REFERENCES
        return "\n".join(lines[:MAX_REFERENCES] + ([f"... {more} more"] if more > 0 else []))

    @server.tool(annotations=READ_ONLY)
    def outline(path: str) -> str:
        """The classes, functions and methods of one Python file with their line ranges,
        nested as in the file; module constants first."""
        rel = path.strip().removeprefix("./").lstrip("/")
        if rel not in index.sources:
            raise ToolError(f"no Python file {path!r}; known: {', '.join(sorted(index.sources))}")
        defs = sorted((d for d in index.defs if d.path == rel), key=lambda d: d.line)
        rows = [f"{d.span}: {d.signature}" for d in defs if d.kind == "constant"]
        for d in (d for d in defs if d.kind != "constant"):
            indent = "  " * d.qualname.count(".")
            rows.append(f"{indent}{d.span}: {d.kind} {d.qualname}")
        return "\n".join(rows) if rows else f"{rel} defines nothing"

    @server.tool(annotations=READ_ONLY)
    def read_symbol(symbol: str) -> str:
        """The source of one definition, each line with its number (at most 150 lines).
        When several definitions share the name, qualify it (`Class.method`)."""
        found = index.find(symbol)
        if len(found) > 1:
            names = ", ".join(f"{d.full} ({d.path}:{d.line})" for d in found)
            raise ToolError(f"{symbol!r} is ambiguous; qualify it as one of: {names}")
        d = found[0]
        stop = min(d.end, d.line + MAX_SOURCE_LINES - 1)
        lines = index.sources[d.path]
        body = [f"{n:>5}  {lines[n - 1]}" for n in range(d.line, stop + 1)]
        if stop < d.end:
            body.append(f"... ({d.end - stop} more lines; outline {d.path} to read its parts)")
        return f"{d.path}:{d.span}\n" + "\n".join(body)

    return server


def _args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--repo",
        type=Path,
        default=FIXTURES / "code" / "h11",
        help="the repository's root folder; default: the bundled h11 snapshot (only read)",
    )


if __name__ == "__main__":
    serve(lambda a: build(a.repo), add_args=_args)
