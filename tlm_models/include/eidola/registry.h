// The model registry: every model registers its name, role, doc, parameters, sockets and a factory.
// Platforms name models by registry name; `eidola describe` and the YAML schema read the same entries.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <systemc>

#include "eidola/params.h"

namespace eidola {

/// What part a model plays in a platform; the catalog lists it so tools can group models.
enum class Role { Gpu, Fabric, Adapter, Checker, Test };

/// Name of a Role in the catalog ("gpu", "fabric", "adapter", "checker", "test").
const char* role_name(Role role);

/// A socket as documented in the catalog. Models declare one per socket member and name the
/// member from it, so the catalog and the member cannot disagree.
struct SocketSpec {
    std::string name;          ///< member name; "targets[i]" for a vector of sockets
    std::string direction;     ///< "initiator" or "target"
    std::string protocol;      ///< "at", "lt" or "at+lt" (what the socket accepts or drives)
    std::string multiplicity;  ///< "1" or "ports" (one per port of the model)
    std::string doc;           ///< one-line description
    /// The sc_object name of the member ("targets" for "targets[i]").
    std::string member() const { return name.substr(0, name.find('[')); }
};

/// A registered model: how to describe it and how to build it.
struct ModelInfo {
    std::string name;                     ///< registry name, e.g. "EidolonGpu"
    Role role;                            ///< its part in a platform
    std::string doc;                      ///< one-line description
    std::vector<ParamSpec> params;        ///< declared parameters
    std::vector<SocketSpec> sockets;      ///< declared sockets
    /// Builds an instance; the module is owned by the caller.
    std::function<sc_core::sc_module*(const char* name, const ParamSet& params)> create;
};

/// The ModelInfo of model class M, whose parameter struct is `M::Params` and whose sockets are
/// listed by `M::socket_specs()`; M is built as `new M(name, params)`.
template <class M>
ModelInfo model_info(std::string name, Role role, std::string doc) {
    return ModelInfo{std::move(name), role, std::move(doc), param_specs_of<typename M::Params>(), M::socket_specs(),
                     [](const char* n, const ParamSet& p) -> sc_core::sc_module* { return new M(n, p); }};
}

/// Adds a model to the registry (called from each model's translation unit at load time).
bool register_model(ModelInfo info);

/// The registered model of that name, or nullptr.
const ModelInfo* find_model(const std::string& name);

/// Every registered model, sorted by name.
std::vector<const ModelInfo*> registered_models();

/// The whole registry as JSON: {"models": [{name, role, doc, params, sockets}], "enums": {...}, "tables": {...}}.
std::string catalog_json();

}  // namespace eidola

/// C entry point for loaders that do not parse C++ (ctypes): the catalog as JSON, owned by the library.
/// Built on first call, so libraries loaded after this one (test models) are listed if loaded before it.
extern "C" const char* eidola_catalog_json();
