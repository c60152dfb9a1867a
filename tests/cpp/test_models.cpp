// Per-model C++ tests: each expected value is worked out by hand in the comment beside it.
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

#include <systemc>
#include <tlm>

#include "eidola/address_map.h"
#include "eidola/eidolon_gpu.h"
#include "eidola/errors.h"
#include "eidola/atomic_extension.h"
#include "eidola/gpu_memory.h"
#include "eidola/ideal_fabric.h"
#include "eidola/params.h"
#include "eidola/registry.h"

using namespace eidola;

namespace {

int g_failures = 0;

void expect(bool ok, const std::string& what) {
    if (!ok) {
        ++g_failures;
        std::printf("FAIL: %s\n", what.c_str());
    } else {
        std::printf("ok:   %s\n", what.c_str());
    }
}

void test_memory_timing() {
    // 1 B/ps bandwidth, 300 ns latency. Three 256-byte accesses arriving together are served in turn:
    // done = 256k ps of occupancy + 300 000 ps, for k = 1, 2, 3.
    GpuMemory m(300000, 1e12);
    expect(m.schedule(0, 256) == 256 + 300000, "first access: occupancy + latency");
    expect(m.schedule(0, 256) == 512 + 300000, "second access queues behind the first");
    expect(m.schedule(0, 256) == 768 + 300000, "third access queues behind both");
    // An access arriving after the memory is free starts at once: 1 000 000 + 8 + 300 000.
    expect(m.schedule(1000000, 8) == 1000000 + 8 + 300000, "idle memory serves at arrival");
}

void test_streamed_read_leaves_the_queue_to_others() {
    // 1 B/ps, 300 ns latency. A streamed 1 MiB read (4,096 packets of 256 B) arriving at 0: its earlier bytes are
    // served beside the queue, its last 256 in it, so it is done at 1 MiB of occupancy + latency, as one access
    // would be: 1 048 576 + 300 000.
    GpuMemory m(300000, 1e12);
    expect(m.schedule_streamed(0, 1 << 20, 256) == (1 << 20) + 300000, "a streamed read alone: occupancy + latency");
    // An 8-byte write arriving at 10 ns waits only for the read's last packet in the queue (done at 256): it is
    // served at its arrival, 10 000 + 8 + 300 000, not after the whole read (1 048 576 + 8 + 300 000).
    expect(m.schedule(10000, 8) == 10000 + 8 + 300000, "a write beside a streamed read is not held up by it");
    // A second streamed read at 0 follows the first on the background timeline, which the first's earlier bytes
    // hold until 1 048 320 (its last 256 went through the queue): its own earlier ones until 2 096 640, its last
    // packet 256 later, then the latency: 2 096 896 + 300 000.
    expect(m.schedule_streamed(0, 1 << 20, 256) == 2096896 + 300000, "streamed reads share the bandwidth");
}

void test_memory_contents() {
    GpuMemory m(0, 1e12);
    m.set_flag_count(2);
    AtomicExtension add;
    add.op = AtomicOp::Add;
    add.operand = 5;
    m.local_atomic(1, add);
    m.local_atomic(1, add);
    expect(m.peek_flag(1) == 10, "two atomic adds of 5 give 10");
    AtomicExtension cas;
    cas.op = AtomicOp::Cas;
    cas.compare = 3;
    cas.operand = 7;
    m.local_atomic(1, cas);
    expect(m.peek_flag(1) == 10, "compare-swap with a wrong expected value changes nothing");
    cas.compare = 10;
    m.local_atomic(1, cas);
    expect(m.peek_flag(1) == 7, "compare-swap with the right expected value stores");

    // A plain 8-byte write to flag 0 through a payload, then a read back.
    tlm::tlm_generic_payload t;
    std::int64_t value = 42;
    t.set_command(tlm::TLM_WRITE_COMMAND);
    t.set_data_ptr(reinterpret_cast<unsigned char*>(&value));
    t.set_data_length(8);
    m.perform(t, 0);
    expect(m.peek_flag(0) == 42, "plain write stores into a flag word");
    std::int64_t back = 0;
    t.set_command(tlm::TLM_READ_COMMAND);
    t.set_data_ptr(reinterpret_cast<unsigned char*>(&back));
    m.perform(t, 0);
    expect(back == 42 && m.counters().flag_reads == 1, "read of a flag returns it and counts a flag read");
    unsigned char data[64];
    std::memset(data, 0xff, sizeof data);
    t.set_data_ptr(data);
    t.set_data_length(64);
    m.perform(t, 4096);
    expect(data[0] == 0 && data[63] == 0 && m.counters().reads == 1, "data reads return zeros, counted apart");
}

void test_address_map() {
    AddressMap map{0x1000000000000ull, 1ull << 40, 4};
    expect(map.window_of(map.global(2, 123)) == 2, "global address of GPU 2 decodes to window 2");
    expect(map.window_of(map.global(4, 0)) == -1, "address past the last window is outside the map");
    expect(map.local(map.global(3, 4096)) == 4096, "global address masks to its window offset");
    expect(map.local(4096) == 4096, "window-local address passes through");
}

void test_params() {
    ParamSet given;
    given.set("latency", 2e-6);
    const Configured<IdealFabric::Params> p(given, "fabric");
    expect(p.latency.get() == sc_core::sc_time(2, sc_core::SC_US), "given value overrides the default");
    expect(p.ports.get() == 4, "absent value takes the declared default");
    expect(p.specs().size() == 5 && p.specs()[0].name == "latency" && p.specs()[2].name == "stats.bin" &&
               p.specs()[3].name == "stats.max_bins" && p.specs()[4].name == "arrival",
           "the catalog's specs come from the members");
    ParamSet bad;
    bad.set("latencyy", 1e-9);
    bool threw = false;
    try {
        Configured<IdealFabric::Params> q(bad, "fabric");
    } catch (const std::invalid_argument& e) {
        threw = std::string(e.what()).find("latencyy") != std::string::npos;
    }
    expect(threw, "unknown parameter is refused by name");
    ParamSet negative;
    negative.set("latency", -1e-9);
    threw = false;
    try {
        Configured<IdealFabric::Params> q(negative, "fabric");
    } catch (const std::invalid_argument& e) {
        threw = std::string(e.what()).find("out of range") != std::string::npos;
    }
    expect(threw, "out-of-range value is refused");
}

void test_catalog() {
    const std::string json = catalog_json();
    expect(json.find("\"EidolonGpu\"") != std::string::npos && json.find("\"IdealFabric\"") != std::string::npos,
           "catalog lists the registered models");
    expect(json.find("\"memory.latency\"") != std::string::npos, "catalog lists EidolonGpu's parameters");
    expect(json.find("\"name\": \"EidolonGpu\", \"role\": \"gpu\"") != std::string::npos, "catalog gives each model's role");
    expect(json.find("\"FaultInjector\"") == std::string::npos, "test models are not in the product library");
    expect(json.find("\"cond\": [\"==\", \"!=\", \">=\", \">\", \"<=\", \"<\"]") != std::string::npos,
           "catalog lists the shared enums' value names");
    expect(json.find("\"workgroups\": [\"gpu\", \"wg\", \"finish_ps\"") != std::string::npos,
           "catalog lists the result tables' columns");
}

void test_error_verdict() {
    ErrorCollector errors;
    errors.report(ErrorKind::Stall, "stall: no response");
    errors.report(ErrorKind::ModelError, "first model error");
    errors.report(ErrorKind::FabricDeadlock, "fabric deadlock");
    errors.report(ErrorKind::ModelError, "second model error");
    expect(errors.verdict() && errors.verdict()->kind == ErrorKind::FabricDeadlock,
           "the most telling kind is the verdict, whatever the order of reports");
    expect(std::string(error_kind_name(errors.verdict()->kind)) == "fabric deadlock", "kinds keep their harness names");
    expect(errors.first(ErrorKind::ModelError)->text == "first model error", "the first report of a kind is kept");
}

/// An LT initiator: one b_transport write of 256 bytes into GPU 1, through the ideal fabric.
struct LtInitiator : sc_core::sc_module {
    tlm::tlm_initiator_socket<> socket{"socket"};
    sc_core::sc_time delay_seen;
    tlm::tlm_response_status status = tlm::TLM_INCOMPLETE_RESPONSE;
    struct NoBackward : tlm::tlm_bw_transport_if<> {
        tlm::tlm_sync_enum nb_transport_bw(tlm::tlm_generic_payload&, tlm::tlm_phase&, sc_core::sc_time&) override {
            return tlm::TLM_COMPLETED;
        }
        void invalidate_direct_mem_ptr(sc_dt::uint64, sc_dt::uint64) override {}
    } backward;
    /// Stands in GPU 0's place on the fabric, so its port has a target; nothing is sent to it.
    tlm::tlm_target_socket<> target{"target"};
    struct NoForward : tlm::tlm_fw_transport_if<> {
        tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload& t, tlm::tlm_phase&, sc_core::sc_time&) override {
            t.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
            return tlm::TLM_COMPLETED;
        }
        void b_transport(tlm::tlm_generic_payload& t, sc_core::sc_time&) override {
            t.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
        }
        bool get_direct_mem_ptr(tlm::tlm_generic_payload&, tlm::tlm_dmi&) override { return false; }
        unsigned int transport_dbg(tlm::tlm_generic_payload&) override { return 0; }
    } forward;
    SC_HAS_PROCESS(LtInitiator);
    explicit LtInitiator(sc_core::sc_module_name n) : sc_module(n) {
        socket.bind(backward);
        target.bind(forward);
        SC_THREAD(run);
    }
    void run() {
        unsigned char data[256] = {};
        tlm::tlm_generic_payload t;
        t.set_command(tlm::TLM_WRITE_COMMAND);
        t.set_address((1ull << 40) + 8192);  // GPU 1's window, a data buffer
        t.set_data_ptr(data);
        t.set_data_length(256);
        t.set_streaming_width(256);
        sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
        socket->b_transport(t, delay);
        delay_seen = delay;
        status = t.get_response_status();
    }
};

// Elaborates a small platform, so it must run last (SystemC elaborates once per process).
void test_lt_path_through_ideal_fabric() {
    // The fabric's target answers b_transport as well as the AT phases: an LT write into GPU 1
    // costs L (out) + 256 B at 1 B/ps + M (memory) + L (back) = 500 + 0.256 + 300 + 500 ns.
    ParamSet fp;
    fp.set("latency", 500e-9);
    fp.set("ports", 2);
    IdealFabric fabric("lt_fabric", fp);
    AddressMap map{0, 1ull << 40, 2};
    fabric.set_address_map(map);
    LtInitiator lt("lt");
    ParamSet gp;
    gp.set("id", 1);
    gp.set("workgroups", 1);
    gp.set("memory.bandwidth", 1e12);
    EidolonGpu gpu1("lt_gpu1", gp);
    gpu1.set_address_map(map);
    lt.socket.bind(fabric.targets[0]);
    fabric.initiators[0].bind(lt.target);
    gpu1.initiator.bind(fabric.targets[1]);
    fabric.initiators[1].bind(gpu1.target);
    sc_core::sc_start();
    expect(lt.status == tlm::TLM_OK_RESPONSE, "LT write through the ideal fabric succeeds");
    expect(lt.delay_seen.value() == 500000 + 256 + 300000 + 500000, "LT write costs L + occupancy + M + L");
    expect(gpu1.memory().counters().writes == 1 && gpu1.bytes_received() == 256,
           "the GPU's target counts the LT write");
}

}  // namespace

int sc_main(int, char**) {
    test_memory_timing();
    test_streamed_read_leaves_the_queue_to_others();
    test_memory_contents();
    test_address_map();
    test_params();
    test_catalog();
    test_error_verdict();
    test_lt_path_through_ideal_fabric();
    std::printf("%d failed\n", g_failures);
    return g_failures ? 1 : 0;
}
