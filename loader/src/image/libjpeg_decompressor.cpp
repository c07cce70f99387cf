#include "libjpeg_decompressor.hpp"

#include <memory>

#include "ffcv/util/errors.hpp"

namespace ffcv {
namespace {

void on_error_exit(j_common_ptr cinfo) {
  auto* state = reinterpret_cast<LibjpegErrorState*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, state->message);
  std::longjmp(state->jump, 1);
}

void on_output_message(j_common_ptr) {}
void on_emit_message(j_common_ptr cinfo, int msg_level) {
  if (msg_level < 0) on_error_exit(cinfo);
}

std::unique_ptr<Decompressor> create_decompressor() {
  auto decompressor = std::make_unique<Decompressor>();
  j_decompress_ptr cinfo = decompressor->cinfo();
  if (!decompressor->run([cinfo] { jpeg_create_decompress(cinfo); })) {
    throw EncodeError(std::string("cannot create a libjpeg decompressor: ") +
                      decompressor->message());
  }
  return decompressor;
}

thread_local std::unique_ptr<Decompressor> tls_libjpeg_decompressor;

}  // namespace

Decompressor::Decompressor() {
  cinfo_.err = jpeg_std_error(&error_.manager);
  error_.manager.error_exit = &on_error_exit;
  error_.manager.output_message = &on_output_message;
  error_.manager.emit_message = &on_emit_message;
}

Decompressor::~Decompressor() {
  // Frees all of libjpeg's memory; safe on an object whose creation failed (mem is null), and
  // raises no errors.
  jpeg_destroy_decompress(&cinfo_);
}

void Decompressor::abort() {
  run([this] { jpeg_abort_decompress(&cinfo_); });
}

Decompressor& thread_decompressor() {
  if (!tls_libjpeg_decompressor) tls_libjpeg_decompressor = create_decompressor();
  return *tls_libjpeg_decompressor;
}

void discard_thread_decompressor() { tls_libjpeg_decompressor.reset(); }

void fail_and_discard(const std::string& what) {
  const std::string message = what + tls_libjpeg_decompressor->message();
  tls_libjpeg_decompressor.reset();
  throw EncodeError(message);
}

Decompressor& read_header(std::span<const std::uint8_t> jpeg) {
  Decompressor& decompressor = thread_decompressor();
  j_decompress_ptr cinfo = decompressor.cinfo();
  const bool header_read = decompressor.run([&] {
    jpeg_abort_decompress(cinfo);  // in case an exception interrupted the previous call
    jpeg_mem_src(cinfo, jpeg.data(), static_cast<unsigned long>(jpeg.size()));
    jpeg_read_header(cinfo, TRUE);
  });
  if (!header_read) fail_and_discard("not a readable JPEG: ");
  return decompressor;
}

}  // namespace ffcv
