"""Reading input files safely: one place for every limit on what a platform, profile or CSV may be.

Every reader of user files (platform YAML, profile YAML, timestamps CSV) goes through here, so
that each bad file ends in a ConfigError (or ProfileError) naming the file, and none can hang
the process or exhaust its memory:

- the path must name a regular file (not ``/dev/zero``, a FIFO or a directory), checked before
  it is opened, so a device is never read;
- at most `max_input_bytes()` are read (64 MiB unless ``EIDOLA_MAX_INPUT_BYTES`` says otherwise);
- a gzip file (`read_input_gz`) is decompressed in pieces and refused as soon as its content
  passes the same limit, so a small "gzip bomb" never grows in memory; a corrupt or truncated
  stream is an error naming the file, not a ``zlib.error``;
- the text must be UTF-8; the error gives the line and column of the first bad byte;
- YAML is parsed twice: first as a stream of events (libyaml keeps no recursion there), which
  bounds the nesting depth and the size of the document *with its aliases expanded* (so a
  "billion laughs" document is refused before anything walks it); then loaded with the safe
  loader, where a repeated mapping key is an error rather than silently winning; an alias inside
  the node it names (a structure that contains itself) is refused too.
"""

from __future__ import annotations

import os
import stat
import zlib
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

import yaml

from .errors import ConfigError

__all__ = ["DEFAULT_MAX_INPUT_BYTES", "MAX_YAML_DEPTH", "MAX_YAML_NODES", "max_input_bytes", "env_limit", "read_input",
           "read_input_gz",
           "check_input",
           "decode_text", "load_yaml", "StrictLoader"]

DEFAULT_MAX_INPUT_BYTES = 64 * 2**20  #: the largest input file read, unless EIDOLA_MAX_INPUT_BYTES overrides it
MAX_YAML_DEPTH = 64                   #: deepest nesting of mappings and lists in a YAML input
#: Most nodes a YAML document may hold with its aliases expanded. A node costs a Python object and
#: every consumer walks each of them, so this bounds time and memory (a 64 MiB profile written by
#: Profile.save() goes through the fast reader and never reaches this limit).
MAX_YAML_NODES = 4_000_000

if TYPE_CHECKING:  # the C loader if PyYAML was built with libyaml; same interface either way
    _Loader = yaml.SafeLoader
else:
    _Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class StrictLoader(_Loader):
    """The safe YAML loader, but a repeated mapping key is an error instead of silently winning."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        """A mapping whose keys are all distinct and hashable; ConstructorError at the offending key."""
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                # A mapping or list as a key would raise TypeError (unhashable) in the constructor.
                raise yaml.constructor.ConstructorError(None, None, "a mapping key must be a scalar",
                                                        key_node.start_mark)
        mapping = super().construct_mapping(node, deep=deep)
        if len(mapping) != len(node.value):
            seen = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node)
                if key in seen:
                    raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
                seen.add(key)
        return mapping


def env_limit(name: str, default: int, unit: str) -> int:
    """A limit the environment may set: variable `name` if set (a positive integer of `unit`), else `default`."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    if not text.isdigit() or int(text) < 1:
        raise ConfigError(f"{name}: expected a positive number of {unit}, got {text!r}")
    return int(text)


def max_input_bytes() -> int:
    """The size limit of input files: EIDOLA_MAX_INPUT_BYTES if set (a positive integer), else 64 MiB."""
    return env_limit("EIDOLA_MAX_INPUT_BYTES", DEFAULT_MAX_INPUT_BYTES, "bytes")


def check_input(path: str | os.PathLike[str], what: str, error: type[ConfigError] = ConfigError,
                sized: bool = True) -> None:
    """Checks, without opening it, that `path` is a regular file of at most max_input_bytes() (when `sized`).

    For files another program reads (a plugin's headers go to the compiler): `/dev/zero` or a
    gigabyte header is refused here instead of exhausting the compiler's memory.
    """
    name = os.fspath(path)
    try:
        info = os.stat(name)
    except FileNotFoundError:
        raise error(f"{name}: no such {what}") from None
    except (OSError, ValueError) as e:
        raise error(f"{name}: cannot read the {what} ({getattr(e, 'strerror', None) or e})") from None
    if not stat.S_ISREG(info.st_mode):
        kind = "a directory" if stat.S_ISDIR(info.st_mode) else "a device, FIFO or socket"
        raise error(f"{name}: the {what} must be a regular file, but this is {kind}")
    limit = max_input_bytes()
    if sized and info.st_size > limit:
        raise error(f"{name}: the {what} is {info.st_size} bytes, more than the limit of {limit} bytes "
                    "(set EIDOLA_MAX_INPUT_BYTES to raise it)")


def read_input(path: str | os.PathLike[str], what: str, error: type[ConfigError] = ConfigError) -> bytes:
    """The bytes of the regular file `path` (a `what`: "platform file", ...), at most max_input_bytes().

    Raises `error` naming the file when it is missing, not a regular file, unreadable or too large.
    """
    name = os.fspath(path)
    limit = max_input_bytes()
    try:
        info = os.stat(name)
    except FileNotFoundError:
        raise error(f"{name}: no such {what}") from None
    except (OSError, ValueError) as e:  # ValueError: a NUL byte in the path
        raise error(f"{name}: cannot read the {what} ({getattr(e, 'strerror', None) or e})") from None
    if not stat.S_ISREG(info.st_mode):
        kind = "a directory" if stat.S_ISDIR(info.st_mode) else "a device, FIFO or socket"
        raise error(f"{name}: the {what} must be a regular file, but this is {kind}")
    if info.st_size > limit:
        raise error(f"{name}: the {what} is {info.st_size} bytes, more than the limit of {limit} bytes "
                    "(set EIDOLA_MAX_INPUT_BYTES to raise it)")
    try:
        # O_NONBLOCK: should the path have been swapped for a FIFO since the check, open() must not wait.
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as f:
            data = f.read(limit + 1)  # the file may grow after stat(); never read more than the limit
    except OSError as e:
        raise error(f"{name}: cannot read the {what} ({e.strerror})") from None
    if len(data) > limit:
        raise error(f"{name}: the {what} is more than the limit of {limit} bytes (set EIDOLA_MAX_INPUT_BYTES "
                    "to raise it)")
    return data


GZIP_MAGIC = b"\x1f\x8b"  #: the first two bytes of a gzip member


def read_input_gz(path: str | os.PathLike[str], what: str, error: type[ConfigError] = ConfigError) -> bytes:
    """Like `read_input`, but a gzip file (by its magic bytes) comes back decompressed, at most max_input_bytes().

    Why in pieces: ``gzip.decompress`` of a few MiB can grow to gigabytes before anything checks
    its size. Concatenated members are read as one stream, as gzip does. Raises `error` naming the
    file when the stream is corrupt, truncated, or decompresses to more than the limit.
    """
    name = os.fspath(path)
    data = read_input(name, what, error)
    if data[:2] != GZIP_MAGIC:
        return data
    limit = max_input_bytes()
    out: list[bytes] = []
    size = 0
    rest = data
    try:
        while rest:
            d = zlib.decompressobj(wbits=31)  # 31: a gzip header and trailer around deflate
            chunk = d.decompress(rest, limit + 1 - size)
            while True:
                size += len(chunk)
                out.append(chunk)
                if size > limit:
                    raise error(f"{name}: the {what} decompresses to more than the limit of {limit} bytes "
                                "(set EIDOLA_MAX_INPUT_BYTES to raise it)")
                if d.eof or (not chunk and not d.unconsumed_tail):
                    break  # the member's end, or no input left to make progress with
                chunk = d.decompress(d.unconsumed_tail, limit + 1 - size)
            if not d.eof:
                raise error(f"{name}: the {what} is a truncated gzip file (its stream ends early)")
            rest = d.unused_data
            if rest[:2] != GZIP_MAGIC:  # trailing zero padding after the last member, as gzip allows
                if rest.strip(b"\0"):
                    raise error(f"{name}: the {what} has {len(rest)} stray bytes after its gzip data")
                break
    except zlib.error as e:
        raise error(f"{name}: the {what} is a corrupt gzip file ({e})") from None
    return b"".join(out)


def decode_text(data: bytes, source: str, error: type[ConfigError] = ConfigError) -> str:
    """`data` decoded as UTF-8 (a leading byte-order mark dropped); `error` gives the line and column of a bad byte."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        before = data[:e.start]
        line = before.count(b"\n") + 1
        column = len(before) - (before.rfind(b"\n") + 1) + 1
        raise error(f"{source}:{line}:{column}: not UTF-8 text (byte {data[e.start]:#04x})") from None
    return text.removeprefix("\ufeff")


def _yaml_error(e: yaml.YAMLError, source: str, error: type[ConfigError]) -> ConfigError:
    mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
    problem = getattr(e, "problem", None) or str(e).splitlines()[0]
    # A .json file is read by the YAML parser (JSON is YAML), but its author wrote JSON: say so.
    kind = "JSON" if str(source).lower().endswith((".json", ".json.gz")) else "YAML"
    if isinstance(e, yaml.reader.ReaderError):  # a character YAML forbids (a control character, say)
        return error(f"{source}: invalid {kind}: {problem} (character {e.character!r} at byte {e.position})")
    if mark is None:
        return error(f"{source}: invalid {kind}: {problem}")
    return error(f"{source}:{mark.line + 1}:{mark.column + 1}: invalid {kind}: {problem}")


def _at(event: yaml.Event) -> str:
    """line:column of an event, 1-based."""
    m = event.start_mark
    return f"{m.line + 1}:{m.column + 1}" if m is not None else "?"


def _check_events(text: str, source: str, error: type[ConfigError], max_nodes: int) -> None:
    """Bounds nesting depth and alias-expanded size by walking the event stream (no recursion, no objects)."""
    depth = 0
    total = 0                             # nodes so far, each alias counted as its whole anchored node
    sizes: dict[str, int] = {}            # anchor -> its expanded node count
    open_nodes: list[tuple[str | None, int]] = []   # (anchor, total when it began) of each open collection
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, yaml.AliasEvent):
            if any(anchor == event.anchor for anchor, _ in open_nodes):
                # A node that contains itself: every consumer would recurse without end.
                raise error(f"{source}:{_at(event)}: recursive YAML alias *{event.anchor} (it refers to a "
                            "mapping or list that contains it)")
            total += sizes.get(event.anchor or "", 1)
        elif isinstance(event, yaml.ScalarEvent):
            total += 1
            if event.anchor:
                sizes[event.anchor] = 1
        elif isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_YAML_DEPTH:
                raise error(f"{source}:{_at(event)}: YAML nested more than {MAX_YAML_DEPTH} levels deep")
            open_nodes.append((event.anchor, total))
            total += 1
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1
            anchor, began = open_nodes.pop()
            if anchor:
                sizes[anchor] = total - began
        else:
            continue
        if total > max_nodes:
            raise error(f"{source}:{_at(event)}: the YAML document expands to more than {max_nodes} "
                        "values (counting each alias as a copy of its anchor); aliases that multiply a document "
                        "(a 'billion laughs') are refused")


def load_yaml(text: str, source: str, error: type[ConfigError] = ConfigError, max_nodes: int = MAX_YAML_NODES) -> Any:
    """Loads one YAML document from `text` with every limit checked; `error` names `source`, line and column."""
    try:
        _check_events(text, source, error, max_nodes)
        return yaml.load(text, Loader=StrictLoader)
    except yaml.YAMLError as e:
        raise _yaml_error(e, source, error) from None
    except RecursionError:  # the depth check makes this unreachable; kept so no input can give a traceback
        raise error(f"{source}: YAML nested too deeply") from None
