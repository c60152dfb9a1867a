"""A sweep's run options, checked before anything runs: workers, the Dask address and the output folder.

Each bad option is a ConfigError naming it (exit status 2), raised before a model is loaded or a
point forked.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ...errors import ConfigError

__all__ = ["MAX_WORKERS_PER_CORE", "check_dask", "check_workers", "cores", "prepare_out"]

MAX_WORKERS_PER_CORE = 4  #: most points run at once per core (each is a process with the models loaded)

# scheme://host:port or host:port; the host is a name, an IPv4 address or a bracketed IPv6 one.
_ADDRESS = re.compile(r"^(?:(?:tcp|tls|ucx|ws|wss)://)?(?:[A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\]):(\d{1,5})$")


def cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _most_workers() -> int:
    return MAX_WORKERS_PER_CORE * cores()


def check_workers(workers: object) -> None:
    """`workers` is None or a whole number from 1 to MAX_WORKERS_PER_CORE per core.

    Why a ceiling: each worker is a process holding a simulation; `--workers 100000` would fork
    until memory ran out, and more than a few per core only share the same cores.
    """
    if workers is None:
        return
    most = _most_workers()
    if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= most:
        raise ConfigError(f"--workers {workers!r}: expected a number of points run at once from 1 to {most} "
                          f"({MAX_WORKERS_PER_CORE} per core)")


def check_dask(address: object) -> None:
    """`address` is None, local:N (1 <= N <= MAX_WORKERS_PER_CORE per core) or a scheduler's [scheme://]host:port."""
    if address is None:
        return
    if not isinstance(address, str):
        raise ConfigError(f"--dask {address!r}: expected a scheduler address such as tcp://host:8786, or local:N")
    if address.startswith("local:"):
        count, most = address.removeprefix("local:"), _most_workers()
        if not count.isdigit() or not 1 <= int(count) <= most:
            raise ConfigError(f"--dask {address}: expected local:N with N from 1 to {most} workers")
        return
    match = _ADDRESS.match(address)
    if match is None or not 1 <= int(match.group(1)) <= 65535:
        raise ConfigError(f"--dask {address!r}: expected a scheduler address such as tcp://host:8786 "
                          "(tcp, tls, ucx, ws or wss), or local:N for a local cluster of N workers")


def prepare_out(folder: Path, resume: bool, overwrite: bool) -> None:
    """Makes the output folder (and its points/), refusing a file, and an earlier sweep's folder unless told what to do.

    Why refuse an earlier sweep: running into it silently ran every point again, when the user
    most likely wanted `--resume`; `--overwrite` says the rerun is meant.
    """
    if resume and overwrite:
        raise ConfigError("--resume, --overwrite: give one (resume keeps finished points, overwrite runs them again)")
    points = folder / "points"
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"--out {folder}: is a file, not a folder")
    if points.is_symlink() or (points.exists() and not points.is_dir()):
        raise ConfigError(f"--out {folder}: {points} is not a folder, so this is not a sweep's output folder")
    earlier = [name for name in ("sweep.parquet", "spec.json") if (folder / name).exists()]
    if points.is_dir() and next(points.iterdir(), None) is not None:
        earlier.append("points/")
    if earlier and not resume and not overwrite:
        raise ConfigError(f"--out {folder}: holds an earlier sweep ({', '.join(earlier)}); pass --resume to run "
                          "only the points not finished there, or --overwrite to run every point again")
    try:
        points.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError(f"--out {folder}: cannot make the output folder ({e.strerror or e})") from None
