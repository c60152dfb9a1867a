"""Progress of a sweep: a bar with an ETA on a terminal (tqdm), plain lines otherwise."""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

__all__ = ["Progress"]


class Progress:
    """Counts finished points; draws a tqdm bar on a terminal, or prints a line per step elsewhere."""

    def __init__(self, total: int, done: int, enabled: bool, stream: TextIO | None = None) -> None:
        """`total` points, `done` of them already finished (resumed); `enabled` False prints nothing."""
        self.total = total            #: points in the sweep
        self.done = done              #: points finished, resumed ones included
        self.failed = 0               #: points that finished with a status other than ok
        self._stream = stream or sys.stderr
        self._enabled = enabled
        self._start = time.monotonic()
        self._started_at = done
        self._last_line = 0.0
        self._bar: Any = None
        if enabled and self._stream.isatty():
            from tqdm import tqdm

            self._bar = tqdm(total=total, initial=done, unit="point", file=self._stream, dynamic_ncols=True)

    def update(self, row: dict[str, Any]) -> None:
        """Records one finished point's row."""
        self.done += 1
        if row.get("status") != "ok":
            self.failed += 1
        if self._bar is not None:
            self._bar.set_postfix(failed=self.failed, refresh=False)
            self._bar.update(1)
        elif self._enabled:
            now = time.monotonic()
            # A line per point floods a log for long sweeps: at most one a second, plus the last.
            if now - self._last_line >= 1.0 or self.done == self.total:
                self._last_line = now
                self._stream.write(self._line(now) + "\n")
                self._stream.flush()

    def _line(self, now: float) -> str:
        ran = self.done - self._started_at
        elapsed = now - self._start
        left = self.total - self.done
        eta = f", ETA {elapsed / ran * left:.0f} s" if ran and left else ""
        return f"sweep: {self.done}/{self.total} points ({self.failed} failed), {elapsed:.1f} s{eta}"

    def close(self) -> None:
        """Ends the bar."""
        if self._bar is not None:
            self._bar.close()
