"""Running: the plan encoded for C++, the native bridge, one child process per simulation, the Result.

Submodules are imported where needed: importing `eidola.run.native` (for the catalog) must not
load cppyy.
"""
