#include "eidola/simulation.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstring>
#include <limits>
#include <map>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include <systemc>
#include <tlm>

#include "eidola/eidolon_gpu.h"
#include "eidola/errors.h"
#include "eidola/fabric.h"
#include "eidola/progress_monitor.h"
#include "eidola/protocol_checker.h"
#include "eidola/registry.h"
#include "eidola/result_tables.h"

namespace eidola {

using InitiatorBase = tlm::tlm_base_initiator_socket_b<32, tlm::tlm_fw_transport_if<>, tlm::tlm_bw_transport_if<>>;
template <unsigned N, sc_core::sc_port_policy POL>
using InitiatorSocket = tlm::tlm_base_initiator_socket<32, tlm::tlm_fw_transport_if<>, tlm::tlm_bw_transport_if<>, N, POL>;
using TargetBase = tlm::tlm_base_target_socket_b<32, tlm::tlm_fw_transport_if<>, tlm::tlm_bw_transport_if<>>;
template <unsigned N, sc_core::sc_port_policy POL>
using TargetSocket = tlm::tlm_base_target_socket<32, tlm::tlm_fw_transport_if<>, tlm::tlm_bw_transport_if<>, N, POL>;

namespace {

// Binds through the socket's own (virtual) bind, so sockets that hook binding, such as the
// tlm_utils multi-sockets, register the connection. Returns false if `obj` is none of these.
template <unsigned N, sc_core::sc_port_policy POL>
bool bind_as(sc_core::sc_object* obj, TargetBase& target) {
    auto* socket = dynamic_cast<InitiatorSocket<N, POL>*>(obj);
    if (!socket) return false;
    socket->bind(target);
    return true;
}

// Whether `obj` is a socket that takes one binding (N = 1, as tlm_target_socket<> and the tlm_utils simple sockets):
// a second one fails only at the end of elaboration, as SystemC's "complete binding failed: port not bound".
template <unsigned N, sc_core::sc_port_policy POL>
bool is_single(const sc_core::sc_object* obj) {
    return dynamic_cast<const InitiatorSocket<N, POL>*>(obj) || dynamic_cast<const TargetSocket<N, POL>*>(obj);
}
bool takes_one_binding(const sc_core::sc_object* obj) {
    return is_single<1, sc_core::SC_ONE_OR_MORE_BOUND>(obj) || is_single<1, sc_core::SC_ZERO_OR_MORE_BOUND>(obj) ||
           is_single<1, sc_core::SC_ALL_BOUND>(obj);
}

}  // namespace

struct Simulation::Impl {
    std::string name;
    AddressMap map;
    std::vector<std::unique_ptr<sc_core::sc_module>> modules;
    std::vector<EidolonGpu*> gpus;
    std::vector<Fabric*> fabrics;
    std::vector<ProtocolChecker*> checkers;
    std::map<const sc_core::sc_object*, std::string> bound;  // socket -> the socket it was first bound to
    WindowLayout layout;
    // The caller's op records, read in place (load_programs): at hundreds of GPUs they are hundreds
    // of megabytes, which a copy would double and fault in again.
    const Op* ops = nullptr;
    std::uint64_t n_ops = 0;
    std::vector<ProgramEntry> programs;
    bool has_traffic = false;
    TrafficSpec traffic;
    std::vector<std::vector<std::int32_t>> traffic_destinations;  // per source GPU
    ProgressMonitor monitor;
    ErrorCollector errors;  // every model reports here; the verdict decides failure()
    bool ran = false;       // run() has returned: the fabrics' link statistics are final
    // Per fabric, its link statistics once run() has returned, for both tables that read them: a fabric
    // builds them at the end (the flow fabric spreads its queued writes' bytes over the bins then, 27 ms
    // on a 1 GiB all-reduce), and the "links" and "link_bins" tables each read all of them.
    mutable std::vector<std::vector<LinkStats>> link_stats;

    const std::vector<std::vector<LinkStats>>& fabric_link_stats() const;
};

const std::vector<std::vector<LinkStats>>& Simulation::Impl::fabric_link_stats() const {
    if (ran && link_stats.size() == fabrics.size()) return link_stats;
    link_stats.clear();
    for (const Fabric* f : fabrics) link_stats.push_back(f->link_stats());
    return link_stats;  // before run() has returned, rebuilt at every read: the counts still move
}

void Table::copy_to(std::uintptr_t address) const {
    if (!values.empty()) std::memcpy(reinterpret_cast<void*>(address), values.data(), values.size() * sizeof(double));
}

Simulation::Simulation(const std::string& name) : m_impl(std::make_unique<Impl>()) { m_impl->name = name; }

namespace {
// Where the time goes on the signal. A plain 64-bit store from the handler: the word is in memory
// the parent shares, and the current time is one field of the kernel's context.
// The event and op counts are sums of plain counters over the GPUs and fabrics (no allocation, no
// lock), written before the time so that a parent which sees the time also sees the counts.
std::atomic<std::uint64_t*> g_time_word{nullptr};
std::atomic<const Simulation*> g_reporting{nullptr};
extern "C" void write_time_reached(int) {
    if (std::uint64_t* word = g_time_word.load()) {
        if (const Simulation* sim = g_reporting.load()) {
            word[1] = sim->events();
            word[2] = sim->ops_done();
            word[3] = sim->ops_total();
        }
        std::atomic_signal_fence(std::memory_order_release);
        word[0] = sc_core::sc_time_stamp().value();
    }
}
}  // namespace

// Modules stay alive to the end of the process: SystemC keeps pointers to them in its kernel.
Simulation::~Simulation() {
    const Simulation* self = this;
    if (g_reporting.compare_exchange_strong(self, nullptr)) g_time_word = nullptr;  // no report from a dead run
    for (auto& m : m_impl->modules) m.release();
}

std::string Simulation::node_names() const {
    std::string out;
    for (const Fabric* f : m_impl->fabrics)
        for (const std::string& name : f->node_names()) out += name + "\n";
    return out;
}

std::string Simulation::bin_widths() const {
    // A fabric may widen the bins it makes for its link statistics (the flow fabric's queued writes): those first.
    m_impl->fabric_link_stats();
    std::string out;
    for (const Fabric* f : m_impl->fabrics)
        if (f->bin_ps()) out += std::to_string(f->bin_ps()) + " " + std::to_string(f->bin_doublings()) + "\n";
    return out;
}

void Simulation::set_address_map(std::uint64_t base, std::uint64_t stride, std::uint32_t windows) {
    m_impl->map = AddressMap{base, stride, windows};
}

void Simulation::add(const std::string& model, const std::string& name, const ParamSet& params) {
    const ModelInfo* info = find_model(model);
    if (!info) throw std::invalid_argument("component '" + name + "': no model named '" + model + "' is registered");
    sc_core::sc_module* module = info->create(name.c_str(), params);
    m_impl->modules.emplace_back(module);
    if (auto* gpu = dynamic_cast<EidolonGpu*>(module)) m_impl->gpus.push_back(gpu);
    if (auto* fabric = dynamic_cast<Fabric*>(module)) m_impl->fabrics.push_back(fabric);
    if (auto* checker = dynamic_cast<ProtocolChecker*>(module)) m_impl->checkers.push_back(checker);
    if (auto* reporter = dynamic_cast<ErrorReporter*>(module)) reporter->set_error_sink(&m_impl->errors);
}

namespace {

// "fabric.targets[3]" -> "fabric.targets_3", the name sc_vector gives its elements.
std::string hierarchical(const std::string& socket) {
    std::string out;
    for (char c : socket) {
        if (c == '[') out += '_';
        else if (c != ']') out += c;
    }
    return out;
}

}  // namespace

void Simulation::bind(const std::string& initiator, const std::string& target) {
    sc_core::sc_object* i_obj = sc_core::sc_find_object(hierarchical(initiator).c_str());
    sc_core::sc_object* t_obj = sc_core::sc_find_object(hierarchical(target).c_str());
    if (!i_obj) throw std::invalid_argument("bind: no socket named '" + initiator + "'");
    if (!t_obj) throw std::invalid_argument("bind: no socket named '" + target + "'");
    auto* t = dynamic_cast<TargetBase*>(t_obj);
    if (!t) throw std::invalid_argument("bind: '" + target + "' is not a TLM-2.0 target socket (32-bit base protocol)");
    for (const auto& [obj, name, other] : {std::tuple{i_obj, initiator, target}, std::tuple{t_obj, target, initiator}}) {
        auto [it, first] = m_impl->bound.emplace(obj, other);
        if (!first && takes_one_binding(obj))
            throw std::invalid_argument("'" + name + "' is bound to '" + it->second + "' already and takes one binding "
                                        "(a plain socket, not a multi-socket): give each GPU a socket of its own "
                                        "(a pattern with {i}) or use a multi-socket");
    }
    if (bind_as<1, sc_core::SC_ONE_OR_MORE_BOUND>(i_obj, *t) || bind_as<0, sc_core::SC_ONE_OR_MORE_BOUND>(i_obj, *t) ||
        bind_as<1, sc_core::SC_ZERO_OR_MORE_BOUND>(i_obj, *t) || bind_as<0, sc_core::SC_ZERO_OR_MORE_BOUND>(i_obj, *t) ||
        bind_as<1, sc_core::SC_ALL_BOUND>(i_obj, *t))
        return;
    auto* i = dynamic_cast<InitiatorBase*>(i_obj);
    if (!i) throw std::invalid_argument("bind: '" + initiator + "' is not a TLM-2.0 initiator socket (32-bit base protocol)");
    i->get_base_port().bind(t->get_base_interface());
    t->get_base_port().bind(i->get_base_interface());
}

void Simulation::set_flags(const std::vector<std::string>& names) {
    m_impl->layout.flag_count = names.size();
    m_impl->layout.flag_names = names;
}

void Simulation::set_multicast_groups(const std::vector<std::uint32_t>& members,
                                      const std::vector<std::uint32_t>& first) {
    auto& groups = m_impl->layout.multicast_groups;
    groups.clear();
    for (std::size_t g = 0; g + 1 < first.size(); ++g) {
        if (first[g] > first[g + 1] || first[g + 1] > members.size())
            throw std::invalid_argument("set_multicast_groups: group " + std::to_string(g) + " lies outside the members");
        groups.emplace_back(members.begin() + first[g], members.begin() + first[g + 1]);
    }
}

void Simulation::load_programs(std::uintptr_t ops, std::uint64_t n_ops, std::uintptr_t programs,
                               std::uint64_t n_programs) {
    const ProgramEntry* p = reinterpret_cast<const ProgramEntry*>(programs);
    m_impl->ops = reinterpret_cast<const Op*>(ops);
    m_impl->n_ops = n_ops;
    m_impl->programs.assign(p, p + n_programs);
}


void Simulation::report_time_on_signal(std::uintptr_t word, int signum) {
    if (word == 0) return;
    g_reporting = this;
    g_time_word = reinterpret_cast<std::uint64_t*>(word);
    struct sigaction action {};
    action.sa_handler = write_time_reached;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    sigaction(signum, &action, nullptr);
}

void Simulation::set_traffic(const TrafficSpec& spec, std::uintptr_t first, std::uintptr_t destinations,
                             std::uint64_t sources) {
    const auto* f = reinterpret_cast<const std::int64_t*>(first);
    const auto* d = reinterpret_cast<const std::int32_t*>(destinations);
    m_impl->has_traffic = sources > 0;
    m_impl->traffic = spec;
    m_impl->traffic_destinations.assign(sources, {});
    for (std::uint64_t g = 0; g < sources && f; ++g) m_impl->traffic_destinations[g].assign(d + f[g], d + f[g + 1]);
}

int Simulation::run() {
    Impl& s = *m_impl;
    s.monitor.set_error_sink(&s.errors);
    try {
        std::map<std::uint32_t, EidolonGpu*> by_index;
        for (EidolonGpu* gpu : s.gpus) {
            gpu->set_address_map(s.map);
            gpu->set_layout(s.layout);
            gpu->attach(&s.monitor);
            gpu->set_tracing(m_tracing);
            s.monitor.attach(&gpu->waits());
            if (!by_index.emplace(gpu->index(), gpu).second)
                throw std::invalid_argument(std::string(gpu->name()) + ": another GPU already has index " +
                                            std::to_string(gpu->index()));
        }
        if (s.has_traffic) {
            const std::uint32_t sources = std::uint32_t(s.traffic_destinations.size());
            for (std::uint32_t g = 0; g < sources; ++g) {
                auto it = by_index.find(g);
                if (it == by_index.end())
                    throw std::invalid_argument("synthetic traffic from GPU " + std::to_string(g) +
                                                ", which is not an eidolon of this platform");
                for (std::int32_t dst : s.traffic_destinations[g])
                    if (dst < 0 || std::uint32_t(dst) >= s.map.windows)
                        throw std::invalid_argument("synthetic traffic to GPU " + std::to_string(dst) +
                                                    ", outside the address map");
                it->second->set_traffic(s.traffic, s.traffic_destinations[g], sources);
            }
        }
        s.monitor.set_external_writers(s.map.windows > s.gpus.size());
        for (Fabric* fabric : s.fabrics) fabric->set_address_map(s.map);
        for (ProtocolChecker* checker : s.checkers) checker->set_address_map(s.map);
        for (const ProgramEntry& entry : s.programs) {
            auto it = by_index.find(std::uint32_t(entry.gpu));
            if (it == by_index.end())
                throw std::invalid_argument("the profile has a program for GPU " + std::to_string(entry.gpu) +
                                            ", which the platform does not have");
            if (entry.first < 0 || entry.count < 0 || std::uint64_t(entry.first + entry.count) > s.n_ops)
                throw std::invalid_argument("a program entry points outside the op array");
            it->second->load_program(std::uint32_t(entry.wg), s.ops + entry.first, std::uint64_t(entry.count));
        }
        std::uint64_t ops = 0;
        for (const EidolonGpu* g : s.gpus) ops += g->ops_total();
        m_ops_total = ops;
    } catch (const std::exception& e) {
        s.errors.report(ErrorKind::BadInput, e.what());
        return finish();
    }
    try {
        if (m_time_limit_ps > 0) {
            sc_core::sc_start(sc_core::sc_time(double(m_time_limit_ps), sc_core::SC_PS));
            // Stopped by the limit, not by running out of events, with work left: what is unfinished was still
            // going. Events alone are not work: each GPU's stall watchdog stays booked for up to its time after
            // the GPU's last response (a second on the flow fabric), so a run that had finished before the limit
            // was reported partial, its kernel time the limit's. Models this cannot see into (GPUs of users'
            // own, which write flags from outside) keep the rule of events.
            const bool working = s.monitor.external_writers() ||
                                 std::any_of(s.gpus.begin(), s.gpus.end(), [](const EidolonGpu* g) { return g->has_work(); });
            m_partial = sc_core::sc_pending_activity() && working && !s.errors.verdict();
        } else {
            sc_core::sc_start();
        }
    } catch (const std::exception& e) {
        // A fatal report unwinds the kernel on purpose and is already collected; anything else
        // (a SystemC error report, an exception from a third-party model) is a model error.
        // end_of_simulation() does not run after this: the kernel was unwound mid-transaction, and SystemC only
        // ends a simulation from its scheduler's own stop (a second sc_stop is a warning, not an end).
        if (!s.errors.unwinding()) s.errors.report(ErrorKind::ModelError, e.what());
        return finish();
    }
    try {
        if (!m_partial) {
            if (!s.monitor.deadlocked() && !s.monitor.external_writers()) s.monitor.final_check();
            std::ostringstream unanswered;
            for (const ProtocolChecker* checker : s.checkers)
                for (const std::string& line : checker->unanswered()) unanswered << (unanswered.tellp() ? "\n" : "") << line;
            if (unanswered.tellp()) s.errors.report(ErrorKind::Protocol, unanswered.str());
        }
        // A run that ran out of events (or reached its limit) is only paused: stopping it runs every module's
        // end_of_simulation(), where a third-party IP writes its own statistics (a failed run's sc_stop already did).
        stop_quietly();
    } catch (const std::exception& e) {
        // A model's end_of_simulation() threw or reported an error (a vendor IP's "transactions still open"
        // check): a failed run, not an internal error.
        if (!s.errors.unwinding()) s.errors.report(ErrorKind::ModelError, std::string("at the end of simulation: ") + e.what());
    }
    return finish();
}

// Decides the run's outcome from the collected reports. A stall is only a verdict while
// workgroups are unfinished: the report then lists them after its cause.
int Simulation::finish() {
    Impl& s = *m_impl;
    s.ran = true;
    m_end_ps = sc_core::sc_time_stamp().value();
    const SimError* verdict = s.errors.verdict();
    if (verdict && verdict->kind != ErrorKind::Stall) {
        m_failure_kind = error_kind_name(verdict->kind);
        m_failure = verdict->text;
        return 3;
    }
    if (m_partial) return 0;  // unfinished by request: no stall to report
    std::ostringstream stall;
    for (EidolonGpu* gpu : s.gpus)
        for (const std::string& line : gpu->unfinished_report()) stall << "\n  " << line;
    if (stall.str().empty()) return 0;
    const std::string cause = verdict ? verdict->text
                                      : "the simulation ran out of events with workgroups unfinished (a transaction "
                                        "was never answered?)";
    m_failure_kind = error_kind_name(ErrorKind::Stall);
    m_failure = cause + "; unfinished workgroups:" + stall.str();
    return 3;
}

Table Simulation::table(const std::string& which) const {
    const Impl& s = *m_impl;
    Table t;
    t.columns = table_columns(which);  // throws for an unknown table
    auto row = [&t, &which](std::initializer_list<double> values) {
        if (values.size() != t.columns.size())  // the declared columns and the filled row must agree
            throw std::logic_error("table '" + which + "': a row of " + std::to_string(values.size()) +
                                   " values for " + std::to_string(t.columns.size()) + " columns");
        t.values.insert(t.values.end(), values);
    };
    if (which == "gpus") {
        // A flow GPU's window is its fabric's to pace (its solver), which counts what it held back, per GPU port.
        // Read as per GPU only where one fabric counts it for as many ports as there are GPUs (the built-in
        // platforms: port i is GPU i); anything else leaves the column unavailable rather than misassigned.
        std::vector<std::uint64_t> paced_full;
        std::size_t counting = 0;
        for (const Fabric* f : s.fabrics)
            if (std::vector<std::uint64_t> full = f->window_full_ps(); !full.empty()) {
                paced_full = std::move(full);
                ++counting;
            }
        if (counting != 1 || paced_full.size() != s.gpus.size()) paced_full.clear();
        auto window_full = [&paced_full](const EidolonGpu* g) {
            if (!g->issues_flows()) return double(g->window_full_ps());
            return g->index() < paced_full.size() ? double(paced_full[g->index()])
                                                  : std::numeric_limits<double>::quiet_NaN();
        };
        for (const EidolonGpu* g : s.gpus) {
            const MemoryCounters& c = g->memory().counters();
            const SyncMonStats& m = g->syncmon().stats();
            row({double(g->index()), double(g->finish_ps()), double(c.reads), double(c.flag_reads), double(c.writes),
                 double(c.atomics), double(g->bytes_sent()), double(g->bytes_received()), double(g->packets_sent()),
                 double(c.bytes_read), double(c.bytes_written), double(m.arms), double(m.wakeups), double(m.spurious),
                 double(m.fallbacks), double(m.peak_entries), double(g->trains_refused()),
                 window_full(g), double(g->requests()), double(g->requests_held())});
        }
    } else if (which == "workgroups") {
        for (const EidolonGpu* g : s.gpus)
            for (std::uint32_t w = 0; w < g->workgroups(); ++w) {
                const WorkgroupStats st = g->workgroup_stats(w);
                row({double(g->index()), double(w), double(st.finish_ps), double(st.wait_ps), double(st.polls),
                     double(st.packets)});
            }
    } else if (which == "links") {
        for (const std::vector<LinkStats>& links : s.fabric_link_stats())
            for (const LinkStats& l : links) {
                const double unavailable = std::numeric_limits<double>::quiet_NaN();
                row({double(l.src), double(l.dst), double(l.lanes), double(l.bytes), double(l.wire_bytes),
                     double(l.packets), double(l.busy_ps), double(l.lane_busy_max_ps), l.queue_mean_ps,
                     l.queue_p50_ps, l.queue_p99_ps, l.queue_max_ps, double(l.peak_occupancy),
                     l.buffers_modelled ? double(l.hol_blocked_ps) : unavailable,
                     l.buffers_modelled ? double(l.credit_stall_ps) : unavailable,
                     l.buffers_modelled ? double(l.backpressure_ps) : unavailable});
            }
    } else if (which == "link_bins") {
        std::size_t index = 0;
        const std::vector<std::vector<LinkStats>>& stats = s.fabric_link_stats();
        for (std::size_t fi = 0; fi < s.fabrics.size(); ++fi)
            for (const LinkStats& l : stats[fi]) {
                const Fabric* f = s.fabrics[fi];
                // busy_bins and byte_bins are both sparse and in bin order: merged into one row per bin.
                auto busy = l.busy_bins.begin();
                auto bytes = l.byte_bins.begin();
                while (busy != l.busy_bins.end() || bytes != l.byte_bins.end()) {
                    const std::uint64_t b = busy == l.busy_bins.end()     ? bytes->first
                                            : bytes == l.byte_bins.end() ? busy->first
                                                                         : std::min(busy->first, bytes->first);
                    double busy_ps = 0, n = 0;
                    if (busy != l.busy_bins.end() && busy->first == b) busy_ps = double((busy++)->second);
                    if (bytes != l.byte_bins.end() && bytes->first == b) n = double((bytes++)->second);
                    if (busy_ps > 0 || n > 0) row({double(index), double(b), double(b * f->bin_ps()), busy_ps, n});
                }
                ++index;
            }
    } else if (which == "pairs") {
        for (const Fabric* f : s.fabrics)
            for (const PairStats& p : f->pair_stats())
                row({double(p.src), double(p.dst), double(p.bytes), double(p.packets),
                     p.packets ? p.latency_sum_ps / double(p.packets) : 0.0, p.latency_max_ps});
    } else if (which == "nvls") {
        for (const Fabric* f : s.fabrics) {
            const NvlsCounters c = f->nvls_counters();
            if (c.enabled)
                row({double(c.stores), double(c.load_reduces), double(c.copies), double(c.copy_bytes),
                     double(c.member_reads), double(c.reduced_bytes), double(c.reduce_busy_ps)});
        }
    } else if (which == "stuck") {
        for (const StuckWait& w : s.monitor.stuck())
            row({double(w.gpu), double(w.wg), double(w.op), double(w.flag), double(w.cond), double(w.mode),
                 double(w.value), double(w.flag_value), double(w.since_ps)});
    } else if (which == "flags") {
        for (const EidolonGpu* g : s.gpus)
            for (std::uint64_t f = 0; f < g->memory().flag_count(); ++f)
                row({double(g->index()), double(f), double(g->memory().peek_flag(f))});
    } else if (which == "syncmon_trace") {
        for (const EidolonGpu* g : s.gpus)
            for (const auto& [time, occupancy] : g->syncmon_trace())
                row({double(g->index()), double(time), double(occupancy)});
    } else if (which == "traffic") {
        for (const EidolonGpu* g : s.gpus)
            if (const TrafficGenerator* gen = g->traffic()) {
                const TrafficStats& st = gen->stats();
                row({double(g->index()), gen->injecting() ? 1.0 : 0.0, double(st.created), double(st.offered),
                     double(st.accepted), double(st.measured), st.latency_sum_ps, st.round_trip_sum_ps,
                     double(g->traffic_received()), double(st.queue_peak)});
            }
    } else if (which == "traffic_summary" && s.has_traffic) {
        // Percentiles need every sample of every GPU: gathered once, here, rather than per GPU.
        std::vector<std::uint64_t> all;
        for (const EidolonGpu* g : s.gpus)
            if (const TrafficGenerator* gen = g->traffic())
                all.insert(all.end(), gen->latencies().begin(), gen->latencies().end());
        // Nearest rank: the smallest sample with at least q of all samples at or below it.
        auto rank = [&all](double q) -> double {
            if (all.empty()) return 0;
            std::size_t k = std::size_t(std::ceil(q * double(all.size())));
            k = std::min(all.size(), std::max<std::size_t>(k, 1)) - 1;
            std::nth_element(all.begin(), all.begin() + std::ptrdiff_t(k), all.end());
            return double(all[k]);
        };
        const double p50 = rank(0.5), p99 = rank(0.99);
        const double max = all.empty() ? 0 : double(*std::max_element(all.begin(), all.end()));
        row({double(s.traffic.duration_ps), double(s.traffic.cycle_ps), p50, p99, max});
    } else if (which == "ops") {
        for (const EidolonGpu* g : s.gpus)
            for (const OpRecord& r : g->trace())
                row({double(g->index()), double(r.wg), double(r.op), double(r.begin_ps), double(r.end_ps)});
    }
    return t;
}

std::uint64_t Simulation::events() const {
    std::uint64_t total = 0;
    for (const EidolonGpu* g : m_impl->gpus) total += g->events();
    for (const Fabric* f : m_impl->fabrics) total += f->events();
    return total;
}

std::uint64_t Simulation::ops_done() const {
    std::uint64_t total = 0;
    for (const EidolonGpu* g : m_impl->gpus) total += g->ops_done();
    return total;
}

}  // namespace eidola
