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
        case ParamType::Buffer: return "buffer";
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

bool param_type_is_text(ParamType type) {
    return type == ParamType::Choice || type == ParamType::Ints || type == ParamType::Edges ||
           type == ParamType::Buffer;
}

sc_core::sc_time seconds_to_time(double seconds) {
    double units = seconds / sc_core::sc_get_time_resolution().to_seconds();
    return sc_core::sc_time::from_value(static_cast<sc_dt::uint64>(std::llround(units)));
}

ParamBase::ParamBase(ParamGroup& group, ParamSpec spec) : m_number(spec.default_value), m_spec(std::move(spec)) {
    if (m_spec.type == ParamType::Choice) m_text = m_spec.choices.at(0);
    else if (param_type_is_text(m_spec.type)) m_text = m_spec.default_text;
    group.m_params.push_back(this);
}

std::vector<ParamSpec> ParamGroup::specs() const {
    std::vector<ParamSpec> out;
    out.reserve(m_params.size());
    for (const ParamBase* p : m_params) out.push_back(p->spec());
    return out;
}

ParamBase* ParamGroup::find(const std::string& name) const {
    for (ParamBase* p : m_params)
        if (p->m_spec.name == name) return p;
    return nullptr;
}

void ParamGroup::apply(const ParamSet& given, const std::string& owner) {
    auto declared = [&](const std::string& name) -> ParamBase& {
        ParamBase* p = find(name);
        if (!p) throw std::invalid_argument(owner + ": unknown parameter '" + name + "'");
        return *p;
    };
    for (const auto& [name, value] : given.numbers()) {
        ParamBase& p = declared(name);
        const ParamSpec& s = p.m_spec;
        if (param_type_is_text(s.type))
            throw std::invalid_argument(owner + ": parameter '" + name + "' expects text, got a number");
        bool integral = s.type == ParamType::Int || s.type == ParamType::Bool || s.type == ParamType::Size;
        if (std::isnan(value) || value < s.min || value > s.max || (integral && value != std::floor(value))) {
            std::ostringstream msg;
            msg << owner << ": parameter '" << name << "' = " << value << " is out of range [" << s.min << ", "
                << s.max << "]" << (integral ? " or not whole" : "");
            throw std::invalid_argument(msg.str());
        }
        p.m_number = value;
    }
    for (const auto& [name, value] : given.choices()) {
        ParamBase& p = declared(name);
        const ParamSpec& s = p.m_spec;
        if (!param_type_is_text(s.type))
            throw std::invalid_argument(owner + ": parameter '" + name + "' expects a number, got text");
        if (s.type == ParamType::Choice) {
            bool ok = false;
            for (const auto& c : s.choices) ok = ok || c == value;
            if (!ok) throw std::invalid_argument(owner + ": parameter '" + name + "' has no choice '" + value + "'");
        }
        p.m_text = value;
    }
}

std::vector<std::uint32_t> Param<ParamType::Ints>::values() const {
    std::vector<std::uint32_t> out;
    std::stringstream in(m_text);
    long long v;
    while (in >> v) {
        if (v < 1) throw std::invalid_argument(spec().name + ": sizes must be positive");
        out.push_back(std::uint32_t(v));
    }
    return out;
}

std::uint64_t Param<ParamType::Buffer>::amount() const {
    const std::string digits = in_bytes() ? m_text.substr(0, m_text.size() - 1) : m_text;
    std::size_t used = 0;
    unsigned long long v = 0;
    try {
        v = std::stoull(digits, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != digits.size() || v == 0 || digits.empty())
        throw std::invalid_argument(spec().name + ": expected a positive number of packets or a size, got '" +
                                    m_text + "'");
    return v;
}

}  // namespace eidola
