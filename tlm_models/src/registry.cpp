#include "eidola/registry.h"

#include <cmath>
#include <iomanip>
#include <map>
#include <sstream>

#include "eidola/program.h"
#include "eidola/result_tables.h"

namespace eidola {
namespace {

std::map<std::string, ModelInfo>& registry() {
    static std::map<std::string, ModelInfo> models;  // ordered: the catalog lists models by name
    return models;
}

void json_string(std::ostringstream& out, const std::string& text) {
    out << '"';
    for (char c : text) {
        switch (c) {
            case '"': out << "\\\""; break;
            case '\\': out << "\\\\"; break;
            case '\n': out << "\\n"; break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) out << "\\u" << std::hex << std::setw(4) << std::setfill('0')
                                                              << int(c) << std::dec;
                else out << c;
        }
    }
    out << '"';
}

void json_number(std::ostringstream& out, double value) {
    if (std::isinf(value)) out << "null";  // JSON has no infinity: null means unbounded
    else out << std::setprecision(17) << value;
}

void json_string_list(std::ostringstream& out, const char* const* names, std::size_t count) {
    out << "[";
    for (std::size_t i = 0; i < count; ++i) {
        out << (i ? ", " : "");
        json_string(out, names[i]);
    }
    out << "]";
}

// The enums and result tables Python mirrors, so it reads their names instead of repeating them.
void json_shared_declarations(std::ostringstream& out) {
    out << ", \"enums\": {";
    bool first = true;
    for (const EnumNames& e : shared_enums()) {
        out << (first ? "" : ", ");
        first = false;
        json_string(out, e.name);
        out << ": ";
        json_string_list(out, e.values, e.count);
    }
    out << "}, \"tables\": {";
    first = true;
    for (const TableColumns& t : result_tables()) {
        out << (first ? "" : ", ");
        first = false;
        json_string(out, t.name);
        out << ": [";
        for (std::size_t i = 0; i < t.columns->size(); ++i) {
            out << (i ? ", " : "");
            json_string(out, (*t.columns)[i]);
        }
        out << "]";
    }
    out << "}";
}

}  // namespace

const char* role_name(Role role) {
    switch (role) {
        case Role::Gpu: return "gpu";
        case Role::Fabric: return "fabric";
        case Role::Adapter: return "adapter";
        case Role::Checker: return "checker";
        case Role::Test: return "test";
    }
    return "?";
}

bool register_model(ModelInfo info) {
    std::string name = info.name;
    registry()[name] = std::move(info);
    return true;
}

const ModelInfo* find_model(const std::string& name) {
    auto it = registry().find(name);
    return it == registry().end() ? nullptr : &it->second;
}

std::vector<const ModelInfo*> registered_models() {
    std::vector<const ModelInfo*> out;
    for (const auto& entry : registry()) out.push_back(&entry.second);
    return out;
}

std::string catalog_json() {
    std::ostringstream out;
    out << "{\"models\": [";
    bool first_model = true;
    for (const ModelInfo* m : registered_models()) {
        out << (first_model ? "" : ", ") << "{\"name\": ";
        first_model = false;
        json_string(out, m->name);
        out << ", \"role\": ";
        json_string(out, role_name(m->role));
        out << ", \"doc\": ";
        json_string(out, m->doc);
        out << ", \"params\": [";
        for (std::size_t i = 0; i < m->params.size(); ++i) {
            const ParamSpec& p = m->params[i];
            out << (i ? ", " : "") << "{\"name\": ";
            json_string(out, p.name);
            out << ", \"type\": \"" << param_type_name(p.type) << "\", \"unit\": \"" << param_type_unit(p.type)
                << "\", \"default\": ";
            if (p.type == ParamType::Choice) json_string(out, p.choices.at(0));
            else if (param_type_is_text(p.type)) json_string(out, p.default_text);
            else json_number(out, p.default_value);
            out << ", \"min\": ";
            json_number(out, p.min);
            out << ", \"max\": ";
            json_number(out, p.max);
            out << ", \"choices\": [";
            for (std::size_t c = 0; c < p.choices.size(); ++c) {
                out << (c ? ", " : "");
                json_string(out, p.choices[c]);
            }
            out << "], \"doc\": ";
            json_string(out, p.doc);
            out << "}";
        }
        out << "], \"sockets\": [";
        for (std::size_t i = 0; i < m->sockets.size(); ++i) {
            const SocketSpec& s = m->sockets[i];
            out << (i ? ", " : "") << "{\"name\": ";
            json_string(out, s.name);
            out << ", \"direction\": ";
            json_string(out, s.direction);
            out << ", \"protocol\": ";
            json_string(out, s.protocol);
            out << ", \"multiplicity\": ";
            json_string(out, s.multiplicity);
            out << ", \"doc\": ";
            json_string(out, s.doc);
            out << "}";
        }
        out << "]}";
    }
    out << "]";
    json_shared_declarations(out);
    out << "}";
    return out.str();
}

}  // namespace eidola

extern "C" const char* eidola_catalog_json() {
    static const std::string text = eidola::catalog_json();
    return text.c_str();
}
