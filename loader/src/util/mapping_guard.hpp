// Internal: turns a SIGBUS inside a file mapping into a flag instead of the end of the process.
//
// Reading a page of a MAP_SHARED file mapping that lies wholly beyond the file's current end
// (the file was truncated after it was mapped) raises SIGBUS, whose default action kills the
// process without a message. MappedFile registers each mapping here; the first registration
// installs a SIGBUS handler that, for a fault inside a registered mapping, maps a page of zeros
// over the faulting page (the access is then retried and reads zeros) and marks the mapping as
// faulted. MappedFile::check_intact() turns the mark into a FormatError naming the file, so the
// readers' callers (the loader's workers after each run of samples) stop with one clear line.
// A fault outside every registered mapping goes to the handler that was installed before, or
// ends the process as SIGBUS does by default.
//
// Async-signal safety: the registry is a fixed table of slots read by the handler without locks;
// a slot is published (state kReady) only after its range is written and unpublished before its
// mapping is unmapped. At most kMaxGuardedMappings mappings are guarded at once; past that a
// mapping is not guarded and a truncation kills the process as before.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ffcv::mapping_guard {

inline constexpr int kMaxGuardedMappings = 256;

// Guards [begin, begin + size); returns the slot, or -1 when the table is full.
int add(const void* begin, std::size_t size);
// Stops guarding (call before munmap). A negative slot is ignored.
void remove(int slot);
// True when a fault was caught in the slot's mapping since it was added.
bool faulted(int slot);

}  // namespace ffcv::mapping_guard
