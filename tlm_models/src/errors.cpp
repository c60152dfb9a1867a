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

void stop_quietly() {
    if (!sc_core::sc_is_running()) return;
    // sc_stop() announces itself as an info report ("Simulation stopped by user.") on stdout, which reads as
    // noise beside the error that says why the run stopped.
    sc_core::sc_report_handler::set_actions("/OSCI/SystemC", sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
    sc_core::sc_stop();
}

void ErrorCollector::report(ErrorKind kind, const std::string& text) {
    m_errors.push_back(SimError{kind, text});
    stop_quietly();
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
