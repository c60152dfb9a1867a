// The one channel by which models report that a run cannot succeed. Every failure carries a
// kind, so a harness classifies it by the kind and never by searching the message text.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace eidola {

/// Why a run failed, most telling first: when several are reported, the lowest value is the verdict.
enum class ErrorKind : std::uint8_t {
    Protocol,        ///< the TLM-2.0 base protocol was broken on a binding
    Deadlock,        ///< workgroups wait on flags that no pending write can change
    FabricDeadlock,  ///< packets held in the fabric with none able to move
    ModelError,      ///< a model failed (an illegal phase, a failed transaction, a SystemC error)
    BadInput,        ///< the platform or profile cannot be run (found at elaboration)
    Stall,           ///< responses stopped arriving, or events ran out, with workgroups unfinished
};

/// The kind's name as harnesses see it: "protocol", "deadlock", "fabric deadlock", "error" (ModelError and
/// BadInput alike, as Python reports both as a failed run) or "stall".
const char* error_kind_name(ErrorKind kind);

/// One reported failure.
struct SimError {
    ErrorKind kind;    ///< what went wrong
    std::string text;  ///< the report, naming the model and what it saw
};

/// Stops a running simulation (sc_stop) without SystemC's "Simulation stopped by user." info line.
void stop_quietly();

/// Where models report failures. Reporting stops the simulation (sc_stop) at the end of the current delta.
class ErrorSink {
public:
    virtual ~ErrorSink() = default;
    /// Records a failure and stops the run.
    virtual void report(ErrorKind kind, const std::string& text) = 0;
    /// Records a failure that leaves the caller unable to go on, then throws ReportedError to unwind
    /// out of sc_start (the harness knows the exception is already recorded).
    [[noreturn]] void fatal(ErrorKind kind, const std::string& text);

protected:
    /// Told before a fatal report, so a collector can expect the exception that follows.
    virtual void will_unwind() {}
};

/// Thrown by ErrorSink::fatal after reporting: the failure is already in the sink.
class ReportedError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// Keeps every reported failure; owned by the Simulation (or by a model used alone).
class ErrorCollector : public ErrorSink {
public:
    void report(ErrorKind kind, const std::string& text) override;
    /// Whether nothing was reported.
    bool empty() const { return m_errors.empty(); }
    /// Whether a fatal report is unwinding the kernel (an exception out of sc_start is then expected).
    bool unwinding() const { return m_unwinding; }
    /// The verdict: the first report of the most telling kind, or nullptr when none.
    const SimError* verdict() const;
    /// The first report of `kind`, or nullptr.
    const SimError* first(ErrorKind kind) const;
    /// The last report of `kind`, or nullptr.
    const SimError* last(ErrorKind kind) const;
    /// Every report, in order.
    const std::vector<SimError>& all() const { return m_errors; }

private:
    void will_unwind() override { m_unwinding = true; }
    std::vector<SimError> m_errors;
    bool m_unwinding = false;
};

/// A model that reports failures: to its own collector when used alone, or to the Simulation's
/// once attached. Reporting is rare (once per run), so the sink is reached through a pointer.
class ErrorReporter {
public:
    /// Redirects reports to `sink` (the Simulation's collector); must outlive the model.
    void set_error_sink(ErrorSink* sink) { m_sink = sink ? sink : &m_own; }
    /// Reports collected while no sink was attached.
    const ErrorCollector& own_errors() const { return m_own; }
    /// Where this model (and its parts) report.
    ErrorSink& errors() const { return *m_sink; }

protected:
    ErrorReporter() = default;
    ErrorReporter(const ErrorReporter&) = delete;
    ErrorReporter& operator=(const ErrorReporter&) = delete;

private:
    mutable ErrorCollector m_own;
    ErrorSink* m_sink = &m_own;
};

}  // namespace eidola
