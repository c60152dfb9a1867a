"""`eidola sweep plot`: a metric against an axis, a line per value of a hue axis, a panel per value of a column axis."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import ConfigError
from .table import read_table

if TYPE_CHECKING:
    import pandas

__all__ = ["plot_sweep"]

_STYLES = ("o-", "s--", "^:", "D-.", "v-", "x--")


def _order(values: pandas.Series) -> list[Any]:
    """Values in the order they first appear: the spec's order, which a sort would break for "2us" after "500ns"."""
    return list(dict.fromkeys(values.tolist()))


def _check(table: pandas.DataFrame, name: str | None, what: str, out: Path) -> None:
    if name is not None and name not in table.columns:
        raise ConfigError(f"{out}/sweep.parquet: no column {name!r} for {what}; columns: {', '.join(table.columns)}")


def _averaged(table: pandas.DataFrame, folder: Path, drawn: tuple[str | None, ...]) -> list[str]:
    """The sweep's axes (spec.json names them; none without it) with more than one value among `table`'s points,
    other than the `drawn` ones: what each plotted point averages over."""
    import json

    try:
        axes = json.loads((folder / "spec.json").read_text())["axes"]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    return [a for a in axes if a not in drawn and a in table.columns and table[a].nunique() > 1]


def plot_sweep(out: str | Path, x: str, y: str, hue: str | None = None, col: str | None = None,
               output: str | Path | None = None) -> tuple[list[Path], list[str]]:
    """Draws `y` against `x` from the sweep in folder `out`; writes PNG and SVG (default: out/<y>-vs-<x>). Returns
    the files written and the axes each point averages over (those not drawn that vary).

    Points that did not finish ok are left out. Rows that share x, hue and col (another axis, such
    as the seed) are averaged, with their min-max range shaded. A numeric x is placed by value (on a log scale
    when it spans two decades or more); any other x is placed in the order of the spec.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder = Path(out)
    table = read_table(folder)
    for name, what in ((x, "--x"), (y, "--y"), (hue, "--hue"), (col, "--col")):
        _check(table, name, what, folder)
    if table[y].dtype.kind not in "iuf":
        raise ConfigError(f"--y {y}: a column of numbers is drawn (a metric); {y!r} holds text "
                          f"({', '.join(map(str, _order(table[y])[:3]))}, ...): give it as --hue or --col")
    table = table[table["status"] == "ok"]
    if table.empty:
        raise ConfigError(f"{folder}: no point finished ok; nothing to draw")
    numeric_x = table[x].dtype.kind in "iuf"
    panels = _order(table[col]) if col else [None]
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 3.8), dpi=120, squeeze=False, sharey=True)
    for ax, panel in zip(axes[0], panels):
        part = table if col is None else table[table[col] == panel]
        for i, h in enumerate(_order(part[hue]) if hue else [None]):
            series = part if hue is None else part[part[hue] == h]
            stats = series.groupby(x, sort=False)[y].agg(["mean", "min", "max"])
            xs = list(stats.index) if numeric_x else [_order(table[x]).index(v) for v in stats.index]
            ax.plot(xs, stats["mean"], _STYLES[i % len(_STYLES)], markersize=4, label=None if h is None else str(h))
            if (stats["max"] > stats["min"]).any():
                ax.fill_between(xs, stats["min"], stats["max"], alpha=0.2)
        if not numeric_x:
            labels = _order(table[x])
            ax.set_xticks(range(len(labels)), [str(v) for v in labels])
        if numeric_x and table[x].min() > 0 and table[x].max() >= 100 * table[x].min():
            ax.set_xscale("log")  # sizes and delays spanning decades: equal steps per factor
        ax.set_xlabel(x)
        ax.set_title("" if panel is None else f"{col} = {panel}")
        ax.grid(True, alpha=0.3)
        if hue:
            ax.legend(title=hue)
    axes[0][0].set_ylabel(y)
    fig.tight_layout()
    stem = Path(output) if output else folder / f"{y}-vs-{x}"
    # Not with_suffix: an axis name such as fabric.latency has a dot of its own.
    written = [stem.parent / f"{stem.name}.png", stem.parent / f"{stem.name}.svg"]
    for path in written:
        fig.savefig(path)
    plt.close(fig)
    return written, _averaged(table, folder, (x, hue, col))
