// A flow: one TLM transaction that stands for a whole write or read (or a large share of one),
// for a flow-level fabric (flow_fabric.h). An eidolon GPU whose `flow` parameter is set issues
// every transfer as such transactions and counts each as one outstanding transaction: the fabric
// then models what max_outstanding does to a stream of packets (a window of packets per round
// trip), so the GPU tells it its window and its memory's turnaround. The fabric writes back when
// the flow's first packet reached the target, so the target's memory can serve the flow's bytes
// as they came in rather than all at once at the end. The extension is ignorable; fabrics other
// than the flow fabric must not be given flows (the platform shorthand sets `gpus.flow` only for
// fabric.model: flow).
#pragma once

#include <cstdint>

#include <tlm>

namespace eidola {

/// Sent by a flow fabric on the backward path when a flow that asked for it (FlowExtension::tell_sent)
/// has its last packet issued. Ignorable: an initiator that does not know it returns TLM_ACCEPTED.
DECLARE_EXTENDED_PHASE(FLOW_SENT);

/// What a flow's initiator tells a flow-level fabric, and what the fabric tells its target.
class FlowExtension : public tlm::tlm_extension<FlowExtension> {
public:
    std::uint32_t window = 0;         ///< the initiator's outstanding limit, in packets (0: none)
    std::uint32_t packet_bytes = 0;   ///< payload of each of its packets but the last
    std::uint64_t turnaround_ps = 0;  ///< the target's service time of one packet (memory latency + packet / bandwidth)
    /// The issuing workgroup on its GPU: its transfers go out one after another, whole.
    std::uint32_t workgroup = 0;
    /// A signal (a flag or a held release): one packet that the GPU slips into its round robin
    /// between a workgroup's packets, rather than a flow (window 0: the fabric paces it by none).
    bool signal = false;
    /// A posted write whose workgroup the GPU holds until its last packet would be issued: the fabric
    /// then sends FLOW_SENT on the backward path (an ignorable extended phase).
    bool tell_sent = false;
    /// Set by a fabric that takes `tell_sent` up (the flow fabric with flow.issue: gates): it will send
    /// FLOW_SENT. Left false, the GPU goes on at once, as with any fabric that does not know the phase.
    bool will_tell = false;
    /// Set by the fabric on delivery: when the flow's first packet was in at the target (its
    /// bytes then kept arriving until the delivery). 0 with a single packet.
    std::uint64_t first_ps = 0;
    /// Internal to a flow fabric: the window room its burst holds (the fabric's list), given back when its
    /// answer is in; ~0: none.
    std::uint32_t fabric_holds = ~std::uint32_t(0);
    /// Set by a flow fabric on a read whose data it takes out while the target reads it (its data's flow starts
    /// when the first answer would leave): the target's memory streams the read's bytes at its bandwidth beside its
    /// other accesses, rather than holding them up for the whole read.
    bool streamed = false;
    /// Internal to a flow fabric: with `streamed`, when the first of the read's two ends (the target's answer, its
    /// data's last packet leaving the target) was in; ~0: neither yet.
    std::uint64_t fabric_half_ps = ~std::uint64_t(0);

    tlm::tlm_extension_base* clone() const override { return new FlowExtension(*this); }
    void copy_from(const tlm::tlm_extension_base& other) override { *this = static_cast<const FlowExtension&>(other); }
};

}  // namespace eidola
