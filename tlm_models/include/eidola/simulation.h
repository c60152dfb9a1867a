// A platform assembled by name, run once, and read back as tables. This is the narrow entry
// point Python drives through cppyy (a handful of calls per simulation, none per transaction);
// C++ users may use it too, or wire the models by hand. Deliberately free of SystemC headers,
// so loading it into cppyy does not parse them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "eidola/param_set.h"
#include "eidola/traffic_spec.h"

namespace eidola {

/// A table of results: named columns, row-major values.
struct Table {
    std::vector<std::string> columns;  ///< column names
    std::vector<double> values;        ///< rows * columns.size() values, row by row
    /// Number of rows.
    std::size_t rows() const { return columns.empty() ? 0 : values.size() / columns.size(); }
    /// Copies the values to `address` (room for rows() * columns.size() doubles).
    void copy_to(std::uintptr_t address) const;
};

/// One simulation: components created from the registry, bound, given a profile, run once.
/// Only one Simulation may run per process (SystemC elaborates once).
class Simulation {
public:
    /// `name` identifies the simulation in reports.
    explicit Simulation(const std::string& name);
    ~Simulation();
    Simulation(const Simulation&) = delete;
    Simulation& operator=(const Simulation&) = delete;

    /// GPU i owns [base + i*stride, base + (i+1)*stride).
    void set_address_map(std::uint64_t base, std::uint64_t stride, std::uint32_t windows);
    /// Creates a registered model; throws std::invalid_argument naming the model or parameter.
    void add(const std::string& model, const std::string& name, const ParamSet& params);
    /// Binds an initiator socket to a target socket, by names such as "gpu0.initiator" and "fabric.targets[0]".
    void bind(const std::string& initiator, const std::string& target);
    /// Names the flag words at the start of every window (their count fixes the flag region).
    void set_flags(const std::vector<std::string>& names);
    /// Declares the profile's multicast groups: group g's members are members[first[g] .. first[g+1]) (GPU
    /// indices; `first` has one more entry than there are groups). Multimem ops name a group by its index.
    void set_multicast_groups(const std::vector<std::uint32_t>& members, const std::vector<std::uint32_t>& first);
    /// Takes the programs: `ops` points to n_ops Op records, read in place (they must stay there until
    /// run() has returned), `programs` to n_programs ProgramEntry records, copied.
    void load_programs(std::uintptr_t ops, std::uint64_t n_ops, std::uintptr_t programs, std::uint64_t n_programs);

    /// Gives GPUs 0 .. sources-1 a synthetic traffic generator. GPU i sends to destinations[first[i] ..
    /// first[i+1]) (int64 `first`, sources + 1 entries; int32 `destinations`), or, with spec.uniform, to any
    /// other of the `sources` GPUs alike. The "traffic" and "traffic_summary" tables report what it measured.
    void set_traffic(const TrafficSpec& spec, std::uintptr_t first, std::uintptr_t destinations, std::uint64_t sources);
    /// Records every op's begin and end (the "ops" table); off by default, it costs memory per op.
    void set_tracing(bool on) { m_tracing = on; }
    /// Stops the run cleanly at this simulated time (picoseconds; 0: run to the end).
    void set_time_limit(std::uint64_t ps) { m_time_limit_ps = ps; }
    /// On signal `signum`, writes the events processed so far to the 64-bit word at `word + 8`, the ops
    /// completed and the ops in all programs to those at `word + 16` and `word + 24`, then the simulated time
    /// reached (ps) to the word at `word`: a parent that must kill a runaway run asks first, so its report can
    /// say how far the run got, and a parent showing progress asks now and then.
    /// `word` (32 bytes) 0: no-op.
    void report_time_on_signal(std::uintptr_t word, int signum);
    /// Whether run() stopped at the time limit with work left: the tables are a partial result.
    bool partial() const { return m_partial; }

    /// Elaborates and simulates to the end. Returns 0 when every workgroup finished, 3 otherwise.
    int run();
    /// Why run() returned 3 (a deadlock, a stall, a model or SystemC error); empty after success.
    const std::string& failure() const { return m_failure; }
    /// The name of the verdict's ErrorKind (errors.h): "deadlock", "fabric deadlock", "stall", "protocol",
    /// "error", or "" after success.
    const std::string& failure_kind() const { return m_failure_kind; }
    /// Result tables: "gpus", "workgroups", "links", "link_bins", "pairs", "flags", "stuck", "syncmon_trace",
    /// "ops", "traffic", "traffic_summary"; their columns are declared once (result_tables.h) and listed in the catalog.
    Table table(const std::string& which) const;
    /// Actions processed by all models.
    std::uint64_t events() const;
    /// Ops the eidolon GPUs' workgroups completed so far.
    std::uint64_t ops_done() const;
    /// Ops in their programs: 0 until run() has given every GPU its program (a part would overstate
    /// the share done).
    std::uint64_t ops_total() const { return m_ops_total; }
    /// The node names of the fabrics' link tables, one a line, fabric after fabric (fabric.h).
    std::string node_names() const;
    /// The fabrics' over-time bins: "width_ps doublings" a line, fabric after fabric (Fabric::bin_ps,
    /// bin_doublings), for those that bin.
    std::string bin_widths() const;
    /// Simulated time when the run ended, in picoseconds.
    std::uint64_t end_ps() const { return m_end_ps; }

private:
    int finish();
    struct Impl;
    std::unique_ptr<Impl> m_impl;
    std::string m_failure, m_failure_kind;
    std::uint64_t m_end_ps = 0;
    bool m_tracing = false;
    std::uint64_t m_time_limit_ps = 0;
    bool m_partial = false;
    std::uint64_t m_ops_total = 0;
};

}  // namespace eidola
