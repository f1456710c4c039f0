#include "tools/bench/result_row.h"

namespace fgds::bench {

double ResultRow::gb_per_second() const {
  return seconds > 0 ? static_cast<double>(bytes) / 1e9 / seconds : 0;
}

double ResultRow::iops() const {
  return seconds > 0 ? static_cast<double>(ops) / seconds : 0;
}

double ResultRow::cpu_seconds_per_gb() const {
  return bytes > 0 ? cpu_seconds / (static_cast<double>(bytes) / 1e9) : 0;
}

double ResultRow::daemon_ns_per_op(uint64_t ns) const {
  return daemon_cpu.valid && ops > 0
             ? static_cast<double>(ns) / static_cast<double>(ops)
             : 0;
}

void AttachRatios(
    std::vector<ResultRow>& rows,
    absl::FunctionRef<absl::string_view(absl::string_view mode)> baseline_of) {
  for (ResultRow& row : rows) {
    const absl::string_view baseline = baseline_of(row.mode);
    if (baseline.empty()) continue;
    for (const ResultRow& base : rows) {
      if (base.mode != baseline || base.op != row.op ||
          base.pattern != row.pattern || base.block_size != row.block_size ||
          base.threads != row.threads) {
        continue;
      }
      if (base.cache != "direct" && base.cache_wanted != row.cache_wanted) {
        continue;
      }
      const double base_rate = base.gb_per_second();
      if (base_rate > 0) row.ratio = row.gb_per_second() / base_rate;
      row.baseline = std::string(baseline);
      break;
    }
  }
}

}  // namespace fgds::bench
