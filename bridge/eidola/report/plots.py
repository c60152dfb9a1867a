"""Figures of a run, with matplotlib: PNG and SVG, titled, with units, readable in grayscale.

- timeline.*: per GPU, its workgroups' compute, communication and wait spans, and flag arrivals
  (the Eidola paper's Fig. 1/2/8 form);
- link_heatmap.*: link utilisation, source x destination;
- link_time.*: utilisation over time of the busiest links (packet fabric);
- reads.*: read requests per GPU by kind, flag (polling) vs other (the paper's Fig. 9 form);
- latency.*: the latency of transfer ops (write, read, signal).

`plot_run` takes a Result or a directory written by Result.save (``eidola plot DIR``).
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

__all__ = ["plot_run", "load_run", "heatmap_matrix", "heatmap_field"]

_STYLE: dict[str, dict[str, str | None]] = {  # grayscale: fill and hatch tell the kinds apart
    "compute": {"color": "0.25", "hatch": None, "label": "compute"},
    "comm": {"color": "0.75", "hatch": "///", "label": "write / read / signal"},
    "wait": {"color": "white", "hatch": "...", "label": "wait"},
}


def load_run(directory: str | Path) -> SimpleNamespace:
    """The tables of a saved run, as structured arrays."""
    d = Path(directory)

    def table(name: str) -> Any:
        path = d / f"{name}.csv"
        if not path.exists() or path.stat().st_size == 0:
            return None
        data = np.genfromtxt(path, delimiter=",", names=True, dtype=None, encoding="utf-8")
        return np.atleast_1d(data)

    summary = json.loads((d / "summary.json").read_text())
    return SimpleNamespace(name=summary["name"], kernel_time_ns=summary["kernel_time_ns"], gpus=table("gpus"),
                           links=table("links"), link_bins=table("link_bins"), ops=table("ops"))


def _tables(run: Any) -> SimpleNamespace:
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


def plot_run(run: Any, out_dir: str | Path, max_workgroups: int = 2) -> list[Path]:
    """Draws every figure the run has data for into `out_dir`; returns the files written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = _tables(run)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    if t.ops is not None and len(t.ops):
        written += _timeline(plt, t, out, max_workgroups)
        written += _latency(plt, t, out)
    if t.links is not None and len(t.links):
        written += _heatmap(plt, t, out)
    if t.link_bins is not None and len(t.link_bins):
        written += _link_time(plt, t, out)
    if t.gpus is not None and len(t.gpus):
        written += _reads(plt, t, out)
    plt.close("all")
    return written


def _timeline(plt: Any, t: SimpleNamespace, out: Path, max_workgroups: int) -> list[Path]:
    ops = t.ops
    gpus = sorted(set(int(g) for g in ops["gpu"]))
    rows = []
    for g in gpus:
        wgs = sorted(set(int(w) for w in ops["wg"][ops["gpu"] == g]))
        step = max(1, -(-len(wgs) // max_workgroups))
        rows += [(g, w) for w in wgs[::step][:max_workgroups]]
    fig, ax = plt.subplots(figsize=(9, 0.3 * len(rows) + 1.8), dpi=120)
    y_of = {row: i for i, row in enumerate(rows)}
    for r in ops:
        key = (int(r["gpu"]), int(r["wg"]))
        if key not in y_of or r["end_ns"] <= r["begin_ns"]:
            continue
        kind = "compute" if r["kind"] in ("compute", "local") else "wait" if r["kind"] == "wait" else "comm"
        style = _STYLE[kind]
        ax.barh(y_of[key], (r["end_ns"] - r["begin_ns"]) / 1000, left=r["begin_ns"] / 1000, height=0.7,
                color=style["color"], hatch=style["hatch"], edgecolor="black", linewidth=0.4)
        if kind == "wait":
            ax.plot(r["end_ns"] / 1000, y_of[key], marker="v", color="black", markersize=4)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"GPU {g} wg {w}" for g, w in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("simulated time (µs)")
    from matplotlib.patches import Patch

    ax.legend(handles=[Patch(facecolor=s["color"], hatch=s["hatch"], edgecolor="black", label=s["label"])
                       for s in _STYLE.values()], loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, fontsize=8,
              frameon=False)
    fig.suptitle(f"{t.name}: workgroup timeline (▼ flag arrival ends a wait)", fontsize=11)
    fig.tight_layout()
    return _save(fig, out, "timeline")


def _heatmap(plt: Any, t: SimpleNamespace, out: Path) -> list[Path]:
    nodes, m = heatmap_matrix(t.links)
    fig, ax = plt.subplots(figsize=(5.5, 4.6), dpi=120)
    image = ax.imshow(m, cmap="Greys", vmin=0, vmax=max(1e-9, m.max()))
    labels = [str(n) for n in nodes]
    step = max(1, len(nodes) // 16)
    ax.set_xticks(range(0, len(nodes), step))
    ax.set_xticklabels(labels[::step], fontsize=7)
    ax.set_yticks(range(0, len(nodes), step))
    ax.set_yticklabels(labels[::step], fontsize=7)
    ax.set_xlabel("destination node")
    ax.set_ylabel("source node")
    field = heatmap_field(t.links)
    ax.set_title(f"{t.name}: link {'utilisation' if field == 'utilization' else 'traffic'}")
    fig.colorbar(image, ax=ax, label="utilisation (busy / kernel time)" if field == "utilization"
                 else "payload bytes (the ideal fabric has no link timing)")
    fig.tight_layout()
    return _save(fig, out, "link_heatmap")


def _link_time(plt: Any, t: SimpleNamespace, out: Path) -> list[Path]:
    bins = t.link_bins
    nonzero = bins["bin"] > 0
    width = float(np.median(bins["start_ns"][nonzero] / bins["bin"][nonzero])) if nonzero.any() else 1000.0
    busiest = np.argsort(-t.links["busy_ns"])[:6]
    fig, ax = plt.subplots(figsize=(7, 3.8), dpi=120)
    styles = ["-", "--", ":", "-.", (0, (5, 1)), (0, (1, 1))]
    last = int(bins["bin"].max()) + 1
    for k, link in enumerate(busiest):
        sel = bins[bins["link"] == link]
        lanes = max(1, int(t.links["lanes"][link])) if "lanes" in t.links.dtype.names else 1
        busy = np.zeros(last)  # bins with no traffic are not stored: they are zero
        busy[sel["bin"].astype(int)] = sel["busy_ns"]
        ax.step(np.arange(last) * width / 1000, busy / (width * lanes), where="post", linestyle=styles[k % len(styles)],
                color=str(0.1 + 0.12 * k), label=f"link {t.links['src'][link]}→{t.links['dst'][link]}")
    ax.set_xlabel("simulated time (µs)")
    ax.set_ylabel(f"utilisation per {width / 1000:g} µs bin")
    ax.set_ylim(0, 1.05)
    ax.set_title(f"{t.name}: utilisation over time, busiest links")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return _save(fig, out, "link_time")


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


def _latency(plt: Any, t: SimpleNamespace, out: Path) -> list[Path]:
    ops = t.ops
    sel = np.isin(ops["kind"], ["write", "read", "signal"])
    if not sel.any():
        return []
    durations = (ops["end_ns"][sel] - ops["begin_ns"][sel]) / 1000
    lo, hi = float(durations.min()), float(durations.max())
    if hi - lo < 1e-6:  # every op took the same time: one narrow bin around it
        lo, hi = lo - 0.005, hi + 0.005
    edges = np.linspace(lo, hi, 41)
    fig, ax = plt.subplots(figsize=(6, 3.8), dpi=120)
    for kind, hatch, color in (("write", None, "0.35"), ("signal", "///", "0.8"), ("read", "...", "white")):
        k = ops["kind"][sel] == kind
        if k.any():
            ax.hist(durations[k], bins=edges, color=color, hatch=hatch, edgecolor="black", alpha=0.9, label=kind)
    ax.set_xlabel("op latency, issue to last response (µs)")
    ax.set_ylabel("ops")
    ax.set_title(f"{t.name}: transfer latency")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return _save(fig, out, "latency")
