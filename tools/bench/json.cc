#include "tools/bench/json.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/json_quote.h"

namespace fgds::bench {
namespace {

std::string Number(double value) {
  if (!std::isfinite(value)) return "null";
  return absl::StrFormat("%.9g", value);
}

// {"entries": n, ...}: the daemon's ring stage counters over the phase.
std::string RingStagesJson(const DaemonCpu& cpu) {
  std::string out = "{";
  for (const auto& [name, value] : cpu.ring_stages) {
    absl::StrAppend(&out, out.size() > 1 ? ", " : "", JsonQuote(name), ": ",
                    value);
  }
  return out + "}";
}

std::string RowJson(const ResultRow& row) {
  return absl::StrCat(
      "{\"mode\": ", JsonQuote(row.mode), ", \"op\": ", JsonQuote(row.op),
      ", \"pattern\": ", JsonQuote(row.pattern),
      ", \"block_size\": ", row.block_size, ", \"threads\": ", row.threads,
      ", \"queue_depth\": ", row.queue_depth,
      ", \"cache\": ", JsonQuote(row.cache),
      ", \"cache_wanted\": ", JsonQuote(row.cache_wanted),
      ", \"bytes\": ", row.bytes, ", \"ops\": ", row.ops,
      ", \"seconds\": ", Number(row.seconds),
      ", \"gb_per_s\": ", Number(row.gb_per_second()),
      ", \"iops\": ", Number(row.iops()), ", \"p50_us\": ", Number(row.p50_us),
      ", \"p99_us\": ", Number(row.p99_us),
      ", \"cpu_seconds\": ", Number(row.cpu_seconds),
      ", \"cpu_s_per_gb\": ", Number(row.cpu_seconds_per_gb()),
      ", \"daemon_cpu_ns_per_op\": ",
      row.daemon_cpu.valid
          ? Number(row.daemon_ns_per_op(row.daemon_cpu.total_ns()))
          : "null",
      ", \"daemon_ring_ns_per_op\": ",
      row.daemon_cpu.valid
          ? Number(row.daemon_ns_per_op(row.daemon_cpu.ring_ns))
          : "null",
      ", \"daemon_io_ns_per_op\": ",
      row.daemon_cpu.valid ? Number(row.daemon_ns_per_op(row.daemon_cpu.io_ns))
                           : "null",
      ", \"ring_stages\": ", RingStagesJson(row.daemon_cpu),
      ", \"ratio\": ", row.ratio.has_value() ? Number(*row.ratio) : "null",
      ", \"baseline\": ",
      row.baseline.empty() ? "null" : JsonQuote(row.baseline), "}");
}

}  // namespace

std::string FormatJson(const BenchOptions& options,
                       const std::vector<ResultRow>& rows,
                       const std::vector<std::string>& notes) {
  std::vector<std::string> modes;
  for (const std::string& mode : options.modes)
    modes.push_back(JsonQuote(mode));
  std::vector<std::string> row_texts;
  for (const ResultRow& row : rows) row_texts.push_back("    " + RowJson(row));
  std::vector<std::string> note_texts;
  for (const std::string& note : notes) note_texts.push_back(JsonQuote(note));

  return absl::StrCat(
      "{\n  \"config\": {\"mount\": ", JsonQuote(options.mount),
      ", \"backing\": ", JsonQuote(options.backing),
      ", \"size\": ", options.size, ", \"block_size\": ", options.block_size,
      ", \"queue_depth\": ", options.queue_depth,
      ", \"threads\": ", options.threads,
      ", \"pattern\": ", JsonQuote(PatternName(options.pattern)),
      ", \"cache\": ", JsonQuote(CacheModeName(options.cache)),
      ", \"modes\": [", absl::StrJoin(modes, ", "), "]},\n", "  \"rows\": [\n",
      absl::StrJoin(row_texts, ",\n"), rows.empty() ? "" : "\n", "  ],\n",
      "  \"notes\": [", absl::StrJoin(note_texts, ", "), "]\n}\n");
}

}  // namespace fgds::bench
