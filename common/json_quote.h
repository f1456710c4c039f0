// JsonQuote: a string as a JSON string literal, for the tools that print
// JSON by hand (fgds bench --json, fgds probe --json).
#ifndef FGDS_COMMON_JSON_QUOTE_H_
#define FGDS_COMMON_JSON_QUOTE_H_

#include <string>

#include "absl/strings/string_view.h"

namespace fgds {

// JsonQuote returns `text` as a JSON string literal, quotes included:
// quote, backslash and control characters escaped, UTF-8 passed through.
std::string JsonQuote(absl::string_view text);

}  // namespace fgds

#endif  // FGDS_COMMON_JSON_QUOTE_H_
