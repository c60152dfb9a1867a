"""``eidola perf --plot FILE``: bus bandwidth and time against message size, with a real log's points."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..errors import ConfigError
from ..run.perf import PerfRow
from .plots import _pyplot

__all__ = ["plot_perf"]


def plot_perf(path: str | Path, rows: Sequence[PerfRow], title: str,
              measured: Sequence[tuple[int, float]] = (), measured_label: str = "measured") -> Path:
    """Draws busbw (left) and time (right) against size on a log2 axis into `path` (its suffix gives the
    format: .png, .svg, .pdf); `measured` adds a real run's (size, time_us) points, as busbw with the
    rows' bus factor."""
    if not rows:
        raise ConfigError(f"--plot {path}: no sizes were simulated, nothing to draw")
    plt = _pyplot()
    factor = rows[0].busbw_factor
    fig, (bw, tm) = plt.subplots(1, 2, figsize=(11, 4.2))
    sizes = [r.size for r in rows]
    bw.plot(sizes, [r.busbw for r in rows], "o-", label="simulated")
    tm.plot(sizes, [r.time_us for r in rows], "o-", label="simulated")
    flow = [r for r in rows if r.fabric == "flow"]
    if flow and len(flow) < len(rows):  # --fabric auto switched: show where
        bw.plot([r.size for r in flow], [r.busbw for r in flow], "o", mfc="white", color="C0", label="(flow fabric)")
        tm.plot([r.size for r in flow], [r.time_us for r in flow], "o", mfc="white", color="C0", label="(flow fabric)")
    if measured:
        ms = [s for s, _ in measured]
        bw.plot(ms, [s / (t * 1e3) * factor for s, t in measured], "x", markersize=8, label=measured_label)
        tm.plot(ms, [t for _, t in measured], "x", markersize=8, label=measured_label)
    for ax in (bw, tm):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("message size (bytes, nccl-tests' size column)")
        ax.grid(True, which="major", alpha=0.3)
        ax.legend()
    tm.set_yscale("log")
    bw.set_ylabel("bus bandwidth (GB/s)")
    tm.set_ylabel("time (us)")
    fig.suptitle(title)
    fig.tight_layout()
    out = Path(path)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out)
    except ValueError as e:  # an extension matplotlib has no writer for
        raise ConfigError(f"--plot {path}: {e}") from None
    except OSError as e:
        raise ConfigError(f"--plot {path}: cannot write ({e.strerror or e})") from None
    finally:
        plt.close(fig)
    return out
