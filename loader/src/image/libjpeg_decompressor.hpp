// One libjpeg decompressor per thread, with an error manager that turns libjpeg's errors and
// warnings into a failed run() (internal to the loader's image code: the window decoder and the
// header reader of jpeg_coding.hpp).
//
// libjpeg reports fatal errors through error_exit, which must not return. Here it longjmps back to
// Decompressor::run, the only place that calls setjmp. To keep that well-defined in C++, the code
// run under it (the lambdas passed to run, and the functions they call) holds only trivially
// destructible locals, so the jump skips no destructor; everything with a destructor lives
// outside run. A warning (corrupt entropy data, premature end of data, extraneous bytes) fails
// the run like an error, as jpeg_codec.hpp defines a bad JPEG. Trace messages are not printed.
#pragma once

// jpeglib.h needs FILE and size_t declared before it.
#include <cstddef>
#include <cstdio>
// clang-format off
#include <jpeglib.h>
// clang-format on

#include <csetjmp>
#include <cstdint>
#include <span>
#include <string>

namespace ffcv {

// libjpeg's error manager, extended with where to jump and the formatted message. The libjpeg
// part comes first, so the cinfo->err pointer libjpeg hands to the callbacks is this struct.
struct LibjpegErrorState {
  jpeg_error_mgr manager;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

// One libjpeg decompressor with its error manager. Not movable: cinfo_.err points into the
// object itself, so it lives on the heap.
class Decompressor {
 public:
  Decompressor();
  ~Decompressor();
  Decompressor(const Decompressor&) = delete;
  Decompressor& operator=(const Decompressor&) = delete;

  j_decompress_ptr cinfo() { return &cinfo_; }
  const char* message() const { return error_.message; }

  // Returns the object to its state after jpeg_read_header was never called, freeing the image's
  // memory. (jpeg_abort cannot fail; run() only guards against a stale jump buffer.)
  void abort();

  // Runs `fn`, which calls libjpeg, and returns false when libjpeg raised a fatal error or a
  // warning (message() says which). `fn` must not own objects with non-trivial destructors: the
  // error longjmps out of it. C++ exceptions thrown by `fn` itself propagate normally.
  template <typename Fn>
  bool run(Fn&& fn) {
    if (setjmp(error_.jump) != 0) return false;
    fn();
    return true;
  }

 private:
  LibjpegErrorState error_{};
  jpeg_decompress_struct cinfo_{};
};

// This thread's decompressor, created on first use. Throws EncodeError when libjpeg cannot
// create one.
Decompressor& thread_decompressor();

// Discards this thread's decompressor after a failure: libjpeg allows reuse after jpeg_abort,
// but a fresh object is the safe choice for the rare damaged file.
void discard_thread_decompressor();

// Throws EncodeError(what + the decompressor's message) and discards it.
[[noreturn]] void fail_and_discard(const std::string& what);

// Reads the headers of `jpeg` (up to the first scan) into this thread's decompressor, first
// aborting whatever it held. Throws EncodeError "not a readable JPEG: ..." (and discards it)
// when they cannot be read.
Decompressor& read_header(std::span<const std::uint8_t> jpeg);

}  // namespace ffcv
