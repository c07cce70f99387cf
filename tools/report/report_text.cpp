#include "report/report_text.hpp"

#include <cstdio>
#include <thread>

namespace ffcv::tools {

std::string printf_number(double value, const char* format) {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (const char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string machine_text() {
  FILE* info = std::fopen("/proc/cpuinfo", "r");
  std::string model = "unknown CPU";
  if (info != nullptr) {
    char line[512];
    while (std::fgets(line, sizeof line, info)) {
      const std::string text = line;
      if (text.rfind("model name", 0) == 0) {
        model = text.substr(text.find(':') + 2);
        if (!model.empty() && model.back() == '\n') model.pop_back();
        break;
      }
    }
    std::fclose(info);
  }
  return model + ", " + std::to_string(std::thread::hardware_concurrency()) + " cores";
}

}  // namespace ffcv::tools
