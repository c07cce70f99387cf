#include "ffcv/image/jpeg_coding.hpp"

#include <algorithm>
#include <cstdlib>
#include <limits>

#include "libjpeg_decompressor.hpp"

namespace ffcv {
namespace {

// The JPEG standard's example tables (ITU-T T.81 Annex K, tables K.1 and K.2), natural order.
constexpr QuantTable kAnnexKLuma = {16,  11,  10,  16,  24, 40, 51,  61,  12,  12,  14,  19,  26,
                                    58,  60,  55,  14,  13, 16, 24,  40,  57,  69,  56,  14,  17,
                                    22,  29,  51,  87,  80, 62, 18,  22,  37,  56,  68,  109, 103,
                                    77,  24,  35,  55,  64, 81, 104, 113, 92,  49,  64,  78,  87,
                                    103, 121, 120, 101, 72, 92, 95,  98,  112, 100, 103, 99};
constexpr QuantTable kAnnexKChroma = {
    17, 18, 24, 47, 99, 99, 99, 99, 18, 21, 26, 66, 99, 99, 99, 99, 24, 26, 56, 99, 99, 99,
    99, 99, 47, 66, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99,
    99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99};

QuantTable table_of(j_decompress_ptr cinfo, int component) {
  QuantTable table{};
  // The frame header's table number is checked by libjpeg only when decoding starts: a damaged
  // file may name any. One without a table reads all zero, finer than any quality's steps, so
  // the file is decoded, where libjpeg refuses it.
  const int slot = cinfo->comp_info[component].quant_tbl_no;
  if (slot < 0 || slot >= NUM_QUANT_TBLS) return table;
  const JQUANT_TBL* source = cinfo->quant_tbl_ptrs[slot];
  if (source == nullptr) return table;
  std::copy(std::begin(source->quantval), std::end(source->quantval), table.begin());
  return table;
}

long distance(const QuantTable& a, const QuantTable& b) {
  long sum = 0;
  for (std::size_t k = 0; k < a.size(); ++k) sum += std::labs(long{a[k]} - long{b[k]});
  return sum;
}

bool at_least(const QuantTable& file, const QuantTable& target) {
  for (std::size_t k = 0; k < file.size(); ++k) {
    if (file[k] < target[k]) return false;
  }
  return true;
}

}  // namespace

std::size_t jpeg_stream_end(std::span<const std::uint8_t> jpeg) {
  const std::size_t size = jpeg.size();
  if (size < 4 || jpeg[0] != 0xFF || jpeg[1] != 0xD8) return size;
  std::size_t at = 2;
  for (;;) {
    // A marker: 0xFF, any fill bytes 0xFF, then its code.
    if (at >= size || jpeg[at] != 0xFF) return size;
    while (at < size && jpeg[at] == 0xFF) ++at;
    if (at >= size) return size;
    const std::uint8_t code = jpeg[at++];
    if (code == 0xD9) return at;                                   // EOI
    if (code == 0x01 || (code >= 0xD0 && code <= 0xD7)) continue;  // no length (TEM, RSTn)
    if (code == 0x00 || at + 2 > size) return size;
    const std::size_t length = (std::size_t{jpeg[at]} << 8) | jpeg[at + 1];
    if (length < 2) return size;
    at += length;
    if (code != 0xDA) continue;
    // After a scan's header, its entropy-coded data: 0xFF is followed by 0x00 (a stuffed byte)
    // or a restart marker inside it; any other marker ends it.
    while (at + 1 < size) {
      if (jpeg[at] == 0xFF && jpeg[at + 1] != 0x00 &&
          (jpeg[at + 1] < 0xD0 || jpeg[at + 1] > 0xD7)) {
        if (jpeg[at + 1] != 0xFF) break;
        ++at;  // fill byte before a marker
        continue;
      }
      ++at;
    }
    if (at + 1 >= size) return size;
  }
}

int estimate_jpeg_quality(const JpegCoding& coding) {
  int best = 0;
  long best_distance = std::numeric_limits<long>::max();
  for (int quality = 1; quality <= 100; ++quality) {
    long d = distance(coding.luma_table, ijg_quant_table(quality, false));
    if (coding.components >= 3) d += distance(coding.chroma_table, ijg_quant_table(quality, true));
    if (d <= best_distance) best = quality, best_distance = d;
  }
  return best;
}

JpegCoding read_jpeg_coding(std::span<const std::uint8_t> jpeg) {
  Decompressor& decompressor = read_header(jpeg);
  j_decompress_ptr cinfo = decompressor.cinfo();
  JpegCoding coding;
  coding.width = static_cast<int>(cinfo->image_width);
  coding.height = static_cast<int>(cinfo->image_height);
  coding.components = cinfo->num_components;
  coding.ycbcr = cinfo->num_components == 3 && cinfo->jpeg_color_space == JCS_YCbCr;
  if (cinfo->num_components == 3) {
    const jpeg_component_info* c = cinfo->comp_info;
    coding.chroma_420 = c[0].h_samp_factor == 2 && c[0].v_samp_factor == 2 &&
                        c[1].h_samp_factor == 1 && c[1].v_samp_factor == 1 &&
                        c[2].h_samp_factor == 1 && c[2].v_samp_factor == 1;
  }
  coding.progressive = cinfo->progressive_mode != 0;
  coding.arithmetic = cinfo->arith_code != 0;
  coding.precision = cinfo->data_precision;
  coding.luma_table = table_of(cinfo, 0);
  coding.chroma_table = cinfo->num_components >= 2 ? table_of(cinfo, 1) : coding.luma_table;
  decompressor.abort();
  return coding;
}

QuantTable ijg_quant_table(int quality, bool chroma) {
  quality = std::clamp(quality, 1, 100);
  const long scale = quality < 50 ? 5000 / quality : 200 - 2 * quality;
  const QuantTable& base = chroma ? kAnnexKChroma : kAnnexKLuma;
  QuantTable table{};
  for (std::size_t k = 0; k < base.size(); ++k) {
    table[k] = static_cast<std::uint16_t>(std::clamp((base[k] * scale + 50) / 100, 1L, 255L));
  }
  return table;
}

bool quantised_at_most_as_finely_as(const JpegCoding& coding, int quality) {
  if (!at_least(coding.luma_table, ijg_quant_table(quality, false))) return false;
  return coding.components < 3 || at_least(coding.chroma_table, ijg_quant_table(quality, true));
}

const char* reencode_reason_name(ReencodeReason reason) {
  switch (reason) {
    case ReencodeReason::kNone:
      return "kept";
    case ReencodeReason::kResized:
      return "resized";
    case ReencodeReason::kFinerQuality:
      return "finer quality";
    case ReencodeReason::kLayout:
      return "chroma layout";
    case ReencodeReason::kCoding:
      return "coding";
    case ReencodeReason::kSameAsFfcv:
      return "same as ffcv";
  }
  return "?";
}

ReencodeReason reason_to_reencode(const JpegCoding& coding, int stored_width, int stored_height,
                                  int quality) {
  if (stored_width != coding.width || stored_height != coding.height) {
    return ReencodeReason::kResized;
  }
  if (coding.arithmetic || coding.precision != 8) return ReencodeReason::kCoding;
  if (!coding.ycbcr || !coding.chroma_420) return ReencodeReason::kLayout;
  if (!quantised_at_most_as_finely_as(coding, quality)) return ReencodeReason::kFinerQuality;
  return ReencodeReason::kNone;
}

}  // namespace ffcv
