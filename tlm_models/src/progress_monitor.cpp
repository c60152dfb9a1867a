#include "eidola/progress_monitor.h"

#include <systemc>

#include "eidola/eidolon_gpu.h"

namespace eidola {

void ProgressMonitor::check(bool forced) {
    if (m_external && !forced) return;
    if (m_deadlocked) return;
    std::vector<StuckWait> stuck;
    for (EidolonGpu* gpu : m_gpus)
        if (!gpu->collect_stuck(stuck)) return;  // some waiter will wake: not stuck
    if (stuck.empty()) return;                   // everyone finished
    m_deadlocked = true;
    m_stuck = std::move(stuck);
    m_detected_at_ps = sc_core::sc_time_stamp().value();
    if (sc_core::sc_is_running()) sc_core::sc_stop();
}

}  // namespace eidola
