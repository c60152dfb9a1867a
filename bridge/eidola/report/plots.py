"""Figures of a run, with matplotlib: PNG and SVG, titled, with units, readable in grayscale.

- timeline.*: per GPU, its workgroups' compute, communication and wait spans, and flag arrivals
  (the Eidola paper's Fig. 1/2/8 form);
- link_heatmap.*: link utilisation, source x destination (a node to itself is marked "n/a");
- link_time.*: over time, the busiest links and the mean of the others: utilisation on a fabric
  with link timing (packet), payload bandwidth per GPU pair on the ideal fabric;
- reads.*: read requests per GPU by kind, flag (polling) vs other (the paper's Fig. 9 form);
- latency.*: how long each transfer op (write, read, signal) held its workgroup.

`plot_run` takes a Result or a directory written by Result.save (``eidola plot DIR``); a
`TimelineView` chooses the timeline's GPUs, workgroups and time window.
`timeline_figure`, `heatmap_figure`, `link_time_figure` and `latency_figure` return the matplotlib
figures themselves, for notebooks and for tests that check what is drawn.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from ..errors import ConfigError, shown
from ..inputs import decode_text, read_input
from .compare import read_summary

__all__ = ["plot_run", "load_run", "heatmap_matrix", "heatmap_field", "timeline_figure", "timeline_rows",
           "heatmap_figure", "link_time_figure", "latency_figure", "TimelineView", "TIMELINE_STYLE",
           "LINK_TIME_LINES", "TIMELINE_ROWS"]

#: The timeline's look per span kind. Grayscale first: fill and hatch tell every kind apart, so a
#: write (data) and a signal (the release that publishes it) never look the same in print.
TIMELINE_STYLE: dict[str, dict[str, str | None]] = {
    "compute": {"color": "0.25", "hatch": None, "label": "compute / local"},
    "write": {"color": "0.75", "hatch": "///", "label": "write"},
    "read": {"color": "0.9", "hatch": "\\\\\\", "label": "read"},
    "signal": {"color": "0.5", "hatch": "xxx", "label": "signal (release)"},
    "fence": {"color": "white", "hatch": "|||", "label": "fence"},
    "wait": {"color": "white", "hatch": "...", "label": "wait"},
}
LINK_TIME_LINES = 6  #: links drawn one by one in link_time; the others are summarised as one mean line
TIMELINE_ROWS = 32  #: rows the timeline draws by default (GPUs x workgroups), so a large run stays readable
_TIMELINE_GPUS = 16  #: GPUs the timeline draws by default, evenly spaced over a larger run's


@dataclass(frozen=True)
class TimelineView:
    """What the timeline shows (``eidola plot --gpus 0,3 --workgroups 0-7 --window 10us:50us``).

    Each None means the default: GPUs, all of them up to 16 (evenly spaced over more); workgroups,
    as many per GPU as fit in 32 rows (at most 8, evenly spaced over those that ran); time, the
    whole run.
    """

    gpus: tuple[int, ...] | None = None           #: GPU indices to draw
    workgroups: tuple[int, ...] | None = None     #: workgroup indices to draw on each of them
    window_ns: tuple[float, float] | None = None  #: (start, end) of the simulated time drawn, in ns
_NOT_APPLICABLE = "0.8"  # the heatmap's "no such link" cells: mid grey under a cross hatch, off the colour scale


def load_run(directory: str | Path) -> SimpleNamespace:
    """The tables of a saved run, as structured arrays."""
    d = Path(directory)

    def table(name: str) -> Any:
        path = d / f"{name}.csv"
        if not path.exists() or path.stat().st_size == 0:
            return None
        text = decode_text(read_input(path, "results table"), str(path))  # a regular file of sane size
        try:
            data = np.genfromtxt(io.StringIO(text), delimiter=",", names=True, dtype=None, encoding="utf-8")
        except ValueError as e:
            raise ConfigError(f"{path}: not a results table written by eidola run "
                              f"({shown(' '.join(str(e).split()), 120)})") from None
        return np.atleast_1d(data)

    path = d / "summary.json"
    summary = read_summary(d, "eidola run")
    if not isinstance(summary.get("name"), str) or \
            not isinstance(summary.get("kernel_time_ns"), (int, float)) or isinstance(summary["kernel_time_ns"], bool):
        raise ConfigError(f"{path}: expected a run summary with a name and kernel_time_ns (written by eidola run)")
    return SimpleNamespace(name=summary["name"], kernel_time_ns=summary["kernel_time_ns"], gpus=table("gpus"),
                           links=table("links"), link_bins=table("link_bins"), ops=table("ops"))


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # files only: no display is needed or wanted
    import matplotlib.pyplot as plt

    return plt


def _tables(run: Any) -> SimpleNamespace:
    if isinstance(run, SimpleNamespace):  # already tables (load_run's result)
        return run
    if isinstance(run, (str, Path)):
        return load_run(run)
    return SimpleNamespace(name=run.name, kernel_time_ns=run.kernel_time_ns, gpus=run.gpus, links=run.links,
                           link_bins=run.link_bins, ops=run.ops_table())


def heatmap_field(links: Any) -> str:
    """What the heatmap shows: utilisation, or bytes on a fabric with no link timing (the ideal one)."""
    return "utilization" if links is not None and len(links) and float(np.max(links["utilization"])) > 0 else "bytes"


def heatmap_matrix(links: Any) -> tuple[list[int], np.ndarray[Any, np.dtype[Any]]]:
    """(nodes, matrix): the link from node row to node column, by `heatmap_field` (0 where none)."""
    if links is None or not len(links):
        return [], np.zeros((0, 0))
    field = heatmap_field(links)
    nodes = sorted(set(int(x) for x in links["src"]) | set(int(x) for x in links["dst"]))
    index = {n: i for i, n in enumerate(nodes)}
    m = np.zeros((len(nodes), len(nodes)))
    for r in links:
        m[index[int(r["src"])], index[int(r["dst"])]] += float(r[field])
    return nodes, m


def _save(fig: Any, out: Path, stem: str) -> list[Path]:
    paths = []
    for ext in ("png", "svg"):
        path = out / f"{stem}.{ext}"
        fig.savefig(path)
        paths.append(path)
    return paths


def plot_run(run: Any, out_dir: str | Path, view: TimelineView | None = None) -> list[Path]:
    """Draws every figure the run has data for into `out_dir`; returns the files written.

    `view` chooses the timeline's GPUs, workgroups and time window (default: TimelineView()).
    """
    plt = _pyplot()
    t = _tables(run)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    if t.ops is not None and len(t.ops):
        written += _save(timeline_figure(t, view), out, "timeline")
        written += _latency(plt, t, out)
    if t.links is not None and len(t.links):
        written += _heatmap(plt, t, out)
    if t.link_bins is not None and len(t.link_bins):
        written += _link_time(plt, t, out)
    if t.gpus is not None and len(t.gpus):
        written += _reads(plt, t, out)
    plt.close("all")
    return written


def _span_kind(kind: str) -> str:
    return "compute" if kind in ("compute", "local") else kind if kind in TIMELINE_STYLE else "write"


def timeline_rows(ops: Any, view: TimelineView | None = None) -> tuple[list[tuple[int, int]], str]:
    """The (gpu, wg) rows the timeline draws, and its sampling note ("" when every workgroup is drawn).

    Rows are those of `view` (see TimelineView for the defaults) that ran at least one op. The
    note counts workgroups that ran at least one op: "4 of 304 workgroups per GPU shown".
    """
    view = view or TimelineView()
    present = sorted(set(int(x) for x in ops["gpu"]))
    if view.gpus is not None:
        gpus = [g for g in view.gpus if g in set(present)]
    else:
        step = max(1, -(-len(present) // _TIMELINE_GPUS))
        gpus = present[::step][:_TIMELINE_GPUS]
    per_gpu = max(1, min(8, TIMELINE_ROWS // max(1, len(gpus))))
    rows: list[tuple[int, int]] = []
    counts: set[tuple[int, int]] = set()  # (shown, total) per GPU
    for g in gpus:
        wgs = sorted(set(int(w) for w in ops["wg"][ops["gpu"] == g]))
        if view.workgroups is not None:
            ran = set(wgs)
            picked_wgs = [w for w in view.workgroups if w in ran]
        else:
            step = max(1, -(-len(wgs) // per_gpu))
            picked_wgs = wgs[::step][:per_gpu]
        rows += [(g, w) for w in picked_wgs]
        counts.add((len(picked_wgs), len(wgs)))
    gpu_note = f"GPUs {_ranges(gpus)} of {len(present)}; " if len(gpus) < len(present) else ""
    if all(shown == total for shown, total in counts):
        return rows, gpu_note.rstrip("; ")
    if len(counts) == 1:
        n, total = next(iter(counts))
        return rows, f"{gpu_note}{n} of {total} workgroups per GPU shown"
    # GPUs with different workgroup counts: one figure for the whole run rather than a list.
    return rows, f"{gpu_note}{len(rows)} of {sum(total for _, total in counts)} workgroups shown"


def _ranges(values: list[int]) -> str:
    """0,1,2,3,7 as "0-3, 7"."""
    runs: list[list[int]] = []
    for v in values:
        if runs and runs[-1][1] == v - 1:
            runs[-1][1] = v
        else:
            runs.append([v, v])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def timeline_figure(run: Any, view: TimelineView | None = None) -> Any:
    """The workgroup timeline of a traced run (a Result or a saved run's directory), as a matplotlib Figure.

    `view` chooses the GPUs, workgroups and time window drawn (TimelineView); a span that crosses
    the window's edge is cut there.
    """
    plt = _pyplot()
    t = _tables(run)
    ops = t.ops
    view = view or TimelineView()
    rows, note = timeline_rows(ops, view)
    lo, hi = view.window_ns if view.window_ns is not None else (0.0, max(float(t.kernel_time_ns), 1e-3))
    fig, ax = plt.subplots(figsize=(9, 0.3 * len(rows) + 1.8), dpi=120)
    y_of = {row: i for i, row in enumerate(rows)}
    drawn: set[str] = set()
    for r in ops:
        key = (int(r["gpu"]), int(r["wg"]))
        begin, end = max(float(r["begin_ns"]), lo), min(float(r["end_ns"]), hi)
        if key not in y_of or end <= begin:
            continue
        kind = _span_kind(str(r["kind"]))
        style = TIMELINE_STYLE[kind]
        drawn.add(kind)
        ax.barh(y_of[key], (end - begin) / 1000, left=begin / 1000, height=0.7,
                color=style["color"], hatch=style["hatch"], edgecolor="black", linewidth=0.4, gid=kind)
        if kind == "wait" and end == float(r["end_ns"]):
            ax.plot(end / 1000, y_of[key], marker="v", color="black", markersize=4)
    ax.set_xlim(lo / 1000, hi / 1000 if view.window_ns is not None else hi / 1000 * 1.01)  # room for the last ▼
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"GPU {g} wg {w}" for g, w in rows], fontsize=7)
    ax.set_ylim(len(rows) - 0.5, -0.5)  # first row on top
    ax.set_xlabel("simulated time (µs)")
    from matplotlib.patches import Patch

    # Only the kinds drawn: a legend entry for a kind that is not in the figure would be a question.
    handles = [Patch(facecolor=s["color"], hatch=s["hatch"], edgecolor="black", label=s["label"])
               for k, s in TIMELINE_STYLE.items() if k in drawn]
    if handles:
        ax.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=min(len(handles), 6),
                  fontsize=8, frameon=False)
    if view.window_ns is not None:
        note = (note + "; " if note else "") + f"{lo / 1000:g}-{hi / 1000:g} µs"
    title = f"{t.name}: workgroup timeline (▼ flag arrival ends a wait)"
    fig.suptitle(f"{title}\n{note}" if note else title, fontsize=11)
    fig.tight_layout()
    return fig


def heatmap_figure(run: Any) -> Any:
    """The link heatmap (a Result or a saved run's directory), as a matplotlib Figure.

    A diagonal cell with no link (a node to itself) is masked out of the colour scale and drawn
    hatched grey, labelled "n/a": otherwise it would read as an idle link.
    """
    plt = _pyplot()
    from matplotlib.patches import Patch, Rectangle

    t = _tables(run)
    nodes, m = heatmap_matrix(t.links)
    has_link = np.zeros(m.shape, dtype=bool)
    index = {n: i for i, n in enumerate(nodes)}
    for r in t.links:
        has_link[index[int(r["src"])], index[int(r["dst"])]] = True
    self_cells = np.eye(len(nodes), dtype=bool) & ~has_link
    fig, ax = plt.subplots(figsize=(5.5, 4.6), dpi=120)
    cmap = plt.get_cmap("Greys").with_extremes(bad=_NOT_APPLICABLE)
    image = ax.imshow(np.ma.masked_array(m, mask=self_cells), cmap=cmap, vmin=0, vmax=max(1e-9, m.max()))
    for i in np.flatnonzero(self_cells.diagonal()):
        ax.add_patch(Rectangle((i - 0.5, i - 0.5), 1, 1, facecolor=_NOT_APPLICABLE, hatch="xx", edgecolor="0.5",
                               linewidth=0, gid="not_applicable"))
    labels = [str(n) for n in nodes]
    step = max(1, len(nodes) // 16)
    ax.set_xticks(range(0, len(nodes), step))
    ax.set_xticklabels(labels[::step], fontsize=7)
    ax.set_yticks(range(0, len(nodes), step))
    ax.set_yticklabels(labels[::step], fontsize=7)
    ax.set_xlabel("destination node")
    ax.set_ylabel("source node")
    if self_cells.any():
        ax.legend(handles=[Patch(facecolor=_NOT_APPLICABLE, hatch="xx", edgecolor="0.5",
                                 label="n/a: a node to itself (no link)")],
                  loc="lower center", bbox_to_anchor=(0.5, 1.0), fontsize=7, frameon=False)
    field = heatmap_field(t.links)
    ax.set_title(f"{t.name}: link {'utilisation' if field == 'utilization' else 'traffic'}",
                 pad=18 if self_cells.any() else 6)
    fig.colorbar(image, ax=ax, label="utilisation (busy / kernel time)" if field == "utilization"
                 else "payload bytes (the ideal fabric has no link timing)")
    fig.tight_layout()
    return fig


def _heatmap(plt: Any, t: SimpleNamespace, out: Path) -> list[Path]:
    return _save(heatmap_figure(t), out, "link_heatmap")


def link_time_figure(run: Any, lines: int = LINK_TIME_LINES) -> Any:
    """Links over time (a Result or a saved run's directory), as a matplotlib Figure.

    On a fabric with link timing (packet) each line is a link's utilisation per bin; on the ideal
    fabric, which has none, it is a GPU pair's payload bandwidth per bin (bytes delivered in the
    bin / its width). The `lines` busiest links (by busy time, or bytes on the ideal fabric; ties
    in link order) get a line each, and every other link is summarised by one more line, their
    mean. The legend names every line drawn, so no link is left out silently: links tied with the
    last one drawn (seven equal links from one GPU, say) are counted in the summary line.
    """
    plt = _pyplot()
    t = _tables(run)
    bins = t.link_bins
    timed = heatmap_field(t.links) == "utilization"
    nonzero = bins["bin"] > 0
    width = float(np.median(bins["start_ns"][nonzero] / bins["bin"][nonzero])) if nonzero.any() else 1000.0
    order = np.argsort(-(t.links["busy_ns"] if timed else t.links["bytes"]), kind="stable")
    busiest, others = order[:lines], order[lines:]
    last = int(bins["bin"].max()) + 1
    lanes = (np.maximum(1, t.links["lanes"].astype(int)) if "lanes" in t.links.dtype.names
             else np.ones(len(t.links), dtype=int))
    series = np.zeros((len(t.links), last))  # bins with no traffic are not stored: they are zero
    if timed:
        np.add.at(series, (bins["link"].astype(int), bins["bin"].astype(int)), bins["busy_ns"])
        series /= width * lanes[:, None]
    else:  # bytes per ns are GB/s
        np.add.at(series, (bins["link"].astype(int), bins["bin"].astype(int)), bins["bytes"].astype(float))
        series /= width
    entries = len(busiest) + (1 if len(others) else 0)
    columns = -(-entries // 10)  # a long legend goes beside the axes, in columns of ten
    fig, ax = plt.subplots(figsize=(7 + (1.5 * columns if entries > 7 else 0), 3.8), dpi=120)
    styles = ["-", "--", ":", "-.", (0, (5, 1)), (0, (1, 1))]
    x = np.arange(last) * width / 1000
    what = "link" if timed else "pair"
    for k, link in enumerate(busiest):
        ax.step(x, series[link], where="post", linestyle=styles[k % len(styles)], color=str(0.1 + 0.12 * (k % 6)),
                label=f"{what} {t.links['src'][link]}→{t.links['dst'][link]}")
    if len(others):
        ax.step(x, series[others].mean(axis=0), where="post", color="0.55", linewidth=2.5, alpha=0.6,
                label=f"mean of the other {len(others)} {what}s")
    ax.set_xlabel("simulated time (µs)")
    if timed:
        ax.set_ylabel(f"utilisation per {width / 1000:g} µs bin")
        ax.set_ylim(0, 1.05)
    else:
        ax.set_ylabel(f"payload GB/s per {width / 1000:g} µs bin")
        ax.set_ylim(0, max(1e-9, float(series.max())) * 1.05)
    shown = (f"the {len(busiest)} busiest of {len(t.links)} {what}s" if len(others)
             else f"all {len(t.links)} {what}s")
    heading = "utilisation over time" if timed else "traffic per GPU pair over time"
    ax.set_title(f"{t.name}: {heading}, {shown}", fontsize=10)
    ax.grid(True, alpha=0.3)
    if entries > 7:
        ax.legend(fontsize=7, ncol=columns, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    else:
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def _link_time(plt: Any, t: SimpleNamespace, out: Path) -> list[Path]:
    return _save(link_time_figure(t), out, "link_time")


def _reads(plt: Any, t: SimpleNamespace, out: Path) -> list[Path]:
    g = t.gpus
    fig, ax = plt.subplots(figsize=(6, 3.8), dpi=120)
    x = np.arange(len(g))
    ax.bar(x, g["flag_reads"], color="0.3", edgecolor="black", label="flag reads (polling)")
    ax.bar(x, g["reads"], bottom=g["flag_reads"], color="white", hatch="///", edgecolor="black",
           label="other reads")
    modes = ""
    if t.ops is not None and len(t.ops):
        found = sorted({d.split("(")[-1].rstrip(")") for k, d in zip(t.ops["kind"], t.ops["detail"]) if k == "wait"})
        modes = f" (wait modes: {', '.join(found)})" if found else ""
    ax.set_xticks(x)
    ax.set_xticklabels([str(int(v)) for v in g["gpu"]], fontsize=7)
    ax.set_xlabel("GPU")
    ax.set_ylabel("read requests")
    ax.set_title(f"{t.name}: reads by kind{modes}", fontsize=10, pad=24)
    ax.set_ylim(0, max(1, float((g["flag_reads"] + g["reads"]).max())) * 1.05)
    ax.legend(fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, frameon=False)
    fig.tight_layout()
    return _save(fig, out, "reads")


def latency_figure(run: Any) -> Any | None:
    """How long each transfer op held its workgroup (a Result or a saved run's directory), as a
    histogram per kind; None when the run had no transfer ops.

    What a slice measures differs by kind, and the axis says so: a read ends with its response;
    a write is posted, so it ends once its last packet is issued (waiting only for max_outstanding);
    a signal is a release, so it runs from the wait for the earlier writes' acknowledgements to its
    own issue, and one with nothing left to wait for takes no time.
    """
    plt = _pyplot()
    t = _tables(run)
    ops = t.ops
    sel = np.isin(ops["kind"], ["write", "read", "put", "signal"])
    if not sel.any():
        return None
    durations = (ops["end_ns"][sel] - ops["begin_ns"][sel]) / 1000
    lo, hi = float(durations.min()), float(durations.max())
    if hi - lo < 1e-6:  # every op took the same time: one narrow bin around it
        lo, hi = lo - 0.005, hi + 0.005
    edges = np.linspace(lo, hi, 41)
    fig, ax = plt.subplots(figsize=(6, 4.2), dpi=120)
    for kind, hatch, color in (("write", None, "0.35"), ("put", "\\\\", "0.6"), ("signal", "///", "0.8"),
                               ("read", "...", "white")):
        k = ops["kind"][sel] == kind
        if k.any():
            ax.hist(durations[k], bins=edges, color=color, hatch=hatch, edgecolor="black", alpha=0.9, label=kind)
    ax.set_xlabel("time the op held its workgroup (µs): a read until its response; a posted write\n"
                  "until its last packet is issued; a signal from its release wait to its issue", fontsize=8)
    ax.set_ylabel("ops")
    ax.set_title(f"{t.name}: transfer ops, time in the workgroup")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def _latency(plt: Any, t: SimpleNamespace, out: Path) -> list[Path]:
    fig = latency_figure(t)
    return [] if fig is None else _save(fig, out, "latency")
