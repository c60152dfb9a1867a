#include "eidola/eidolon_gpu.h"

#include "eidola/progress_monitor.h"

namespace eidola {

namespace {

EngineConfig engine_config(const EidolonGpuParams& p) {
    EngineConfig c;
    c.workgroups = std::uint32_t(p.workgroups.get());
    c.ps_per_cycle = 1e12 / p.clock.get();
    c.check_in_monitor = p.syncmon_check_in_monitor.get();
    c.wake_latency_ps = p.syncmon_wake_latency.get().value();
    return c;
}

InitiatorConfig initiator_config(const EidolonGpuParams& p) {
    InitiatorConfig c;
    c.workgroups = std::uint32_t(p.workgroups.get());
    c.max_outstanding = std::uint32_t(p.max_outstanding.get());
    c.max_payload = p.max_payload.get();
    c.train = std::uint32_t(p.train.get());
    c.flow = p.flow.get();
    // A packet's service at the target (assumed a GPU like this one), for a flow fabric's window.
    c.turnaround_ps = p.memory_latency.get().value() +
                      std::uint64_t(double(c.max_payload) * 1e12 / p.memory_bandwidth.get() + 0.5);
    return c;
}

}  // namespace

EidolonGpu::EidolonGpu(sc_core::sc_module_name name, const ParamSet& given)
    : EidolonGpu(name, Configured<Params>(given, static_cast<const char*>(name))) {}

EidolonGpu::EidolonGpu(sc_core::sc_module_name name, const Params& p)
    : sc_module(name),
      m_core(this, [](void* gpu) { static_cast<EidolonGpu*>(gpu)->on_event(); }, *this, *this),
      m_engine(m_core, engine_config(p)),
      m_initiator(m_core, m_engine, initiator, initiator_config(p)),
      m_target(m_core, m_engine, target) {
    m_core.index = std::uint32_t(p.id.get());
    m_core.memory.configure(p.memory_latency.get().value(), p.memory_bandwidth.get());
    m_core.syncmon.set_capacity(std::uint64_t(p.syncmon_entries.get()));
    m_core.watchdog_ps = p.watchdog.get().value();
    m_launch_ps = p.launch.get().value();
    m_engine.connect(m_initiator);
    initiator.bind(m_initiator);
    target.bind(m_target);
    m_core.actions.wake_at_start();  // start every workgroup at time 0, in the calendar's first run
}

void EidolonGpu::set_traffic(const TrafficSpec& spec, std::vector<std::int32_t> destinations, std::uint32_t gpus) {
    m_traffic = std::make_unique<TrafficGenerator>(m_core, spec, std::move(destinations), gpus);
    m_initiator.attach_traffic(m_traffic.get());
}

// The one process of the GPU: runs every due action of every part, then packetises.
void EidolonGpu::on_event() {
    const std::uint64_t now = now_ps();
    if (!m_core.started) {  // the first run, at time 0, starts every workgroup (after the kernel launch)
        m_core.started = true;
        if (m_launch_ps == 0) m_engine.start_all();
        else m_core.actions.push(m_launch_ps, {GpuActionKind::Launch, 0});
        if (m_traffic) m_traffic->start();  // synthetic traffic is no kernel: it starts at time 0
    }
    GpuAction a;
    m_core.running = true;
    while (m_core.actions.pop_due(now, a)) {
        switch (a.kind) {
            case GpuActionKind::Resume: m_engine.resume(a.arg); break;
            case GpuActionKind::HoldDone: m_engine.hold_done(a.arg); break;
            case GpuActionKind::ArmDone: m_engine.arm_done(a.arg); break;
            case GpuActionKind::WaitDone: m_engine.end_wait(a.arg); break;
            case GpuActionKind::Recheck: m_engine.recheck_done(a.arg); break;
            case GpuActionKind::PollIssue: m_engine.issue_poll(a.arg); break;
            case GpuActionKind::PollDone: m_engine.poll_done(a.arg); break;
            case GpuActionKind::QuietWatch: m_engine.quiet_watch(); break;
            case GpuActionKind::Launch: m_engine.start_all(); break;
            case GpuActionKind::Issue: break;  // try_issue below
            case GpuActionKind::EndReq: m_initiator.end_request(); break;
            case GpuActionKind::Response: m_initiator.response_arrived(a.packet); break;
            case GpuActionKind::TrainDone: m_initiator.train_done(a.packet); break;
            case GpuActionKind::Watchdog: m_initiator.watchdog(); break;
            case GpuActionKind::Drained: m_engine.writes_drained(a.arg); break;
            case GpuActionKind::Serve: m_target.serve(a.arg); break;
            case GpuActionKind::NextResponse: m_target.next_response(); break;
            case GpuActionKind::Land: m_target.land(a.arg); break;
            case GpuActionKind::Generate:
                if (m_traffic->create()) m_initiator.traffic_queued();
                break;
        }
    }
    m_initiator.try_issue();
    m_core.running = false;
    m_core.actions.rearm(now);
}

namespace {
const bool registered = register_model(model_info<EidolonGpu>(
    "EidolonGpu", Role::Gpu,
    "A GPU reduced to its traffic: replays a timing profile per workgroup over real TLM-2.0 transactions"));
}  // namespace

}  // namespace eidola
