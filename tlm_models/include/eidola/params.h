// Model parameters, declared once per model as typed members that carry their name, default,
// range, unit (through their type) and doc. The catalog's ParamSpec list is read from the same
// members, and the model reads values from them without naming them again:
//
//     struct IdealFabricParams : ParamGroup {
//         TimeParam latency{*this, "latency", 500e-9, "one-way latency of every request", 0, 1.0};
//     };
//     IdealFabricParams p;  p.apply(given, "fabric");  m_latency = p.latency.get();
//
// The Python side reads these declarations (catalog_json) to build the YAML schema, validate
// platforms and print `eidola describe`, so nothing is typed twice.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include <systemc>

#include "eidola/param_set.h"

namespace eidola {

/// Kind of a parameter value; fixes its canonical unit (seconds, Hz, bytes/s, bytes).
/// Ints and Edges are lists written in YAML; they reach C++ as canonical text (see their parsers).
/// Buffer is a depth given either as a size ("128B") or as a bare count of packets (64).
enum class ParamType { Time, Frequency, Bandwidth, Size, Int, Float, Bool, Choice, Ints, Edges, Buffer };

/// Name of a ParamType as it appears in the catalog ("time", "size", ...).
const char* param_type_name(ParamType type);

/// Canonical unit of a ParamType ("s", "Hz", "B/s", "B", or "" for plain numbers).
const char* param_type_unit(ParamType type);

/// Whether a ParamType holds text (Choice, Ints, Edges) rather than a number.
bool param_type_is_text(ParamType type);

/// One declared parameter as the catalog lists it. Numbers are in canonical units.
struct ParamSpec {
    std::string name;                 ///< dotted name, e.g. "memory.latency"
    ParamType type;                   ///< value kind and canonical unit
    double default_value;             ///< default, canonical units (unused for text kinds)
    std::string doc;                  ///< one-line description
    double min = 0.0;                 ///< smallest accepted value (inclusive)
    double max = std::numeric_limits<double>::infinity();  ///< largest accepted value (inclusive)
    std::vector<std::string> choices; ///< accepted values of a Choice; the first is the default
    std::string default_text = {};    ///< default of a text kind other than Choice (canonical text)
};

class ParamBase;

/// A model's parameter struct derives from this; its Param members register here in declaration
/// order. Not copyable: the members hold a reference to it.
class ParamGroup {
public:
    ParamGroup() = default;
    ParamGroup(const ParamGroup&) = delete;
    ParamGroup& operator=(const ParamGroup&) = delete;

    /// The declarations, in declaration order (what the catalog lists).
    std::vector<ParamSpec> specs() const;
    /// Takes the given values: unknown names, out-of-range values and wrong kinds throw
    /// std::invalid_argument naming `owner` (the model instance) and the parameter.
    void apply(const ParamSet& given, const std::string& owner);

private:
    friend class ParamBase;
    ParamBase* find(const std::string& name) const;
    std::vector<ParamBase*> m_params;
};

/// The untyped part of a declared parameter: its spec and its current (canonical) value.
class ParamBase {
public:
    ParamBase(const ParamBase&) = delete;
    ParamBase& operator=(const ParamBase&) = delete;
    /// The declaration.
    const ParamSpec& spec() const { return m_spec; }

protected:
    ParamBase(ParamGroup& group, ParamSpec spec);
    double m_number;     // canonical value of a numeric kind
    std::string m_text;  // value of a text kind

private:
    friend class ParamGroup;
    ParamSpec m_spec;
};

/// Exact sc_time of a duration given in seconds, rounded to the kernel's resolution.
sc_core::sc_time seconds_to_time(double seconds);

/// A typed parameter; `get()` converts the canonical value to what the model uses.
template <ParamType K>
class Param;

/// A duration (YAML "300ns"), read as sc_time.
template <>
class Param<ParamType::Time> : public ParamBase {
public:
    /// `seconds`: the default; `min`/`max`: accepted range, in seconds.
    Param(ParamGroup& g, const char* name, double seconds, const char* doc, double min, double max)
        : ParamBase(g, {name, ParamType::Time, seconds, doc, min, max, {}}) {}
    sc_core::sc_time get() const { return seconds_to_time(m_number); }
};

/// A plain or dimensioned number (frequency in Hz, bandwidth in B/s, float), read as double.
template <ParamType K>
class Param : public ParamBase {
    static_assert(K == ParamType::Frequency || K == ParamType::Bandwidth || K == ParamType::Float,
                  "this ParamType has its own specialisation");

public:
    Param(ParamGroup& g, const char* name, double value, const char* doc, double min, double max)
        : ParamBase(g, {name, K, value, doc, min, max, {}}) {}
    double get() const { return m_number; }
};

/// A whole number (count or index), read as int64.
template <>
class Param<ParamType::Int> : public ParamBase {
public:
    Param(ParamGroup& g, const char* name, std::int64_t value, const char* doc, double min, double max)
        : ParamBase(g, {name, ParamType::Int, double(value), doc, min, max, {}}) {}
    std::int64_t get() const { return std::int64_t(m_number); }
};

/// A size in bytes (YAML "256B", "1KiB"), read as uint64.
template <>
class Param<ParamType::Size> : public ParamBase {
public:
    Param(ParamGroup& g, const char* name, std::uint64_t bytes, const char* doc, double min, double max)
        : ParamBase(g, {name, ParamType::Size, double(bytes), doc, min, max, {}}) {}
    std::uint64_t get() const { return std::uint64_t(m_number); }
};

/// A switch, read as bool.
template <>
class Param<ParamType::Bool> : public ParamBase {
public:
    Param(ParamGroup& g, const char* name, bool value, const char* doc)
        : ParamBase(g, {name, ParamType::Bool, value ? 1.0 : 0.0, doc, 0, 1, {}}) {}
    bool get() const { return m_number != 0.0; }
};

/// One of a fixed list of words; the first is the default.
template <>
class Param<ParamType::Choice> : public ParamBase {
public:
    Param(ParamGroup& g, const char* name, std::initializer_list<std::string> choices, const char* doc)
        : ParamBase(g, {name, ParamType::Choice, 0, doc, 0, 0, choices}) {}
    const std::string& get() const { return m_text; }
};

/// A list of positive integers (YAML [4, 4]), read as its canonical text "4 4" (empty by default).
template <>
class Param<ParamType::Ints> : public ParamBase {
public:
    Param(ParamGroup& g, const char* name, const char* doc) : ParamBase(g, {name, ParamType::Ints, 0, doc}) {}
    const std::string& get() const { return m_text; }
    /// The integers; throws std::invalid_argument on one below 1.
    std::vector<std::uint32_t> values() const;
};

/// A custom topology's edge list, read as its canonical text (see Topology).
template <>
class Param<ParamType::Edges> : public ParamBase {
public:
    Param(ParamGroup& g, const char* name, const char* doc) : ParamBase(g, {name, ParamType::Edges, 0, doc}) {}
    const std::string& get() const { return m_text; }
};

/// A buffer depth: canonical text "64" (packets) or "128B" (bytes); YAML 64 or 128B.
template <>
class Param<ParamType::Buffer> : public ParamBase {
public:
    Param(ParamGroup& g, const char* name, const char* default_text, const char* doc)
        : ParamBase(g, {name, ParamType::Buffer, 0, doc, 0, 0, {}, default_text}) {}
    /// Whether the depth is in bytes (else in packets).
    bool in_bytes() const { return !m_text.empty() && m_text.back() == 'B'; }
    /// The number: bytes or packets; throws std::invalid_argument unless it is a positive whole number.
    std::uint64_t amount() const;
};

using TimeParam = Param<ParamType::Time>;            ///< seconds, read as sc_time
using FrequencyParam = Param<ParamType::Frequency>;  ///< Hz
using BandwidthParam = Param<ParamType::Bandwidth>;  ///< bytes per second
using SizeParam = Param<ParamType::Size>;            ///< bytes
using IntParam = Param<ParamType::Int>;              ///< a whole number
using FloatParam = Param<ParamType::Float>;          ///< a plain number
using BoolParam = Param<ParamType::Bool>;            ///< true or false
using ChoiceParam = Param<ParamType::Choice>;        ///< one word of a list
using IntsParam = Param<ParamType::Ints>;            ///< a list of positive integers
using EdgesParam = Param<ParamType::Edges>;          ///< a custom topology's links
using BufferParam = Param<ParamType::Buffer>;        ///< packets or bytes

/// The declarations of parameter struct P, for the registry (a default-constructed P's specs).
template <class P>
std::vector<ParamSpec> param_specs_of() {
    P declared;
    return declared.specs();
}

/// Builds parameter struct P from given values, validated (see ParamGroup::apply).
template <class P>
struct Configured : P {
    Configured(const ParamSet& given, const std::string& owner) { this->apply(given, owner); }
};

}  // namespace eidola
