"""The two figures of a latency-load sweep: latency vs offered load, and accepted vs offered load."""

from __future__ import annotations

from pathlib import Path

from .plots import _pyplot, _save

__all__ = ["plot_netsweep"]


def plot_netsweep(rows: list[dict[str, float]], out_dir: str | Path, title: str) -> list[Path]:
    """Writes latency-vs-offered and accepted-vs-offered (PNG and SVG) into `out_dir`; returns the files."""
    plt = _pyplot()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    offered = [r["offered"] for r in rows]
    written: list[Path] = []

    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(offered, [r["latency_mean_ns"] for r in rows], "o-", label="mean")
    ax.plot(offered, [r["latency_p99_ns"] for r in rows], "s--", label="p99")
    ax.set_xlabel("offered load (packets per GPU per ns)")
    ax.set_ylabel("one-way latency (ns)")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    written += _save(fig, out, "latency-vs-offered")
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(offered, [r["accepted"] for r in rows], "o-", label="accepted")
    top = max(offered, default=0.0)
    ax.plot([0, top], [0, top], ":", color="grey", label="accepted = offered")
    ax.set_xlabel("offered load (packets per GPU per ns)")
    ax.set_ylabel("accepted load (packets per GPU per ns)")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    written += _save(fig, out, "accepted-vs-offered")
    plt.close(fig)
    return written
