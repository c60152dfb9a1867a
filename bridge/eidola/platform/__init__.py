"""Platforms: the registered C++ models (catalog), components and bindings, plugins, units and YAML.

A `Platform` is a plain description; `Platform.elaborate()` turns it into the `Plan` that the
run layer hands to C++.
"""

from .model import Component, Platform, SocketRef
from .yaml_io import FLOW_COUNTERPART, load_platform, platform_from_dict

__all__ = ["Component", "Platform", "SocketRef", "FLOW_COUNTERPART", "load_platform", "platform_from_dict"]
