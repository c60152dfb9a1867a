// A model that fails on purpose at a given time, so that harnesses (and our tests) can prove
// that a crashing model is reported instead of taking its caller down.
#include <csignal>
#include <cstdlib>

#include <systemc>

#include "eidola/params.h"
#include "eidola/registry.h"

namespace eidola {
namespace {

/// Fails at `at`: by SIGSEGV, by abort(), or with a SystemC error report.
class FaultInjector : public sc_core::sc_module {
public:
    SC_HAS_PROCESS(FaultInjector);
    static const std::vector<ParamSpec>& param_specs() {
        static const std::vector<ParamSpec> specs = {
            {"at", ParamType::Time, 0.0, "simulated time of the failure", 0, 1e3},
            {"kind", ParamType::Choice, 0, "how to fail: segfault, abort, or error (a SystemC SC_REPORT_ERROR)", 0, 0,
             {"segfault", "abort", "error"}},
        };
        return specs;
    }
    FaultInjector(sc_core::sc_module_name name, const ParamSet& given) : sc_module(name) {
        Params p(param_specs(), given, std::string(basename()));
        m_at = p.time("at");
        m_kind = p.choice("kind");
        SC_THREAD(run);
    }

private:
    void run() {
        wait(m_at);
        if (m_kind == "segfault") std::raise(SIGSEGV);
        if (m_kind == "abort") std::abort();
        SC_REPORT_ERROR(name(), "failure injected on purpose");
    }
    sc_core::sc_time m_at;
    std::string m_kind;
};

const bool registered = register_model(ModelInfo{
    "FaultInjector", "Fails on purpose at a given time (for testing harnesses that must survive a crashing model)",
    FaultInjector::param_specs(), {},
    [](const char* name, const ParamSet& params) -> sc_core::sc_module* { return new FaultInjector(name, params); }});

}  // namespace
}  // namespace eidola
