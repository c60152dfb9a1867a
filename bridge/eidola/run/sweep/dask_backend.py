"""The Dask backend: points run on a `distributed` cluster, each in a child forked by a worker.

Each worker process loads cppyy and the models once (the `LoadModels` worker plugin, which
also applies to workers that join or restart later); each point is a task that forks a child
from that worker, so a point that crashes kills its child, not the worker. A worker that dies
mid-point loses nothing: the scheduler runs its tasks again elsewhere, and points are
deterministic, so the rerun gives the same row.

Point folders are written by the workers: on a cluster, `--out` must be on a file system the
workers share with the client (the table itself is written by the client).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from distributed import Client, LocalCluster, WorkerPlugin, as_completed

from ...errors import ConfigError
from .execute import ROW_FILE, Task, run_point

# distributed's constructors and as_completed carry no annotations: the calls below say so with
# `type: ignore[no-untyped-call]` rather than silencing the check for the whole file.

__all__ = ["LoadModels", "run_dask"]


class LoadModels(WorkerPlugin):
    """Loads cppyy and the compiled models into a Dask worker process once, before its first point."""

    name = "eidola-load-models"  #: the plugin's name: registering it again replaces it rather than adding one

    def setup(self, worker: Any) -> None:
        """Called by Dask in each worker process as it starts (or when the plugin is registered)."""
        from ...platform import yaml_io  # noqa: F401
        from ...workload import generators, profile_yaml  # noqa: F401
        from .. import simulate, sysc  # noqa: F401  (imported here, not in each forked child)

        sysc.load()


def _client(address: str) -> tuple[Client, LocalCluster | None]:
    if address.startswith("local:"):
        count = address.removeprefix("local:")
        if not count.isdigit() or int(count) < 1:
            raise ConfigError(f"--dask {address}: expected local:N with N >= 1 workers")
        cluster = LocalCluster(n_workers=int(count), threads_per_worker=1, processes=True,  # type: ignore[no-untyped-call]
                               dashboard_address=None)
        return Client(cluster), cluster  # type: ignore[no-untyped-call]
    try:
        return Client(address, timeout="20s"), None  # type: ignore[no-untyped-call]
    except (OSError, ValueError) as e:  # unreachable, or an address distributed cannot parse
        raise ConfigError(f"--dask {address}: cannot reach the Dask scheduler ({e})") from None


def run_dask(tasks: list[Task], address: str, on_done: Callable[[dict[str, Any]], None]) -> None:
    """Runs `tasks` on the Dask cluster at `address` (or a new local one, `local:N`); `on_done(row)` per point."""
    client, cluster = _client(address)
    try:
        client.register_plugin(LoadModels())
        # Keys name the point, so the dashboard shows which; pure=False because a rerun after an
        # edit of a base file has the same arguments' repr but must run again.
        futures = [client.submit(run_point, t, key=f"eidola-point-{t.point.index}-{t.point.key}", pure=False)
                   for t in tasks]
        folders = {t.point.index: Path(t.folder) for t in tasks}
        for future in as_completed(futures):  # type: ignore[no-untyped-call]
            row = future.result()
            # The client keeps its own copy of the row, so --resume works when the workers' disks are not shared.
            folder = folders[row["point"]]
            folder.mkdir(parents=True, exist_ok=True)
            (folder / ROW_FILE).write_text(json.dumps(row, sort_keys=True) + "\n")
            on_done(row)
    finally:
        client.close()  # type: ignore[no-untyped-call]
        if cluster is not None:
            cluster.close()
