// File: tools/bench/json.h
//
// The --json output: the same rows as the table, unrounded, for scripts
// that track results across commits.
#ifndef FGDS_TOOLS_BENCH_JSON_H_
#define FGDS_TOOLS_BENCH_JSON_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "tools/bench/flags.h"
#include "tools/bench/result_row.h"

namespace fgds::bench {

// FormatJson renders {"config": {...}, "rows": [...], "notes": [...]}.
// Numbers that are not finite become null (JSON has no NaN).
std::string FormatJson(const BenchOptions& options,
                       const std::vector<ResultRow>& rows,
                       const std::vector<std::string>& notes);

}  // namespace fgds::bench

#endif  // FGDS_TOOLS_BENCH_JSON_H_
