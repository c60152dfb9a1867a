"""bench/RESULTS.md as sections: each benchmark script replaces its own section and leaves the others as measured."""

from __future__ import annotations

import datetime
import subprocess
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


def stamp() -> str:
    """"Revision abc1234, 2026-12-04 18:53 UTC": the short revision of HEAD and the time now, which every section
    opens with."""
    rev = subprocess.run(["git", "-C", str(RESULTS.parent), "rev-parse", "--short", "HEAD"], capture_output=True,
                         text=True).stdout.strip()
    return f"Revision {rev}, {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}"


#: The line that ends what a script wrote of its section (an HTML comment: Markdown shows nothing). Hand-written
#: text after it, up to the next heading, stays when the script writes the section again. Why: the section used to
#: run to the next heading, so a note written under a script's table went with that table's next run (the history
#: under bench/flow_scale.py --instructions did, 2026-12-05).
END_OF_GENERATED = "<!-- end of the script's section: what follows, to the next heading, is kept when it runs again -->"


def splice(text: str, section: list[str]) -> str:
    """`text` with the section headed by `section[0]` (a "## " line) replaced by `section`, or appended, and ended by
    END_OF_GENERATED. What the old section had after its own END_OF_GENERATED stays; a section written before the
    marker existed has none, and is replaced to the next heading."""
    heading = section[0]
    while section and section[-1] == "":
        section = section[:-1]
    written = section + ["", END_OF_GENERATED]
    lines = text.splitlines()
    if heading in lines:
        start = lines.index(heading)
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
        marker = next((i for i in range(start + 1, end) if lines[i] == END_OF_GENERATED), None)
        if marker is not None:
            lines[start:marker + 1] = written
        else:  # a section followed by another keeps the blank line between them
            lines[start:end] = written + ([""] if end < len(lines) else [])
    else:
        lines += [""] + written
    return "\n".join(lines).rstrip("\n") + "\n"


def splice_document(text: str, header: list[str], body: list[str]) -> str:
    """`text` with its preamble (everything before the first "## " line) replaced by `header`, and each "## "
    section of `body` spliced in as `splice` does: the sections `body` does not hold, hand notes and other
    scripts' sections, stay as they were."""
    lines = text.splitlines()
    first = next((i for i, line in enumerate(lines) if line.startswith("## ")), len(lines))
    doc = "\n".join(header + lines[first:])
    starts = [i for i, line in enumerate(body) if line.startswith("## ")]
    for k, start in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(body)
        doc = splice(doc, body[start:end])
    return doc.rstrip("\n") + "\n"


def write_section(section: list[str]) -> None:
    """Replace (or append) `section` in bench/RESULTS.md and print it."""
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
    RESULTS.write_text(splice(text, section))
    print("\n".join(section))
