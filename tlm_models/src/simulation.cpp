#include "eidola/simulation.h"

#include <cstring>
#include <map>
#include <sstream>
#include <stdexcept>

#include <systemc>
#include <tlm>

#include "eidola/eidolon_gpu.h"
#include "eidola/fabric.h"
#include "eidola/progress_monitor.h"
#include "eidola/protocol_checker.h"
#include "eidola/registry.h"

namespace eidola {

using InitiatorBase = tlm::tlm_base_initiator_socket_b<32, tlm::tlm_fw_transport_if<>, tlm::tlm_bw_transport_if<>>;
template <unsigned N, sc_core::sc_port_policy POL>
using InitiatorSocket = tlm::tlm_base_initiator_socket<32, tlm::tlm_fw_transport_if<>, tlm::tlm_bw_transport_if<>, N, POL>;
using TargetBase = tlm::tlm_base_target_socket_b<32, tlm::tlm_fw_transport_if<>, tlm::tlm_bw_transport_if<>>;

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

}  // namespace

struct Simulation::Impl {
    std::string name;
    AddressMap map;
    std::vector<std::unique_ptr<sc_core::sc_module>> modules;
    std::vector<EidolonGpu*> gpus;
    std::vector<Fabric*> fabrics;
    std::vector<ProtocolChecker*> checkers;
    WindowLayout layout;
    std::vector<Op> ops;
    std::vector<ProgramEntry> programs;
    ProgressMonitor monitor;
};

void Table::copy_to(std::uintptr_t address) const {
    if (!values.empty()) std::memcpy(reinterpret_cast<void*>(address), values.data(), values.size() * sizeof(double));
}

Simulation::Simulation(const std::string& name) : m_impl(std::make_unique<Impl>()) { m_impl->name = name; }

// Modules stay alive to the end of the process: SystemC keeps pointers to them in its kernel.
Simulation::~Simulation() {
    for (auto& m : m_impl->modules) m.release();
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

void Simulation::load_programs(std::uintptr_t ops, std::uint64_t n_ops, std::uintptr_t programs,
                               std::uint64_t n_programs) {
    const Op* o = reinterpret_cast<const Op*>(ops);
    const ProgramEntry* p = reinterpret_cast<const ProgramEntry*>(programs);
    m_impl->ops.assign(o, o + n_ops);
    m_impl->programs.assign(p, p + n_programs);
}

int Simulation::run() {
    Impl& s = *m_impl;
    try {
        std::map<std::uint32_t, EidolonGpu*> by_index;
        for (EidolonGpu* gpu : s.gpus) {
            gpu->set_address_map(s.map);
            gpu->set_layout(s.layout);
            gpu->attach(&s.monitor);
            gpu->set_tracing(m_tracing);
            s.monitor.attach(gpu);
            if (!by_index.emplace(gpu->index(), gpu).second)
                throw std::invalid_argument(std::string(gpu->name()) + ": another GPU already has index " +
                                            std::to_string(gpu->index()));
        }
        s.monitor.set_external_writers(s.map.windows > s.gpus.size());
        for (Fabric* fabric : s.fabrics) fabric->set_address_map(s.map);
        for (ProtocolChecker* checker : s.checkers) checker->set_address_map(s.map);
        for (const ProgramEntry& entry : s.programs) {
            auto it = by_index.find(std::uint32_t(entry.gpu));
            if (it == by_index.end())
                throw std::invalid_argument("the profile has a program for GPU " + std::to_string(entry.gpu) +
                                            ", which the platform does not have");
            if (entry.first < 0 || entry.count < 0 || std::uint64_t(entry.first + entry.count) > s.ops.size())
                throw std::invalid_argument("a program entry points outside the op array");
            it->second->load_program(std::uint32_t(entry.wg), s.ops.data() + entry.first, std::uint64_t(entry.count));
        }
        sc_core::sc_start();
    } catch (const std::exception& e) {
        m_end_ps = sc_core::sc_time_stamp().value();
        m_failure = e.what();
        m_failure_kind = m_failure.find("base protocol violation") != std::string::npos ? "protocol" : "error";
        return 3;
    }
    m_end_ps = sc_core::sc_time_stamp().value();
    if (!s.monitor.deadlocked() && !s.monitor.external_writers()) s.monitor.final_check();
    std::ostringstream unanswered;
    for (const ProtocolChecker* checker : s.checkers)
        for (const std::string& line : checker->unanswered()) unanswered << (unanswered.tellp() ? "\n" : "") << line;
    if (unanswered.tellp()) {
        m_failure_kind = "protocol";
        m_failure = unanswered.str();
        return 3;
    }
    if (s.monitor.deadlocked()) {
        std::ostringstream msg;
        msg << "deadlock at " << sc_core::sc_time_stamp() << ": " << s.monitor.stuck().size()
            << " workgroup(s) wait on flags that no pending write can change";
        m_failure_kind = "deadlock";
        m_failure = msg.str();
        return 3;
    }
    for (Fabric* fabric : s.fabrics) {
        const std::string error = fabric->error();
        if (!error.empty()) {
            m_failure_kind = error.find("deadlock") != std::string::npos ? "fabric deadlock" : "error";
            m_failure = error;
            return 3;
        }
    }
    for (EidolonGpu* gpu : s.gpus) {
        if (!gpu->error().empty()) {
            m_failure_kind = "error";
            m_failure = gpu->error();
            return 3;
        }
    }
    std::ostringstream stall;
    std::string cause = "the simulation ran out of events with workgroups unfinished (a transaction was never "
                        "answered?)";
    for (EidolonGpu* gpu : s.gpus) {
        if (!gpu->stall().empty()) cause = gpu->stall();
        for (const std::string& line : gpu->unfinished_report()) stall << "\n  " << line;
    }
    if (!stall.str().empty()) {
        m_failure_kind = "stall";
        m_failure = cause + "; unfinished workgroups:" + stall.str();
        return 3;
    }
    return 0;
}

Table Simulation::table(const std::string& which) const {
    const Impl& s = *m_impl;
    Table t;
    auto row = [&t](std::initializer_list<double> values) { t.values.insert(t.values.end(), values); };
    if (which == "gpus") {
        t.columns = {"gpu", "finish_ps", "reads", "flag_reads", "writes", "atomics", "bytes_sent", "bytes_received",
                     "packets_sent", "memory_bytes_read", "memory_bytes_written", "syncmon_arms", "syncmon_wakeups",
                     "syncmon_spurious", "syncmon_fallbacks", "syncmon_peak"};
        for (const EidolonGpu* g : s.gpus) {
            const MemoryCounters& c = g->memory().counters();
            const SyncMonStats& m = g->syncmon().stats();
            row({double(g->index()), double(g->finish_ps()), double(c.reads), double(c.flag_reads), double(c.writes),
                 double(c.atomics), double(g->bytes_sent()), double(g->bytes_received()), double(g->packets_sent()),
                 double(c.bytes_read), double(c.bytes_written), double(m.arms), double(m.wakeups), double(m.spurious),
                 double(m.fallbacks), double(m.peak_entries)});
        }
    } else if (which == "workgroups") {
        t.columns = {"gpu", "wg", "finish_ps", "wait_ps", "polls", "packets"};
        for (const EidolonGpu* g : s.gpus)
            for (std::uint32_t w = 0; w < g->workgroups(); ++w) {
                const WorkgroupStats& st = g->workgroup_stats(w);
                row({double(g->index()), double(w), double(st.finish_ps), double(st.wait_ps), double(st.polls),
                     double(st.packets)});
            }
    } else if (which == "links") {
        t.columns = {"src", "dst", "lanes", "bytes", "wire_bytes", "packets", "busy_ps", "queue_mean_ps", "queue_p50_ps",
                     "queue_p99_ps", "queue_max_ps", "peak_occupancy"};
        for (const Fabric* f : s.fabrics)
            for (const LinkStats& l : f->link_stats())
                row({double(l.src), double(l.dst), double(l.lanes), double(l.bytes), double(l.wire_bytes),
                     double(l.packets), double(l.busy_ps), l.queue_mean_ps, l.queue_p50_ps, l.queue_p99_ps,
                     l.queue_max_ps, double(l.peak_occupancy)});
    } else if (which == "link_bins") {
        t.columns = {"link", "bin", "start_ps", "busy_ps"};
        std::size_t index = 0;
        for (const Fabric* f : s.fabrics)
            for (const LinkStats& l : f->link_stats()) {
                for (std::size_t b = 0; b < l.busy_bins.size(); ++b)
                    if (l.busy_bins[b] > 0)
                        row({double(index), double(b), double(b * f->bin_ps()), double(l.busy_bins[b])});
                ++index;
            }
    } else if (which == "pairs") {
        t.columns = {"src", "dst", "bytes", "packets", "latency_mean_ps", "latency_max_ps"};
        for (const Fabric* f : s.fabrics)
            for (const PairStats& p : f->pair_stats())
                row({double(p.src), double(p.dst), double(p.bytes), double(p.packets),
                     p.packets ? p.latency_sum_ps / double(p.packets) : 0.0, p.latency_max_ps});
    } else if (which == "stuck") {
        t.columns = {"gpu", "wg", "op", "flag", "cond", "mode", "value", "flag_value", "since_ps"};
        for (const StuckWait& w : s.monitor.stuck())
            row({double(w.gpu), double(w.wg), double(w.op), double(w.flag), double(w.cond), double(w.mode),
                 double(w.value), double(w.flag_value), double(w.since_ps)});
    } else if (which == "flags") {
        t.columns = {"gpu", "flag", "value"};
        for (const EidolonGpu* g : s.gpus)
            for (std::uint64_t f = 0; f < g->memory().flag_count(); ++f)
                row({double(g->index()), double(f), double(g->memory().peek_flag(f))});
    } else if (which == "syncmon_trace") {
        t.columns = {"gpu", "time_ps", "occupancy"};
        for (const EidolonGpu* g : s.gpus)
            for (const auto& [time, occupancy] : g->syncmon_trace())
                row({double(g->index()), double(time), double(occupancy)});
    } else if (which == "ops") {
        t.columns = {"gpu", "wg", "op", "begin_ps", "end_ps"};
        for (const EidolonGpu* g : s.gpus)
            for (const OpRecord& r : g->trace())
                row({double(g->index()), double(r.wg), double(r.op), double(r.begin_ps), double(r.end_ps)});
    } else {
        throw std::invalid_argument("no result table named '" + which + "'");
    }
    return t;
}

std::uint64_t Simulation::events() const {
    std::uint64_t total = 0;
    for (const EidolonGpu* g : m_impl->gpus) total += g->events();
    for (const Fabric* f : m_impl->fabrics) total += f->events();
    return total;
}

}  // namespace eidola
