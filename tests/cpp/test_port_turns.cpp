// The base protocol's exclusion rules at the fabrics' GPU ports (port_turns.h for the ideal and flow
// fabrics, the ejection ports of the packet fabric), against
// AT models that take their time, as a third-party GPU's sockets may: a target that accepts each
// BEGIN_REQ (TLM_ACCEPTED), sends END_REQ 100 ns later and BEGIN_RESP with it, and an initiator that
// accepts each BEGIN_RESP and sends END_RESP 150 ns later (IEEE 1666-2011's base protocol: one BEGIN_REQ per
// socket until its END_REQ, one BEGIN_RESP until its END_RESP). Each expected time is worked out
// by hand in the comment beside it.
#include <cstdio>
#include <string>
#include <vector>

#include <systemc>
#include <tlm>

#include "eidola/address_map.h"
#include "eidola/flow_fabric.h"
#include "eidola/ideal_fabric.h"
#include "eidola/packet_fabric.h"
#include "eidola/params.h"
#include "tlm_test_parts.h"

using namespace eidola;
using eidola::test::expect;

namespace {

constexpr int kRequests = 3;
const sc_core::sc_time kEndReq(100, sc_core::SC_NS), kEndResp(150, sc_core::SC_NS);

std::uint64_t now_ns() { return sc_core::sc_time_stamp().value() / 1000; }

/// In GPU 0's place: sends kRequests 256-byte writes to GPU 1 from time 0, one at a time (each once the
/// last one's END_REQ came), each annotated `annotation` ahead; accepts each BEGIN_RESP and ends it
/// kEndResp later; records when each response began and whether two were ever open at once.
struct SlowInitiator : sc_core::sc_module, test::QuietBackward, test::QuietForward {
    tlm::tlm_initiator_socket<> socket{"socket"};
    tlm::tlm_target_socket<> target{"target"};  // GPU 0's target: nothing is sent to it
    tlm::tlm_generic_payload payloads[kRequests];
    unsigned char data[kRequests][256] = {};
    std::vector<std::uint64_t> responses_ns;
    tlm::tlm_generic_payload* open = nullptr;  // a response begun and not yet ended
    bool overlapped = false;
    sc_core::sc_event end_response, request_ended;
    sc_core::sc_time annotation;

    SC_HAS_PROCESS(SlowInitiator);
    SlowInitiator(sc_core::sc_module_name n, sc_core::sc_time annotation_) : sc_module(n), annotation(annotation_) {
        socket.bind(*this);
        target.bind(*this);
        SC_THREAD(send);
        SC_METHOD(end);
        sensitive << end_response;
        dont_initialize();
    }
    void send() {
        for (int i = 0; i < kRequests; ++i) {
            tlm::tlm_generic_payload& t = payloads[i];
            t.set_command(tlm::TLM_WRITE_COMMAND);
            t.set_address((1ull << 40) + 8192 + 256 * std::uint64_t(i));  // GPU 1's window, a data buffer
            t.set_data_ptr(data[i]);
            t.set_data_length(256);
            t.set_streaming_width(256);
            t.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
            tlm::tlm_phase phase = tlm::BEGIN_REQ;
            sc_core::sc_time delay = annotation;
            if (socket->nb_transport_fw(t, phase, delay) == tlm::TLM_ACCEPTED) wait(request_ended);
        }
    }
    void end() {
        tlm::tlm_phase phase = tlm::END_RESP;
        sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
        tlm::tlm_generic_payload* t = open;
        open = nullptr;
        socket->nb_transport_fw(*t, phase, delay);
    }
    tlm::tlm_sync_enum nb_transport_bw(tlm::tlm_generic_payload& t, tlm::tlm_phase& phase, sc_core::sc_time&) override {
        if (phase == tlm::END_REQ) {
            request_ended.notify(sc_core::SC_ZERO_TIME);
            return tlm::TLM_ACCEPTED;
        }
        if (open) overlapped = true;
        open = &t;
        responses_ns.push_back(now_ns());
        end_response.notify(kEndResp);
        return tlm::TLM_ACCEPTED;
    }
    tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload&, tlm::tlm_phase&, sc_core::sc_time&) override {
        return tlm::TLM_COMPLETED;  // nothing is sent to GPU 0
    }
};

/// In GPU 1's place: accepts each BEGIN_REQ, and kEndReq later sends END_REQ and then BEGIN_RESP for
/// it, the BEGIN_RESP annotated `annotation` ahead and sent only once the last one's END_RESP came
/// (where the fabric accepted it rather than completing it); records when each request began and
/// whether a BEGIN_REQ came while another awaited END_REQ.
struct SlowTarget : sc_core::sc_module, test::QuietForward, test::QuietBackward {
    tlm::tlm_target_socket<> socket{"socket"};
    tlm::tlm_initiator_socket<> initiator{"initiator"};  // GPU 1's initiator: sends nothing
    std::vector<std::uint64_t> requests_ns;
    tlm::tlm_generic_payload* open = nullptr;  // a request begun and not yet ended
    bool overlapped = false;
    sc_core::sc_event end_request, response_ended;
    sc_core::sc_time annotation;
    std::vector<tlm::tlm_generic_payload*> answers;  // answers waiting for the response channel
    bool responding = false;                          // a BEGIN_RESP accepted, its END_RESP not yet come

    SC_HAS_PROCESS(SlowTarget);
    SlowTarget(sc_core::sc_module_name n, sc_core::sc_time annotation_) : sc_module(n), annotation(annotation_) {
        socket.bind(*this);
        initiator.bind(*this);
        SC_METHOD(end);
        sensitive << end_request;
        dont_initialize();
        SC_METHOD(respond);
        sensitive << response_ended;
        dont_initialize();
    }
    void end() {
        tlm::tlm_generic_payload* t = open;
        open = nullptr;
        tlm::tlm_phase phase = tlm::END_REQ;
        sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
        socket->nb_transport_bw(*t, phase, delay);
        t->set_response_status(tlm::TLM_OK_RESPONSE);
        answers.push_back(t);
        respond();
    }
    void respond() {
        if (responding || answers.empty()) return;
        tlm::tlm_generic_payload* t = answers.front();
        answers.erase(answers.begin());
        tlm::tlm_phase phase = tlm::BEGIN_RESP;
        sc_core::sc_time delay = annotation;
        responding = socket->nb_transport_bw(*t, phase, delay) == tlm::TLM_ACCEPTED;
    }
    tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload& t, tlm::tlm_phase& phase, sc_core::sc_time&) override {
        if (phase == tlm::END_RESP) {
            responding = false;
            response_ended.notify(sc_core::SC_ZERO_TIME);
            return tlm::TLM_COMPLETED;
        }
        if (phase != tlm::BEGIN_REQ) return tlm::TLM_COMPLETED;
        if (open) overlapped = true;
        open = &t;
        requests_ns.push_back(now_ns());
        end_request.notify(kEndReq);
        return tlm::TLM_ACCEPTED;
    }
};

/// A fabric of two ports with the slow models on them; GPU 0 annotates its requests `request` ahead
/// and GPU 1 its responses `response` ahead.
template <class Fabric>
struct Bench {
    Fabric fabric;
    SlowInitiator gpu0;
    SlowTarget gpu1;
    Bench(const std::string& name, const ParamSet& p, sc_core::sc_time request = sc_core::SC_ZERO_TIME,
          sc_core::sc_time response = sc_core::SC_ZERO_TIME)
        : fabric((name + "_fabric").c_str(), p),
          gpu0((name + "_gpu0").c_str(), request),
          gpu1((name + "_gpu1").c_str(), response) {
        fabric.set_address_map(AddressMap{0, 1ull << 40, 2});
        gpu0.socket.bind(fabric.targets[0]);
        fabric.initiators[0].bind(gpu0.target);
        gpu1.initiator.bind(fabric.targets[1]);
        fabric.initiators[1].bind(gpu1.socket);
    }
};

std::string times(const std::vector<std::uint64_t>& ns) {
    std::string s;
    for (std::uint64_t t : ns) s += (s.empty() ? "" : ", ") + std::to_string(t);
    return s + " ns";
}

/// Three requests each begun at the last one's END_REQ (kEndReq apart), three responses each at the
/// last one's END_RESP (kEndResp apart), wherever the fabric's latency puts the first.
void expect_spaced(const std::string& fabric, const std::vector<std::uint64_t>& req,
                   const std::vector<std::uint64_t>& resp) {
    expect(req.size() == 3 && req[1] == req[0] + 100 && req[2] == req[0] + 200,
           fabric + ": requests one at a time, each at the last one's END_REQ: " + times(req));
    expect(resp.size() == 3 && resp[1] == resp[0] + 150 && resp[2] == resp[0] + 300,
           fabric + ": responses one at a time, each at the last one's END_RESP: " + times(resp));
}

/// Flow and packet fabrics, annotated against plain (see the comment where it is called).
template <class Fabric>
void expect_annotated(const std::string& name, const Bench<Fabric>& plain, const Bench<Fabric>& ahead,
                      std::uint64_t answers_apart) {
    const std::vector<std::uint64_t>& req = ahead.gpu1.requests_ns;
    const std::vector<std::uint64_t>& resp = ahead.gpu0.responses_ns;
    const std::uint64_t t1 = plain.gpu1.requests_ns.at(0), r1 = plain.gpu0.responses_ns.at(0);
    expect(req.size() == 3 && req[0] == t1 + 200 && req[1] == req[0] + 200 && req[2] == req[0] + 400,
           name + ", annotated: requests at t1 + 200, + 400, + 600 ns: " + times(req) + " (t1 = " +
               std::to_string(t1) + " ns)");
    const std::uint64_t d = answers_apart;
    expect(resp.size() == 3 && resp[0] == r1 + 500 && resp[1] == resp[0] + d && resp[2] == resp[0] + 2 * d,
           name + ", annotated: responses at r1 + 500, then " + std::to_string(d) + " ns apart: " + times(resp) +
               " (r1 = " + std::to_string(r1) + " ns)");
    expect(!ahead.gpu1.overlapped && !ahead.gpu0.overlapped,
           name + ", annotated: no BEGIN_REQ or BEGIN_RESP before the last one ended");
}

}  // namespace

int sc_main(int, char**) {
    ParamSet ideal;
    ideal.set("latency", 500e-9);
    ideal.set("ports", 2);
    Bench<IdealFabric> a("ideal", ideal);
    ParamSet flow;
    flow.set_choice("topology", "switch");
    flow.set("ports", 2);
    flow.set("link.bandwidth", 100e9);
    flow.set("link.latency", 150e-9);
    flow.set("switch.latency", 100e-9);
    Bench<FlowFabric> b("flow", flow);
    ParamSet packet = flow;
    Bench<PacketFabric> c("packet", packet);
    // The same, with each BEGIN_REQ annotated 200 ns ahead and each BEGIN_RESP 300 ns ahead.
    const sc_core::sc_time ahead_req(200, sc_core::SC_NS), ahead_resp(300, sc_core::SC_NS);
    Bench<IdealFabric> a2("ideal_ahead", ideal, ahead_req, ahead_resp);
    Bench<FlowFabric> b2("flow_ahead", flow, ahead_req, ahead_resp);
    Bench<PacketFabric> c2("packet_ahead", packet, ahead_req, ahead_resp);
    sc_core::sc_start();

    // Ideal fabric, latency L = 500 ns. The three requests reach GPU 1's port at L; the target
    // takes one at a time, each ended kEndReq later: BEGIN_REQ at 500, 600, 700 ns. Each answer
    // leaves with its END_REQ (600, 700, 800 ns) and is back at GPU 0 a latency later (1,100,
    // 1,200, 1,300 ns), one at a time: the second waits for the first's END_RESP (1,100 + 150),
    // the third for the second's (1,250 + 150): BEGIN_RESP at 1,100, 1,250, 1,400 ns.
    expect(a.gpu1.requests_ns == std::vector<std::uint64_t>{500, 600, 700},
           "ideal: requests one at a time, each at the last one's END_REQ: " + times(a.gpu1.requests_ns));
    expect(a.gpu0.responses_ns == std::vector<std::uint64_t>{1100, 1250, 1400},
           "ideal: responses one at a time, each at the last one's END_RESP: " + times(a.gpu0.responses_ns));
    expect(!a.gpu1.overlapped && !a.gpu0.overlapped, "ideal: no BEGIN_REQ or BEGIN_RESP before the last one ended");

    // Flow and packet fabrics: the first request arrives after its route's latency (t1); the others
    // are in by then (256 bytes each at 100 GB/s, 2.56 ns apart) and wait for each END_REQ: t1,
    // t1 + 100, t1 + 200 ns. The answers come back 100 ns apart and each waits 150 ns for the one before.
    expect_spaced("flow", b.gpu1.requests_ns, b.gpu0.responses_ns);
    expect(!b.gpu1.overlapped && !b.gpu0.overlapped, "flow: no BEGIN_REQ or BEGIN_RESP before the last one ended");
    expect_spaced("packet", c.gpu1.requests_ns, c.gpu0.responses_ns);
    expect(!c.gpu1.overlapped && !c.gpu0.overlapped, "packet: no BEGIN_REQ or BEGIN_RESP before the last one ended");

    // Annotated phases take effect when their annotation says. Ideal fabric: it ends each request at
    // once, so the three are all sent at 0 and begin at 200 ns; each reaches GPU 1 a latency later,
    // 700 ns, and the target takes them 100 ns apart: 700, 800, 900 ns. Each BEGIN_RESP is sent with
    // its END_REQ (800, 900, 1,000 ns) and takes effect 300 ns later; back at GPU 0 a latency after
    // that, 1,600, 1,700, 1,800 ns, each waiting 150 ns for the last one's END_RESP: 1,600, 1,750,
    // 1,900 ns.
    expect(a2.gpu1.requests_ns == std::vector<std::uint64_t>{700, 800, 900},
           "ideal, annotated: requests at 700, 800, 900 ns: " + times(a2.gpu1.requests_ns));
    expect(a2.gpu0.responses_ns == std::vector<std::uint64_t>{1600, 1750, 1900},
           "ideal, annotated: responses at 1,600, 1,750, 1,900 ns: " + times(a2.gpu0.responses_ns));
    // Flow and packet fabrics: each request begins 200 ns after it is sent, and the next is sent at
    // its END_REQ, then: they begin at 200, 400 and 600 ns, where the plain run's all began at 0. So
    // the first reaches GPU 1 200 ns after the plain run's first (t1 + 200), the others 200 ns apart
    // (each arrives after the target ended the last, 100 ns after it came). The first answer takes
    // effect 300 ns after it is sent, so it is back 200 + 300 ns after the plain run's first.
    // The flow fabric completes each BEGIN_RESP at once (it takes effect at its annotation), so the
    // answers are 200 ns apart as the requests; the packet fabric injects an annotated response when
    // it takes effect and ends it (END_RESP) then, so the target's next answer waits for that and
    // takes effect 300 ns after: 300 ns apart.
    expect_annotated("flow", b, b2, 200);
    expect_annotated("packet", c, c2, 300);
    for (int i = 0; i < kRequests; ++i)
        expect(a.gpu0.payloads[i].get_response_status() == tlm::TLM_OK_RESPONSE &&
                   b.gpu0.payloads[i].get_response_status() == tlm::TLM_OK_RESPONSE &&
                   c.gpu0.payloads[i].get_response_status() == tlm::TLM_OK_RESPONSE,
               "write " + std::to_string(i) + " answered OK on the three fabrics");
    return eidola::test::verdict();
}
