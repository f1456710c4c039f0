// Text and JSON renderings of a ProbeReport.
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/json_quote.h"
#include "tools/probe/probe.h"

namespace fgds::probe {

std::string FormatText(const ProbeReport& report) {
  std::string out;
  if (report.root != "/") {
    absl::StrAppend(&out, "(reading the host below ", report.root, ")\n");
  }
  for (const Check& check : report.checks) {
    absl::StrAppend(&out, Tag(check.level), " ", check.name, ": ",
                    check.finding, "\n");
    if (check.level != Level::kOk && !check.hint.empty()) {
      absl::StrAppend(&out, "       ", check.hint, "\n");
    }
  }
  absl::StrAppend(&out, VerdictLine(report.verdict), "\n");
  return out;
}

std::string FormatJson(const ProbeReport& report) {
  std::string out =
      "{\n  \"root\": " + JsonQuote(report.root) + ",\n  \"checks\": [";
  for (size_t i = 0; i < report.checks.size(); ++i) {
    const Check& c = report.checks[i];
    absl::StrAppend(&out, i == 0 ? "\n" : ",\n",
                    "    {\"name\": ", JsonQuote(c.name),
                    ", \"level\": ", JsonQuote(LevelName(c.level)),
                    ", \"finding\": ", JsonQuote(c.finding),
                    ", \"hint\": ", JsonQuote(c.hint),
                    ", \"group\": ", JsonQuote(c.group), "}");
  }
  absl::StrAppend(
      &out,
      "\n  ],\n  \"verdict\": ", JsonQuote(VerdictName(report.verdict.kind)),
      ",\n  \"verdict_line\": ", JsonQuote(VerdictLine(report.verdict)),
      ",\n  \"reasons\": [");
  for (size_t i = 0; i < report.verdict.reasons.size(); ++i) {
    absl::StrAppend(&out, i == 0 ? "" : ", ",
                    JsonQuote(report.verdict.reasons[i]));
  }
  absl::StrAppend(&out, "],\n  \"exit_status\": ", report.verdict.exit_status,
                  "\n}\n");
  return out;
}

}  // namespace fgds::probe
