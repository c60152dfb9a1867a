// NVLink SHARP in the packet fabric's crossbar (topology switch, fabric.switch.nvls): the switch
// serves multimem accesses (multimem_extension.h) itself.
//
// A multimem request from a GPU is routed to the switch, not to the window its address names,
// and is taken whole into the NVLS unit there (after the switch latency, as any packet entering
// a router). Then:
// - a store: after fabric.switch.nvls.latency, the unit sends one write of the same bytes to every
//   member, the requester too if it is a member (multimem.st writes every member), each a packet
//   with its header over the switch's link to that member, under the same credits as all other
//   traffic. When every member has acknowledged its copy, the unit sends the requester one
//   acknowledgement: a fence or release after a multicast covers every member's copy.
// - a load-reduce: the unit sends one read of the range to every member at once; each member
//   answers with the data. When the last answer is whole in the switch, the one reduction engine
//   sums the k answers (k x n bytes at fabric.switch.nvls.reduce_bandwidth, one access after
//   another), and after fabric.switch.nvls.latency the unit sends the requester one response of
//   n bytes.
// The unit's own queues are unbounded (it never refuses a packet into the switch); what it sends
// waits for link credits as everything else does. Data buffers hold no values in this project,
// so the sum is one of timing and traffic, not of numbers.
#include "packet_fabric_parts.h"

#include "eidola/multimem_extension.h"
#include "eidola/packet_pool.h"
#include "eidola/free_list.h"

namespace eidola {

bool PacketFabric::is_multimem(const tlm::tlm_generic_payload& t) const {
    return t.get_extension<MultimemExtension>() != nullptr;
}

// A packet is whole in the NVLS unit: a request from a GPU, or a member's answer to one of the
// unit's own copies or reads.
void PacketFabric::nvls_arrived(std::uint32_t id) {
    const Packet p = m_packets[id];
    m_free_packets.push_back(id);
    --m_in_flight;
    const std::uint64_t now = now_ps();
    m_last_progress_ps = now;
    if (p.cls == 0) {
        const MultimemExtension& m = *p.trans->get_extension<MultimemExtension>();
        const std::uint32_t op = take_slot(m_nvls_ops, m_free_nvls);
        NvlsOp& o = m_nvls_ops[op];
        o.parent = p.trans;
        o.requester = p.src_gpu;
        o.members = m.member_count;
        o.pending = m.member_count;
        o.reduce = m.kind == MultimemKind::LoadReduce;
        if (o.reduce) {
            ++m_nvls_counters.load_reduces;
            nvls_issue(op);  // the reads go out at once; the latency follows the sum
        } else {
            ++m_nvls_counters.stores;
            if (m_nvls_latency_ps) m_actions.push(now + m_nvls_latency_ps, {ActionKind::NvlsIssue, op, 0});
            else nvls_issue(op);
        }
        return;
    }
    // A member answered: the unit's payload goes back to its pool.
    auto* child = static_cast<eidola::Packet*>(p.trans);
    const std::uint32_t op = child->wg;
    const bool ok = child->is_response_ok();
    child->release();
    if (!ok) {
        errors().report(ErrorKind::ModelError, std::string(name()) + ": a member GPU refused the NVLS unit's access");
        return;
    }
    NvlsOp& o = m_nvls_ops[op];
    if (--o.pending) return;
    if (!o.reduce) {
        nvls_respond(op);
        return;
    }
    const std::uint64_t work = std::uint64_t(o.members) * o.parent->get_data_length();
    const std::uint64_t start = std::max(now, m_reduce_free_ps);
    const std::uint64_t busy = ser_ps(double(work), m_reduce_bytes_per_s);
    m_reduce_free_ps = start + busy;
    m_nvls_counters.reduced_bytes += work;
    m_nvls_counters.reduce_busy_ps += busy;
    const std::uint64_t done = m_reduce_free_ps + m_nvls_latency_ps;
    if (done > now) m_actions.push(done, {ActionKind::NvlsRespond, op, 0});
    else nvls_respond(op);
}

// Sends access `op`'s copies (a store) or reads (a load-reduce) to every member.
void PacketFabric::nvls_issue(std::uint32_t op) {
    const NvlsOp o = m_nvls_ops[op];
    const MultimemExtension& m = *o.parent->get_extension<MultimemExtension>();
    const std::uint64_t offset = m_map.local(o.parent->get_address());
    const std::uint32_t n = o.parent->get_data_length();
    for (std::uint32_t k = 0; k < m.member_count; ++k) {
        eidola::Packet* c = m_nvls_pool->allocate();
        c->wg = op;
        c->set_command(o.reduce ? tlm::TLM_READ_COMMAND : tlm::TLM_WRITE_COMMAND);
        c->set_address(m_map.global(m.members[k], offset));
        c->set_data_ptr(m_nvls_pool->scratch());
        c->set_data_length(n);
        c->set_streaming_width(n);
        c->set_byte_enable_ptr(nullptr);
        c->set_dmi_allowed(false);
        c->set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
        if (o.reduce) {
            ++m_nvls_counters.member_reads;
        } else {
            ++m_nvls_counters.copies;
            m_nvls_counters.copy_bytes += n;
        }
        inject_at_switch(c, 0, m.members[k], o.reduce ? 0 : n, false);
    }
}

// Access `op` is done: the requester gets its one acknowledgement (a store) or its sum (a load-reduce).
void PacketFabric::nvls_respond(std::uint32_t op) {
    const NvlsOp o = m_nvls_ops[op];
    m_free_nvls.push_back(op);
    o.parent->set_response_status(tlm::TLM_OK_RESPONSE);
    inject_at_switch(o.parent, 1, o.requester, o.reduce ? o.parent->get_data_length() : 0, !o.reduce);
}

// Queues a packet the NVLS unit sends, at the switch's own injection port, bound for GPU `dst`.
void PacketFabric::inject_at_switch(tlm::tlm_generic_payload* trans, std::uint8_t cls, std::uint32_t dst,
                                    std::uint32_t payload, bool ack) {
    Packet probe;
    probe.cls = cls;
    probe.dst_gpu = dst;
    const std::uint32_t out = route(m_switch_node, probe);
    const Input& in = m_inputs[m_node_first_input[m_switch_node]];
    const std::uint32_t queue = cls * in.per_class + (m_inject_fifo ? 0 : out - m_node_first_output[m_switch_node]);
    enqueue(m_switch_node, trans, cls, m_switch_node, dst, payload, ack, 1, out, queue);
}

}  // namespace eidola
