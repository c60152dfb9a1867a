// Per-model C++ tests: each expected value is worked out by hand in the comment beside it.
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

#include <systemc>
#include <tlm>

#include "eidola/address_map.h"
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
    Params p(IdealFabric::param_specs(), given, "fabric");
    expect(p.time("latency") == sc_core::sc_time(2, sc_core::SC_US), "given value overrides the default");
    expect(p.integer("ports") == 4, "absent value takes the declared default");
    ParamSet bad;
    bad.set("latencyy", 1e-9);
    bool threw = false;
    try {
        Params q(IdealFabric::param_specs(), bad, "fabric");
    } catch (const std::invalid_argument& e) {
        threw = std::string(e.what()).find("latencyy") != std::string::npos;
    }
    expect(threw, "unknown parameter is refused by name");
    ParamSet negative;
    negative.set("latency", -1e-9);
    threw = false;
    try {
        Params q(IdealFabric::param_specs(), negative, "fabric");
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
}

}  // namespace

int sc_main(int, char**) {
    test_memory_timing();
    test_memory_contents();
    test_address_map();
    test_params();
    test_catalog();
    std::printf("%d failed\n", g_failures);
    return g_failures ? 1 : 0;
}
