// Parameter values for one model instance. Free of SystemC headers so that Python (cppyy)
// can fill it without parsing the SystemC headers.
#pragma once

#include <map>
#include <string>

namespace eidola {

/// Values given for a model instance, by parameter name, already in canonical units.
/// Python fills it from YAML; C++ users fill it directly. Absent names take the declared default.
class ParamSet {
public:
    /// Sets a numeric parameter (time in s, frequency in Hz, bandwidth in B/s, size in B).
    void set(const std::string& name, double value) { m_numbers[name] = value; }
    /// Sets a Choice parameter.
    void set_choice(const std::string& name, const std::string& value) { m_choices[name] = value; }

    const std::map<std::string, double>& numbers() const { return m_numbers; }
    const std::map<std::string, std::string>& choices() const { return m_choices; }

private:
    std::map<std::string, double> m_numbers;
    std::map<std::string, std::string> m_choices;
};

}  // namespace eidola
