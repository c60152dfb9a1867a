// The ideal fabric: every request and every response takes a fixed latency, and nothing
// contends. It is the paper's setting plus a latency, and the baseline the packet fabric is
// compared against.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

#include <systemc>
#include <tlm>

#include "eidola/bin_budget.h"
#include "eidola/fabric.h"
#include "eidola/fabric_ports.h"
#include "eidola/params.h"
#include "eidola/port_turns.h"
#include "eidola/timing_wheel.h"

namespace eidola {

/// The ideal fabric's parameters.
struct IdealFabricParams : ParamGroup {
    /// One-way latency of every request and every response.
    TimeParam latency{*this, "latency", 500e-9, "one-way latency of every request and every response", 0, 1.0};
    /// Number of GPU ports.
    IntParam ports{*this, "ports", 4, "number of GPU ports (targets[i] and initiators[i])", 1,
                   kMaxFabricPorts};
    /// Width of the traffic-over-time bins (bytes per GPU pair per bin).
    TimeParam stats_bin{*this, "stats.bin", 1e-6, "width of the traffic-over-time bins (bytes per pair)", 1e-12,
                        1.0};
    /// Most over-time bins held (all pairs), past which they double in width (bin_budget.h).
    IntParam stats_max_bins{*this, "stats.max_bins", 1 << 20,
                            "most traffic-over-time bins held (all pairs together), past which stats.bin doubles "
                            "as often as it takes; the results give the width used",
                            1, 1e12};
    /// The order in which requests that reach a GPU in the same picosecond go to it.
    ChoiceParam arrival{*this, "arrival", {"round_robin", "fifo"},
                        "order of the requests that reach a GPU in one picosecond: round_robin over their sources "
                        "from the GPU after its own, a request of each a round (a target port's arbiter); fifo: the "
                        "order they were sent in, which follows the GPUs' indices (a bus without arbitration)"};
};

/// Routes by the address map with a fixed one-way latency on requests and on responses.
/// LT callers on targets[i] are forwarded with b_transport.
class IdealFabric : public FabricShell<IdealFabric> {
public:
    using Params = IdealFabricParams;
    SC_HAS_PROCESS(IdealFabric);

    IdealFabric(sc_core::sc_module_name name, const ParamSet& params);
    ~IdealFabric() override;

    std::vector<LinkStats> link_stats() const override;
    std::uint64_t events() const override { return m_actions.processed(); }
    std::uint64_t bin_ps() const override { return m_bin_budget.width_ps(); }
    std::uint32_t bin_doublings() const override { return m_bin_budget.doublings(); }

private:
    friend struct FabricTargetPort<IdealFabric>;
    friend struct FabricInitiatorPort<IdealFabric>;
    friend class PortTurns<IdealFabric>;
    enum class ActionKind : std::uint8_t { Deliver, Return, RequestFree, ResponseFree };
    struct Action {
        ActionKind kind;
        std::uint32_t src : 24;  ///< a Deliver's upstream port (bits: the wheel's nodes stay 32 bytes)
        std::uint32_t port;
        tlm::tlm_generic_payload* trans;
    };
    static_assert(kMaxFabricPorts <= 1 << 24, "Action::src holds every port index");

    IdealFabric(sc_core::sc_module_name name, const Params& params);
    tlm::tlm_sync_enum request(std::uint32_t src, tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase,
                               sc_core::sc_time& delay);
    tlm::tlm_sync_enum response(std::uint32_t dst, tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase,
                                sc_core::sc_time& delay);
    void forward_b_transport(std::uint32_t src, tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);
    unsigned int forward_debug(tlm::tlm_generic_payload& trans);
    void on_event();
    void sending(std::uint32_t dst, tlm::tlm_generic_payload* trans, std::uint32_t src);
    void book_request_free(std::uint32_t dst, std::uint64_t at);
    void book_response_free(std::uint32_t src, std::uint64_t at);
    void answered(std::uint32_t dst, tlm::tlm_generic_payload* trans, std::uint32_t src, std::uint64_t at);
    void count(std::uint32_t src, std::uint32_t dst, const tlm::tlm_generic_payload& trans);

    std::uint64_t m_latency_ps;
    PortTurns<IdealFabric> m_turns{ports()};  // one BEGIN_REQ / BEGIN_RESP at a time on each GPU port
    bool m_round_robin;                       // fabric.arrival: round_robin (else the order they were sent in)
    struct PairCount {
        std::uint64_t bytes = 0, packets = 0;
    };
    // Bytes delivered per pair per bin, sparse: one flat list in time order, plus each pair's latest
    // entry (4 bytes a pair rather than a list per pair: a 1,024-GPU fabric has a million pairs).
    struct PairBin {
        std::uint32_t pair;
        std::uint64_t bin, bytes;
    };
    static constexpr std::uint32_t kNoBin = ~std::uint32_t(0);
    std::vector<PairBin> m_bins;
    std::size_t halve_pair_bins();
    std::vector<std::uint32_t> m_last_bin;  // src * ports + dst -> its latest entry in m_bins (kNoBin: none)
    BinBudget m_bin_budget;  // the over-time bins' width, and their count against stats.max_bins
    std::vector<PairCount> m_pairs;  // src * ports + dst -> its traffic (dense: one add per transaction)
    TimingWheel<Action> m_actions;  // a wheel: one queue for every port, at few offsets but many times
};

}  // namespace eidola
