// A C++-only driver for profiling (callgrind, perf): N eidolon GPUs on the ideal fabric, each of
// W workgroups writing `bytes` to each of 4 neighbours, signalling them and waiting with SyncMon.
// No Python, so valgrind can run it. Usage: eidola_scale_driver GPUS [WORKGROUPS] [BYTES] [ideal|torus|mi300x]
// ("torus": the packet fabric as a 2D torus, the squarest that fits, with its default links;
// "mi300x": fully connected with platforms/mi300x-8gpu.yaml's links, switches and outstanding limit.)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <systemc>

#include "eidola/program.h"
#include "eidola/simulation.h"

using namespace eidola;

int sc_main(int argc, char** argv) {
    const int gpus = argc > 1 ? std::atoi(argv[1]) : 1024;
    const int wgs = argc > 2 ? std::atoi(argv[2]) : 4;
    const std::uint64_t bytes = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 4096;
    const std::string fabric = argc > 4 ? argv[4] : "ideal";
    const int neighbors = 4;
    Simulation sim("scale");
    sim.set_address_map(0, std::uint64_t(1) << 40, std::uint32_t(gpus));
    for (int g = 0; g < gpus; ++g) {
        ParamSet p;
        p.set("id", g);
        p.set("workgroups", wgs);
        p.set("syncmon.entries", wgs);
        if (fabric == "mi300x") p.set("max_outstanding", 2048);
        sim.add("EidolonGpu", "gpu" + std::to_string(g), p);
    }
    ParamSet f;
    f.set("ports", gpus);
    if (fabric == "torus") {
        f.set_choice("topology", "torus2d");
        sim.add("PacketFabric", "fabric", f);
    } else if (fabric == "mi300x") {
        f.set_choice("topology", "fully_connected");
        f.set("link.latency", 250e-9);
        f.set("link.header", 85);
        f.set("link.ack", 16);
        f.set("switch.latency", 100e-9);
        f.set_choice("switch.buffer", "128");
        sim.add("PacketFabric", "fabric", f);
    } else {
        sim.add("IdealFabric", "fabric", f);
    }
    for (int g = 0; g < gpus; ++g) {
        sim.bind("gpu" + std::to_string(g) + ".initiator", "fabric.targets[" + std::to_string(g) + "]");
        sim.bind("fabric.initiators[" + std::to_string(g) + "]", "gpu" + std::to_string(g) + ".target");
    }
    std::vector<std::string> flags;
    for (int w = 0; w < wgs; ++w) flags.push_back("nx_w" + std::to_string(w));
    sim.set_flags(flags);
    const std::uint64_t buffer = ((std::uint64_t(wgs) * 8 + 4095) / 4096) * 4096;
    std::vector<Op> ops;
    std::vector<ProgramEntry> programs;
    for (int g = 0; g < gpus; ++g)
        for (int w = 0; w < wgs; ++w) {
            const std::int64_t first = std::int64_t(ops.size());
            for (int k = 1; k <= neighbors; ++k)
                ops.push_back(Op{std::uint8_t(OpKind::Write), 0, 0, 0, (g + k) % gpus, buffer, bytes, 0, 0, 0, 0});
            for (int k = 1; k <= neighbors; ++k)
                ops.push_back(Op{std::uint8_t(OpKind::Signal), std::uint8_t(AtomicOp::Add), 0, 0, (g + k) % gpus,
                                 std::uint64_t(w) * 8, 8, 1, 0, 0, 0});
            ops.push_back(Op{std::uint8_t(OpKind::Wait), std::uint8_t(Cond::Ge), std::uint8_t(WaitMode::SyncMon), 1, 0,
                             std::uint64_t(w) * 8, 8, neighbors, 0, 100000, 1600000});
            programs.push_back(ProgramEntry{g, w, first, std::int64_t(ops.size()) - first});
        }
    sim.load_programs(reinterpret_cast<std::uintptr_t>(ops.data()), ops.size(),
                      reinterpret_cast<std::uintptr_t>(programs.data()), programs.size());
    const auto t0 = std::chrono::steady_clock::now();
    const int status = sim.run();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    Table t = sim.table("gpus");
    double packets = 0;
    for (std::size_t r = 0; r < t.rows(); ++r) packets += t.values[r * t.columns.size() + 8];
    std::printf("{\"gpus\": %d, \"status\": %d, \"seconds\": %.4f, \"transactions\": %.0f, \"events\": %llu}\n", gpus,
                status, s, packets, (unsigned long long)sim.events());
    return status;
}
