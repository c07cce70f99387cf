// Quoting text as a JSON string literal, and printing numbers, for the JSON the tools print.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ffcv {

// `text` as a JSON string literal, with quotes, escapes and \u00XX for control characters and
// DEL. The result is also a valid TOML basic string (TOML accepts the same escapes). JSON text is
// UTF-8: each byte of `text` that is not part of a well-formed UTF-8 sequence (a file or member
// name in Latin-1, say) becomes \ufffd, the replacement character, so the result always parses.
std::string json_quote(std::string_view text);

// `value` as a JSON number with `decimals` digits after the point, as printf's "%.Nf" prints it,
// except that a value printing as zero has no sign ("0.000", never "-0.000": readers of the
// measurements compare and plot them, and a signed zero only surprises), and NaN and the
// infinities, which JSON cannot express, print as null.
std::string json_number(double value, int decimals);

// A stored float64 as a JSON number that reads back as the same double, sign of zero included:
// the shortest of %.17g's digits, with ".0" added to an integer-looking value ("-0.0", "3.0"),
// since JSON readers such as Python's parse "-0" as the integer 0 and lose the sign. NaN and the
// infinities print as the strings "nan", "inf" and "-inf".
std::string json_float(double value);

// Every `"name": number` in `json`, in order: reads back the flat records this project writes
// (run logs, summaries, bench's JSON), not JSON in general. A value that is not a number reads 0.
std::vector<double> json_numbers(std::string_view json, std::string_view name);

}  // namespace ffcv
