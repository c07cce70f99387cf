// Byte counts as text: one definition for every message, report and log line, so the same count
// reads the same everywhere.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ffcv {

// "512 B", "1.5 KiB", "12.0 MiB", "1.3 GiB": binary units, one decimal from KiB up.
std::string byte_size_text(double bytes);

// "512 MiB", "1536 KiB", "1000 bytes": the largest binary unit that divides the count exactly,
// for settings the user typed (a budget of 512 MiB reads back as such).
std::string exact_byte_size_text(std::uint64_t bytes);

// "12582912 bytes (12.0 MiB)": exact, with the approximate size for reading; "1000 bytes" below
// one KiB.
std::string bytes_and_size_text(std::uint64_t bytes);

// A size as a user types it: digits with an optional binary suffix, K/k, M, G or T, optionally
// followed by "B" or "iB" ("4096", "8M", "8MiB", "2G"). Nullopt for any other text, or a size
// beyond 2^64 - 1.
std::optional<std::uint64_t> parse_byte_size(std::string_view text);
// Whether `text` is written as a size (digits and a suffix), whether or not it fits 64 bits.
bool is_byte_size_text(std::string_view text);

}  // namespace ffcv
