// Model parameters, declared once per model with type, default, range, unit and doc.
// The Python side reads these declarations (catalog_json) to build the YAML schema,
// validate platforms and print `eidola describe`, so nothing is typed twice.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <systemc>

#include "eidola/param_set.h"

namespace eidola {

/// Kind of a parameter value; fixes its canonical unit (seconds, Hz, bytes/s, bytes).
/// Ints and Edges are lists written in YAML; they reach C++ as canonical text (see their parsers).
enum class ParamType { Time, Frequency, Bandwidth, Size, Int, Float, Bool, Choice, Ints, Edges };

/// Name of a ParamType as it appears in the catalog ("time", "size", ...).
const char* param_type_name(ParamType type);

/// Canonical unit of a ParamType ("s", "Hz", "B/s", "B", or "" for plain numbers).
const char* param_type_unit(ParamType type);

/// One declared parameter. Numbers are held in canonical units (seconds, Hz, bytes/s, bytes).
struct ParamSpec {
    std::string name;                 ///< dotted name, e.g. "memory.latency"
    ParamType type;                   ///< value kind and canonical unit
    double default_value;             ///< default, canonical units (unused for Choice)
    std::string doc;                  ///< one-line description
    double min = 0.0;                 ///< smallest accepted value (inclusive)
    double max = std::numeric_limits<double>::infinity();  ///< largest accepted value (inclusive)
    std::vector<std::string> choices; ///< accepted values of a Choice; the first is the default
};

/// Reads a model's parameters against its declaration: unknown names, out-of-range values
/// and wrong kinds throw std::invalid_argument naming the model instance and the parameter.
class Params {
public:
    Params(const std::vector<ParamSpec>& specs, const ParamSet& given, const std::string& owner);

    sc_core::sc_time time(const std::string& name) const;
    double number(const std::string& name) const;
    std::int64_t integer(const std::string& name) const;
    bool flag(const std::string& name) const;
    /// A Choice, or the canonical text of an Ints or Edges list.
    const std::string& choice(const std::string& name) const;

private:
    const ParamSpec& spec(const std::string& name) const;
    const std::vector<ParamSpec>& m_specs;
    std::map<std::string, double> m_numbers;
    std::map<std::string, std::string> m_choices;
    std::string m_owner;
};

/// Exact sc_time of a duration given in seconds, rounded to the kernel's resolution.
sc_core::sc_time seconds_to_time(double seconds);

}  // namespace eidola
