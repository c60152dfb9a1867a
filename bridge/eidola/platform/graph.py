"""Graphviz drawings of an elaborated platform: what is built, inserted adapters and checkers included."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from .elaborate import Plan

__all__ = ["write_graph", "dot_text"]


def dot_text(plan: Plan) -> str:
    """The plan as Graphviz DOT: a box per component (inserted ones dashed), an edge per binding."""
    lines = [f'digraph "{plan.name}" {{', "  rankdir=LR;", '  node [shape=box, fontname="Helvetica"];',
             '  edge [fontname="Helvetica", fontsize=9];']
    for c in plan.components:
        style = ', style=dashed' if c.inserted else ""
        lines.append(f'  "{c.name}" [label="{c.name}\\n{c.spec.name}"{style}];')
    for b in plan.bindings:
        i, t = b.initiator, b.target
        lines.append(f'  "{i.component}" -> "{t.component}" '
                     f'[label="{i.socket}{"" if i.index is None else f"[{i.index}]"} -> '
                     f'{t.socket}{"" if t.index is None else f"[{t.index}]"}"];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def write_graph(plan: Plan, path: str | Path) -> Path:
    """Writes DOT at `path`, and SVG and PNG beside it when `dot` is installed."""
    path = Path(path)
    path.write_text(dot_text(plan))
    if shutil.which("dot"):
        for fmt in ("svg", "png"):
            subprocess.run(["dot", f"-T{fmt}", str(path), "-o", str(path.with_suffix(f".{fmt}"))], check=True)
    return path
