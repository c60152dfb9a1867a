#include "eidola/workgroup_engine.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "eidola/gpu_initiator.h"

namespace eidola {

WorkgroupEngine::WorkgroupEngine(GpuCore& core, const EngineConfig& config)
    : m_core(core), m_config(config) {}

void WorkgroupEngine::load_program(std::uint32_t wg, const Op* ops, std::uint64_t count) {
    if (wg >= m_config.workgroups) {
        std::ostringstream msg;
        msg << m_core.name() << ": workgroup " << wg << " does not exist (it has " << m_config.workgroups << ")";
        throw std::out_of_range(msg.str());
    }
    if (wg >= m_wgs.size()) {
        m_wgs.resize(wg + 1);
        m_initiator->hold_workgroups(wg + 1);
    }
    Workgroup& g = m_wgs[wg];
    if (g.state == WgState::Idle && count > 0) {
        ++m_unfinished;
        if (m_core.monitor) m_core.monitor->workgroup_started();
    }
    m_ops_total += count - g.count;  // a program loaded again replaces the last one's count
    g.ops = ops;
    g.count = count;
    g.pc = 0;
    g.state = count > 0 ? WgState::Ready : WgState::Idle;
}

void WorkgroupEngine::start_all() {
    for (std::uint32_t w = 0; w < m_wgs.size(); ++w) run(w);
}

void WorkgroupEngine::resume(std::uint32_t w) {
    advance(w);
    run(w);
}

void WorkgroupEngine::hold_done(std::uint32_t w) {
    m_wgs[w].state = WgState::Ready;
    run(w);
}

// Completes the current op: records it when tracing, moves to the next.
void WorkgroupEngine::advance(std::uint32_t w) {
    Workgroup& g = m_wgs[w];
    if (m_tracing) m_trace.push_back(OpRecord{w, std::uint32_t(g.pc), g.op_begin_ps, now_ps()});
    ++g.pc;
    ++m_ops_done;
    g.held = false;
    g.released = false;
    g.state = WgState::Ready;
}

void WorkgroupEngine::run(std::uint32_t w) {
    Workgroup& g = m_wgs[w];
    while (g.state == WgState::Ready) {
        if (g.pc == g.count) {
            if (m_initiator->unacked(w) > 0) {  // the implicit release at the end of a kernel
                g.state = WgState::Draining;
                return;
            }
            g.state = WgState::Done;
            g.stats.finish_ps = now_ps();
            m_finish_ps = std::max(m_finish_ps, g.stats.finish_ps);
            --m_unfinished;
            if (m_core.monitor) m_core.monitor->workgroup_finished();
            return;
        }
        start_op(w);
    }
}

// Starts the op at the workgroup's pc. Ops that take no time complete here (pc advances and the
// workgroup stays Ready); the others leave it blocked until a Resume action.
void WorkgroupEngine::start_op(std::uint32_t w) {
    Workgroup& g = m_wgs[w];
    const Op& op = g.ops[g.pc];
    const std::uint64_t now = now_ps();
    GpuMemory& memory = m_core.memory;
    // After a hold, the op begins when the hold ends (the hold reads as compute); a signal's
    // release wait is part of the signal, so it keeps the begin it had.
    if (!g.released) g.op_begin_ps = now;
    switch (static_cast<OpKind>(op.kind)) {
        case OpKind::Compute: {
            std::uint64_t t = static_cast<ComputeUnit>(op.mode) == ComputeUnit::Cycles
                                  ? std::uint64_t(std::llround(double(op.value) * m_config.ps_per_cycle))
                                  : std::uint64_t(op.time_ps);
            if (t == 0) {
                advance(w);
                return;
            }
            g.state = WgState::Computing;
            m_core.actions.push(now + t, {GpuActionKind::Resume, w});
            return;
        }
        case OpKind::Local: {
            std::uint64_t accesses = op.offset + std::uint64_t(op.value);
            memory.count_local(op.offset, std::uint64_t(op.value), op.nbytes);
            g.state = WgState::Computing;
            m_core.actions.push(memory.schedule(now, accesses * op.nbytes), {GpuActionKind::Resume, w});
            return;
        }
        case OpKind::Fence:
            if (m_initiator->unacked(w) == 0) advance(w);
            else g.state = WgState::Fencing;
            return;
        case OpKind::Multicast:
        case OpKind::ReduceLoad:
            // A multimem access always goes to the switch, the issuer's own copy included.
            if (op.time2_ps > 0 && !g.held) {  // the wake-up delay knob, as for the transfers below
                g.held = true;
                g.state = WgState::Computing;
                m_core.actions.push(now + std::uint64_t(op.time2_ps), {GpuActionKind::HoldDone, w});
                return;
            }
            if (op.compare < 0 || std::uint64_t(op.compare) >= m_core.multicast_groups.size()) {
                m_core.fail(m_core.name() + ": a multimem op names multicast group " + std::to_string(op.compare) +
                            ", which the profile does not declare");
                return;
            }
            g.state = WgState::Transferring;
            m_initiator->start(w, op);
            return;
        case OpKind::Write:
        case OpKind::Read:
        case OpKind::Put:
        case OpKind::Signal: {
            if (op.time2_ps > 0 && !g.held) {  // the wake-up delay knob: hold this op back once
                g.held = true;
                g.state = WgState::Computing;
                m_core.actions.push(now + std::uint64_t(op.time2_ps), {GpuActionKind::HoldDone, w});
                return;
            }
            if (static_cast<OpKind>(op.kind) == OpKind::Signal) {
                const bool pending = m_initiator->posts_pending(w);
                if (op.option && std::uint32_t(op.peer) != m_core.index && (pending || !released(w, op))) {
                    // Overlap: the initiator holds the release; the workgroup goes on.
                    m_initiator->defer(w, op);
                    advance(w);
                    return;
                }
                if (pending) {  // releases go out in program order: after the held ones
                    g.state = WgState::Posting;  // writes_drained() goes on
                    return;
                }
                if (!released(w, op)) {
                    g.release_peer = release_scope(op);
                    g.state = WgState::Releasing;  // writes_drained() goes on
                    return;
                }
            }
            if (std::uint32_t(op.peer) == m_core.index) {
                // A local access never leaves the GPU: it costs a memory access, applied at issue.
                std::uint64_t n = static_cast<OpKind>(op.kind) == OpKind::Signal ? 8 : op.nbytes;
                if (static_cast<OpKind>(op.kind) == OpKind::Signal) {
                    AtomicExtension atomic;
                    atomic.op = static_cast<AtomicOp>(op.sub);
                    atomic.operand = op.value;
                    atomic.compare = op.compare;
                    memory.local_atomic(op.offset / 8, atomic);
                    flag_written(op.offset / 8);
                } else {
                    bool is_read = static_cast<OpKind>(op.kind) == OpKind::Read;
                    memory.count_local(is_read ? 1 : 0, is_read ? 0 : 1, n);
                    if (static_cast<OpKind>(op.kind) == OpKind::Put) {  // its data and flag land together
                        memory.landing_atomic(std::uint64_t(op.compare) / 8, static_cast<AtomicOp>(op.sub), op.value);
                        flag_written(std::uint64_t(op.compare) / 8);
                    }
                }
                g.state = WgState::Computing;
                m_core.actions.push(memory.schedule(now, n), {GpuActionKind::Resume, w});
                return;
            }
            g.state = WgState::Transferring;
            m_initiator->start(w, op);
            return;
        }
        case OpKind::Wait: {
            g.state = WgState::Waiting;
            g.wait_since_ps = now;
            g.interval_ps = std::uint64_t(op.time_ps);
            g.wait_flag = op.offset / 8;
            g.wait_value = op.value;
            g.wait_cond = op.sub;
            g.wait_all = op.option != 0;
            ++m_waiting;
            m_last_flag_change_ps = now;
            if (m_core.monitor && m_core.monitor->external_writers() && !m_quiet_watching) {
                m_quiet_watching = true;
                m_core.actions.push(now + m_core.watchdog_ps, {GpuActionKind::QuietWatch, 0});
            }
            if (m_core.monitor) m_core.monitor->wait_began();
            if (static_cast<WaitMode>(op.mode) == WaitMode::SyncMon) {
                // monitor(): the arm request travels the memory pipeline like any access.
                m_core.actions.push(memory.schedule(now, 8), {GpuActionKind::ArmDone, w});
                return;
            }
            issue_poll(w);
            return;
        }
    }
    m_core.fail(m_core.name() + ": unknown op kind in a program");
}

bool WorkgroupEngine::released_to(std::uint32_t w, std::int32_t peer) const {
    return peer >= 0 ? m_initiator->unacked_to(w, peer) == 0 : m_initiator->unacked(w) == 0;
}

void WorkgroupEngine::writes_drained(std::uint32_t w) {
    Workgroup& g = m_wgs[w];
    switch (g.state) {
        case WgState::Releasing:
            if (!released_to(w, g.release_peer)) return;
            g.released = true;
            g.state = WgState::Ready;  // start_op() issues the signal now
            break;
        case WgState::Posting:
            if (m_initiator->posts_pending(w)) return;
            g.state = WgState::Ready;  // start_op() takes the signal again
            break;
        case WgState::Fencing:
            if (m_initiator->unacked(w) > 0) return;
            advance(w);
            break;
        case WgState::Draining:
            if (m_initiator->unacked(w) > 0) return;
            g.state = WgState::Ready;  // run() finds the program's end
            break;
        default: return;
    }
    run(w);
}

void WorkgroupEngine::issue_poll(std::uint32_t w) {
    m_core.actions.push(m_core.memory.schedule(now_ps(), 8), {GpuActionKind::PollDone, w});
}

void WorkgroupEngine::poll_done(std::uint32_t w) {
    Workgroup& g = m_wgs[w];
    ++g.stats.polls;
    const std::int64_t value = m_core.memory.poll_flag(g.wait_flag);
    const std::uint64_t now = now_ps();
    if (cond_holds(static_cast<Cond>(g.wait_cond), value, g.wait_value)) {
        end_wait(w);
        return;
    }
    if (m_core.monitor) m_core.monitor->maybe_check(now);
    m_core.actions.push(now + g.interval_ps, {GpuActionKind::PollIssue, w});
    const Op& op = g.ops[g.pc];
    if (static_cast<WaitMode>(op.mode) == WaitMode::SpinYield)  // back off, like s_sleep doubling
        g.interval_ps = std::min<std::uint64_t>(g.interval_ps * 2, std::uint64_t(op.time2_ps));
}

void WorkgroupEngine::end_wait(std::uint32_t w) {
    Workgroup& g = m_wgs[w];
    --m_waiting;
    g.stats.wait_ps += now_ps() - g.wait_since_ps;
    if (m_core.monitor) m_core.monitor->wait_ended();
    advance(w);
    run(w);
}

// The monitor request reached the memory: done if the condition already holds, else sleep in
// the log, or poll when the log is full.
void WorkgroupEngine::arm_done(std::uint32_t w) {
    Workgroup& g = m_wgs[w];
    ++m_core.syncmon.stats().arms;
    if (cond_holds(static_cast<Cond>(g.wait_cond), m_core.memory.peek_flag(g.wait_flag), g.wait_value)) {
        end_wait(w);
        return;
    }
    if (m_core.syncmon.arm(g.wait_flag, SyncMonWaiter{w, g.wait_cond, g.wait_all, g.wait_value})) {
        note_syncmon();
        return;
    }
    issue_poll(w);  // fallback: the log is full
}

// With the condition in the monitor, only satisfied waiters wake (wake-one waiters: at most one
// per write); otherwise every write wakes them to re-read the flag, and a false re-check is a
// spurious wake-up. The waiters' conditions are the log's copies: no workgroup is touched
// until it wakes.
void WorkgroupEngine::flag_written(std::uint64_t flag) {
    m_last_flag_change_ps = now_ps();
    const std::vector<SyncMonWaiter>* list = m_core.syncmon.waiters(flag);
    if (!list) return;
    // Waking edits the log, so walk a copy; a member buffer, so a flag write costs no allocation.
    m_waking.assign(list->begin(), list->end());
    const std::int64_t value = m_core.memory.peek_flag(flag);
    const std::uint64_t now = now_ps();
    bool woke_one = false;
    for (const SyncMonWaiter& waiter : m_waking) {
        const std::uint32_t w = waiter.wg;
        if (!waiter.wake_all && woke_one) continue;
        if (m_config.check_in_monitor) {
            if (!cond_holds(static_cast<Cond>(waiter.cond), value, waiter.value)) continue;
            m_core.syncmon.disarm(flag, w);
            note_syncmon();
            m_core.actions.push(now + m_config.wake_latency_ps, {GpuActionKind::WaitDone, w});
        } else {
            Workgroup& g = m_wgs[w];
            if (g.rechecking) continue;
            g.rechecking = true;
            m_core.actions.push(m_core.memory.schedule(now + m_config.wake_latency_ps, 8), {GpuActionKind::Recheck, w});
        }
        ++m_core.syncmon.stats().wakeups;
        woke_one = woke_one || !waiter.wake_all;
    }
}

void WorkgroupEngine::recheck_done(std::uint32_t w) {
    Workgroup& g = m_wgs[w];
    g.rechecking = false;
    ++g.stats.polls;
    if (cond_holds(static_cast<Cond>(g.wait_cond), m_core.memory.poll_flag(g.wait_flag), g.wait_value)) {
        m_core.syncmon.disarm(g.wait_flag, w);
        note_syncmon();
        end_wait(w);
        return;
    }
    ++m_core.syncmon.stats().spurious;  // still in the log: sleeps until the next write
}

// With flag writers the monitor cannot see (a user's GPU model), waits that saw no flag change
// for the watchdog time are taken as stuck.
void WorkgroupEngine::quiet_watch() {
    const std::uint64_t now = now_ps();
    if (m_waiting == 0) {
        m_quiet_watching = false;
        return;
    }
    if (now - m_last_flag_change_ps >= m_core.watchdog_ps) {
        m_quiet_watching = false;
        m_core.monitor->declare_deadlock_if_stuck();
        if (m_core.monitor->deadlocked()) return;
    }
    m_quiet_watching = true;
    m_core.actions.push(std::max(now + 1, m_last_flag_change_ps + m_core.watchdog_ps), {GpuActionKind::QuietWatch, 0});
}

bool WorkgroupEngine::collect_stuck(std::vector<StuckWait>& out) const {
    // A posted write or signal still in flight may yet change a flag that someone waits on.
    if (m_initiator->outstanding() > 0 || m_initiator->posts_unsent()) return false;
    for (std::uint32_t w = 0; w < m_wgs.size(); ++w) {
        const Workgroup& g = m_wgs[w];
        if (g.state != WgState::Waiting) continue;
        const Op& op = g.ops[g.pc];
        const std::int64_t value = m_core.memory.peek_flag(op.offset / 8);
        if (cond_holds(static_cast<Cond>(op.sub), value, op.value)) return false;
        out.push_back(StuckWait{std::int32_t(m_core.index), std::int32_t(w), std::int64_t(g.pc), op.offset / 8, op.sub,
                                op.mode, op.value, value, g.wait_since_ps});
    }
    return true;
}

std::vector<std::string> WorkgroupEngine::unfinished_report() const {
    static const char* const states[] = {"idle",  "ready",     "computing", "transferring", "waiting",
                                         "done",  "releasing", "fencing",   "draining", "posting"};
    std::vector<std::string> lines;
    for (std::uint32_t w = 0; w < m_wgs.size(); ++w) {
        const Workgroup& g = m_wgs[w];
        if (g.state == WgState::Idle || g.state == WgState::Done) continue;
        std::ostringstream line;
        line << "gpu " << m_core.index << " wg " << w << " op " << g.pc << ": " << states[int(g.state)];
        if (g.state == WgState::Transferring) line << " (" << m_initiator->describe_transfer(w) << ")";
        if (g.state == WgState::Releasing || g.state == WgState::Fencing || g.state == WgState::Draining ||
            g.state == WgState::Posting)
            line << " (" << m_initiator->unacked(w) << " writes not yet acknowledged)";
        lines.push_back(line.str());
    }
    return lines;
}

}  // namespace eidola
