"""The reusable functions of a verified script: what a later question on the same folder may import
instead of writing again (a loader, a parser, a rule of the documents put into code).

A function is taken from the script only when it stands on its own once lifted out of it:
- it has a docstring (its first line is what the planner and coder are shown);
- every global name it uses (in its body, its defaults and its decorators) is a builtin, a module
  the script imported at its top level, a constant the script set at its top level from literals,
  imported names and other such constants (`DATA_DIR = "/data"`, `FEES = os.path.join(DATA_DIR,
  "fees.json")`), or another function taken too;
- it declares no `global` (it would change the script's state), is not `main`, and is not larger
  than MAX_SOURCE characters.
A function reading a variable the script computed (`df = pd.read_csv(...)` at the top level) is
left out: lifted, it would fail or, worse, read another value. Constants are written into the
function (its source is re-generated from the syntax tree then, comments dropped), so two runs
that set `DATA_DIR` differently can never change each other's functions.

Pure syntax: nothing is run here (the standard library's `ast` and `symtable`).
"""

from __future__ import annotations

import ast
import builtins
import copy
import symtable
from dataclasses import asdict, dataclass, field

MAX_SOURCE = 8_000
# Calls a constant may hold: building a path from other constants.
PATH_CALLS = {"os.path.join", "os.path.dirname", "os.path.basename", "os.path.abspath", "Path", "pathlib.Path",
              "str"}
BUILTINS = set(dir(builtins))


@dataclass
class Function:
    name: str
    signature: str            # "load_fees(path='/data/fees.json') -> pd.DataFrame"
    doc: str                  # the docstring's first line
    source: str               # the def, standing on its own but for `imports` and `calls`
    imports: list[str] = field(default_factory=list)   # the import statements it needs
    calls: list[str] = field(default_factory=list)     # other taken functions it uses

    def as_dict(self) -> dict:
        return asdict(self)


def harvest(code: str) -> list[Function]:
    """The functions of `code` that stand on their own (see the module docstring), in script order."""
    try:
        tree = ast.parse(code)
        table = symtable.symtable(code, "<script>", "exec")
    except (SyntaxError, ValueError, RecursionError):
        return []
    imports, constants, defs = _top_level(tree)
    scopes = {(t.get_name(), t.get_lineno()): t for t in table.get_children() if t.get_type() == "function"}
    declared = {name for t in scopes.values() for name in _declared_global(t)}  # State shared through `global`.
    for name in declared:
        constants.pop(name, None)
    candidates: dict[str, tuple[ast.FunctionDef, set[str]]] = {}
    for name, node in defs.items():
        scope = scopes.get((name, node.lineno))
        if scope is None or name == "main" or name in declared or _declared_global(scope) or not _doc(node):
            continue
        candidates[name] = (node, _globals(scope) | _outer_names(node))
    kept = _standing(candidates, set(imports), set(constants))
    found = []
    for name in [n for n in defs if n in kept]:
        node, names = candidates[name]
        function = _lift(code, node, names, imports, constants, kept)
        if function is not None:
            found.append(function)
    return found


def module_source(functions: list[Function], header: str) -> str:
    """One importable module of `functions` (each with its imports); a function whose import would
    rebind a name another import bound differently is left out."""
    bound: dict[str, str] = {}
    lines, bodies = [f'"""{header}"""', ""], []
    for function in functions:
        needed = {_bound_name(statement): statement for statement in function.imports}
        if any(bound.get(name, statement) != statement for name, statement in needed.items()):
            continue
        for name, statement in needed.items():
            if name not in bound:
                bound[name] = statement
                lines.append(statement)
        bodies.append(function.source)
    return "\n".join(lines + [""] + ["\n\n" + body for body in bodies]) + "\n"


# -- the script's top level ------------------------------------------------------------------------

def _top_level(tree: ast.Module) -> tuple[dict[str, str], dict[str, ast.expr], dict[str, ast.FunctionDef]]:
    """Imports (bound name -> one statement), constants (name -> expression with constants written
    in) and functions (name -> the last def of that name), as the top level leaves them."""
    imports: dict[str, str] = {}
    constants: dict[str, ast.expr] = {}
    defs: dict[str, ast.FunctionDef] = {}
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                imports[alias.asname or alias.name.split(".")[0]] = ast.unparse(ast.Import([alias]))
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module != "__future__":
            for alias in node.names:
                if alias.name != "*":
                    imports[alias.asname or alias.name] = ast.unparse(ast.ImportFrom(node.module, [alias], 0))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            value = _constant(node.value, imports, constants) if node.value is not None else None
            for target in targets:
                for name in _assigned(target):
                    constants.pop(name, None)
                    defs.pop(name, None)
                if isinstance(target, ast.Name) and value is not None and len(targets) == 1:
                    constants[target.id] = value
        elif isinstance(node, ast.FunctionDef):
            defs[node.name] = node
            constants.pop(node.name, None)
        else:  # for, with, if, try ... at the top level: whatever they bind is computed, not constant.
            for inner in ast.walk(node):
                for target in _targets(inner):
                    for name in _assigned(target):
                        constants.pop(name, None)
    return imports, constants, defs


def _constant(expr: ast.expr, imports: dict[str, str], constants: dict[str, ast.expr]) -> ast.expr | None:
    """`expr` with the constants it names written in, when it is built from literals, imported names
    and constants only (see PATH_CALLS); else None."""
    for node in ast.walk(expr):
        if isinstance(node, ast.Call) and _dotted(node.func) not in PATH_CALLS:
            return None
        if isinstance(node, (ast.Lambda, ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom, ast.Starred,
                             ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Subscript)):
            return None
        if isinstance(node, ast.Name) and node.id not in imports and node.id not in constants \
                and node.id not in BUILTINS:
            return None
    return _WriteIn(constants).visit(_copy(expr))


def _assigned(target: ast.AST) -> list[str]:
    return [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]


def _targets(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.Assign):
        return list(node.targets)
    if isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.For, ast.comprehension)):
        return [node.target]
    if isinstance(node, ast.withitem) and node.optional_vars is not None:
        return [node.optional_vars]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [ast.Name((a.asname or a.name).split(".")[0]) for a in node.names]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [ast.Name(node.name)]
    if isinstance(node, ast.ExceptHandler) and node.name:
        return [ast.Name(node.name)]
    return []


# -- one function ----------------------------------------------------------------------------------

def _doc(node: ast.FunctionDef) -> str:
    text = ast.get_docstring(node) or ""
    return text.strip().splitlines()[0].strip() if text.strip() else ""


def _globals(scope: symtable.SymbolTable) -> set[str]:
    """The global names a function's body uses, its nested functions and classes included."""
    names = {s.get_name() for s in scope.get_symbols() if s.is_global() and s.is_referenced()}
    for child in scope.get_children():
        names |= _globals(child)
    return names


def _declared_global(scope: symtable.SymbolTable) -> set[str]:
    names = {s.get_name() for s in scope.get_symbols() if s.is_declared_global()}
    for child in scope.get_children():
        names |= _declared_global(child)
    return names


def _outer_names(node: ast.FunctionDef) -> set[str]:
    """Names read where the def itself runs: decorators, defaults, annotations."""
    outer = list(node.decorator_list) + list(node.args.defaults) + [d for d in node.args.kw_defaults if d]
    outer += [a.annotation for a in node.args.args + node.args.kwonlyargs + node.args.posonlyargs if a.annotation]
    outer += [node.returns] if node.returns else []
    return {n.id for expr in outer for n in ast.walk(expr) if isinstance(n, ast.Name)}


def _standing(candidates: dict[str, tuple[ast.FunctionDef, set[str]]], imports: set[str],
              constants: set[str]) -> set[str]:
    """The candidates whose every global is known, other candidates counted only while they stand."""
    kept = set(candidates)
    changed = True
    while changed:
        changed = False
        for name in list(kept):
            unknown = candidates[name][1] - BUILTINS - imports - constants - kept
            if unknown:
                kept.discard(name)
                changed = True
    return kept


def _lift(code: str, node: ast.FunctionDef, names: set[str], imports: dict[str, str],
          constants: dict[str, ast.expr], kept: set[str]) -> Function | None:
    written = {name: constants[name] for name in names if name in constants}
    if written:
        source = ast.unparse(_WriteIn(written).visit(_copy(node)))
    else:
        first = min([d.lineno for d in node.decorator_list] + [node.lineno])
        source = "\n".join(code.splitlines()[first - 1:node.end_lineno])
    if len(source) > MAX_SOURCE:
        return None
    signature = f"{node.name}({ast.unparse(_WriteIn(written).visit(_copy(node.args)))})"
    signature += f" -> {ast.unparse(node.returns)}" if node.returns else ""
    names_in_values = {n.id for value in written.values() for n in ast.walk(value) if isinstance(n, ast.Name)}
    used = sorted((names | names_in_values) & set(imports))  # `os` for a constant written in as os.path.join(...)
    return Function(node.name, signature, _doc(node), source, [imports[n] for n in used],
                    sorted((names & kept) - {node.name}))


class _WriteIn(ast.NodeTransformer):
    """Replace each read of a constant by its value."""

    def __init__(self, constants: dict[str, ast.expr]):
        self.constants = constants

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if isinstance(node.ctx, ast.Load) and node.id in self.constants:
            return ast.copy_location(_copy(self.constants[node.id]), node)
        return node


def _copy(node: ast.AST) -> ast.AST:
    return copy.deepcopy(node)


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def _bound_name(statement: str) -> str:
    alias = ast.parse(statement).body[0].names[0]
    return alias.asname or (alias.name.split(".")[0] if statement.startswith("import ") else alias.name)
