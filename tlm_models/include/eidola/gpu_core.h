// What the three parts of an EidolonGpu share: its identity, address map, memory, SyncMon log and
// the one event heap that drives them all. The parts (WorkgroupEngine, GpuInitiator, GpuTarget)
// call each other directly, so no virtual call is added on the per-transaction path.
#pragma once

#include <cstdint>

#include <systemc>

#include "eidola/address_map.h"
#include "eidola/errors.h"
#include "eidola/event_heap.h"
#include "eidola/gpu_memory.h"
#include "eidola/packet_pool.h"
#include "eidola/syncmon.h"

namespace eidola {

class ProgressMonitor;

/// What a GPU's event heap can hold; EidolonGpu::on_event hands each to the part that owns it.
enum class GpuActionKind : std::uint8_t {
    // WorkgroupEngine
    Resume, HoldDone, ArmDone, WaitDone, Recheck, PollIssue, PollDone, QuietWatch, Launch,
    // GpuInitiator
    Issue, EndReq, Response, Watchdog, Drained, TrainDone,
    // GpuTarget
    Serve, NextResponse, Land,
    // TrafficGenerator
    Generate,
};

/// One scheduled action.
struct GpuAction {
    GpuActionKind kind;         ///< what to do
    std::uint32_t arg;          ///< workgroup or incoming slot
    Packet* packet = nullptr;   ///< for Response
};

/// State shared by the parts of one GPU; owned by its EidolonGpu.
struct GpuCore {
    /// `run(gpu)` drains the GPU's due actions (see EventHeap).
    GpuCore(void* gpu, void (*run)(void*), const sc_core::sc_object& owner, const ErrorReporter& reporter)
        : actions(gpu, run), owner(owner), reporter(reporter) {}

    std::uint32_t index = 0;              ///< this GPU's window in the address map
    AddressMap map;                       ///< the platform's address map
    GpuMemory memory{0, 1};               ///< this GPU's memory (flags and traffic counters)
    SyncMon syncmon;                      ///< the monitor log of watched flags
    EventHeap<GpuAction> actions;         ///< every part's pending actions, in time order
    ProgressMonitor* monitor = nullptr;   ///< deadlock detection across GPUs (none when used alone)
    std::uint64_t watchdog_ps = 0;        ///< how long silence may last before a stall or quiet-wait check
    const sc_core::sc_object& owner;      ///< the EidolonGpu, for names in reports
    const ErrorReporter& reporter;        ///< where the parts report failures

    bool running = false;                 ///< EidolonGpu::on_event is draining the actions
    bool started = false;                 ///< EidolonGpu::on_event has started the workgroups (beside
                                          ///< `running`: both are read on every run of the GPU)

    /// Has the GPU run its issue loop at the current time (see EventHeap::wake_now). Why not
    /// always an Issue action: responses and END_REQs mostly arrive from the fabric's process,
    /// and there the action was only stored, popped and dropped.
    void issue_soon() {
        if (running) actions.push(now_ps(), {GpuActionKind::Issue, 0});
        else actions.wake_now();
    }
    /// Reports a model error (it stops the run).
    void fail(const std::string& what) const { reporter.errors().report(ErrorKind::ModelError, what); }
    /// The owner's hierarchical name.
    std::string name() const { return owner.name(); }
};

}  // namespace eidola
