#include "eidola/progress_monitor.h"

#include <iomanip>
#include <sstream>

#include <systemc>

namespace eidola {

void ProgressMonitor::check(bool forced) {
    if (m_external && !forced) return;
    if (m_deadlocked) return;
    std::vector<StuckWait> stuck;
    for (const StuckWaitSource* source : m_sources)
        if (!source->collect_stuck(stuck)) return;  // some waiter will wake: not stuck
    if (stuck.empty()) return;                      // everyone finished
    m_deadlocked = true;
    m_stuck = std::move(stuck);
    m_detected_at_ps = sc_core::sc_time_stamp().value();
    std::ostringstream msg;
    // In ns, as the stuck waits' report beside it is: sc_time's own text picks its unit by the value (us, ps).
    msg << std::fixed << std::setprecision(1) << "deadlock found at " << double(m_detected_at_ps) / 1000.0 << " ns: " << m_stuck.size()
        << " workgroup(s) wait on flags that no pending write can change";
    if (m_errors) m_errors->report(ErrorKind::Deadlock, msg.str());  // stops the kernel
    else stop_quietly();
}

}  // namespace eidola
