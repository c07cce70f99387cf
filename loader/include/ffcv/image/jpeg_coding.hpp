// How a JPEG file is coded, read from its headers alone: the facts the writer needs to decide
// whether a source JPEG can be stored as it came instead of being decoded and encoded again.
//
// Re-encoding a JPEG can only lose detail: the second encoder quantises what the first one
// already quantised. When the source is coded the way the dataset stores JPEGs (8-bit, Huffman,
// baseline or progressive, YCbCr with 4:2:0 chroma, as FFCV's writer stores them), needs no
// resize and quantises every DCT coefficient at least as coarsely as an encode at the target
// quality would, the encode would spend time to add loss and, usually, bytes. The test for
// "at least as coarsely" compares the file's own quantisation tables with the tables libjpeg
// uses at the target quality (the IJG tables of the JPEG standard's Annex K, scaled), step by
// step; estimate_jpeg_quality gives the IJG quality whose tables are nearest to the file's, as
// image tools estimate it (exact for files made by libjpeg, libjpeg-turbo, OpenCV or PIL).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace ffcv {

// One 8x8 quantisation table in natural (row-major) order.
using QuantTable = std::array<std::uint16_t, 64>;

struct JpegCoding {
  int width = 0;
  int height = 0;
  int components = 0;         // 1 (grayscale), 3 (YCbCr or RGB) or 4 (CMYK/YCCK)
  bool ycbcr = false;         // three components in YCbCr, the JFIF colour space
  bool chroma_420 = false;    // luma sampled 2x2, both chroma components 1x1
  bool progressive = false;   // progressive (SOF2) rather than baseline/extended sequential
  bool arithmetic = false;    // arithmetic entropy coding
  int precision = 8;          // bits per sample
  QuantTable luma_table{};    // the first component's table
  QuantTable chroma_table{};  // the second component's table (the luma table when there is none)
};

// Reads the headers up to the first scan. Throws EncodeError when the data is not a readable
// JPEG (the same message forms as jpeg_codec.hpp).
JpegCoding read_jpeg_coding(std::span<const std::uint8_t> jpeg);

// Where the JPEG stream in `jpeg` ends: the offset just past its end-of-image marker (EOI), found
// by walking its marker segments and scans (a thumbnail's EOI inside an APP segment is skipped
// with its segment). Bytes after it are no part of the image (an appended file, padding): a
// source JPEG is stored without them, and `inspect --verify` reports a payload that holds any.
// Returns jpeg.size() when the walk finds no EOI (a truncated or damaged file, which decoding
// reports).
std::size_t jpeg_stream_end(std::span<const std::uint8_t> jpeg);

// The IJG quality (1..100) whose luma (and chroma) tables are nearest to the file's, by the sum
// of the steps' differences. For reports and tests: the keep decision compares the tables step
// by step (quantised_at_most_as_finely_as).
int estimate_jpeg_quality(const JpegCoding& coding);

// The table libjpeg's jpeg_set_quality(quality, force_baseline = TRUE) installs: the Annex K
// luminance (or chrominance) table scaled for `quality` (1..100) and clamped to 1..255.
QuantTable ijg_quant_table(int quality, bool chroma);

// Whether every step of the file's tables is at least the step of an encode at `quality`, for
// luma and chroma alike: an encode at that quality could keep no detail the file lacks.
bool quantised_at_most_as_finely_as(const JpegCoding& coding, int quality);

// Why a source JPEG cannot be stored as it came.
enum class ReencodeReason : std::uint8_t {
  kNone,          // it can: same size, coded as stored JPEGs are, quantised at most as finely
  kResized,       // the stored size differs from the source's
  kFinerQuality,  // some quantisation step is finer than the target quality's
  kLayout,        // not YCbCr with 4:2:0 chroma (grayscale, 4:4:4, 4:2:2, RGB, CMYK)
  kCoding,        // arithmetic coded or more than 8 bits per sample
  kSameAsFfcv,    // the writer was asked to encode every JPEG again, as FFCV's does
};
inline constexpr int kReencodeReasonCount = 6;

// "kept", "resized", "finer quality", "chroma layout", "coding", "same as ffcv".
const char* reencode_reason_name(ReencodeReason reason);

// The reason for a source coded as `coding`, stored at stored_width x stored_height, in a
// field whose JPEGs are encoded at `quality`.
ReencodeReason reason_to_reencode(const JpegCoding& coding, int stored_width, int stored_height,
                                  int quality);

}  // namespace ffcv
