"""Platforms: the registered C++ models (catalog), components and bindings, plugins, units and YAML.

A `Platform` is a plain description; `Platform.elaborate()` turns it into the `Plan` that the
run layer hands to C++.
"""

from .model import Component, Platform, SocketRef
from .yaml_io import load_platform, platform_from_dict

__all__ = ["Component", "Platform", "SocketRef", "load_platform", "platform_from_dict"]
