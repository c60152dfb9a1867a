#include "eidola/errors.h"

#include <systemc>

namespace eidola {

const char* error_kind_name(ErrorKind kind) {
    switch (kind) {
        case ErrorKind::Protocol: return "protocol";
        case ErrorKind::Deadlock: return "deadlock";
        case ErrorKind::FabricDeadlock: return "fabric deadlock";
        case ErrorKind::ModelError: return "error";
        case ErrorKind::BadInput: return "error";
        case ErrorKind::Stall: return "stall";
    }
    return "error";
}

void ErrorSink::fatal(ErrorKind kind, const std::string& text) {
    will_unwind();
    report(kind, text);
    throw ReportedError(text);
}

void ErrorCollector::report(ErrorKind kind, const std::string& text) {
    m_errors.push_back(SimError{kind, text});
    if (sc_core::sc_is_running()) sc_core::sc_stop();
}

const SimError* ErrorCollector::verdict() const {
    const SimError* best = nullptr;
    for (const SimError& e : m_errors)
        if (!best || e.kind < best->kind) best = &e;
    return best;
}

const SimError* ErrorCollector::first(ErrorKind kind) const {
    for (const SimError& e : m_errors)
        if (e.kind == kind) return &e;
    return nullptr;
}

const SimError* ErrorCollector::last(ErrorKind kind) const {
    for (auto it = m_errors.rbegin(); it != m_errors.rend(); ++it)
        if (it->kind == kind) return &*it;
    return nullptr;
}

}  // namespace eidola
