// The SystemC kernel's own ceiling on this machine, measured in the same run as Eidola's figures:
//   - a timed wait() loop in one SC_THREAD: events per second;
//   - AT 4-phase transactions through tlm_utils::peq_with_cb_and_phase between a bare
//     initiator/target pair (BEGIN_REQ -> END_REQ, then BEGIN_RESP -> END_RESP): transactions per second.
// Prints one JSON object. Usage: eidola_ceiling waits|at COUNT
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <systemc>
#include <tlm>
#include <tlm_utils/peq_with_cb_and_phase.h>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

namespace {

long g_events = 2000000, g_transactions = 1000000;

struct Waiter : sc_core::sc_module {
    SC_HAS_PROCESS(Waiter);
    explicit Waiter(sc_core::sc_module_name n) : sc_module(n) { SC_THREAD(run); }
    void run() {
        for (long i = 0; i < g_events; ++i) wait(1, sc_core::SC_NS);
    }
};

struct Target : sc_core::sc_module {
    tlm_utils::simple_target_socket<Target> socket{"socket"};
    tlm_utils::peq_with_cb_and_phase<Target> peq{this, &Target::on_phase};
    explicit Target(sc_core::sc_module_name n) : sc_module(n) { socket.register_nb_transport_fw(this, &Target::fw); }
    tlm::tlm_sync_enum fw(tlm::tlm_generic_payload& t, tlm::tlm_phase& p, sc_core::sc_time& d) {
        peq.notify(t, p, d);
        return tlm::TLM_ACCEPTED;
    }
    void on_phase(tlm::tlm_generic_payload& t, const tlm::tlm_phase& p) {
        if (p != tlm::BEGIN_REQ) return;  // END_RESP closes the transaction
        tlm::tlm_phase phase = tlm::END_REQ;
        sc_core::sc_time delay(1, sc_core::SC_NS);
        socket->nb_transport_bw(t, phase, delay);
        t.set_response_status(tlm::TLM_OK_RESPONSE);
        phase = tlm::BEGIN_RESP;
        delay = sc_core::sc_time(2, sc_core::SC_NS);
        socket->nb_transport_bw(t, phase, delay);
    }
};

struct Initiator : sc_core::sc_module {
    tlm_utils::simple_initiator_socket<Initiator> socket{"socket"};
    tlm_utils::peq_with_cb_and_phase<Initiator> peq{this, &Initiator::on_phase};
    tlm::tlm_generic_payload payload;
    unsigned char data[8] = {};
    long done = 0;
    SC_HAS_PROCESS(Initiator);
    explicit Initiator(sc_core::sc_module_name n) : sc_module(n) {
        socket.register_nb_transport_bw(this, &Initiator::bw);
        payload.set_data_ptr(data);
        payload.set_data_length(8);
        payload.set_streaming_width(8);
        payload.set_command(tlm::TLM_WRITE_COMMAND);
        SC_METHOD(start);
    }
    void start() { send(); }
    void send() {
        tlm::tlm_phase phase = tlm::BEGIN_REQ;
        sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
        socket->nb_transport_fw(payload, phase, delay);
    }
    tlm::tlm_sync_enum bw(tlm::tlm_generic_payload& t, tlm::tlm_phase& p, sc_core::sc_time& d) {
        peq.notify(t, p, d);
        return tlm::TLM_ACCEPTED;
    }
    void on_phase(tlm::tlm_generic_payload& t, const tlm::tlm_phase& p) {
        if (p != tlm::BEGIN_RESP) return;
        tlm::tlm_phase phase = tlm::END_RESP;
        sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
        socket->nb_transport_fw(t, phase, delay);
        if (++done < g_transactions) send();
    }
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int sc_main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "waits";
    const long count = argc > 2 ? std::atol(argv[2]) : 1000000;
    const auto t0 = std::chrono::steady_clock::now();
    if (mode == "waits") {
        g_events = count;
        Waiter waiter("waiter");
        sc_core::sc_start();
        std::printf("{\"mode\": \"waits\", \"count\": %ld, \"seconds\": %.6f}\n", count, seconds_since(t0));
    } else {
        g_transactions = count;
        Initiator initiator("initiator");
        Target target("target");
        initiator.socket.bind(target.socket);
        sc_core::sc_start();
        std::printf("{\"mode\": \"at\", \"count\": %ld, \"seconds\": %.6f}\n", initiator.done, seconds_since(t0));
    }
    return 0;
}
