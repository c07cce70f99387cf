// A small command-line parser for the `ffcv` subcommands.
//
// Each subcommand declares its positional arguments and options with a help text; the parser
// produces `--help`, rejects unknown options with a suggestion of the closest known one, and
// converts values with errors that name the option. Numeric options declare their range, which
// parse() checks before the command does any work (a negative count, a batch of a hundred
// million samples or a hundred thousand threads is a bad command line, not a job to start), and
// which --help shows.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
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

// Common bounds. Thread pools: a command line may ask for at most this many threads (0 means one
// per core), far beyond any core count yet safely below the limits of a process.
inline constexpr long long kMaxThreads = 1024;
// Seeds are 0..2^63-1 (negative seeds are refused rather than wrapped).
inline constexpr long long kMaxSeed = std::numeric_limits<std::int64_t>::max();

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
  // The range [min, max] of the option declared just before, read as an integer, a number or a
  // size: parse() refuses a value outside it with "--NAME must be between MIN and MAX, got X".
  Arguments& int_range(long long min, long long max);
  Arguments& real_range(double min, double max);
  Arguments& size_range(unsigned long long min, unsigned long long max);
  // The option declared just before takes no empty value: parse() refuses `--NAME ''` with
  // "--NAME needs a value, got an empty one" (an empty folder name or choice is a slip, never a
  // default).
  Arguments& non_empty();

  // An old spelling of option `name`: `--OLD VALUE` (or `--OLD` alone when `is_flag`) is read as
  // `--NAME translate(VALUE)` (a flag's VALUE is "true"), printing once "note: --OLD is now
  // spelled --NAME". Aliases are not listed in --help; a translate that throws ConfigError is a
  // UsageError naming --OLD.
  Arguments& alias(std::string old_name, std::string name, bool is_flag,
                   std::function<std::string(const std::string&)> translate);

  // Parses argv (without the program and subcommand names) and checks every ranged option's
  // value. Returns false when --help was asked for (the help text is then printed on stdout).
  // Throws UsageError.
  bool parse(const std::vector<std::string>& argv);

  std::string help() const;

  bool has(const std::string& name) const;  // given on the command line, or has a default
  std::string get(const std::string& name) const;
  std::optional<std::string> get_optional(const std::string& name) const;
  // Numbers, checked against the option's declared range; the overloads with `min` and `max`
  // check bounds known only after parsing (a sample index within the file's samples). Throws
  // UsageError naming the option and the range.
  long long get_int(const std::string& name) const;
  long long get_int(const std::string& name, long long min, long long max) const;
  double get_double(const std::string& name) const;  // finite numbers only
  double get_double(const std::string& name, double min, double max) const;
  bool get_flag(const std::string& name) const;
  std::pair<std::string, std::string> get_pair(const std::string& name) const;
  std::vector<std::string> get_all(const std::string& name) const;  // a repeated option's values
  // Sizes with an optional binary suffix: 4096, 8M, 8MiB, 2G.
  unsigned long long get_size(const std::string& name) const;
  unsigned long long get_size(const std::string& name, unsigned long long min,
                              unsigned long long max) const;

 private:
  enum class RangeKind { kNone, kInt, kReal, kSize };
  struct Range {
    RangeKind kind = RangeKind::kNone;
    long long int_min = 0, int_max = 0;
    double real_min = 0, real_max = 0;
    unsigned long long size_min = 0, size_max = 0;
  };
  struct Spec {
    std::string name, value_name, help, default_value;
    bool is_flag = false, is_positional = false, required = false, is_pair = false;
    bool is_repeated = false;
    bool non_empty = false;
    Range range = {};
  };
  struct Alias {
    std::string old_name, name;
    bool is_flag = false;
    std::function<std::string(const std::string&)> translate;
  };
  const Spec* find(const std::string& name) const;
  const Alias* find_alias(const std::string& name) const;
  Spec& last_option(const char* what);
  std::string range_text(const Range& range) const;
  std::string closest(const std::string& name) const;
  // Takes the option argv[i] ("--name" or "--name=value") and the values after it that it
  // takes, leaving `i` at the last argument it used.
  void parse_option(const std::vector<std::string>& argv, std::size_t& i);

  std::string command_, summary_;
  std::vector<Spec> specs_;
  std::vector<Alias> aliases_;
  std::map<std::string, std::string> values_;
  std::map<std::string, std::vector<std::string>> repeated_values_;
};

}  // namespace ffcv::tools
