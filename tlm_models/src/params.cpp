#include "eidola/params.h"

#include <cmath>
#include <sstream>
#include <stdexcept>

namespace eidola {

const char* param_type_name(ParamType type) {
    switch (type) {
        case ParamType::Time: return "time";
        case ParamType::Frequency: return "frequency";
        case ParamType::Bandwidth: return "bandwidth";
        case ParamType::Size: return "size";
        case ParamType::Int: return "int";
        case ParamType::Float: return "float";
        case ParamType::Bool: return "bool";
        case ParamType::Choice: return "choice";
        case ParamType::Ints: return "ints";
        case ParamType::Edges: return "edges";
    }
    return "?";
}

const char* param_type_unit(ParamType type) {
    switch (type) {
        case ParamType::Time: return "s";
        case ParamType::Frequency: return "Hz";
        case ParamType::Bandwidth: return "B/s";
        case ParamType::Size: return "B";
        default: return "";
    }
}

sc_core::sc_time seconds_to_time(double seconds) {
    double units = seconds / sc_core::sc_get_time_resolution().to_seconds();
    return sc_core::sc_time::from_value(static_cast<sc_dt::uint64>(std::llround(units)));
}

Params::Params(const std::vector<ParamSpec>& specs, const ParamSet& given, const std::string& owner)
    : m_specs(specs), m_owner(owner) {
    for (const auto& spec : specs) {
        if (spec.type == ParamType::Choice) m_choices[spec.name] = spec.choices.at(0);
        else if (spec.type == ParamType::Ints || spec.type == ParamType::Edges) m_choices[spec.name] = "";
        else m_numbers[spec.name] = spec.default_value;
    }
    for (const auto& [name, value] : given.numbers()) {
        const ParamSpec& s = spec(name);
        if (s.type == ParamType::Choice || s.type == ParamType::Ints || s.type == ParamType::Edges)
            throw std::invalid_argument(owner + ": parameter '" + name + "' expects text, got a number");
        bool integral = s.type == ParamType::Int || s.type == ParamType::Bool || s.type == ParamType::Size;
        if (std::isnan(value) || value < s.min || value > s.max || (integral && value != std::floor(value))) {
            std::ostringstream msg;
            msg << owner << ": parameter '" << name << "' = " << value << " is out of range [" << s.min << ", "
                << s.max << "]" << (integral ? " or not whole" : "");
            throw std::invalid_argument(msg.str());
        }
        m_numbers[name] = value;
    }
    for (const auto& [name, value] : given.choices()) {
        const ParamSpec& s = spec(name);
        if (s.type == ParamType::Ints || s.type == ParamType::Edges) {
            m_choices[name] = value;
            continue;
        }
        if (s.type != ParamType::Choice)
            throw std::invalid_argument(owner + ": parameter '" + name + "' expects a number, got text");
        bool ok = false;
        for (const auto& c : s.choices) ok = ok || c == value;
        if (!ok) throw std::invalid_argument(owner + ": parameter '" + name + "' has no choice '" + value + "'");
        m_choices[name] = value;
    }
}

const ParamSpec& Params::spec(const std::string& name) const {
    for (const auto& s : m_specs)
        if (s.name == name) return s;
    throw std::invalid_argument(m_owner + ": unknown parameter '" + name + "'");
}

sc_core::sc_time Params::time(const std::string& name) const { return seconds_to_time(number(name)); }

double Params::number(const std::string& name) const {
    auto it = m_numbers.find(name);
    if (it == m_numbers.end()) throw std::invalid_argument(m_owner + ": parameter '" + name + "' is not numeric");
    return it->second;
}

std::int64_t Params::integer(const std::string& name) const { return std::llround(number(name)); }

bool Params::flag(const std::string& name) const { return number(name) != 0.0; }

const std::string& Params::choice(const std::string& name) const {
    auto it = m_choices.find(name);
    if (it == m_choices.end()) throw std::invalid_argument(m_owner + ": parameter '" + name + "' is not a choice");
    return it->second;
}

}  // namespace eidola
