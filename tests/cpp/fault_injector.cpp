// A model that fails on purpose at a given time, so that our tests can prove that a crashing
// model is reported instead of taking its caller down. It lives with the tests, in its own
// library (libeidola_test_models.so), so users never see it in the catalog; the Python tests
// load that library through EIDOLA_MODEL_LIBS and name the model "FaultInjector".
#include <csignal>
#include <cstdlib>

#include <systemc>

#include "eidola/params.h"
#include "eidola/registry.h"

namespace eidola {
namespace {

/// FaultInjector's parameters.
struct FaultInjectorParams : ParamGroup {
    /// When to fail.
    TimeParam at{*this, "at", 0.0, "simulated time of the failure", 0, 1e3};
    /// How to fail.
    ChoiceParam kind{*this, "kind", {"segfault", "abort", "error"},
                     "how to fail: segfault, abort, or error (a SystemC SC_REPORT_ERROR)"};
};

/// Fails at `at`: by SIGSEGV, by abort(), or with a SystemC error report. It has no sockets.
class FaultInjector : public sc_core::sc_module {
public:
    using Params = FaultInjectorParams;
    SC_HAS_PROCESS(FaultInjector);
    static std::vector<SocketSpec> socket_specs() { return {}; }

    FaultInjector(sc_core::sc_module_name name, const ParamSet& given) : sc_module(name) {
        const Configured<Params> p(given, basename());
        m_at = p.at.get();
        m_kind = p.kind.get();
        SC_THREAD(run);
    }

private:
    void run() {
        wait(m_at);
        if (m_kind == "segfault") std::raise(SIGSEGV);
        if (m_kind == "abort") std::abort();
        // Deliberately through SystemC's own error path: harnesses must also survive a plain SystemC error.
        SC_REPORT_ERROR(name(), "failure injected on purpose");
    }
    sc_core::sc_time m_at;
    std::string m_kind;
};

const bool registered = register_model(model_info<FaultInjector>(
    "FaultInjector", Role::Test,
    "Fails on purpose at a given time (for testing harnesses that must survive a crashing model)"));

}  // namespace
}  // namespace eidola
