#include "eidola/ideal_fabric.h"

#include <algorithm>
#include <sstream>

#include "eidola/registry.h"
#include "eidola/train_extension.h"

namespace eidola {

IdealFabric::IdealFabric(sc_core::sc_module_name name, const ParamSet& given)
    : IdealFabric(name, Configured<Params>(given, static_cast<const char*>(name))) {}

IdealFabric::IdealFabric(sc_core::sc_module_name name, const Params& p)
    : FabricShell(name, std::uint32_t(p.ports.get())),
      m_latency_ps(p.latency.get().value()),
      m_round_robin(p.arrival.get() == "round_robin"),
      m_bin_budget(p.stats_bin.get().value(), std::uint64_t(p.stats_max_bins.get())),
      m_actions(this, [](void* f) { static_cast<IdealFabric*>(f)->on_event(); }) {
    const std::uint32_t n = ports();
    m_pairs.resize(std::size_t(n) * n);
    m_last_bin.assign(std::size_t(n) * n, kNoBin);
    m_actions.set_horizon(m_latency_ps);  // every action is due now or one latency from now
}

IdealFabric::~IdealFabric() = default;

tlm::tlm_sync_enum IdealFabric::request(std::uint32_t src, tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase,
                                        sc_core::sc_time& delay) {
    const std::uint64_t at = now_ps() + delay.value();
    if (phase == tlm::BEGIN_REQ) {
        const std::int64_t dst = decode(trans.get_address());
        if (dst < 0) {  // no GPU owns the address: answer at once with an error
            trans.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
            return tlm::TLM_COMPLETED;
        }
        m_actions.push(at + m_latency_ps, {ActionKind::Deliver, src, std::uint32_t(dst), &trans});
        phase = tlm::END_REQ;  // no contention: accepted at once
        return tlm::TLM_UPDATED;
    }
    if (phase == tlm::END_RESP) {
        m_turns.response_ended(*this, src, trans, at);
        return tlm::TLM_COMPLETED;
    }
    errors().report(ErrorKind::ModelError, std::string(name()) + ".targets: illegal phase on the forward path");
    return tlm::TLM_COMPLETED;
}

tlm::tlm_sync_enum IdealFabric::response(std::uint32_t dst, tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase,
                                         sc_core::sc_time& delay) {
    return m_turns.backward(*this, dst, trans, phase, delay);
}

// The target of initiators[dst] answered `trans` (from port `src`) at `at`: the response heads back,
// a latency long.
void IdealFabric::answered(std::uint32_t, tlm::tlm_generic_payload* trans, std::uint32_t src, std::uint64_t at) {
    m_actions.push(at + m_latency_ps, {ActionKind::Return, 0, src, trans});
}

// With fabric.arrival round_robin the requests due now are gathered and handed over last, in their
// targets' round-robin order (arrival_turns.h); everything else goes in the order it was booked.
void IdealFabric::on_event() {
    const std::uint64_t now = now_ps();
    Action a;
    for (;;) {
        while (m_actions.pop_due(now, a)) {
            switch (a.kind) {
                case ActionKind::Deliver:
                    if (m_round_robin) m_turns.arrive(a.port, a.trans, a.src);
                    else m_turns.deliver(*this, a.port, a.trans, a.src);
                    break;
                case ActionKind::Return: m_turns.give_back(*this, a.port, a.trans); break;
                case ActionKind::RequestFree: m_turns.request_freed(*this, a.port); break;
                case ActionKind::ResponseFree: m_turns.response_freed(*this, a.port); break;
            }
        }
        if (!m_turns.deliver_arrived(*this)) break;  // which may book more for now
    }
    m_actions.rearm(now);
}

// PortTurns' hooks (port_turns.h). A pair's traffic is counted as its request goes out, not on
// arrival: the target reads the same lines of the payload and its extensions right after, while
// they are in the cache.
void IdealFabric::sending(std::uint32_t dst, tlm::tlm_generic_payload* trans, std::uint32_t src) {
    count(src, dst, *trans);
}

void IdealFabric::book_request_free(std::uint32_t dst, std::uint64_t at) {
    m_actions.push(at, {ActionKind::RequestFree, 0, dst, nullptr});
}

void IdealFabric::book_response_free(std::uint32_t src, std::uint64_t at) {
    m_actions.push(at, {ActionKind::ResponseFree, 0, src, nullptr});
}

void IdealFabric::forward_b_transport(std::uint32_t src, tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
    const std::int64_t dst = decode(trans.get_address());
    if (dst < 0) {
        trans.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
        return;
    }
    count(src, std::uint32_t(dst), trans);
    delay += ps_to_time(m_latency_ps);
    initiators[std::uint32_t(dst)]->b_transport(trans, delay);
    delay += ps_to_time(m_latency_ps);
}

unsigned int IdealFabric::forward_debug(tlm::tlm_generic_payload& trans) {
    const std::int64_t dst = decode(trans.get_address());
    return dst < 0 ? 0 : initiators[std::uint32_t(dst)]->transport_dbg(trans);
}

void IdealFabric::count(std::uint32_t src, std::uint32_t dst, const tlm::tlm_generic_payload& trans) {
    const std::size_t index = std::size_t(src) * ports() + dst;
    PairCount& pair = m_pairs[index];
    pair.bytes += trans.get_data_length();
    pair.packets += train_packets(trans);
    // Counted when delivered, and deliveries come in time order: only a pair's latest bin can grow.
    const std::uint64_t bin = now_ps() / m_bin_budget.width_ps();
    std::uint32_t& last = m_last_bin[index];
    if (last == kNoBin || m_bins[last].bin < bin) {
        last = std::uint32_t(m_bins.size());
        m_bins.push_back(PairBin{std::uint32_t(index), bin, 0});
        if (m_bin_budget.add()) m_bin_budget.coarsen(now_ps(), [this](std::uint64_t) { return halve_pair_bins(); });
    }
    m_bins[m_last_bin[index]].bytes += trans.get_data_length();
}

// Every pair's bins merged into ones twice as wide (bin_budget.h), kept in time order; returns how many are left.
std::size_t IdealFabric::halve_pair_bins() {
    std::fill(m_last_bin.begin(), m_last_bin.end(), kNoBin);
    std::size_t kept = 0;
    for (const PairBin& b : m_bins) {  // a pair's bins come in bin order, so its latest kept one is the one to merge into
        const std::uint64_t bin = b.bin / 2;
        std::uint32_t& last = m_last_bin[b.pair];
        if (last != kNoBin && m_bins[last].bin == bin) {
            m_bins[last].bytes += b.bytes;
        } else {
            last = std::uint32_t(kept);
            m_bins[kept++] = PairBin{b.pair, bin, b.bytes};
        }
    }
    m_bins.resize(kept);
    return kept;
}

std::vector<LinkStats> IdealFabric::link_stats() const {
    std::vector<LinkStats> out;
    const std::size_t n = targets.size();
    std::vector<std::int64_t> row(m_pairs.size(), -1);  // pair -> its row in `out`
    for (std::size_t i = 0; i < m_pairs.size(); ++i) {
        if (!m_pairs[i].packets) continue;  // only pairs that carried traffic
        LinkStats s;
        s.src = std::int32_t(i / n);
        s.dst = std::int32_t(i % n);
        s.bytes = s.wire_bytes = m_pairs[i].bytes;
        s.packets = m_pairs[i].packets;
        row[i] = std::int64_t(out.size());
        out.push_back(s);
    }
    for (const PairBin& b : m_bins)  // in time order, so each pair's bins come out in bin order
        if (row[b.pair] >= 0) out[std::size_t(row[b.pair])].byte_bins.emplace_back(b.bin, b.bytes);
    return out;
}

namespace {
const bool registered = register_model(model_info<IdealFabric>(
    "IdealFabric", Role::Fabric,
    "Routes by the address map with a fixed latency on every request and response, without contention"));
}  // namespace

}  // namespace eidola
