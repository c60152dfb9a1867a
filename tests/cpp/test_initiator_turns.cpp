// The eidolon GPU's initiator keeps the base protocol's request exclusion (IEEE 1666-2011's base protocol: no
// BEGIN_REQ until the last one's END_REQ, or a BEGIN_RESP that implies it) against an AT
// interconnect that annotates its phases, as a vendor's may: it accepts each request
// (TLM_ACCEPTED), and 100 ns later sends END_REQ annotated +50 ns and then BEGIN_RESP annotated
// +1,000 ns, in the same process call. Each expected time is worked out by hand beside it.
#include <cstdio>
#include <string>
#include <vector>

#include <systemc>
#include <tlm>

#include "eidola/address_map.h"
#include "eidola/eidolon_gpu.h"
#include "eidola/params.h"
#include "tlm_test_parts.h"
#include "eidola/program.h"

using namespace eidola;
using eidola::test::expect;

namespace {

constexpr int kWrites = 12;
const sc_core::sc_time kTurn(100, sc_core::SC_NS), kEndReqDelay(50, sc_core::SC_NS),
    kRespDelay(1000, sc_core::SC_NS);

/// The GPU's whole fabric and peer: answers every write itself. Records each BEGIN_REQ's time, and
/// whether one came before the last request's END_REQ had taken effect (its call time + annotation).
struct AnnotatingBus : sc_core::sc_module, test::QuietForward, test::QuietBackward {
    tlm::tlm_target_socket<> socket{"socket"};
    tlm::tlm_initiator_socket<> initiator{"initiator"};  // to the GPU's target: sends nothing
    std::vector<std::uint64_t> requests_ns;
    std::vector<tlm::tlm_generic_payload*> waiting;  // accepted, END_REQ not yet sent (one, if the rule holds)
    sc_core::sc_time request_ends = sc_core::SC_ZERO_TIME;  // when the last END_REQ takes effect
    bool overlapped = false;
    sc_core::sc_event turn;

    SC_HAS_PROCESS(AnnotatingBus);
    explicit AnnotatingBus(sc_core::sc_module_name n) : sc_module(n) {
        socket.bind(*this);
        initiator.bind(*this);
        SC_METHOD(answer);
        sensitive << turn;
        dont_initialize();
    }
    void answer() {
        tlm::tlm_generic_payload* t = waiting.front();
        waiting.erase(waiting.begin());
        tlm::tlm_phase phase = tlm::END_REQ;
        sc_core::sc_time delay = kEndReqDelay;
        request_ends = sc_core::sc_time_stamp() + kEndReqDelay;
        socket->nb_transport_bw(*t, phase, delay);
        t->set_response_status(tlm::TLM_OK_RESPONSE);
        phase = tlm::BEGIN_RESP;
        delay = kRespDelay;
        socket->nb_transport_bw(*t, phase, delay);
        if (!waiting.empty()) turn.notify(kTurn);
    }
    tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload& t, tlm::tlm_phase& phase, sc_core::sc_time&) override {
        if (phase != tlm::BEGIN_REQ) return tlm::TLM_COMPLETED;
        if (!waiting.empty() || sc_core::sc_time_stamp() < request_ends) overlapped = true;
        requests_ns.push_back(sc_core::sc_time_stamp().value() / 1000);
        waiting.push_back(&t);
        if (waiting.size() == 1) turn.notify(kTurn);
        request_ends = sc_core::sc_max_time();  // until its END_REQ is sent
        return tlm::TLM_ACCEPTED;
    }
};

}  // namespace

int sc_main(int, char**) {
    ParamSet p;
    p.set("id", 0);
    p.set("workgroups", 1);
    p.set("max_outstanding", 64);
    p.set("max_payload", 256);
    EidolonGpu gpu("gpu0", p);
    gpu.set_address_map(AddressMap{0, 1ull << 40, 2});
    std::vector<Op> ops;
    for (int i = 0; i < kWrites; ++i)  // posted 256-byte writes into GPU 1's window, one packet each
        ops.push_back(Op{std::uint8_t(OpKind::Write), 0, 0, 0, 1, 8192 + 256 * std::uint64_t(i), 256, 0, 0, 0, 0});
    gpu.load_program(0, ops.data(), ops.size());
    AnnotatingBus bus("bus");
    gpu.initiator.bind(bus.socket);
    bus.initiator.bind(gpu.target);
    sc_core::sc_start();

    // Each request is taken when the last one's END_REQ takes effect: the bus sends it 100 ns after
    // the request came, annotated +50 ns, so the GPU issues 150 ns apart: 0, 150, ..., 1,650 ns.
    // (The BEGIN_RESP of each, annotated +1,000 ns, comes after its END_REQ: it must not end the
    // request phase of whichever request is pending when it takes effect.)
    std::vector<std::uint64_t> expected;
    for (int i = 0; i < kWrites; ++i) expected.push_back(150 * std::uint64_t(i));
    std::string seen;
    for (std::uint64_t t : bus.requests_ns) seen += (seen.empty() ? "" : ", ") + std::to_string(t);
    expect(bus.requests_ns == expected, "requests 150 ns apart, each after the last one's END_REQ: " + seen + " ns");
    expect(!bus.overlapped, "no BEGIN_REQ before the last request's END_REQ took effect");
    return eidola::test::verdict();
}
