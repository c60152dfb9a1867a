"""bench/results_md.py: a full bench run splices its sections into bench/RESULTS.md and keeps the rest."""

import sys

import pytest


@pytest.fixture
def results_md(repo):
    sys.path.insert(0, str(repo / "bench"))
    import results_md

    yield results_md
    sys.path.remove(str(repo / "bench"))


def test_a_full_run_keeps_hand_notes_and_other_scripts_sections(results_md):
    # bench/run.py used to write the whole file, dropping every hand-written section and every section of a script
    # it does not call; it now splices its sections in, and replaces only the preamble.
    old = "\n".join(["# Benchmark results", "", "- date: then", "",
                     "## Throughput", "", "old table", "",
                     "## A hand note", "", "kept as written", "",
                     "## Scaling", "", "old scaling", ""])
    header = ["# Benchmark results", "", "- date: now", ""]
    body = ["## Throughput", "", "new table", "", "## Scaling", "", "new scaling", "", "## New section", "", "added", ""]
    doc = results_md.splice_document(old, header, body).splitlines()
    end = results_md.END_OF_GENERATED
    assert doc[:4] == header
    assert doc[4:] == ["## Throughput", "", "new table", "", end, "",
                       "## A hand note", "", "kept as written", "",
                       "## Scaling", "", "new scaling", "", end, "",
                       "## New section", "", "added", "", end]


def test_a_first_run_writes_the_header_and_the_sections(results_md):
    doc = results_md.splice_document("", ["# Benchmark results", ""], ["## One", "", "a", ""])
    assert doc == f"# Benchmark results\n\n## One\n\na\n\n{results_md.END_OF_GENERATED}\n"


def test_a_note_under_a_scripts_section_survives_its_next_run(results_md):
    # The script's own lines end at the marker; a note written after it, up to the next heading, is kept. Before the
    # marker a rewrite ran to the next heading, and dropped such a note (bench/RESULTS.md, 2026-12-05).
    end = results_md.END_OF_GENERATED
    old = "\n".join(["## Counts", "", "old table", "", end, "", "A note on the old table.", "", "## Other", "", "x", ""])
    doc = results_md.splice(old, ["## Counts", "", "new table", ""]).splitlines()
    assert doc == ["## Counts", "", "new table", "", end, "", "A note on the old table.", "", "## Other", "", "x"]


def test_a_section_written_before_the_marker_is_replaced_to_the_next_heading(results_md):
    old = "\n".join(["## Counts", "", "old table", "", "old reading", "", "## Other", "", "x", ""])
    doc = results_md.splice(old, ["## Counts", "", "new table", ""]).splitlines()
    assert doc == ["## Counts", "", "new table", "", results_md.END_OF_GENERATED, "", "## Other", "", "x"]


def test_a_section_opens_with_this_revision_and_the_time(results_md, repo):
    import re
    import subprocess

    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    match = re.fullmatch(r"Revision (\w+), (\d{4}-\d\d-\d\d \d\d:\d\d) UTC", results_md.stamp())
    assert match and match.group(1) == head
