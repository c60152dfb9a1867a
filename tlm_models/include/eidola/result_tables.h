// The result tables a Simulation fills, each with its column list. The lists are declared beside
// the statistics that fill them (WorkgroupStats, LinkStats, ...); this index names them for the
// catalog and for Simulation::table, so the two cannot drift apart.
#pragma once

#include <string>
#include <vector>

namespace eidola {

/// One result table: its name and columns.
struct TableColumns {
    const char* name;                          ///< e.g. "gpus"
    const std::vector<std::string>* columns;   ///< column names, in row order
};

/// Every result table, in the order the catalog lists them.
const std::vector<TableColumns>& result_tables();

/// The columns of table `name`; throws std::invalid_argument for an unknown table.
const std::vector<std::string>& table_columns(const std::string& name);

}  // namespace eidola
