#include "eidola/eidolon_gpu.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "eidola/progress_monitor.h"
#include "eidola/registry.h"

namespace eidola {

const std::vector<ParamSpec>& EidolonGpu::param_specs() {
    static const std::vector<ParamSpec> specs = {
        {"id", ParamType::Int, 0, "index of this GPU in the address map (GPU i owns window i)", 0, 1 << 20},
        {"clock", ParamType::Frequency, 2.1e9, "core clock; converts compute(cycles=...) into time", 1e6, 1e12},
        {"workgroups", ParamType::Int, 304, "resident workgroups (one program each)", 1, 1 << 20},
        {"max_outstanding", ParamType::Int, 64, "fabric transactions in flight at once, all workgroups together", 1,
         1 << 20},
        {"max_payload", ParamType::Size, 256, "largest transaction; writes and reads are split into packets of this size",
         8, 1 << 30},
        {"memory.latency", ParamType::Time, 300e-9, "latency of an access to this GPU's memory", 0, 1.0},
        {"memory.bandwidth", ParamType::Bandwidth, 5.3e12, "bandwidth of this GPU's memory (accesses are served in turn)",
         1e3, 1e18},
        {"syncmon.entries", ParamType::Int, 64,
         "addresses the SyncMon log can watch at once; a waiter that finds it full polls instead", 0, 1 << 24},
        {"syncmon.check_in_monitor", ParamType::Bool, 1,
         "the monitor evaluates each waiter's condition (true), or wakes on any write and the waiter re-reads (false)",
         0, 1},
        {"syncmon.wake_latency", ParamType::Time, 0, "from the satisfying write to the woken workgroup running again", 0,
         1.0},
        {"watchdog", ParamType::Time, 1e-3,
         "transactions outstanding this long with no response arriving stop the run with a stall report", 1e-9, 1e3},
    };
    return specs;
}

EidolonGpu::EidolonGpu(sc_core::sc_module_name name, const ParamSet& given)
    : sc_module(name),
      initiator("initiator"),
      target("target"),
      m_index(0),
      m_ps_per_cycle(0),
      m_max_outstanding(0),
      m_max_payload(0),
      m_memory(0, 1),
      m_check_in_monitor(true),
      m_wake_latency_ps(0),
      m_actions(m_event),
      m_pool(0) {
    Params p(param_specs(), given, std::string(basename()));
    m_index = std::uint32_t(p.integer("id"));
    m_ps_per_cycle = 1e12 / p.number("clock");
    m_max_outstanding = std::uint32_t(p.integer("max_outstanding"));
    m_max_payload = std::uint64_t(p.integer("max_payload"));
    m_memory.configure(p.time("memory.latency").value(), p.number("memory.bandwidth"));
    m_pool.set_max_payload(m_max_payload);
    m_syncmon.set_capacity(std::uint64_t(p.integer("syncmon.entries")));
    m_check_in_monitor = p.flag("syncmon.check_in_monitor");
    m_wake_latency_ps = p.time("syncmon.wake_latency").value();
    m_watchdog_ps = p.time("watchdog").value();
    m_wgs.resize(std::size_t(p.integer("workgroups")));

    initiator.bind(*static_cast<tlm::tlm_bw_transport_if<>*>(this));
    target.bind(*static_cast<tlm::tlm_fw_transport_if<>*>(this));
    SC_METHOD(on_event);
    sensitive << m_event;
}

void EidolonGpu::set_layout(const WindowLayout& layout) { m_memory.set_flag_count(layout.flag_count); }

void EidolonGpu::load_program(std::uint32_t wg, const Op* ops, std::uint64_t count) {
    if (wg >= m_wgs.size()) {
        std::ostringstream msg;
        msg << name() << ": workgroup " << wg << " does not exist (it has " << m_wgs.size() << ")";
        throw std::out_of_range(msg.str());
    }
    Workgroup& g = m_wgs[wg];
    if (g.state == WgState::Idle && count > 0) {
        ++m_unfinished;
        if (m_monitor) m_monitor->workgroup_started();
    }
    g.ops = ops;
    g.count = count;
    g.pc = 0;
    g.state = count > 0 ? WgState::Ready : WgState::Idle;
}

void EidolonGpu::on_event() {
    const std::uint64_t now = now_ps();
    if (!m_started) {  // the method's initialisation run at time 0 starts every workgroup
        m_started = true;
        for (std::uint32_t w = 0; w < m_wgs.size(); ++w) run_workgroup(w);
    }
    Action a;
    while (m_actions.pop_due(now, a)) {
        switch (a.kind) {
            case ActionKind::Resume:
                advance(a.arg);
                run_workgroup(a.arg);
                break;
            case ActionKind::HoldDone:
                m_wgs[a.arg].state = WgState::Ready;
                run_workgroup(a.arg);
                break;
            case ActionKind::ArmDone: arm_done(a.arg); break;
            case ActionKind::WaitDone: end_wait(a.arg); break;
            case ActionKind::Recheck: recheck_done(a.arg); break;
            case ActionKind::Watchdog: watchdog(); break;
            case ActionKind::QuietWatch: quiet_watch(); break;
            case ActionKind::PollIssue: issue_poll(a.arg); break;
            case ActionKind::PollDone: poll_done(a.arg); break;
            case ActionKind::Serve: serve_incoming(a.arg); break;
            case ActionKind::Issue: break;  // try_issue below
            case ActionKind::EndReq: m_request_pending = nullptr; break;
            case ActionKind::Response: response_arrived(a.packet); break;
            case ActionKind::NextResponse:
                m_response_pending = false;
                if (!m_responses.empty()) {
                    tlm::tlm_generic_payload* t = m_responses.front();
                    m_responses.pop_front();
                    send_response(t);
                }
                break;
        }
    }
    try_issue();
    m_actions.rearm(now);
}

// Completes the current op: records it when tracing, moves to the next.
void EidolonGpu::advance(std::uint32_t w) {
    Workgroup& g = m_wgs[w];
    if (m_tracing) m_trace.push_back(OpRecord{w, std::uint32_t(g.pc), g.op_begin_ps, now_ps()});
    ++g.pc;
    g.held = false;
    g.state = WgState::Ready;
}

void EidolonGpu::run_workgroup(std::uint32_t w) {
    Workgroup& g = m_wgs[w];
    while (g.state == WgState::Ready) {
        if (g.pc == g.count) {
            g.state = WgState::Done;
            g.stats.finish_ps = now_ps();
            m_finish_ps = std::max(m_finish_ps, g.stats.finish_ps);
            --m_unfinished;
            if (m_monitor) m_monitor->workgroup_finished();
            return;
        }
        start_op(w);
    }
}

// Starts the op at the workgroup's pc. Ops that take no time complete here (pc advances and the
// workgroup stays Ready); the others leave it blocked until a Resume action.
void EidolonGpu::start_op(std::uint32_t w) {
    Workgroup& g = m_wgs[w];
    const Op& op = g.ops[g.pc];
    const std::uint64_t now = now_ps();
    g.op_begin_ps = now;  // after a hold, the op begins when the hold ends: the hold reads as compute
    switch (static_cast<OpKind>(op.kind)) {
        case OpKind::Compute: {
            std::uint64_t t = op.mode == 1 ? std::uint64_t(std::llround(double(op.value) * m_ps_per_cycle))
                                           : std::uint64_t(op.time_ps);
            if (t == 0) {
                advance(w);
                return;
            }
            g.state = WgState::Computing;
            m_actions.push(now + t, {ActionKind::Resume, w});
            return;
        }
        case OpKind::Local: {
            std::uint64_t accesses = op.offset + std::uint64_t(op.value);
            m_memory.count_local(op.offset, std::uint64_t(op.value), op.nbytes);
            g.state = WgState::Computing;
            m_actions.push(m_memory.schedule(now, accesses * op.nbytes), {ActionKind::Resume, w});
            return;
        }
        case OpKind::Write:
        case OpKind::Read:
        case OpKind::Signal: {
            if (op.time2_ps > 0 && !g.held) {  // the wake-up delay knob: hold this op back once
                g.held = true;
                g.state = WgState::Computing;
                m_actions.push(now + std::uint64_t(op.time2_ps), {ActionKind::HoldDone, w});
                return;
            }
            if (std::uint32_t(op.peer) == m_index) {
                // A local access never leaves the GPU: it costs a memory access, applied at issue.
                std::uint64_t n = static_cast<OpKind>(op.kind) == OpKind::Signal ? 8 : op.nbytes;
                if (static_cast<OpKind>(op.kind) == OpKind::Signal) {
                    AtomicExtension atomic;
                    atomic.op = static_cast<AtomicOp>(op.sub);
                    atomic.operand = op.value;
                    atomic.compare = op.compare;
                    m_memory.local_atomic(op.offset / 8, atomic);
                    flag_written(op.offset / 8);
                } else {
                    bool is_read = static_cast<OpKind>(op.kind) == OpKind::Read;
                    m_memory.count_local(is_read ? 1 : 0, is_read ? 0 : 1, n);
                }
                g.state = WgState::Computing;
                m_actions.push(m_memory.schedule(now, n), {ActionKind::Resume, w});
                return;
            }
            g.state = WgState::Transferring;
            g.issue_offset = op.offset;
            g.issue_left = static_cast<OpKind>(op.kind) == OpKind::Signal ? 8 : op.nbytes;
            m_issue_queue.push_back(w);
            return;
        }
        case OpKind::Wait: {
            g.state = WgState::Waiting;
            g.wait_since_ps = now;
            g.interval_ps = std::uint64_t(op.time_ps);
            ++m_waiting;
            m_last_flag_change_ps = now;
            if (m_monitor && m_monitor->external_writers() && !m_quiet_watching) {
                m_quiet_watching = true;
                m_actions.push(now + m_watchdog_ps, {ActionKind::QuietWatch, 0});
            }
            if (m_monitor) m_monitor->wait_began();
            if (static_cast<WaitMode>(op.mode) == WaitMode::SyncMon) {
                // monitor(): the arm request travels the memory pipeline like any access.
                m_actions.push(m_memory.schedule(now, 8), {ActionKind::ArmDone, w});
                return;
            }
            issue_poll(w);
            return;
        }
    }
    fail(std::string(name()) + ": unknown op kind in a program");
}

void EidolonGpu::issue_poll(std::uint32_t w) {
    m_actions.push(m_memory.schedule(now_ps(), 8), {ActionKind::PollDone, w});
}

void EidolonGpu::poll_done(std::uint32_t w) {
    Workgroup& g = m_wgs[w];
    const Op& op = g.ops[g.pc];
    ++g.stats.polls;
    const std::int64_t value = m_memory.poll_flag(op.offset / 8);
    const std::uint64_t now = now_ps();
    if (cond_holds(static_cast<Cond>(op.sub), value, op.value)) {
        end_wait(w);
        return;
    }
    if (m_monitor) m_monitor->maybe_check(now);
    m_actions.push(now + g.interval_ps, {ActionKind::PollIssue, w});
    if (static_cast<WaitMode>(op.mode) == WaitMode::SpinYield)  // back off, like s_sleep doubling
        g.interval_ps = std::min<std::uint64_t>(g.interval_ps * 2, std::uint64_t(op.time2_ps));
}

void EidolonGpu::end_wait(std::uint32_t w) {
    Workgroup& g = m_wgs[w];
    --m_waiting;
    g.stats.wait_ps += now_ps() - g.wait_since_ps;
    if (m_monitor) m_monitor->wait_ended();
    advance(w);
    run_workgroup(w);
}

// The monitor request reached the memory: done if the condition already holds, else sleep in
// the log, or poll when the log is full.
void EidolonGpu::arm_done(std::uint32_t w) {
    Workgroup& g = m_wgs[w];
    const Op& op = g.ops[g.pc];
    ++m_syncmon.stats().arms;
    if (cond_holds(static_cast<Cond>(op.sub), m_memory.peek_flag(op.offset / 8), op.value)) {
        end_wait(w);
        return;
    }
    if (m_syncmon.arm(op.offset / 8, w)) {
        note_syncmon();
        return;
    }
    issue_poll(w);  // fallback: the log is full
}

// A write or atomic changed flag `flag`: wake the sleepers it concerns. With the condition in
// the monitor, only satisfied waiters wake (wake-one waiters: at most one per write); otherwise
// every write wakes them to re-read the flag, and a false re-check is a spurious wake-up.
void EidolonGpu::flag_written(std::uint64_t flag) {
    m_last_flag_change_ps = now_ps();
    const std::vector<std::uint32_t>* list = m_syncmon.waiters(flag);
    if (!list) return;
    const std::vector<std::uint32_t> waiters = *list;  // waking edits the log
    const std::int64_t value = m_memory.peek_flag(flag);
    const std::uint64_t now = now_ps();
    bool woke_one = false;
    for (std::uint32_t w : waiters) {
        Workgroup& g = m_wgs[w];
        const Op& op = g.ops[g.pc];
        const bool wake_all = op.wake_all != 0;
        if (!wake_all && woke_one) continue;
        if (m_check_in_monitor) {
            if (!cond_holds(static_cast<Cond>(op.sub), value, op.value)) continue;
            m_syncmon.disarm(flag, w);
            note_syncmon();
            m_actions.push(now + m_wake_latency_ps, {ActionKind::WaitDone, w});
        } else {
            if (g.rechecking) continue;
            g.rechecking = true;
            m_actions.push(m_memory.schedule(now + m_wake_latency_ps, 8), {ActionKind::Recheck, w});
        }
        ++m_syncmon.stats().wakeups;
        woke_one = woke_one || !wake_all;
    }
}

void EidolonGpu::recheck_done(std::uint32_t w) {
    Workgroup& g = m_wgs[w];
    const Op& op = g.ops[g.pc];
    g.rechecking = false;
    ++g.stats.polls;
    if (cond_holds(static_cast<Cond>(op.sub), m_memory.poll_flag(op.offset / 8), op.value)) {
        m_syncmon.disarm(op.offset / 8, w);
        note_syncmon();
        end_wait(w);
        return;
    }
    ++m_syncmon.stats().spurious;  // still in the log: sleeps until the next write
}

// Packetises the queued workgroups' transfers, round robin one packet each, while the socket
// is free (END_REQ seen) and the outstanding limit allows.
void EidolonGpu::try_issue() {
    while (!m_request_pending && m_outstanding < m_max_outstanding && !m_issue_queue.empty()) {
        const std::uint32_t w = m_issue_queue.front();
        m_issue_queue.pop_front();
        Workgroup& g = m_wgs[w];
        const Op& op = g.ops[g.pc];
        const OpKind kind = static_cast<OpKind>(op.kind);
        const std::uint64_t n = std::min(g.issue_left, m_max_payload);

        Packet* p = m_pool.allocate();
        p->wg = w;
        p->set_command(kind == OpKind::Read ? tlm::TLM_READ_COMMAND : tlm::TLM_WRITE_COMMAND);
        p->set_address(m_map.global(std::uint32_t(op.peer), g.issue_offset));
        p->set_data_ptr(kind == OpKind::Signal ? p->word : m_pool.scratch());
        p->set_data_length(unsigned(n));
        p->set_streaming_width(unsigned(n));
        p->set_byte_enable_ptr(nullptr);
        p->set_dmi_allowed(false);
        p->set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
        if (kind == OpKind::Signal) {
            p->atomic.op = static_cast<AtomicOp>(op.sub);
            p->atomic.operand = op.value;
            p->atomic.compare = op.compare;
            std::memcpy(p->word, &op.value, 8);  // a target ignoring the extension sees a write of the operand
            p->set_extension(&p->atomic);
        }
        if (kind != OpKind::Read) m_bytes_sent += n;
        g.issue_offset += n;
        g.issue_left -= n;
        ++g.in_flight;
        ++g.stats.packets;
        if (g.issue_left > 0) m_issue_queue.push_back(w);
        send(p);
    }
}

void EidolonGpu::send(Packet* p) {
    if (m_outstanding == 0 && !m_watching) {
        m_watching = true;
        m_last_response_ps = now_ps();
        m_actions.push(now_ps() + m_watchdog_ps, {ActionKind::Watchdog, 0});
    }
    ++m_outstanding;
    ++m_packets_sent;
    m_request_pending = p;
    tlm::tlm_phase phase = tlm::BEGIN_REQ;
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    const std::uint64_t now = now_ps();
    switch (initiator->nb_transport_fw(*p, phase, delay)) {
        case tlm::TLM_ACCEPTED: return;  // END_REQ will come on the backward path
        case tlm::TLM_UPDATED:
            if (phase == tlm::END_REQ) {
                if (delay == sc_core::SC_ZERO_TIME) m_request_pending = nullptr;
                else m_actions.push(now + delay.value(), {ActionKind::EndReq, 0});
                return;
            }
            if (phase == tlm::BEGIN_RESP) break;
            fail(std::string(name()) + ".initiator: nb_transport_fw returned TLM_UPDATED with an illegal phase");
            return;
        case tlm::TLM_COMPLETED: break;
    }
    // The target answered at once: request and response both done.
    m_request_pending = nullptr;
    m_actions.push(now + delay.value(), {ActionKind::Response, 0, p});
}

tlm::tlm_sync_enum EidolonGpu::nb_transport_bw(tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase,
                                               sc_core::sc_time& delay) {
    const std::uint64_t at = now_ps() + delay.value();
    Packet* p = static_cast<Packet*>(&trans);
    const bool now = delay == sc_core::SC_ZERO_TIME;
    if (phase == tlm::END_REQ || (phase == tlm::BEGIN_RESP && m_request_pending == p)) {  // BEGIN_RESP implies END_REQ
        if (now) {
            // Handled in place (it only updates state); packetising resumes from our own process.
            m_request_pending = nullptr;
            if (!m_issue_queue.empty()) m_actions.push(at, {ActionKind::Issue, 0});
        } else {
            m_actions.push(at, {ActionKind::EndReq, 0});
        }
        if (phase == tlm::END_REQ) return tlm::TLM_ACCEPTED;
    }
    if (phase == tlm::BEGIN_RESP) {
        if (now) response_arrived(p);
        else m_actions.push(at, {ActionKind::Response, 0, p});
        return tlm::TLM_COMPLETED;
    }
    fail(std::string(name()) + ".initiator: unexpected phase on the backward path");
    return tlm::TLM_COMPLETED;
}

void EidolonGpu::response_arrived(Packet* p) {
    if (!p->is_response_ok()) {
        std::ostringstream msg;
        msg << name() << ".initiator: transaction to address 0x" << std::hex << p->get_address() << std::dec
            << " failed: " << p->get_response_string();
        fail(msg.str());
        return;
    }
    Workgroup& g = m_wgs[p->wg];
    if (p->is_read()) m_bytes_received += p->get_data_length();
    m_last_response_ps = now_ps();
    --m_outstanding;
    --g.in_flight;
    const std::uint32_t w = p->wg;
    p->release();
    if (g.in_flight == 0 && g.issue_left == 0) m_actions.push(now_ps(), {ActionKind::Resume, w});
    else if (!m_issue_queue.empty()) m_actions.push(now_ps(), {ActionKind::Issue, 0});  // a slot freed
}

tlm::tlm_sync_enum EidolonGpu::nb_transport_fw(tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase,
                                               sc_core::sc_time& delay) {
    const std::uint64_t at = now_ps() + delay.value();
    if (phase == tlm::BEGIN_REQ) {
        std::uint32_t slot;
        if (m_free_slots.empty()) {
            slot = std::uint32_t(m_incoming.size());
            m_incoming.push_back(&trans);
        } else {
            slot = m_free_slots.back();
            m_free_slots.pop_back();
            m_incoming[slot] = &trans;
        }
        m_actions.push(m_memory.schedule(at, trans.get_data_length()), {ActionKind::Serve, slot});
        phase = tlm::END_REQ;  // the memory queues requests itself: accept at once
        return tlm::TLM_UPDATED;
    }
    if (phase == tlm::END_RESP) {
        m_actions.push(at, {ActionKind::NextResponse, 0});
        return tlm::TLM_COMPLETED;
    }
    fail(std::string(name()) + ".target: unexpected phase on the forward path");
    return tlm::TLM_COMPLETED;
}

void EidolonGpu::serve_incoming(std::uint32_t slot) {
    tlm::tlm_generic_payload* trans = m_incoming[slot];
    m_incoming[slot] = nullptr;
    m_free_slots.push_back(slot);
    const std::uint64_t offset = m_map.local(trans->get_address());
    m_memory.perform(*trans, offset);
    if (trans->is_write()) {
        m_bytes_received += trans->get_data_length();
        for (std::uint64_t f = offset / 8; f < m_memory.flag_count() && f * 8 < offset + trans->get_data_length(); ++f)
            flag_written(f);
    }
    send_response(trans);
}

void EidolonGpu::send_response(tlm::tlm_generic_payload* trans) {
    if (m_response_pending) {  // base protocol: one BEGIN_RESP at a time on a socket
        m_responses.push_back(trans);
        return;
    }
    tlm::tlm_phase phase = tlm::BEGIN_RESP;
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    tlm::tlm_sync_enum status = target->nb_transport_bw(*trans, phase, delay);
    m_response_pending = true;
    if (status == tlm::TLM_ACCEPTED) return;  // END_RESP will come on the forward path
    if (status == tlm::TLM_UPDATED && phase != tlm::END_RESP) {
        fail(std::string(name()) + ".target: nb_transport_bw returned TLM_UPDATED with an illegal phase");
        return;
    }
    m_actions.push(now_ps() + delay.value(), {ActionKind::NextResponse, 0});
}

// Loosely timed callers run ahead of simulated time: the access takes effect, and queues for the
// memory, at the time of the call; its service time is added to the caller's annotated delay.
// (Reserving the memory at the annotated future time would block earlier AT accesses behind it.)
void EidolonGpu::b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
    const std::uint64_t now = now_ps();
    const std::uint64_t done = m_memory.schedule(now, trans.get_data_length()) + delay.value();
    const std::uint64_t offset = m_map.local(trans.get_address());
    m_memory.perform(trans, offset);
    if (trans.is_write()) {
        m_bytes_received += trans.get_data_length();
        for (std::uint64_t f = offset / 8; f < m_memory.flag_count() && f * 8 < offset + trans.get_data_length(); ++f)
            flag_written(f);
    }
    delay = ps_to_time(done - now);
}

unsigned int EidolonGpu::transport_dbg(tlm::tlm_generic_payload& trans) {
    m_memory.perform(trans, m_map.local(trans.get_address()), false);
    return trans.get_data_length();
}

bool EidolonGpu::collect_stuck(std::vector<StuckWait>& out) const {
    for (std::uint32_t w = 0; w < m_wgs.size(); ++w) {
        const Workgroup& g = m_wgs[w];
        if (g.state != WgState::Waiting) continue;
        const Op& op = g.ops[g.pc];
        const std::int64_t value = m_memory.peek_flag(op.offset / 8);
        if (cond_holds(static_cast<Cond>(op.sub), value, op.value)) return false;
        out.push_back(StuckWait{std::int32_t(m_index), std::int32_t(w), std::int64_t(g.pc), op.offset / 8, op.sub,
                                op.mode, op.value, value, g.wait_since_ps});
    }
    return true;
}

std::vector<std::string> EidolonGpu::unfinished_report() const {
    static const char* const states[] = {"idle", "ready", "computing", "transferring", "waiting", "done"};
    std::vector<std::string> lines;
    for (std::uint32_t w = 0; w < m_wgs.size(); ++w) {
        const Workgroup& g = m_wgs[w];
        if (g.state == WgState::Idle || g.state == WgState::Done) continue;
        std::ostringstream line;
        line << "gpu " << m_index << " wg " << w << " op " << g.pc << ": " << states[int(g.state)];
        if (g.state == WgState::Transferring)
            line << " (" << g.in_flight << " packets in flight, " << g.issue_left << " bytes not yet sent)";
        lines.push_back(line.str());
    }
    return lines;
}

// A fabric that loses a transaction leaves its workgroup blocked forever while others may poll
// on: without this, such a run would never end.
void EidolonGpu::watchdog() {
    const std::uint64_t now = now_ps();
    if (m_outstanding == 0) {
        m_watching = false;
        return;
    }
    if (now - m_last_response_ps >= m_watchdog_ps) {
        std::ostringstream msg;
        msg << "stall: " << name() << " has " << m_outstanding << " transaction(s) outstanding and no response for "
            << ps_to_time(now - m_last_response_ps) << " (was a transaction lost by the interconnect?)";
        if (m_stall.empty()) m_stall = msg.str();
        sc_core::sc_stop();
        return;
    }
    m_actions.push(m_last_response_ps + m_watchdog_ps, {ActionKind::Watchdog, 0});
}

// With flag writers the monitor cannot see (a user's GPU model), waits that saw no flag change
// for the watchdog time are taken as stuck.
void EidolonGpu::quiet_watch() {
    const std::uint64_t now = now_ps();
    if (m_waiting == 0) {
        m_quiet_watching = false;
        return;
    }
    if (now - m_last_flag_change_ps >= m_watchdog_ps) {
        m_quiet_watching = false;
        m_monitor->declare_deadlock_if_stuck();
        if (m_monitor->deadlocked()) return;
    }
    m_quiet_watching = true;
    m_actions.push(std::max(now + 1, m_last_flag_change_ps + m_watchdog_ps), {ActionKind::QuietWatch, 0});
}

void EidolonGpu::fail(const std::string& what) {
    if (m_error.empty()) m_error = what;
    sc_core::sc_stop();
}

namespace {
const bool registered = register_model(ModelInfo{
    "EidolonGpu",
    "A GPU reduced to its traffic: replays a timing profile per workgroup over real TLM-2.0 transactions",
    EidolonGpu::param_specs(),
    {{"initiator", "initiator", "at", "1", "writes, reads and atomics towards the fabric (4-phase base protocol)"},
     {"target", "target", "at+lt", "1", "incoming traffic to this GPU's memory (nb_transport_fw and b_transport)"}},
    [](const char* name, const ParamSet& params) -> sc_core::sc_module* { return new EidolonGpu(name, params); }});
}  // namespace

}  // namespace eidola
