// Quoting text as a JSON string literal, for the JSON the tools print.
#pragma once

#include <string>
#include <string_view>

namespace ffcv {

// `text` as a JSON string literal, with quotes, escapes and \u00XX for control characters and
// DEL. The result is also a valid TOML basic string (TOML accepts the same escapes).
std::string json_quote(std::string_view text);

}  // namespace ffcv
