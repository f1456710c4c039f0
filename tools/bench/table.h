// File: tools/bench/table.h
//
// The human-readable result table.
#ifndef FGDS_TOOLS_BENCH_TABLE_H_
#define FGDS_TOOLS_BENCH_TABLE_H_

#include <string>
#include <vector>

#include "tools/bench/result_row.h"

namespace fgds::bench {

// FormatTable renders rows as aligned columns with a header line: text
// columns left-aligned, numbers right-aligned, "-" where a value does not
// apply (no baseline). Ends with a newline.
std::string FormatTable(const std::vector<ResultRow>& rows);

}  // namespace fgds::bench

#endif  // FGDS_TOOLS_BENCH_TABLE_H_
