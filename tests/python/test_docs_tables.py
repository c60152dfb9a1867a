"""The docs' tables of measured figures say what the experiments' CSVs recorded.

The docs quote the experiments' measurements (experiments/*.csv) as tables. Several times a run of an
experiment rewrote its CSV while the docs kept the older figures (packet-fabric points had moved by up
to 3% under later changes). These tests rebuild each table from its CSV with the experiment's own
formatting and require the docs to carry it, so a re-run that moves a figure fails until the docs follow.
They run no simulation: whether the CSVs still match the code is the experiments' question (re-run them).
"""

from __future__ import annotations

import csv
import re
import sys
from pathlib import Path

import pytest


@pytest.fixture
def experiments(repo):
    sys.path.insert(0, str(repo / "experiments"))
    yield repo / "experiments"
    sys.path.remove(str(repo / "experiments"))


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def _missing(lines: list[str], doc: Path) -> list[str]:
    text = doc.read_text()
    return [line for line in lines if line.startswith("|") and line not in text]


def test_the_nccl_crossover_table_is_the_csvs(experiments, repo):
    import nccl_crossover

    rows = _rows(experiments / "nccl_crossover.csv")
    assert {r["platform"] for r in rows} == set(nccl_crossover.PLATFORMS)
    lines = nccl_crossover.table(rows).splitlines()  # type: ignore[arg-type]
    assert len(lines) == len(nccl_crossover.PLATFORMS) * len(nccl_crossover.OPS)
    assert _missing(lines, repo / "docs" / "fabrics.md") == []


def test_the_large_all_reduce_table_is_the_csvs(experiments, repo):
    import nccl_large

    lines = nccl_large.table(_rows(experiments / "nccl_large.csv")).splitlines()  # type: ignore[arg-type]
    assert len(lines) == 2 + len(nccl_large.PLATFORMS) * len(nccl_large.SIZES)
    assert _missing(lines, repo / "docs" / "fabrics.md") == []


def test_the_flow_error_table_is_the_csvs(experiments, repo):
    import flow_error

    lines = flow_error.table(_rows(experiments / "flow_error.csv"))
    assert len(lines) > 10
    assert _missing(lines, repo / "docs" / "fabrics.md") == []


_SIZE = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def _validation_tables(doc: str) -> dict[str, list[list[str]]]:
    """Per platform, the cells of the rows of the table after its figure (figures/validation-<platform>.png)."""
    tables: dict[str, list[list[str]]] = {}
    lines = doc.splitlines()
    for i, line in enumerate(lines):
        m = re.search(r"figures/validation-([a-z0-9-]+)\.png", line)
        if not m:
            continue
        j = i + 1
        while j < len(lines) and not lines[j].startswith("|"):
            j += 1
        rows = []
        while j < len(lines) and lines[j].startswith("|"):
            cells = [c.strip() for c in lines[j].strip().strip("|").split("|")]
            if re.fullmatch(r"\d+ (KiB|MiB|GiB)", cells[0]):
                rows.append(cells)
            j += 1
        tables[m.group(1)] = rows
    return tables


def test_the_validation_tables_are_the_csvs(experiments, repo):
    # Each row of a platform's table in docs/validation.md (a choice of sizes) against that size's row of
    # experiments/validation/<platform>.csv: plan, fabric, predicted time and bus bandwidth, and where the
    # row has them, the alpha-beta line through the calibration points and the signed difference.
    import validation

    tables = _validation_tables((repo / "docs" / "validation.md").read_text())
    platforms = {p: rows for p, rows in tables.items() if (repo / "platforms" / f"{p}.yaml").exists()}
    assert len(platforms) >= 7, sorted(tables)
    for platform, rows in platforms.items():
        assert rows, f"docs/validation.md: no rows in {platform}'s table"
        csv_rows = {int(r["size_bytes"]): r for r in _rows(experiments / "validation" / f"{platform}.csv")}
        points = validation.calibration_points(platform)
        a, b = validation.alpha_beta(points) if points else (None, None)
        for cells in rows:
            count, unit = cells[0].split()
            size = int(count) * _SIZE[unit]
            r = csv_rows[size]
            t = float(r["time_us"])
            expected = [cells[0], f"{r['algo']} {r['proto']} {r['channels']}", r["fabric"], f"{t:.2f}",
                        f"{float(r['busbw_GBps']):.1f}"]
            if len(cells) > 5 and cells[5]:
                assert a is not None and b is not None, f"{platform} {cells[0]}: an alpha-beta cell without points"
                line = a + size / b
                expected += [f"{line:.2f}", f"{t / line - 1:+.1%}"]
            assert cells[:len(expected)] == expected, f"docs/validation.md, {platform}, {cells[0]}"


def test_the_nvls_tables_are_the_csvs(experiments, repo):
    # docs/validation.md, "NVLS (H200, H100)": the on / off curve and the GPU-count table.
    import validation_nvls

    lines = validation_nvls.tables(_rows(experiments / "validation" / "dgx-h200-nvls.csv"),
                                   _rows(experiments / "validation" / "dgx-h200-nvls-gpus.csv"))
    assert len([line for line in lines if line.startswith("| ")]) >= 2 + 10 + 4
    assert _missing(lines, repo / "docs" / "validation.md") == []


def test_the_published_comparison_matches_the_validation_curves_and_its_tables(repo):
    # experiments/validation/published.csv keeps the prediction beside each published point; where the validation
    # curve of the same platform ran the same size with the same plan (the platform's own GPU count), the two must
    # agree (all-reduce, the curves' collective), so a re-run of the curves that moves a point fails here until the
    # comparison follows. Then the band table of docs/validation.md, "Against published curves", rebuilt from the CSV.
    import statistics

    rows = _rows(repo / "experiments" / "validation" / "published.csv")
    checked = 0
    for platform in {r["platform"] for r in rows}:
        curve = repo / "experiments" / "validation" / f"{platform}.csv"
        if not curve.exists():
            continue
        gpus = {"mi300x-rail": "16", "gb200-nvl4": "4"}.get(platform, "8")
        points = {r["size_bytes"]: r for r in _rows(curve)}
        for r in rows:
            p = points.get(r["size_bytes"])
            if r["platform"] != platform or r["op"] != "all_reduce" or r["gpus"] != gpus or p is None:
                continue
            if r["predicted_plan"] != f"{p['algo']} {p['proto']} {p['channels']}":
                continue
            assert float(r["predicted_us"]) == pytest.approx(float(p["time_us"]), abs=0.006), (platform, r["size_bytes"])
            checked += 1
    assert checked >= 100

    def band(lo: int, hi: int) -> str:
        e = [float(r["error"]) for r in rows if lo <= int(r["size_bytes"]) < hi]
        return f"| {len(e)} | {100 * statistics.median(abs(x) for x in e):.1f}% | {sum(x < 0 for x in e)} |"

    doc = (repo / "docs" / "validation.md").read_text()
    for line in (f"| below 64 KiB {band(0, 65536)}", f"| 64 KiB - 16 MiB {band(65536, (16 << 20) + 1)}",
                 f"| above 16 MiB {band((16 << 20) + 1, 1 << 40)}"):
        assert line in doc, line
