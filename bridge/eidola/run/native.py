"""Finding and loading the compiled models library (libeidola_tlm.so) and its sc_main shim.

The libraries are looked for, in order: in ``$EIDOLA_NATIVE_DIR``; next to this package
(``eidola/_native``, where ``pip install`` puts them); in the source tree's ``build/cpp`` directory
(a developer's CMake build). Loading needs no cppyy: ctypes is enough to read the model catalog.

Further model libraries (``$EIDOLA_MODEL_LIBS``, an ``os.pathsep``-separated list of shared
libraries, such as the tests' ``libeidola_test_models.so``) are loaded right after the models
library, before the catalog is read, so the models they register join the catalog.
"""

from __future__ import annotations

import ctypes
import functools
import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import EidolaError

__all__ = ["NativeLibrary", "native_library"]

_LIB = "libeidola_tlm.so"
_SHIM = "libeidola_sc_main.so"


@dataclass(frozen=True)
class NativeLibrary:
    """Where the compiled models live, loaded into this process."""

    library: Path       #: libeidola_tlm.so
    shim: Path          #: libeidola_sc_main.so, which supplies sc_main to Python
    include_dir: Path   #: the models' headers (contains eidola/simulation.h)
    handle: ctypes.CDLL  #: the loaded library
    extra: tuple[Path, ...] = ()  #: model libraries loaded from $EIDOLA_MODEL_LIBS, in order


def _candidates() -> list[tuple[Path, Path]]:
    here = Path(__file__).resolve().parent
    package = here.parent  # eidola/, where pip install puts _native
    source_root = package.parent.parent
    found = []
    if os.environ.get("EIDOLA_NATIVE_DIR"):
        d = Path(os.environ["EIDOLA_NATIVE_DIR"])
        # The headers that match the library: an installed tree's own, else those of the source tree the
        # build directory (<root>/build/cpp) belongs to, even when this package is an installed copy.
        headers = [d / "include", d.parent.parent / "tlm_models" / "include", source_root / "tlm_models" / "include"]
        found.append((d, next((h for h in headers if h.is_dir()), headers[-1])))
    found.append((package / "_native", package / "_native" / "include"))
    found.append((source_root / "build" / "cpp", source_root / "tlm_models" / "include"))
    return found


def _load_model_libs() -> tuple[Path, ...]:
    """Loads the libraries named in $EIDOLA_MODEL_LIBS (RTLD_GLOBAL: they link against the models library)."""
    loaded = []
    for entry in os.environ.get("EIDOLA_MODEL_LIBS", "").split(os.pathsep):
        if not entry:
            continue
        path = Path(entry)
        try:
            ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
        except OSError as e:
            raise EidolaError(f"cannot load model library {path} (from EIDOLA_MODEL_LIBS): {e}") from e
        loaded.append(path)
    return tuple(loaded)


@functools.cache
def native_library() -> NativeLibrary:
    """Loads the models library (once per process) and returns where it is."""
    tried = []
    for lib_dir, include_dir in _candidates():
        lib, shim = lib_dir / _LIB, lib_dir / _SHIM
        tried.append(str(lib_dir))
        if lib.is_file() and shim.is_file():
            # SystemC's kernel, not Python, holds the copyright banner: silence it before it loads.
            os.environ.setdefault("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1")
            try:
                ctypes.CDLL(str(shim), mode=ctypes.RTLD_GLOBAL)
                handle = ctypes.CDLL(str(lib), mode=ctypes.RTLD_GLOBAL)
            except OSError as e:
                raise EidolaError(f"cannot load {lib}: {e}") from e
            return NativeLibrary(lib, shim, include_dir, handle, _load_model_libs())
    raise EidolaError(
        f"the compiled models ({_LIB}) were not found; looked in: {', '.join(tried)}. "
        "Install the package with 'pip install .' or build with CMake into build/."
    )
