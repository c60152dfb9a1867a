// A C++-only driver for profiling the flow fabric (callgrind, perf): bench/flow_fabric.py's
// scaling case without Python, so valgrind can run it. platforms/switch-8gpu.yaml with
// `fabric.model: flow` and `gpus.count: GPUS`; each GPU's 4 workgroups, ROUNDS times, write
// 64 KiB to each of the next 4 GPUs with a signal after each write, then wait (SyncMon) for
// their neighbours' signals. The ops, parameters and address map are what the Python bridge
// builds for that profile and platform, so the kernel time equals eidola.simulate's.
// Usage: eidola_flow_scale_driver GPUS ROUNDS [SKEW_NS [BYTES [RESPONSES]]] (RESPONSES: first, the default, or fair)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include <sys/resource.h>

#include <systemc>

#include "eidola/program.h"
#include "eidola/simulation.h"

using namespace eidola;

int sc_main(int argc, char** argv) {
    const int gpus = argc > 1 ? std::atoi(argv[1]) : 1024;
    const int rounds = argc > 2 ? std::atoi(argv[2]) : 4;
    // SKEW_NS > 0: each workgroup computes a different time, up to SKEW_NS, before each round's
    // writes, so the GPUs' flows start and end at different times (the Python bench has none).
    const double skew_ns = argc > 3 ? std::atof(argv[3]) : 0.0;
    const int wgs = 4, neighbours = 4;
    const std::uint64_t chunk = argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 64 << 10;  // bytes per write
    const char* responses = argc > 5 ? argv[5] : "first";  // fabric.flow.responses, the default (bench/flow_responses.py)
    Simulation sim("flowscale");
    sim.set_address_map(0, std::uint64_t(1) << 40, std::uint32_t(gpus));
    for (int g = 0; g < gpus; ++g) {
        ParamSet p;
        p.set("id", g);
        p.set("workgroups", 304);
        p.set("max_outstanding", 2048);
        p.set("max_payload", 256);
        p.set("memory.latency", 300e-9);
        p.set("memory.bandwidth", 5.3e12);
        p.set("flow", 64 << 20);
        p.set("watchdog", 1.0);
        sim.add("EidolonGpu", "gpu" + std::to_string(g), p);
    }
    ParamSet f;
    f.set_choice("topology", "switch");
    f.set("ports", gpus);
    f.set("link.bandwidth", 100e9);
    f.set("link.latency", 150e-9);
    f.set("link.header", 16);
    f.set("link.count", 4);
    f.set("switch.latency", 100e-9);
    f.set_choice("switch.buffer", "192");
    f.set("switch.vcs", 0);
    f.set("stats.bin", 100e-6);
    f.set_choice("flow.responses", responses);
    sim.add("FlowFabric", "fabric", f);
    for (int g = 0; g < gpus; ++g) {
        sim.bind("gpu" + std::to_string(g) + ".initiator", "fabric.targets[" + std::to_string(g) + "]");
        sim.bind("fabric.initiators[" + std::to_string(g) + "]", "gpu" + std::to_string(g) + ".target");
    }
    std::vector<std::string> flags;
    for (int w = 0; w < wgs; ++w) flags.push_back("got" + std::to_string(w));
    sim.set_flags(flags);
    const std::uint64_t buffer = 4096;  // the flags' page, then the halo buffer
    std::vector<Op> ops;
    std::vector<ProgramEntry> programs;
    for (int g = 0; g < gpus; ++g)
        for (int w = 0; w < wgs; ++w) {
            const std::int64_t first = std::int64_t(ops.size());
            for (int r = 0; r < rounds; ++r) {
                if (skew_ns > 0) {  // a fixed pseudo-random spread: the same run every time
                    const std::uint64_t h = (std::uint64_t(g) * 2654435761u + std::uint64_t(w) * 40503u + r * 97u) % 1000u;
                    ops.push_back(Op{std::uint8_t(OpKind::Compute), 0, std::uint8_t(ComputeUnit::Ns), 0, 0, 0, 0, 0, 0,
                                     std::int64_t(skew_ns * 1e3 * double(h) / 1000.0), 0});
                }
                for (int k = 1; k <= neighbours; ++k) {
                    const std::uint64_t offset = buffer + std::uint64_t((k - 1) * wgs + w) * chunk;
                    ops.push_back(Op{std::uint8_t(OpKind::Write), 0, 0, 0, (g + k) % gpus, offset, chunk, 0, 0, 0, 0});
                    ops.push_back(Op{std::uint8_t(OpKind::Signal), std::uint8_t(AtomicOp::Add), 0, 0, (g + k) % gpus,
                                     std::uint64_t(w) * 8, 8, 1, 0, 0, 0});
                }
                ops.push_back(Op{std::uint8_t(OpKind::Wait), std::uint8_t(Cond::Ge), std::uint8_t(WaitMode::SyncMon), 1,
                                 0, std::uint64_t(w) * 8, 8, neighbours * (r + 1), 0, 100000, 1600000});
            }
            programs.push_back(ProgramEntry{g, w, first, std::int64_t(ops.size()) - first});
        }
    sim.load_programs(reinterpret_cast<std::uintptr_t>(ops.data()), ops.size(),
                      reinterpret_cast<std::uintptr_t>(programs.data()), programs.size());
    // Wall time and this process's CPU time (on a shared machine the CPU time is the steadier figure).
    const auto t0 = std::chrono::steady_clock::now();
    const std::clock_t c0 = std::clock();
    const int status = sim.run();
    const double cpu = double(std::clock() - c0) / CLOCKS_PER_SEC;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    Table t = sim.table("gpus");
    double finish_ps = 0;  // the kernel time: the last GPU's finish (column 1)
    for (std::size_t r = 0; r < t.rows(); ++r) finish_ps = std::max(finish_ps, t.values[r * t.columns.size() + 1]);
    rusage usage{};  // peak resident memory of the whole process (the op array too), in KiB on Linux
    getrusage(RUSAGE_SELF, &usage);
    std::printf("{\"gpus\": %d, \"rounds\": %d, \"status\": %d, \"seconds\": %.4f, \"cpu_seconds\": %.4f, \"events\": %llu, "
                "\"kernel_ns\": %.3f, \"max_rss_kb\": %ld}\n",
                gpus, rounds, status, s, cpu, (unsigned long long)sim.events(),
                finish_ps / 1e3, usage.ru_maxrss);
    return status;
}
