// Text pieces of the tables that sweeps and grids write (CSV for scripts, Markdown for people).
#pragma once

#include <string>

namespace ffcv::tools {

// `value` printed with a printf format ("%.4f").
std::string printf_number(double value, const char* format = "%.6g");

// `text` as one CSV field: quoted (with doubled quotes) when it holds a comma, quote or newline.
std::string csv_field(const std::string& text);

// "Intel(R) Xeon(R) ..., 2 cores": the machine a table was measured on.
std::string machine_text();

}  // namespace ffcv::tools
