// A small command-line parser for the `ffcv` subcommands.
//
// Each subcommand declares its positional arguments and options with a help text; the parser
// produces `--help`, rejects unknown options with a suggestion of the closest known one, and
// converts values with errors that name the option.
#pragma once

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace ffcv::tools {

// Thrown for a bad command line; the CLI prints it with the subcommand's usage line.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Arguments {
 public:
  Arguments(std::string command, std::string summary);

  // Declarations, in the order they appear in --help.
  Arguments& positional(std::string name, std::string help, bool required = true);
  Arguments& option(std::string name, std::string value_name, std::string help,
                    std::string default_value = "");
  Arguments& flag(std::string name, std::string help);
  // An option that may be given several times, e.g. `--set a.b=1 --set c.d=2`.
  Arguments& repeated_option(std::string name, std::string value_name, std::string help);
  // An option followed by two values, e.g. `--export I PATH.png`.
  Arguments& pair_option(std::string name, std::string value_names, std::string help);

  // Parses argv (without the program and subcommand names). Returns false when --help was
  // asked for (the help text is then printed on stdout). Throws UsageError.
  bool parse(const std::vector<std::string>& argv);

  std::string help() const;

  bool has(const std::string& name) const;  // given on the command line, or has a default
  std::string get(const std::string& name) const;
  std::optional<std::string> get_optional(const std::string& name) const;
  long long get_int(const std::string& name) const;
  double get_double(const std::string& name) const;
  bool get_flag(const std::string& name) const;
  std::pair<std::string, std::string> get_pair(const std::string& name) const;
  std::vector<std::string> get_all(const std::string& name) const;  // a repeated option's values
  // Sizes with an optional binary suffix: 4096, 8M, 8MiB, 2G.
  unsigned long long get_size(const std::string& name) const;

 private:
  struct Spec {
    std::string name, value_name, help, default_value;
    bool is_flag = false, is_positional = false, required = false, is_pair = false;
    bool is_repeated = false;
  };
  const Spec* find(const std::string& name) const;
  std::string closest(const std::string& name) const;

  std::string command_, summary_;
  std::vector<Spec> specs_;
  std::map<std::string, std::string> values_;
  std::map<std::string, std::vector<std::string>> repeated_values_;
};

}  // namespace ffcv::tools
