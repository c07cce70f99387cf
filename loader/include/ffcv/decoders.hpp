// The field decoders: the first step of every pipeline, one per field type.
//
//   int        Int field -> int64 [1]                   (FFCV's IntDecoder, shape (1,))
//   float      Float field -> float64 [1]               (FloatDecoder)
//   ndarray    NDArray field -> its dtype and shape     (NDArrayDecoder)
//   ragged     RaggedNDArray field -> its rows (a ragged output; `layout` packed: values
//              [rows of the batch, ...] + offsets [B + 1], padded: values [B, largest, ...] +
//              lengths [B]); its default decoder, packed
//   bytes      Bytes/JSON field -> uint8 [max size + 8]: the payload, zero-padded, followed by
//              its length as a little-endian u64 (FFCV leaves garbage and gives no length)
//   image      RGBImage field -> uint8 [H, W, 3] when every image of the dataset has the same
//              size (FFCV's SimpleRGBImageDecoder); JPEG decoded with the fast IDCT, raw copied
#pragma once

#include <memory>

#include "ffcv/steps/operation.hpp"

namespace ffcv {

class Reader;

// A decoder whose output size can change between epochs, for progressive resizing (the
// random_resized_crop and center_crop decoders are). The new size takes effect at the next
// Loader::epoch(), which declares every pipeline again; call it only while no iterator of the
// loader that uses the decoder is running. Throws ConfigError outside 1..65535.
class ResizableDecoder : public Decoder {
 public:
  virtual void set_output_size(int height, int width) = 0;
  virtual int output_height() const = 0;
  virtual int output_width() const = 0;
};

// The decoder FFCV would use by default for `field` of `reader`.
std::shared_ptr<Decoder> default_decoder(const Reader& reader, std::size_t field);

}  // namespace ffcv
