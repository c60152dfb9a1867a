#include "eidola/result_tables.h"

#include <stdexcept>

#include "eidola/eidolon_gpu.h"
#include "eidola/fabric.h"
#include "eidola/progress_monitor.h"

namespace eidola {

const std::vector<TableColumns>& result_tables() {
    static const std::vector<TableColumns> tables = {
        {"gpus", &kGpuColumns},        {"workgroups", &kWorkgroupColumns},       {"links", &kLinkColumns},
        {"link_bins", &kLinkBinColumns}, {"pairs", &kPairColumns},               {"stuck", &kStuckColumns},
        {"flags", &kFlagColumns},      {"syncmon_trace", &kSyncmonTraceColumns}, {"ops", &kOpColumns},
        {"traffic", &kTrafficColumns}, {"traffic_summary", &kTrafficSummaryColumns}, {"nvls", &kNvlsColumns},
    };
    return tables;
}

const std::vector<std::string>& table_columns(const std::string& name) {
    for (const TableColumns& t : result_tables())
        if (name == t.name) return *t.columns;
    throw std::invalid_argument("no result table named '" + name + "'");
}

}  // namespace eidola
