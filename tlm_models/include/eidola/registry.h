// The model registry: every model registers its name, doc, parameters, sockets and a factory.
// Platforms name models by registry name; `eidola describe` and the YAML schema read the same entries.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <systemc>

#include "eidola/params.h"

namespace eidola {

/// A socket as documented in the catalog.
struct SocketSpec {
    std::string name;          ///< member name; "targets[i]" for a vector of sockets
    std::string direction;     ///< "initiator" or "target"
    std::string protocol;      ///< "at", "lt" or "at+lt" (what the socket accepts or drives)
    std::string multiplicity;  ///< "1" or "ports" (one per port of the model)
    std::string doc;           ///< one-line description
};

/// A registered model: how to describe it and how to build it.
struct ModelInfo {
    std::string name;                     ///< registry name, e.g. "EidolonGpu"
    std::string doc;                      ///< one-line description
    std::vector<ParamSpec> params;        ///< declared parameters
    std::vector<SocketSpec> sockets;      ///< declared sockets
    /// Builds an instance; the module is owned by the caller.
    std::function<sc_core::sc_module*(const char* name, const ParamSet& params)> create;
};

/// Adds a model to the registry (called from each model's translation unit at load time).
bool register_model(ModelInfo info);

/// The registered model of that name, or nullptr.
const ModelInfo* find_model(const std::string& name);

/// Every registered model, sorted by name.
std::vector<const ModelInfo*> registered_models();

/// The whole registry as JSON: {"models": [{name, doc, params: [...], sockets: [...]}]}.
std::string catalog_json();

}  // namespace eidola

/// C entry point for loaders that do not parse C++ (ctypes): the catalog as JSON, owned by the library.
extern "C" const char* eidola_catalog_json();
