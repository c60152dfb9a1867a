// Example: four eidolon GPUs on the ideal fabric, wired by hand in plain C++ (no Python).
//
// GPU 0 computes, writes 1 KiB into GPU 1's buffer and raises a flag there; GPU 1 polls that
// flag, then answers the same way. GPUs 2 and 3 have no program and only serve their memory.
// The program checks the finish times against the arithmetic below and exits non-zero if they
// differ, so it doubles as a test (ctest runs it).
#include <cstdio>
#include <vector>

#include <systemc>

#include "eidola/eidolon_gpu.h"
#include "eidola/ideal_fabric.h"
#include "eidola/progress_monitor.h"

using namespace eidola;

namespace {

Op compute_ns(std::int64_t ns) { return Op{std::uint8_t(OpKind::Compute), 0, 0, 0, 0, 0, 0, 0, 0, ns * 1000, 0}; }

Op write(std::int32_t peer, std::uint64_t offset, std::uint64_t nbytes) {
    return Op{std::uint8_t(OpKind::Write), 0, 0, 0, peer, offset, nbytes, 0, 0, 0, 0};
}

Op signal_add(std::int32_t peer, std::uint64_t flag) {
    return Op{std::uint8_t(OpKind::Signal), std::uint8_t(AtomicOp::Add), 0, 0, peer, flag * 8, 8, 1, 0, 0, 0};
}

Op wait_ge(std::uint64_t flag, std::int64_t value, std::int64_t interval_ns) {
    return Op{std::uint8_t(OpKind::Wait), std::uint8_t(Cond::Ge), std::uint8_t(WaitMode::Poll), 1, 0, flag * 8,
              8, value, 0, interval_ns * 1000, interval_ns * 1000};
}

}  // namespace

int sc_main(int, char**) {
    const int n = 4;
    const std::uint64_t buffer = 4096;  // the data buffer starts after the flag page

    ParamSet fabric_params;
    fabric_params.set("latency", 500e-9);
    fabric_params.set("ports", n);
    IdealFabric fabric("fabric", fabric_params);

    AddressMap map{0, std::uint64_t(1) << 40, n};
    fabric.set_address_map(map);
    WindowLayout layout;
    layout.flag_count = 1;

    ProgressMonitor monitor;
    std::vector<std::unique_ptr<EidolonGpu>> gpus;
    for (int i = 0; i < n; ++i) {
        ParamSet p;
        p.set("id", i);
        p.set("workgroups", 1);
        p.set("memory.latency", 300e-9);
        p.set("memory.bandwidth", 1e18);  // so fast that an access occupies the memory for 0 ps
        gpus.push_back(std::make_unique<EidolonGpu>(("gpu" + std::to_string(i)).c_str(), p));
        EidolonGpu& g = *gpus.back();
        g.set_address_map(map);
        g.set_layout(layout);
        g.attach(&monitor);
        monitor.attach(&g.waits());
        g.initiator.bind(fabric.targets[i]);  // one binding per direction, as in any TLM platform
        fabric.initiators[i].bind(g.target);
    }

    const std::vector<Op> ping = {compute_ns(1050), write(1, buffer, 1024), signal_add(1, 0), wait_ge(0, 1, 100)};
    const std::vector<Op> pong = {wait_ge(0, 1, 100), write(0, buffer, 1024), signal_add(0, 0)};
    gpus[0]->load_program(0, ping.data(), ping.size());
    gpus[1]->load_program(0, pong.data(), pong.size());

    sc_core::sc_start();

    // By hand (L = 500 ns fabric, M = 300 ns memory, poll interval 100 ns; accesses take 0 ps of bandwidth).
    // Writes are posted and a signal is a release (it goes once the earlier writes are acknowledged):
    //   GPU 0: compute ends 1050; its 4 packets reach GPU 1 at 1550, are written at 1850, acked at 2350.
    //          The signal leaves at 2350 (GPU 0 starts polling then), is applied at 3150, acked at 3650.
    //   GPU 1: polls complete at 300 + 400k ns; the one at 3100 sees 0, the one at 3500 sees 1.
    //          Its write is acked at 3500 + 500 + 300 + 500 = 4800; its signal is applied at 5600, acked at
    //          6100, when GPU 1's program ends (a program ends when its writes are acknowledged).
    //   GPU 0: polls from 2350 complete at 2650 + 400k; the one at 5450 sees 0, the one at 5850 sees 1.
    const std::uint64_t ns = 1000;
    struct Check { const char* what; std::uint64_t got, want; } checks[] = {
        {"gpu0 finish (ps)", gpus[0]->finish_ps(), 5850 * ns},
        {"gpu1 finish (ps)", gpus[1]->finish_ps(), 6100 * ns},
        {"gpu1 flag reads", gpus[1]->memory().counters().flag_reads, 9},   // completions at 300 .. 3500
        {"gpu0 flag reads", gpus[0]->memory().counters().flag_reads, 9},   // completions at 2650 .. 5850
        {"gpu0 bytes sent", gpus[0]->bytes_sent(), 1024 + 8},
        {"gpu1 bytes received", gpus[1]->bytes_received(), 1024 + 8},
        {"gpu2 flag reads", gpus[2]->memory().counters().flag_reads, 0},
        {"deadlocked", monitor.deadlocked(), 0},
    };
    int failures = 0;
    for (const Check& c : checks) {
        bool ok = c.got == c.want;
        failures += !ok;
        std::printf("%-22s %12llu  expected %12llu  %s\n", c.what, (unsigned long long)c.got,
                    (unsigned long long)c.want, ok ? "ok" : "MISMATCH");
    }
    return failures == 0 ? 0 : 1;
}
